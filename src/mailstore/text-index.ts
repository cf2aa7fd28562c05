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
/**
 * The index job runs this long after the first source it is for was stored, and again this long after a batch
 * that left fewer than a full batch pending: sources gather into batches (one FTS5 segment and a few statements
 * for up to INDEX_BATCH sources), and SEARCH scans at most about this long's worth of new mail itself.
 */
export const INDEX_DELAY_MS = 500;
/** A job run indexes full batches for about this long, then lets other jobs run (rescheduled for now). */
const RUN_SLICE_MS = 2_000;

export interface TextIndexer {
  /** In the transaction that stores new sources: marks them unindexed, and makes sure the index job will run. */
  markNew(trx: Tx, sha256s: readonly string[]): Promise<void>;
  /** The transaction `markNew` wrote in failed: it enqueued nothing. */
  rolledBack(trx: Tx): void;
  /**
   * Indexes up to a batch of unindexed sources in one transaction: how many were indexed, whether that was a full
   * batch, and whether any is left pending. When none is left the job `finish` is deleted in that transaction.
   */
  indexBatch(finish?: number): Promise<{ indexed: number; full: boolean; left: boolean }>;
}

export function createTextIndexer(core: Core, jobs?: JobQueue): TextIndexer {
  let queued = false;
  const enqueuedBy = new WeakSet<Tx>();

  async function indexBatch(finish?: number): Promise<{ indexed: number; full: boolean; left: boolean }> {
    const heads = await queryRows<{ sha256: string; size: number }>(
      core.reads,
      'SELECT p.sha256, b.size FROM mail_fts_pending p JOIN mail_blobs b ON b.sha256 = p.sha256 LIMIT ?',
      [INDEX_BATCH],
    );
    let bytes = 0;
    let n = 0;
    while (n < heads.length && (n === 0 || bytes + heads[n]!.size <= INDEX_BATCH_BYTES)) bytes += heads[n++]!.size;
    const full = heads.length === INDEX_BATCH || n < heads.length;
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
      // What the writer sees pending now (a delivery may have committed since the read). A pending row without
      // its source cannot be (the blob's trigger deletes it): dropped if it is.
      await execute(trx, 'DELETE FROM mail_fts_pending WHERE sha256 NOT IN (SELECT sha256 FROM mail_blobs) AND ? = 0', [texts.length]);
      const left = (await queryRows(trx, 'SELECT 1 FROM mail_fts_pending LIMIT 1')).length > 0;
      if (!left) {
        queued = false;
        if (finish !== undefined && jobs) await jobs.finishIn(trx, [finish]);
      }
      return { indexed: still.size, full, left };
    });
  }

  async function run(job: Job): Promise<JobOutcome> {
    const start = performance.now();
    for (;;) {
      const { full, left } = await indexBatch(job.id);
      if (!left) return FINISHED;
      if (!full) return { retryAt: new Date(core.clock.now().getTime() + INDEX_DELAY_MS) };
      if (performance.now() - start > RUN_SLICE_MS) return { retryAt: core.clock.now() };
    }
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
      await jobs.enqueue(trx, INDEX_JOB, null, { runAt: new Date(core.clock.now().getTime() + INDEX_DELAY_MS) });
    },
    rolledBack(trx) {
      if (enqueuedBy.has(trx)) queued = false;
    },
    indexBatch,
  };
}
