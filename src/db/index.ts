// The one embedded SQLite file, through knex: WAL, foreign keys, busy timeout, migrations at open.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { migrations } from './migrations/index.js';
import { ImmediateSqliteClient } from './sqlite-client.js';

export type Db = Knex;
export type Tx = Knex.Transaction;
/** Either the database or an open transaction: service helpers accept both. */
export type Queryable = Knex | Knex.Transaction;

export const DB_FILE = 'mail.db';

interface SqliteConnection {
  run(sql: string, cb: (err: Error | null) => void): void;
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
        const pragmas = ['PRAGMA journal_mode = WAL', 'PRAGMA foreign_keys = ON', 'PRAGMA busy_timeout = 5000', 'PRAGMA synchronous = NORMAL'];
        const next = (i: number): void => {
          if (i === pragmas.length) return done(null, conn);
          conn.run(pragmas[i]!, (err) => (err ? done(err, conn) : next(i + 1)));
        };
        next(0);
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
  return db;
}
