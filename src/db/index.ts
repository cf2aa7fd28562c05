// The one embedded SQLite file, through knex: WAL, foreign keys, busy timeout, migrations at open.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { migrations } from './migrations/index.js';
import { CachedSqliteClient, ImmediateSqliteClient } from './sqlite-client.js';

export type Db = Knex;
export type Tx = Knex.Transaction;
/** Either the database or an open transaction: service helpers accept both. */
export type Queryable = Knex | Knex.Transaction;

export const DB_FILE = 'mail.db';

interface SqliteConnection {
  run(sql: string, cb: (err: Error | null) => void): void;
}

const PRAGMAS = ['PRAGMA journal_mode = WAL', 'PRAGMA foreign_keys = ON', 'PRAGMA busy_timeout = 5000', 'PRAGMA synchronous = NORMAL'];

function runPragmas(conn: SqliteConnection, pragmas: string[], done: (err: Error | null, conn: SqliteConnection) => void): void {
  const next = (i: number): void => {
    if (i === pragmas.length) return done(null, conn);
    conn.run(pragmas[i]!, (err) => (err ? done(err, conn) : next(i + 1)));
  };
  next(0);
}

/**
 * Read-only connections beside the writer. WAL lets readers run while the writer writes, so hot reads
 * outside a transaction (API key lookups, sender domains, delivery loads, lists) need not queue behind write
 * transactions. Each read sees everything committed before it starts. Closed with the writer (see below).
 */
const readers = new WeakMap<Db, Db>();
export function readsOf(db: Db): Db {
  return readers.get(db) ?? db;
}

export async function openDatabase(dataDir: string): Promise<Db> {
  mkdirSync(dataDir, { recursive: true });
  const db = knex({
    client: ImmediateSqliteClient as unknown as typeof knex.Client,
    connection: { filename: path.join(dataDir, DB_FILE) },
    useNullAsDefault: true,
    // SQLite has one writer; a single pooled connection serialises writes without SQLITE_BUSY
    // and keeps every transaction on the connection that began it.
    pool: {
      min: 1,
      max: 1,
      afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: SqliteConnection) => void) {
        runPragmas(conn, PRAGMAS, done);
      },
    },
  });
  await db.migrate.latest({
    migrationSource: {
      getMigrations: async () => migrations.map((m) => m.name),
      getMigrationName: (name: string) => name,
      getMigration: async (name: string) => {
        const m = migrations.find((x) => x.name === name);
        if (!m) throw new Error(`unknown migration ${name}`);
        return m;
      },
    },
  });
  const reads = knex({
    client: CachedSqliteClient as unknown as typeof knex.Client,
    connection: { filename: path.join(dataDir, DB_FILE) },
    useNullAsDefault: true,
    pool: {
      min: 0,
      max: 2,
      afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: SqliteConnection) => void) {
        runPragmas(conn, ['PRAGMA busy_timeout = 5000', 'PRAGMA query_only = ON'], done);
      },
    },
  });
  readers.set(db, reads);
  // Whoever closes the store closes both.
  (db.client as ImmediateSqliteClient).companions.push(reads);
  return db;
}
