// knex's sqlite3 client with two changes:
//
// 1. Prepared statements are kept and reused, per connection (the most recently used STATEMENT_CACHE_SIZE
//    texts). node-sqlite3 runs every `db.all(sql, …)` as two trips through libuv's thread pool — prepare,
//    then step — each a thread wake-up and an event-loop wake-up; a kept statement makes it one, and SQLite
//    parses the text once. knex still builds the text; the same text is the same statement. A statement
//    whose preparation fails is not kept (the caller gets the error). The statements are finalized before
//    their connection closes.
// 2. Write transactions start with BEGIN IMMEDIATE. A plain (deferred) BEGIN that reads first and writes
//    later cannot wait for another process's write lock: SQLite answers SQLITE_BUSY at once, because the
//    transaction's snapshot is already stale. With IMMEDIATE the lock is taken at BEGIN, where busy_timeout
//    applies, so the admin CLI and the appliance can write to the same file at the same time.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** Statement texts kept per connection (a text is one shape: multi-row inserts and IN lists vary by count). */
export const STATEMENT_CACHE_SIZE = 256;

type Callback = (this: RawStatement, err: Error | null, rows?: unknown) => void;

interface RawStatement {
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
  new (...args: unknown[]): { query(conn: unknown, sql: string): Promise<unknown> };
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

// Keyed by connection: knex runs a transaction's queries through a copy of the client without its fields.
const statements = new WeakMap<RawConnection, Map<string, RawStatement>>();

/** How many prepared statements a connection keeps now (for tests). */
export const keptStatements = (connection: object): number => statements.get(connection as RawConnection)?.size ?? 0;

/** knex's sqlite3 client, reusing prepared statements (the read-only connections use it as it is). */
export class CachedSqliteClient extends ClientSqlite3 {
  _query(connection: RawConnection, obj: QueryObject): Promise<QueryObject> {
    const sql = obj.sql;
    if (!sql) return Promise.reject(new Error('The query is empty'));
    let cache = statements.get(connection);
    if (!cache) statements.set(connection, (cache = new Map()));
    return new Promise((resolve, reject) => {
      let stmt = cache.get(sql);
      if (stmt) {
        // Most recently used last.
        cache.delete(sql);
        cache.set(sql, stmt);
      } else {
        // A failed preparation drops the calls queued behind it without calling them: the error comes here.
        const fresh: RawStatement = new Statement(connection, sql, (err) => {
          if (!err) return;
          if (cache.get(sql) === fresh) cache.delete(sql);
          reject(err);
        });
        stmt = fresh;
        cache.set(sql, stmt);
        if (cache.size > STATEMENT_CACHE_SIZE) {
          const [oldest, old] = cache.entries().next().value!;
          cache.delete(oldest);
          // Runs once the statement's queued calls are done.
          old.finalize();
        }
      }
      stmt[callMethod(obj)](obj.bindings ?? [], function (err, rows) {
        if (err) return reject(err);
        obj.response = rows;
        // knex reads lastID and changes from it.
        obj.context = this;
        resolve(obj);
      });
    });
  }

  override async destroyRawConnection(connection: unknown): Promise<void> {
    const cache = statements.get(connection as RawConnection);
    if (cache) {
      // sqlite3_close refuses a connection with unfinalized statements.
      await Promise.all([...cache.values()].map((s) => new Promise<void>((resolve) => s.finalize(() => resolve()))));
      cache.clear();
    }
    return super.destroyRawConnection(connection);
  }
}

class ImmediateTransaction extends TransactionSqlite {
  begin(conn: unknown): Promise<unknown> {
    return this.query(conn, 'BEGIN IMMEDIATE;');
  }
}

/** The writer's client: kept statements and BEGIN IMMEDIATE. */
export class ImmediateSqliteClient extends CachedSqliteClient {
  /** Closed before this client (the read-only pool beside the writer). */
  readonly companions: Array<{ destroy(): Promise<void> }> = [];

  transaction(...args: unknown[]): object {
    return new ImmediateTransaction(this, ...args);
  }

  override async destroy(callback?: unknown): Promise<unknown> {
    for (const c of this.companions.splice(0)) await c.destroy();
    return super.destroy(callback);
  }
}
