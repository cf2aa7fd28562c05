// The full-text index written off the path that stores a message (issue 36: the index's insert cost ~2 ms of
// CPU per message inside the transaction before the 250, and reading the message's text for it another parse
// on the event loop). A stored source gets a "not indexed yet" row (`mail_fts_pending`, migration 031) in the
// transaction that stores it; the index job (INDEX_JOB, one durable job while any is pending) reads a batch of
// such sources, computes their text outside any transaction, and indexes the batch in one write transaction
// (FTS5 writes one segment per transaction: one for many documents, not one per delivery batch). Until then
// SEARCH scans the folder's unindexed messages itself (search-text.ts), so an answer never misses a message.
//
// The job exists exactly while sources are pending: a transaction that marks one enqueues the job unless this
// process has one queued (`queued`); the job deletes itself (finishIn) in the write transaction that finds
// nothing pending, and clears `queued` there, so a delivery committed after it enqueues a new one. After a
// restart `queued` starts false: the first delivery enqueues a job beside any left from before (harmless: each
// batch takes only the rows still pending).
import { performance } from 'node:perf_hooks';
import { execute, placeholders, queryRows, type Tx } from '../db/index.js';
import { write } from '../db/script.js';
import { FINISHED, type Job, type JobOutcome, type JobQueue } from '../jobs/queue.js';
import type { Core } from './rows.js';
import { indexSources, searchTextOf } from './search-text.js';

export const INDEX_JOB = 'mailstore.index';
/** Sources indexed per transaction, at most (and at most INDEX_BATCH_BYTES of them). */
export const INDEX_BATCH = 200;
const INDEX_BATCH_BYTES = 8 * 1024 * 1024;
/** A job run indexes for about this long, then lets other jobs run (rescheduled for now). */
const RUN_SLICE_MS = 2_000;

export interface TextIndexer {
  /** In the transaction that stores new sources: marks them unindexed, and makes sure the index job will run. */
  markNew(trx: Tx, sha256s: readonly string[]): Promise<void>;
  /** The transaction `markNew` wrote in failed: it enqueued nothing. */
  rolledBack(trx: Tx): void;
  /**
   * Indexes up to INDEX_BATCH unindexed sources in one transaction; answers how many were indexed, or 0 when
   * none is left (then, with `finish`, that job is deleted in the same transaction).
   */
  indexBatch(finish?: number): Promise<number>;
}

export function createTextIndexer(core: Core, jobs?: JobQueue): TextIndexer {
  let queued = false;
  const enqueuedBy = new WeakSet<Tx>();

  async function indexBatch(finish?: number): Promise<number> {
    const heads = await queryRows<{ sha256: string; size: number }>(
      core.reads,
      'SELECT p.sha256, b.size FROM mail_fts_pending p JOIN mail_blobs b ON b.sha256 = p.sha256 LIMIT ?',
      [INDEX_BATCH],
    );
    let bytes = 0;
    let n = 0;
    while (n < heads.length && (n === 0 || bytes + heads[n]!.size <= INDEX_BATCH_BYTES)) bytes += heads[n++]!.size;
    const wanted = heads.slice(0, n).map((h) => h.sha256);
    const sources = wanted.length
      ? await queryRows<{ sha256: string; raw: Buffer }>(core.reads, `SELECT sha256, raw FROM mail_blobs WHERE sha256 IN (${placeholders(wanted.length)})`, wanted)
      : [];
    const texts = sources.map((s) => ({ sha256: s.sha256, text: searchTextOf(s.raw) }));
    return core.db.transaction(async (trx) => {
      // Only the rows still pending (a source deleted since, or indexed by another run, is not).
      const still = texts.length
        ? new Set((await queryRows<{ sha256: string }>(trx, `DELETE FROM mail_fts_pending WHERE sha256 IN (${placeholders(texts.length)}) RETURNING sha256`, texts.map((t) => t.sha256))).map((r) => r.sha256))
        : new Set<string>();
      await indexSources(trx, texts.filter((t) => still.has(t.sha256)));
      if (texts.length > 0) return still.size || 1; // went forward (or another run did): look again
      // Nothing read: done when the writer sees nothing pending either (a delivery may have committed since the read).
      const [left] = await queryRows<{ sha256: string }>(trx, 'SELECT sha256 FROM mail_fts_pending LIMIT 1');
      if (left) {
        // A pending row without its source (cannot happen while the trigger holds): drop it.
        await execute(trx, 'DELETE FROM mail_fts_pending WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM mail_blobs WHERE sha256 = ?)', [left.sha256, left.sha256]);
        return 1;
      }
      queued = false;
      if (finish !== undefined && jobs) await jobs.finishIn(trx, [finish]);
      return 0;
    });
  }

  async function run(job: Job): Promise<JobOutcome> {
    const start = performance.now();
    while ((await indexBatch(job.id)) > 0) {
      if (performance.now() - start > RUN_SLICE_MS) return { retryAt: core.clock.now() };
    }
    return FINISHED;
  }

  if (jobs) jobs.register(INDEX_JOB, run);

  return {
    async markNew(trx, sha256s) {
      if (sha256s.length === 0) return;
      for (let i = 0; i < sha256s.length; i += 500) {
        const chunk = sha256s.slice(i, i + 500);
        await write(trx, `INSERT INTO mail_fts_pending (sha256) VALUES ${chunk.map(() => '(?)').join(', ')} ON CONFLICT DO NOTHING`, chunk);
      }
      if (!jobs || queued) return;
      queued = true;
      enqueuedBy.add(trx);
      await jobs.enqueue(trx, INDEX_JOB, null);
    },
    rolledBack(trx) {
      if (enqueuedBy.has(trx)) queued = false;
    },
    indexBatch,
  };
}
