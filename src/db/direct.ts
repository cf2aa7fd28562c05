// The statements that go straight to a connection (db/index.ts re-exports them for the rest of the house):
// the handle types, independent statements settled together, and the direct path that skips knex's builder
// and runner. Below script.ts and json-reads.ts, which build on it; it imports neither.
import type { Knex } from 'knex';
import { committedByScript } from './sqlite-client.js';

export type Db = Knex;
export type Tx = Knex.Transaction;
/** Either the database or an open transaction: service helpers accept both. */
export type Queryable = Knex | Knex.Transaction;

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
