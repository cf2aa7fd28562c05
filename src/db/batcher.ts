// Group commit. SQLite has one writer and every statement through knex costs a round trip of roughly
// 100-200 µs, so many small transactions are the bottleneck long before the disk is. A Batcher collects the
// calls made while its previous run was in progress (or in the same turn of the event loop) and hands them to
// one run: one transaction and multi-row statements for all of them. An idle Batcher runs at the next turn,
// so a lone caller waits for nothing; under load, batches grow with the load.
//
// A run must be all-or-nothing (one transaction). If it throws for a batch of several, each item is run
// again alone, so one bad item fails only its own caller.

import { placeholders, settleAll, type Db, type Queryable, type Tx } from './direct.js';
import { commitScript, openScript, write } from './script.js';

interface Waiting<I, O> {
  item: I;
  resolve(value: O): void;
  reject(err: unknown): void;
}

export class Batcher<I, O> {
  private queue: Array<Waiting<I, O>> = [];
  private busy = false;

  /**
   * `run` answers one result per item, in order. `gatherMs`: before each run, wait this long for more items
   * (unless `maxBatch` are waiting) — for background work whose callers can wait a few milliseconds, so that
   * a lightly loaded box still writes in batches rather than item by item (PostgreSQL's commit_delay).
   */
  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly maxBatch = 200,
    private readonly gatherMs = 0,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.busy) {
        this.busy = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        if (this.gatherMs > 0 && this.queue.length < this.maxBatch) await new Promise((r) => setTimeout(r, this.gatherMs));
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          const out = await this.run(batch.map((w) => w.item));
          batch.forEach((w, i) => w.resolve(out[i]!));
        } catch (err) {
          if (batch.length === 1) batch[0]!.reject(err);
          else for (const w of batch) await this.run([w.item]).then((out) => w.resolve(out[0]!), (e: unknown) => w.reject(e));
        }
      }
    } finally {
      this.busy = false;
    }
  }
}

/**
 * Splits rows so that no single INSERT binds more than `maxVariables` values (SQLite's limit is 32,766) nor
 * has more than `maxRows` rows: knex writes a multi-row insert for SQLite as `INSERT … SELECT … UNION ALL
 * SELECT …`, and SQLite refuses a compound SELECT of more than 500 terms.
 */
export function chunkRows<T extends object>(rows: T[], maxVariables = 30_000, maxRows = 500): T[][] {
  if (rows.length === 0) return [];
  const perRow = Math.max(1, Object.keys(rows[0]!).length);
  const size = Math.max(1, Math.min(maxRows, Math.floor(maxVariables / perRow)));
  const chunks: T[][] = [];
  for (let i = 0; i < rows.length; i += size) chunks.push(rows.slice(i, i + size));
  return chunks;
}

/**
 * A multi-row INSERT of `rows` into `table`: the first row's keys are the columns (a missing value is NULL),
 * in chunks (chunkRows) one after another, so that AUTOINCREMENT ids follow the rows' order. `tail` follows
 * the VALUES (e.g. an ON CONFLICT clause). For the send path's hot inserts: written out and run straight on
 * the connection, or held for the transaction's write script if it has one (script.ts `write`).
 */
export async function insertRows(q: Queryable, table: string, rows: readonly object[], tail = ''): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  const tuple = `(${placeholders(columns.length)})`;
  const head = `INSERT INTO ${table} (${columns.map((c) => `"${c}"`).join(', ')}) VALUES `;
  for (const chunk of chunkRows(rows as object[])) {
    const values = chunk.flatMap((r) => columns.map((c) => (r as Record<string, unknown>)[c] ?? null));
    await write(q, head + chunk.map(() => tuple).join(', ') + tail, values);
  }
}

/**
 * `UPDATE table SET … FROM (VALUES …) AS v WHERE <keys match>`: many rows updated to different values in one
 * statement per chunk. `sets` maps a column to its new value's expression over `v` (e.g. `v.status`); the
 * VALUES rows hold the key columns and the columns `sets` names (a missing value is NULL). Like `insertRows`,
 * held for the transaction's write script if it has one.
 */
export async function updateFromValues(q: Queryable, table: string, keys: string[], sets: Record<string, string>, rows: ReadonlyArray<Record<string, unknown>>): Promise<void> {
  if (rows.length === 0) return;
  const columns = [...keys, ...Object.keys(sets).filter((c) => !keys.includes(c))];
  const tuple = `(${placeholders(columns.length)})`;
  const alias = columns.map((c, i) => `column${i + 1} AS ${c}`).join(', ');
  const assignments = Object.entries(sets).map(([col, expr]) => `${col} = ${expr}`).join(', ');
  const match = keys.map((k) => `${table}.${k} = v.${k}`).join(' AND ');
  for (const chunk of chunkRows(rows as Array<Record<string, unknown>>)) {
    const values = chunk.flatMap((r) => columns.map((c) => r[c] ?? null));
    await write(q, `UPDATE ${table} SET ${assignments} FROM (SELECT ${alias} FROM (VALUES ${chunk.map(() => tuple).join(', ')})) AS v WHERE ${match}`, values);
  }
}

/**
 * Works that share write transactions: the works handed in while a transaction runs share the next one. The
 * send path's writers (accepted emails, "sending" marks, delivery outcomes) share one (`sharedWriterOf`), and
 * their statements run at once (`settleAll`, 'concurrent'): on a busy event loop every round trip to SQLite's
 * thread costs a turn of the loop, so one transaction of a few rounds instead of three of three to five each
 * is what keeps the writer free; such a work must touch only its own rows (it runs beside others in no set
 * order). Its writes made through `write` (script.ts; insertRows and updateFromValues use it) are held and
 * sent together with the COMMIT once every work is done, so it must not read what it wrote. 'in-order' runs
 * the works one after another and their writes at once (the MX's writes, which may touch the same rows and
 * read them back). A work must be safe to run again: when the shared transaction fails, each work is run
 * again alone, so that one failure fails only its own caller.
 */
export class SharedWriter {
  private readonly works: Batcher<(trx: Tx) => Promise<unknown>, unknown>;

  constructor(db: Db, order: 'concurrent' | 'in-order' = 'concurrent') {
    this.works = new Batcher((works) =>
      db.transaction(async (trx) => {
        if (order === 'concurrent') {
          openScript(trx);
          const out = await settleAll(works.map((work) => work(trx)));
          await commitScript(trx);
          return out;
        }
        const out: unknown[] = [];
        for (const work of works) out.push(await work(trx));
        return out;
      }),
    );
  }

  run<T>(work: (trx: Tx) => Promise<T>): Promise<T> {
    return this.works.submit(work) as Promise<T>;
  }

  /**
   * A writer of items that share works: every item handed in before the next transaction starts goes into
   * one work of that transaction (`writeItems` answers one result per item, in order; at most `maxBatch` items
   * per work, the rest in the next). A Batcher in front of `run` would hand its next batch in only once its
   * previous one had committed, so its items waited for every other writer's transaction in between; here
   * they join the next transaction whatever ran before. When the work fails (after the shared transaction's
   * retry alone), each of its items is written again alone, so one bad item fails only its own caller.
   */
  batch<I, O>(writeItems: (trx: Tx, items: I[]) => Promise<O[]>, maxBatch = 200): (item: I) => Promise<O> {
    const queue: Array<Waiting<I, O>> = [];
    let slot = false; // a work is waiting for the next transaction and will take the queue
    const schedule = () => {
      slot = true;
      let taken: Array<Waiting<I, O>> | undefined;
      // The items queued when the transaction reaches this work; the same ones if it runs again alone.
      const take = (): Array<Waiting<I, O>> => {
        if (!taken) {
          slot = false;
          taken = queue.splice(0, maxBatch);
          if (queue.length > 0) schedule();
        }
        return taken;
      };
      this.run((trx) => writeItems(trx, take().map((w) => w.item))).then(
        (out) => take().forEach((w, i) => w.resolve(out[i]!)),
        (err: unknown) => {
          const items = take(); // also when the work never ran (its transaction could not begin)
          if (items.length === 1) return items[0]!.reject(err);
          for (const w of items) this.run((trx) => writeItems(trx, [w.item])).then((out) => w.resolve(out[0]!), (e: unknown) => w.reject(e));
        },
      );
    };
    return (item) =>
      new Promise<O>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        if (!slot) schedule();
      });
  }
}

const sharedWriters = new WeakMap<Db, SharedWriter>();

/** The store's shared writer. */
export function sharedWriterOf(db: Db): SharedWriter {
  let w = sharedWriters.get(db);
  if (!w) sharedWriters.set(db, (w = new SharedWriter(db)));
  return w;
}
