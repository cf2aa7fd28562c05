// Reads that share one statement. Every statement node-sqlite3 runs is a trip through libuv's thread pool: a
// pool thread is woken, and on two busy cores that wake-up often takes the CPU from the event loop until the
// statement is done (bench:send's profiles at 500 emails/s: about a quarter of the main thread's wall time
// inside those calls). The send path's reads of one turn — the accept transaction's quota figures, suppressions and
// next ids; the delivery handler's emails, recipients and keys — are independent, so they go as one
// statement, each as a scalar subquery answering JSON: `SELECT (a) AS j0, (b) AS j1, …`.
import { queryRows, type Queryable } from './direct.js';
import { sqlLiteral } from './script.js';

interface Part {
  sql: string;
  bindings: unknown[];
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

// The reads asked for in the current turn, by where they run (a transaction, or a pool of connections).
const rounds = new WeakMap<Queryable, Part[]>();

/**
 * A value read as JSON. `sql` is a SELECT answering one row of one column, JSON text or NULL (an aggregate:
 * `json_group_array(…)`, `json_object(…)`; `jsonObjectOf` writes a row's object). The reads asked for on the
 * same Queryable in the same turn of the event loop run as one statement (one snapshot, one pool trip); when
 * that statement fails, each runs alone, so that each hears its own error. Answers the parsed value, null for
 * NULL (as for no row).
 */
export function queryJson<T>(q: Queryable, sql: string, bindings: unknown[] = []): Promise<T | null> {
  return new Promise<T | null>((resolve, reject) => {
    let round = rounds.get(q);
    if (!round) {
      const parts: Part[] = (round = []);
      rounds.set(q, parts);
      queueMicrotask(() => {
        rounds.delete(q);
        void runRound(q, parts);
      });
    }
    round.push({ sql, bindings, resolve: resolve as (value: unknown) => void, reject });
  });
}

async function runRound(q: Queryable, parts: Part[]): Promise<void> {
  if (parts.length === 1) return runAlone(q, parts[0]!);
  let row: Record<string, unknown> | undefined;
  try {
    [row] = await queryRows<Record<string, unknown>>(
      q,
      `SELECT ${parts.map((p, i) => `(${p.sql}) AS j${i}`).join(', ')}`,
      parts.flatMap((p) => p.bindings),
    );
  } catch {
    await Promise.all(parts.map((p) => runAlone(q, p)));
    return;
  }
  parts.forEach((p, i) => settle(p, row?.[`j${i}`]));
}

async function runAlone(q: Queryable, part: Part): Promise<void> {
  let rows: Array<Record<string, unknown>>;
  try {
    rows = await queryRows<Record<string, unknown>>(q, part.sql, part.bindings);
  } catch (err) {
    part.reject(err);
    return;
  }
  const row = rows[0];
  settle(part, row === undefined ? null : Object.values(row)[0]);
}

function settle(part: Part, value: unknown): void {
  if (value === null || value === undefined) return part.resolve(null);
  if (typeof value !== 'string') return part.reject(new TypeError(`A JSON read answered ${typeof value}, not JSON text: ${part.sql.slice(0, 100)}`));
  try {
    part.resolve(JSON.parse(value));
  } catch (err) {
    part.reject(err);
  }
}

// ---- rows as JSON objects ----

/** Column names by table, read from the schema once it is migrated (`loadTableColumns`). */
const tableColumns = new Map<string, string[]>();

/**
 * Reads the columns of every table (after migrations). A table's column list is then known to
 * `jsonObjectOf` without being written out by hand beside the migrations.
 */
export async function loadTableColumns(q: Queryable): Promise<void> {
  const rows = await queryRows<{ table_name: string; name: string; type: string }>(
    q,
    `SELECT m.name AS table_name, c.name, c.type FROM sqlite_schema AS m, pragma_table_info(m.name) AS c
     WHERE m.type = 'table' ORDER BY m.name, c.cid`,
  );
  tableColumns.clear();
  // A BLOB has no JSON form (SQLite refuses it): tables with one are read as rows.
  const withBlobs = new Set(rows.filter((r) => /blob/i.test(r.type)).map((r) => r.table_name));
  for (const r of rows) {
    if (withBlobs.has(r.table_name)) continue;
    const names = tableColumns.get(r.table_name);
    if (names) names.push(r.name);
    else tableColumns.set(r.table_name, [r.name]);
  }
}

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * `json_object('id', alias."id", …)` over every column of `table` (as of `loadTableColumns`): a row as the
 * object node-sqlite3 would answer for `SELECT alias.*`. Its values are JSON's: text, integers and NULL read
 * back as they were stored (these tables hold no BLOB, which this refuses, nor floating-point values).
 */
export function jsonObjectOf(table: string, alias: string): string {
  const names = tableColumns.get(table);
  if (!names) throw new Error(`No JSON row for table ${table}: unknown, or it has a BLOB column (loadTableColumns)`);
  // SQLite takes at most 127 arguments per function call (SQLITE_MAX_FUNCTION_ARG).
  if (names.length > 63) throw new Error(`No JSON row for table ${table}: ${names.length} columns are more than json_object takes`);
  return `json_object(${names.map((n) => `${sqlLiteral(n)}, ${quoteIdent(alias)}.${quoteIdent(n)}`).join(', ')})`;
}
