// The one embedded SQLite file, through knex: WAL, foreign keys, busy timeout, migrations at open.
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { migrationSource } from './migrations/index.js';
import { CachedSqliteClient, committedByScript, ImmediateSqliteClient } from './sqlite-client.js';
import { loadTableColumns, queryJson } from './json-reads.js';

const require = createRequire(import.meta.url);

export type Db = Knex;
export type Tx = Knex.Transaction;
/** Either the database or an open transaction: service helpers accept both. */
export type Queryable = Knex | Knex.Transaction;

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
 * Runs a transaction's independent statements at once and waits for every one of them. node-sqlite3 puts each
 * on a thread of libuv's pool, where SQLite's connection mutex runs them one at a time in no set order; their
 * answers then come back to the event loop together, instead of one wake-up of the loop after another. So:
 * only statements that do not depend on each other's effects (a child row's parent must be written by an
 * earlier call: foreign keys are checked as each statement runs).
 * Every statement settles before this does, also when one fails: a ROLLBACK issued while another statement
 * of the transaction is still queued could run before it, and the straggler would then commit on its own.
 */
export async function settleAll<T extends readonly unknown[] | []>(statements: T): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = (await Promise.allSettled(statements)) as Array<PromiseSettledResult<unknown>>;
  const values: unknown[] = [];
  for (const s of settled) {
    if (s.status === 'rejected') throw s.reason;
    values.push(s.value);
  }
  return values as { -readonly [K in keyof T]: Awaited<T[K]> };
}

/** `?, ?, ?` for `n` bound values: an IN list or a VALUES tuple. */
export const placeholders = (n: number): string => Array.from({ length: n }, () => '?').join(', ');

/** What the direct path needs of a knex client and of a transaction (knex's own typings leave these out). */
interface DirectClient {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<unknown>;
  _query(connection: unknown, obj: QueryEvent): Promise<{ response?: unknown; context?: unknown }>;
  emit(event: 'query' | 'query-response' | 'query-error', ...args: unknown[]): boolean;
}
interface QueryEvent {
  sql: string;
  bindings: unknown[];
  method: 'select' | 'del';
  __knexQueryUid: string;
}
let directQueries = 0;

/**
 * One statement straight to the connection (a transaction's own, or one from the pool for just this
 * statement), through the client's kept prepared statements, without knex's builder and runner: those cost
 * ~20 µs of main-thread CPU per statement, beside ~30 µs for the statement's own round trip through
 * node-sqlite3 (a transaction of five updates: 0.38 → 0.25 ms). For the send path's hot statements, written
 * out in full. knex's 'query' and 'query-response' events are emitted as for its own statements (the webhook
 * dispatcher and bench:send's --profile listen).
 */
async function direct(q: Queryable, sql: string, bindings: unknown[], method: 'select' | 'del'): Promise<{ response?: unknown; context?: unknown }> {
  const obj: QueryEvent = { sql, bindings, method, __knexQueryUid: `direct-${++directQueries}` };
  return onConnection(q, obj, (client, connection) => client._query(connection, obj));
}

/** Runs `run` on `q`'s connection (a transaction's own, or the pool's for just this), with knex's query events for `obj`. */
async function onConnection<R extends { response?: unknown }>(q: Queryable, obj: QueryEvent, run: (client: DirectClient, connection: unknown) => Promise<R>): Promise<R> {
  const client = q.client as unknown as DirectClient;
  const trx = q as Partial<Knex.Transaction>;
  if (trx.isTransaction && trx.isCompleted?.()) throw new Error(`Transaction query already complete: ${obj.sql.slice(0, 100)}`);
  const connection = await client.acquireConnection();
  client.emit('query', obj);
  try {
    const result = await run(client, connection);
    client.emit('query-response', result.response, obj);
    return result;
  } catch (err) {
    client.emit('query-error', err, obj);
    throw err;
  } finally {
    // A transaction's client answers its own connection and keeps it; the pool's is given back.
    if (!trx.isTransaction) await client.releaseConnection(connection);
  }
}

/**
 * Runs several statements without bound values (`sql`, separated by semicolons) as one call into SQLite
 * (sqlite3_exec): one trip through libuv's pool for all of them (db/script.ts builds such scripts). Stops at
 * the first statement that fails. `commits`: the script ends with the transaction's COMMIT, so `q`'s own
 * commit sends none (sqlite-client.ts `committedByScript`).
 */
export async function execScript(q: Queryable, sql: string, commits = false): Promise<void> {
  const obj: QueryEvent = { sql, bindings: [], method: 'del', __knexQueryUid: `direct-${++directQueries}` };
  await onConnection(q, obj, async (_client, connection) => {
    await new Promise<void>((resolve, reject) => (connection as ScriptConnection).exec(sql, (err) => (err ? reject(err) : resolve())));
    if (commits) committedByScript.add(connection as object);
    return {};
  });
}
interface ScriptConnection {
  exec(sql: string, cb: (err: Error | null) => void): void;
}

/** Rows of a statement (SELECT, or a write with RETURNING), run directly (see `direct`). */
export async function queryRows<T>(q: Queryable, sql: string, bindings: unknown[] = []): Promise<T[]> {
  return (await direct(q, sql, bindings, 'select')).response as T[];
}

/** Runs a write without RETURNING directly (see `direct`); answers the rows it changed. */
export async function execute(q: Queryable, sql: string, bindings: unknown[] = []): Promise<number> {
  const { context } = await direct(q, sql, bindings, 'del');
  return (context as { changes?: number } | undefined)?.changes ?? 0;
}

/**
 * The next ids of AUTOINCREMENT tables, by name: only a write transaction may ask (no other writer can take
 * them before it commits). Rows inserted with explicit ids from here move the sequence on as usual.
 */
export async function nextIds<N extends string>(trx: Queryable, tables: readonly N[]): Promise<Record<N, number>> {
  const seqs = await queryJson<Record<string, number>>(trx, `SELECT json_group_object(name, seq) FROM sqlite_sequence WHERE name IN (${placeholders(tables.length)})`, [...tables]);
  return Object.fromEntries(tables.map((t) => [t, (seqs?.[t] ?? 0) + 1])) as Record<N, number>;
}
