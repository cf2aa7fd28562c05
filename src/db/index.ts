// The one embedded SQLite file, through knex: WAL, foreign keys, busy timeout, migrations at open.
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import knex from 'knex';
import { migrationSource } from './migrations/index.js';
import { CachedSqliteClient, ImmediateSqliteClient, type TransactionTimer } from './sqlite-client.js';
import { loadTableColumns, queryJson } from './json-reads.js';
import { placeholders, type Db, type Queryable } from './direct.js';

export type { TransactionTimer } from './sqlite-client.js';
export { execScript, execute, placeholders, queryRows, settleAll, type Db, type Queryable, type Tx } from './direct.js';

const require = createRequire(import.meta.url);

export const DB_FILE = 'mail.db';

interface SqliteConnection {
  run(sql: string, cb: (err: Error | null) => void): void;
}

/** The writer checkpoints the WAL itself only past this many pages (40 MB): the checkpointer below does it long before. */
export const WRITER_CHECKPOINT_PAGES = 10_000;

const PRAGMAS = [
  'PRAGMA journal_mode = WAL',
  'PRAGMA foreign_keys = ON',
  'PRAGMA busy_timeout = 5000',
  'PRAGMA synchronous = NORMAL',
  'PRAGMA temp_store = MEMORY',
  `PRAGMA wal_autocheckpoint = ${WRITER_CHECKPOINT_PAGES}`,
];

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
    migrationSource: migrationSource(),
  });
  await loadTableColumns(db);
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
  // Whoever closes the store closes them all.
  (db.client as ImmediateSqliteClient).companions.push(reads, await startCheckpointer(path.join(dataDir, DB_FILE)));
  return db;
}

/** Times every write transaction of `db` from now on (wait for the writer, time held): the context's metrics. */
export function timeWriteTransactions(db: Db, timer: TransactionTimer): void {
  (db.client as ImmediateSqliteClient).transactionTimer = timer;
}

/**
 * A consistent copy of the database in `dataDir` written to `target` (SQLite's `VACUUM INTO`: one read
 * transaction, so a snapshot of a committed state, compacted, without its WAL), on a read-only connection of
 * its own: the writer and the readers of a running box are not held meanwhile.
 */
export async function vacuumInto(dataDir: string, target: string): Promise<void> {
  const sqlite3 = require('sqlite3') as { OPEN_READONLY: number; Database: new (file: string, mode: number, cb: (err: Error | null) => void) => CheckpointConnection };
  const conn = await new Promise<CheckpointConnection>((resolve, reject) => {
    const c = new sqlite3.Database(path.join(dataDir, DB_FILE), sqlite3.OPEN_READONLY, (err) => (err ? reject(err) : resolve(c)));
  });
  try {
    await new Promise<void>((resolve, reject) => conn.run('PRAGMA busy_timeout = 5000', (err) => (err ? reject(err) : resolve())));
    await new Promise<void>((resolve, reject) => (conn as unknown as { run(sql: string, params: unknown[], cb: (err: Error | null) => void): void }).run('VACUUM INTO ?', [target], (err) => (err ? reject(err) : resolve())));
  } finally {
    await new Promise<void>((resolve) => conn.close(() => resolve()));
  }
}

/** How often the checkpointer copies the WAL's committed pages back into the database file. */
export const CHECKPOINT_EVERY_MS = 200;

interface CheckpointConnection extends SqliteConnection {
  all(sql: string, cb: (err: Error | null, rows?: unknown[]) => void): void;
  close(cb: (err: Error | null) => void): void;
}

/**
 * WAL checkpoints beside the writer instead of inside its commits. SQLite's automatic checkpoint runs in
 * the COMMIT that takes the WAL past 1,000 pages: that commit copies the pages into the database file and
 * syncs both files, while every send waiting for the writer waits for it too (several times a second at
 * full load). Here a connection of its own runs a PASSIVE checkpoint every CHECKPOINT_EVERY_MS (it waits for
 * no reader nor writer; the writer keeps appending meanwhile) on a thread of libuv's pool. The writer's own
 * automatic checkpoint stays as a backstop at WRITER_CHECKPOINT_PAGES, should this one fall behind.
 */
async function startCheckpointer(filename: string): Promise<{ destroy(): Promise<void> }> {
  const sqlite3 = require('sqlite3') as { Database: new (file: string, cb: (err: Error | null) => void) => CheckpointConnection };
  const conn = await new Promise<CheckpointConnection>((resolve, reject) => {
    const c = new sqlite3.Database(filename, (err) => (err ? reject(err) : resolve(c)));
  });
  let running: Promise<void> | undefined;
  const tick = () => {
    // An error (SQLITE_BUSY while another connection checkpoints: the admin CLI, the backstop) is let be:
    // the next tick tries again.
    running ??= new Promise<void>((resolve) => conn.all('PRAGMA wal_checkpoint(PASSIVE)', () => resolve())).finally(() => (running = undefined));
  };
  const timer = setInterval(tick, CHECKPOINT_EVERY_MS);
  timer.unref();
  return {
    async destroy() {
      clearInterval(timer);
      await running;
      await new Promise<void>((resolve, reject) => conn.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

/**
 * The next ids of AUTOINCREMENT tables, by name: only a write transaction may ask (no other writer can take
 * them before it commits). Rows inserted with explicit ids from here move the sequence on as usual.
 */
export async function nextIds<N extends string>(trx: Queryable, tables: readonly N[]): Promise<Record<N, number>> {
  const seqs = await queryJson<Record<string, number>>(trx, `SELECT json_group_object(name, seq) FROM sqlite_sequence WHERE name IN (${placeholders(tables.length)})`, [...tables]);
  return Object.fromEntries(tables.map((t) => [t, (seqs?.[t] ?? 0) + 1])) as Record<N, number>;
}
