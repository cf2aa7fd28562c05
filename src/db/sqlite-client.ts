// knex's sqlite3 client with one change: write transactions start with BEGIN IMMEDIATE.
// A plain (deferred) BEGIN that reads first and writes later cannot wait for another process's write
// lock: SQLite answers SQLITE_BUSY at once, because the transaction's snapshot is already stale. With
// IMMEDIATE the lock is taken at BEGIN, where busy_timeout applies, so the admin CLI and the appliance
// can write to the same file at the same time.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

interface TransactionClass {
  new (...args: unknown[]): { query(conn: unknown, sql: string): Promise<unknown> };
}
interface ClientClass {
  new (...args: unknown[]): { destroy(callback?: unknown): Promise<unknown> };
}

const ClientSqlite3 = require('knex/lib/dialects/sqlite3/index.js') as ClientClass;
const TransactionSqlite = require('knex/lib/dialects/sqlite3/execution/sqlite-transaction.js') as TransactionClass;

class ImmediateTransaction extends TransactionSqlite {
  begin(conn: unknown): Promise<unknown> {
    return this.query(conn, 'BEGIN IMMEDIATE;');
  }
}

export class ImmediateSqliteClient extends ClientSqlite3 {
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
