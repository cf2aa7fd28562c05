// Write scripts: the writes of a shared write transaction (db/batcher.ts SharedWriter), held until its works
// are done and then sent to SQLite as few calls as possible, the transaction's COMMIT with the last one.
//
// Every statement through node-sqlite3 is a trip through libuv's thread pool: the event loop hands it to a
// pool thread (waking it: a futex wake, on a busy two-core box often a preemption of the event loop itself)
// and the answer comes back by another wake-up of the loop. The send path wrote ~4 statements per email so;
// a transaction's writes, which need no answer, go instead as one sqlite3_exec of their text with the values
// written out as SQL literals (one trip for all of them). Large values (attachments, raw sources, big html)
// would double in the text: a statement holding one is bound as usual, in its place in the order.
import { execScript, execute, type Queryable } from './direct.js';

/** A value longer than this (characters or bytes) makes its statement a bound one rather than literal text. */
export const LITERAL_VALUE_LIMIT = 64 * 1024;
/** A literal part of a script grows to about this many characters before the next one starts. */
const PART_LIMIT = 2 * 1024 * 1024;

/** `v` as an SQLite literal that stores what binding `v` through node-sqlite3 stores. */
export function sqlLiteral(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NULL'; // SQLite stores a bound NaN as NULL
    if (!Number.isFinite(v)) return v > 0 ? '9e999' : '-9e999';
    // node-sqlite3 binds an integer outside 32 bits as a double (a column of INTEGER affinity stores it as
    // an integer again): the literal is a REAL as well, so that every column stores what binding stores.
    const text = String(v);
    return Number.isInteger(v) && (v > 2 ** 31 - 1 || v < -(2 ** 31)) && !text.includes('e') ? `${text}.0` : text;
  }
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'string') {
    // sqlite3_exec reads the script as a C string: a NUL would end it there. Such text goes as its UTF-8 bytes.
    if (v.includes('\0')) return `CAST(X'${Buffer.from(v, 'utf8').toString('hex')}' AS TEXT)`;
    return `'${v.replaceAll("'", "''")}'`;
  }
  if (v instanceof Date) return sqlLiteral(v.getTime()); // node-sqlite3 binds a Date as its milliseconds
  if (v instanceof Uint8Array) return `X'${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')}'`;
  throw new TypeError(`No SQL literal for a value of type ${typeof v}`);
}

/**
 * A quoted string or name (`'…'`, `"…"`, `` `…` ``, `[…]`; a doubled quote closes and reopens: the same; an
 * unclosed one runs to the end) or a placeholder.
 */
const QUOTED_OR_PLACEHOLDER = /'[^']*(?:'|$)|"[^"]*(?:"|$)|`[^`]*(?:`|$)|\[[^\]]*(?:\]|$)|\?/g;

/**
 * `sql` with each `?` placeholder outside quotes replaced by the literal of the next binding. Built by one
 * `replace` (one flat string): the text waits for its transaction's COMMIT, and a string grown by `+=` per
 * value would wait as a tree of pieces several times its size, which the young generation's collections copy
 * and promote.
 */
export function inlineBindings(sql: string, bindings: readonly unknown[]): string {
  let next = 0;
  const out = sql.replace(QUOTED_OR_PLACEHOLDER, (m) => {
    if (m !== '?') return m;
    if (next >= bindings.length) throw new Error(`More placeholders than bindings in: ${sql.slice(0, 100)}`);
    return sqlLiteral(bindings[next++]);
  });
  if (next !== bindings.length) throw new Error(`${bindings.length} bindings for ${next} placeholders in: ${sql.slice(0, 100)}`);
  return out;
}

const isLarge = (v: unknown) => (typeof v === 'string' || v instanceof Uint8Array) && (typeof v === 'string' ? v.length : v.byteLength) > LITERAL_VALUE_LIMIT;

type Part = { text: string[]; size: number } | { sql: string; bindings: unknown[] };

/** The writes of one transaction, in the order they were added. */
class WriteScript {
  private readonly parts: Part[] = [];
  private sealed = false;

  /** The first statement: foreign keys are checked at COMMIT, so a child may be added before its parent. */
  constructor() {
    this.parts.push({ text: ['PRAGMA defer_foreign_keys = ON'], size: 0 });
  }

  add(sql: string, bindings: unknown[]): void {
    if (this.sealed) throw new Error('A write was added to a transaction whose writes have been sent');
    if (bindings.some(isLarge)) {
      this.parts.push({ sql, bindings });
      return;
    }
    const text = inlineBindings(sql, bindings);
    let last = this.parts[this.parts.length - 1]!;
    if (!('text' in last) || last.size + text.length > PART_LIMIT) this.parts.push((last = { text: [], size: 0 }));
    last.text.push(text);
    last.size += text.length;
  }

  /**
   * Sends the writes in order, and COMMIT with the last literal part (or alone after a bound statement).
   * Without writes it sends nothing: the transaction commits as usual. Either way no write is taken after.
   */
  async commit(trx: Queryable): Promise<void> {
    if (this.sealed) throw new Error('The writes of this transaction have been sent');
    this.sealed = true;
    if (this.parts.length === 1 && (this.parts[0] as { text: string[] }).text.length === 1) return; // the pragma alone
    const last = this.parts[this.parts.length - 1]!;
    if (!('text' in last)) this.parts.push({ text: [], size: 0 });
    for (const [n, part] of this.parts.entries()) {
      if (!('text' in part)) await execute(trx, part.sql, part.bindings);
      else if (n === this.parts.length - 1) await execScript(trx, [...part.text, 'COMMIT'].join(';\n'), true);
      else await execScript(trx, part.text.join(';\n'));
    }
  }
}

const scripts = new WeakMap<object, WriteScript>();

/**
 * Holds the writes of transaction `trx` (made through `write`) until `commitScript`, which sends them and
 * commits. Statements that answer (reads, `execute`) still run at once: a work of such a transaction must not
 * read what it wrote.
 */
export function openScript(trx: Queryable): void {
  scripts.set(trx, new WriteScript());
}

/** Sends `trx`'s held writes and its COMMIT (see `openScript`); the transaction then settles without one of its own. */
export async function commitScript(trx: Queryable): Promise<void> {
  // Kept, sealed: a write made after this throws rather than running outside the committed transaction.
  await scripts.get(trx)?.commit(trx);
}

/**
 * A write whose answer is not needed: held for the script when `q` is a transaction with one (it takes effect
 * at the end of that transaction, in the order written), run at once otherwise. Knex's 'query' event is
 * emitted as the write is taken (the webhook dispatcher watches for inserts into `events`).
 */
export async function write(q: Queryable, sql: string, bindings: unknown[] = []): Promise<void> {
  const script = scripts.get(q);
  if (!script) {
    await execute(q, sql, bindings);
    return;
  }
  script.add(sql, bindings);
  (q.client as unknown as { emit(event: 'query', obj: object): boolean }).emit('query', { sql, bindings, method: 'del' });
}

/**
 * Lets `q`'s transaction write a child before its parent: foreign keys checked at COMMIT. A script does this
 * already (its first statement); otherwise the pragma runs now, and lasts until the transaction ends.
 */
export async function deferForeignKeys(q: Queryable): Promise<void> {
  if (!scripts.has(q)) await execute(q, 'PRAGMA defer_foreign_keys = ON');
}
