// knex's sqlite3 client with two changes:
//
// 1. Prepared statements are kept and reused, per connection (the most recently used STATEMENT_CACHE_SIZE
//    texts). node-sqlite3 runs every `db.all(sql, …)` as two trips through libuv's thread pool — prepare,
//    then step — each a thread wake-up and an event-loop wake-up; a kept statement makes it one, and SQLite
//    parses the text once. knex still builds the text; the same text is the same statement. A statement
//    whose preparation fails is not kept (the caller gets the error); nor one whose bindings would take the
//    connection's kept statements past KEPT_BINDING_BYTES (SQLite holds a statement's last bound values).
//    The statements are finalized before their connection closes.
// 2. Write transactions start with BEGIN IMMEDIATE. A plain (deferred) BEGIN that reads first and writes
//    later cannot wait for another process's write lock: SQLite answers SQLITE_BUSY at once, because the
//    transaction's snapshot is already stale. With IMMEDIATE the lock is taken at BEGIN, where busy_timeout
//    applies, so the admin CLI and the appliance can write to the same file at the same time.
// 3. Every write transaction is timed here, where all of them begin (`db.transaction` in any service, the
//    mail store, the batcher): the wait for the writer (the pool's one connection, then BEGIN IMMEDIATE's
//    lock) and the time it holds it (from BEGIN to its COMMIT or ROLLBACK). Savepoints (nested transactions)
//    are not counted apart. The appliance's context hands these to its metrics (`TransactionTimer`).
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

const require = createRequire(import.meta.url);

/** Statement texts kept per connection (a text is one shape: multi-row inserts and IN lists vary by count). */
export const STATEMENT_CACHE_SIZE = 256;

type Callback = (this: RawStatement, err: Error | null, rows?: unknown) => void;

interface RawStatement {
  /** Set by a run, read by knex (insert ids, changed rows). */
  lastID?: number;
  changes?: number;
  run(params: unknown[], cb: Callback): void;
  all(params: unknown[], cb: Callback): void;
  finalize(cb?: () => void): void;
}

interface RawConnection {
  close(cb: (err: Error | null) => void): void;
}

interface QueryObject {
  sql?: string;
  method?: string;
  returning?: unknown;
  bindings?: unknown[];
  response?: unknown;
  context?: unknown;
}

interface TransactionClass {
  new (...args: unknown[]): { query(conn: unknown, sql: string): Promise<unknown>; acquireConnection(config: unknown, cb: (conn: unknown) => Promise<unknown>): Promise<unknown> };
}
interface ClientClass {
  new (...args: unknown[]): {
    destroy(callback?: unknown): Promise<unknown>;
    destroyRawConnection(connection: unknown): Promise<void>;
  };
}

const ClientSqlite3 = require('knex/lib/dialects/sqlite3/index.js') as ClientClass;
const TransactionSqlite = require('knex/lib/dialects/sqlite3/execution/sqlite-transaction.js') as TransactionClass;
const { Statement } = require('sqlite3') as { Statement: new (db: RawConnection, sql: string, cb: (err: Error | null) => void) => RawStatement };

/** knex's method → node-sqlite3's (as knex's own `_query` decides). */
function callMethod(obj: QueryObject): 'run' | 'all' {
  switch (obj.method) {
    case 'insert':
    case 'update':
      return obj.returning ? 'all' : 'run';
    case 'counter':
    case 'del':
      return 'run';
    default:
      return 'all';
  }
}

/**
 * Bound values a connection's kept statements may hold, in bytes: SQLite keeps a statement's last bindings
 * (its own copy of every string and blob) until it runs again, so a kept statement that stored a large
 * attachment would hold it. A run that would go past this is done with a statement that is not kept.
 */
export const KEPT_BINDING_BYTES = 8 * 1024 * 1024;

interface Kept {
  stmt: RawStatement;
  /** Its last bindings' size. */
  bytes: number;
  /**
   * While it is being prepared: the callers whose runs are queued on it (a failed preparation drops them
   * without calling them back, so they hear of it here).
   */
  preparing: Set<(err: Error) => void> | null;
}
interface Cache {
  kept: Map<string, Kept>;
  bytes: number;
}

// Keyed by connection: knex runs a transaction's queries through a copy of the client without its fields.
const caches = new WeakMap<RawConnection, Cache>();

/** How many prepared statements a connection keeps now (for tests). */
export const keptStatements = (connection: object): number => caches.get(connection as RawConnection)?.kept.size ?? 0;

function bindingBytes(bindings: unknown[] | undefined): number {
  let n = 0;
  for (const b of bindings ?? []) {
    if (typeof b === 'string') n += b.length;
    else if (b instanceof Uint8Array) n += b.byteLength;
    else n += 8;
  }
  return n;
}

function drop(cache: Cache, sql: string): void {
  const entry = cache.kept.get(sql);
  if (!entry) return;
  cache.kept.delete(sql);
  cache.bytes -= entry.bytes;
  // Runs once the statement's queued calls are done.
  entry.stmt.finalize();
}

/** knex's sqlite3 client, reusing prepared statements (the read-only connections use it as it is). */
export class CachedSqliteClient extends ClientSqlite3 {
  _query(connection: RawConnection, obj: QueryObject): Promise<QueryObject> {
    const sql = obj.sql;
    if (!sql) return Promise.reject(new Error('The query is empty'));
    let cache = caches.get(connection);
    if (!cache) caches.set(connection, (cache = { kept: new Map(), bytes: 0 }));
    const c = cache;
    const bytes = bindingBytes(obj.bindings);
    return new Promise((resolve, reject) => {
      let stmt: RawStatement;
      let keep = true;
      let entry = c.kept.get(sql);
      if (entry) {
        stmt = entry.stmt;
        c.kept.delete(sql);
        c.bytes -= entry.bytes;
        if (c.bytes + bytes > KEPT_BINDING_BYTES) keep = false;
        else {
          // Most recently used last.
          c.kept.set(sql, entry);
          entry.bytes = bytes;
          c.bytes += bytes;
        }
      } else {
        const fresh: Kept = {
          stmt: new Statement(connection, sql, (err) => {
            const waiting = fresh.preparing;
            fresh.preparing = null;
            if (!err) return;
            if (c.kept.get(sql) === fresh) {
              c.kept.delete(sql);
              c.bytes -= fresh.bytes;
            }
            for (const fail of waiting ?? []) fail(err);
          }),
          bytes,
          preparing: new Set(),
        };
        entry = fresh;
        stmt = fresh.stmt;
        keep = c.bytes + bytes <= KEPT_BINDING_BYTES;
        if (keep) {
          c.kept.set(sql, fresh);
          c.bytes += bytes;
          if (c.kept.size > STATEMENT_CACHE_SIZE) drop(c, c.kept.keys().next().value!);
        }
      }
      entry.preparing?.add(reject);
      stmt[callMethod(obj)](obj.bindings ?? [], function (err, rows) {
        if (err) return reject(err);
        obj.response = rows;
        // knex reads lastID and changes from it; copied, as a kept statement's next run overwrites them.
        obj.context = { lastID: this.lastID, changes: this.changes };
        resolve(obj);
      });
      // Not kept: finalized once this run (queued ahead of it) is done.
      if (!keep) stmt.finalize();
    });
  }

  override async destroyRawConnection(connection: unknown): Promise<void> {
    const cache = caches.get(connection as RawConnection);
    if (cache) {
      // sqlite3_close refuses a connection with unfinalized statements.
      await Promise.all([...cache.kept.values()].map((k) => new Promise<void>((resolve) => k.stmt.finalize(() => resolve()))));
      cache.kept.clear();
      cache.bytes = 0;
    }
    return super.destroyRawConnection(connection);
  }
}

/** The parts of knex's Transaction that commit() below works with. */
interface TransactionInternals {
  client: { _query(conn: unknown, obj: QueryObject): Promise<unknown> };
  trxClient: { query(conn: unknown, sql: string): Promise<unknown> };
  _completed: boolean;
  _resolver(value: unknown): void;
  _rejecter(err: unknown): void;
}

/**
 * Connections whose open transaction a script has committed (db/index.ts `execScript`): the transaction's
 * commit then sends no COMMIT of its own, it only settles.
 */
export const committedByScript = new WeakSet<object>();

/** Told of each write transaction once it ends: seconds waited for the writer, seconds held, and whether it committed. */
export type TransactionTimer = (waitSeconds: number, holdSeconds: number, committed: boolean) => void;

class ImmediateTransaction extends TransactionSqlite {
  /** performance.now() when asked for (before the pool's connection), and when BEGIN IMMEDIATE got the lock. */
  private askedAt = 0;
  private beganAt = 0;

  override acquireConnection(config: unknown, cb: (conn: unknown) => Promise<unknown>): Promise<unknown> {
    this.askedAt = performance.now();
    return super.acquireConnection(config, (conn) => {
      const done = (committed: boolean) => {
        const timer = (this as unknown as { client: { transactionTimer?: TransactionTimer; transacting?: boolean } }).client;
        if (this.beganAt === 0 || timer.transacting || !timer.transactionTimer) return;
        timer.transactionTimer((this.beganAt - this.askedAt) / 1000, (performance.now() - this.beganAt) / 1000, committed);
      };
      return cb(conn).then(
        (v) => (done(true), v),
        (err: unknown) => {
          done(false);
          throw err;
        },
      );
    });
  }

  begin(conn: unknown): Promise<unknown> {
    committedByScript.delete(conn as object); // a mark left by a transaction that failed after its script committed
    return this.query(conn, 'BEGIN IMMEDIATE;').then((v) => {
      this.beganAt = performance.now();
      return v;
    });
  }

  /**
   * knex's commit, and a ROLLBACK when the COMMIT fails: SQLite keeps the transaction open then (a deferred
   * foreign key left broken, a full disk), and knex would hand the connection back to the pool inside it,
   * where every later BEGIN fails ("cannot start a transaction within a transaction").
   */
  commit(conn: unknown, value: unknown): Promise<unknown> {
    const trx = this as unknown as TransactionInternals;
    if (committedByScript.delete(conn as object)) {
      trx._completed = true;
      trx._resolver(value);
      return Promise.resolve(value);
    }
    const committed = trx.trxClient.query(conn, 'COMMIT;').then(
      (res) => {
        trx._resolver(value);
        return res;
      },
      async (err: unknown) => {
        // Straight to the connection: the transaction counts as complete and refuses statements of its own.
        await trx.client._query(conn, { sql: 'ROLLBACK', bindings: [] }).catch(() => undefined); // none open: nothing to undo
        trx._rejecter(err);
      },
    );
    trx._completed = true;
    return committed;
  }
}

/** The writer's client: kept statements and BEGIN IMMEDIATE. */
export class ImmediateSqliteClient extends CachedSqliteClient {
  /** Closed before this client (the read-only pool beside the writer). */
  readonly companions: Array<{ destroy(): Promise<void> }> = [];
  /** Told of each write transaction's wait and hold (set by the context; none in a bare store). */
  transactionTimer?: TransactionTimer;

  transaction(...args: unknown[]): object {
    return new ImmediateTransaction(this, ...args);
  }

  override async destroy(callback?: unknown): Promise<unknown> {
    for (const c of this.companions.splice(0)) await c.destroy();
    return super.destroy(callback);
  }
}
