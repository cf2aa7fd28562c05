// The durable job queue: generic machinery that knows no job kind. Services enqueue inside their own
// transaction (so a job exists exactly when the change that needs it does); the worker leases due jobs (or
// takes over, at commit, those enqueueMany wrote already leased), runs the handler registered for their kind,
// and deletes, reschedules or buries them.
//
// Delivery is at-least-once: a job whose worker died is run again once its lease expires (and every lease
// is released when the appliance starts, since one process owns the database). Handlers must therefore be
// idempotent in effect.
//
// Lanes: a job may name a lane (the destination it waits on: a recipient domain, a webhook endpoint). At most
// `laneConcurrency` jobs of one lane run at once; the lane's other leased jobs wait in memory, holding no
// slot, and start as its running ones finish, oldest first. Without this a backlog for one slow destination
// took every slot (each job waiting there for a connection), and an email to any other domain waited behind
// the whole backlog. Waiting jobs are bounded (`maxParked`, as Postfix bounds its active queue with
// qmgr_message_active_limit); past that the worker leases only jobs that can start at once, skipping the lanes
// at their limit. Such a lease scans past the backlog in the table (about 13 ms per 100,000 rows), so the next
// one starts where it stopped (a cursor): for as long as the lanes it skipped are still skipped, until a job is
// written or rescheduled behind it, and for at most SKIP_CURSOR_MS (a lease that expires puts a job behind it).
// Measured with 100,000 queued for one lane: another lane's job starts in ~1 ms; idle, 2.5% of a core.
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import { Batcher, insertRows } from '../db/batcher.js';
import { execute, nextIds, placeholders, queryRows, type Db, type Queryable } from '../db/index.js';
import { write } from '../db/script.js';

export interface Job<P = unknown> {
  id: number;
  kind: string;
  payload: P;
  runAt: Date;
  /** Runs started so far, this one included. */
  attempts: number;
  /** The lane it waits in (see above), or null. */
  lane: string | null;
}

/**
 * What a handler answers: nothing (done, the job is deleted), FINISHED (done, and the handler deleted the job
 * itself with `finishIn`, in the transaction that recorded its work), or when to run it again.
 */
export type JobOutcome = void | typeof FINISHED | { retryAt: Date; error?: string };
export const FINISHED = 'finished';
export type JobHandler = (job: Job) => Promise<JobOutcome>;

export interface JobSpec {
  kind: string;
  payload: unknown;
  /** Due from then on; now when omitted. */
  runAt?: Date;
  /** The lane (see above). */
  lane?: string | null;
}

export interface EnqueueOptions {
  /** Due from then on; now when omitted. */
  runAt?: Date;
  /** The lane (see above). */
  lane?: string | null;
  /** At most one job per key: a second enqueue with the same key is ignored while the first exists. */
  dedupeKey?: string;
}

export interface WorkerOptions {
  /** Handlers running at once. */
  concurrency: number;
  /** Jobs leased per query. */
  batch: number;
  /** How long a leased job is held before another worker may take it (ms). */
  leaseMs: number;
  /** Poll interval when idle (ms); enqueues wake the worker sooner. */
  pollMs: number;
  /** A handler that throws this many times is buried (state dead) for an operator to look at. */
  maxAttempts: number;
  /**
   * Jobs of one lane running at once. Default: three quarters of `concurrency` (at least two, or all when
   * fewer), so that a quarter is always there for other lanes: half cost a single-destination load 17% of its
   * deliveries per second on bench:send's batch phase (fewer in flight), three quarters nothing measurable.
   */
  laneConcurrency?: number;
  /** Leased jobs waiting for their lane, at most (past it the worker leases only jobs that can start at once). */
  maxParked: number;
}

export const DEFAULT_WORKER_OPTIONS: WorkerOptions = { concurrency: 32, batch: 64, leaseMs: 5 * 60_000, pollMs: 250, maxAttempts: 10, maxParked: 20_000 };

/** How long a cursor past full lanes is trusted before a lease scans from the oldest due job again (ms). */
const SKIP_CURSOR_MS = 10_000;
/** A cursor past full lanes stays this far behind the clock (ms), for jobs written but not yet committed. */
const SKIP_CURSOR_SLACK_MS = 5_000;

interface SkipCursor {
  runAt: number;
  id: number;
  lanes: Set<string>;
  since: number;
}

interface JobRow {
  id: number;
  kind: string;
  payload: string;
  run_at: number;
  attempts: number;
  lane: string | null;
}

/** Wait after the n-th thrown error: 10 s, 20 s, 40 s … capped at an hour. */
export function errorBackoffMs(attempts: number): number {
  return Math.min(10_000 * 2 ** Math.max(0, attempts - 1), 3_600_000);
}

export class JobQueue {
  private readonly handlers = new Map<string, JobHandler>();
  private readonly running = new Set<Promise<void>>();
  private readonly opts: Required<WorkerOptions>;
  /** Jobs held by this worker (running or parked), by id: a lease that finds one again does not run it twice. */
  private readonly held = new Set<number>();
  /** Per lane: jobs running, and leased jobs waiting for one of them to finish (oldest first). */
  private readonly lanes = new Map<string, { running: number; parked: Job[] }>();
  private parked = 0;
  private renewTimer: NodeJS.Timeout | undefined;
  private timer: NodeJS.Timeout | undefined;
  private filling = false;
  private refill = false;
  /**
   * Due jobs may be waiting unleased: false once a lease found fewer than it asked for, true again when an
   * enqueue commits, a poll comes round or a lease was cut short by the concurrency limit. A finished job
   * frees a slot, but looks for more work only while this is true: at moderate load nearly every finish
   * would otherwise run a lease that finds nothing, on the single write connection the send path shares.
   */
  private mayHaveDue = true;
  /** Where the last lease past full lanes stopped, the lanes it skipped, and when its scan began from the start. */
  private skipCursor: SkipCursor | null = null;
  private cursorEpoch = 0;
  /** Slots promised to jobs enqueued already leased, whose transaction has not committed yet. */
  private reserved = 0;
  private started = false;
  private stopped = false;
  /** Finished jobs are deleted together: one statement for all that finish while the last delete ran. */
  private readonly finished = new Batcher<number, void>(async (ids) => {
    await this.db('jobs').whereIn('id', ids).delete();
    return ids.map(() => undefined);
  }, 500);

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly log: Logger,
    opts: Partial<WorkerOptions> = {},
  ) {
    const merged = { ...DEFAULT_WORKER_OPTIONS, ...opts };
    this.opts = { ...merged, laneConcurrency: merged.laneConcurrency ?? Math.max(Math.min(merged.concurrency, 2), merged.concurrency - Math.floor(merged.concurrency / 4)) };
  }

  /** Slots not running a job. */
  private idleSlots(): number {
    return this.opts.concurrency - this.running.size - this.reserved;
  }

  /** Slots the worker may lease any due job for: idle ones, unless as many jobs as allowed wait for their lane. */
  private freeSlots(): number {
    return this.parked >= this.opts.maxParked ? 0 : this.idleSlots();
  }

  /** Lanes running as many jobs as they may (a job leased for one of them would wait). */
  private fullLanes(): string[] {
    return [...this.lanes].filter(([, lane]) => lane.running >= this.opts.laneConcurrency).map(([name]) => name);
  }

  /**
   * Adds a job, in the caller's transaction when `q` is one; the worker is woken once it commits.
   * Returns the job id, or null when `dedupeKey` already names a job.
   */
  async enqueue(q: Queryable, kind: string, payload: unknown, opts: EnqueueOptions = {}): Promise<number | null> {
    const now = this.clock.now().getTime();
    const row = {
      kind,
      payload: JSON.stringify(payload ?? null),
      run_at: (opts.runAt ?? this.clock.now()).getTime(),
      created_at: now,
      dedupe_key: opts.dedupeKey ?? null,
      lane: opts.lane ?? null,
    };
    let id: number;
    try {
      [id] = (await q('jobs').insert(row)) as [number];
    } catch (err) {
      if (opts.dedupeKey && /UNIQUE constraint failed: jobs.dedupe_key/.test(String((err as Error).message))) return null;
      throw err;
    }
    if (row.run_at <= now) this.wakeAfter(q);
    this.dueAt(q, row.run_at);
    return id;
  }

  /** Whether a job named by `dedupeKey` is still to run (waiting or running; a dead one is not), as `q` sees it. */
  async waiting(q: Queryable, dedupeKey: string): Promise<boolean> {
    return (await q('jobs').where({ dedupe_key: dedupeKey }).whereNot({ state: 'dead' }).first('id')) !== undefined;
  }

  /**
   * A job is due at `runAt` once `q` commits. A cursor past full lanes is at least SKIP_CURSOR_SLACK_MS behind
   * the clock: a job due before that may be behind it, so the cursor is dropped, and one a lease in flight is
   * about to record too (`cursorEpoch`).
   */
  private dueAt(q: Queryable, runAt: number): void {
    this.afterCommit(q, () => {
      if (runAt > this.clock.now().getTime() - SKIP_CURSOR_SLACK_MS) return;
      this.cursorEpoch++;
      this.skipCursor = null;
    });
  }

  /**
   * Adds several jobs with one statement, in the caller's transaction (which must be a write transaction:
   * the ids are allocated from the table's AUTOINCREMENT sequence, which only the writer may read safely).
   * Returns their ids in order. No dedupe keys here. `firstId`: the ids were taken already (`nextIds` of
   * the same transaction, when the caller needs them before the jobs are written).
   *
   * Jobs due now go straight to this worker while it has free slots and no older due job waits unleased
   * (`mayHaveDue`): they are written already leased and run once the transaction commits, without a lease
   * statement to find them (at moderate load the send path would otherwise run one write of its own for
   * every transaction that accepts email). A crash before they finish leaves leases that start() releases.
   */
  async enqueueMany(q: Queryable, specs: JobSpec[], firstId?: number): Promise<number[]> {
    if (specs.length === 0) return [];
    const now = this.clock.now().getTime();
    const first = firstId ?? (await nextIds(q, ['jobs'])).jobs;
    const rows = specs.map((s, i) => ({
      id: first + i,
      kind: s.kind,
      payload: JSON.stringify(s.payload ?? null),
      run_at: (s.runAt ?? this.clock.now()).getTime(),
      created_at: now,
      dedupe_key: null,
      lease_until: null as number | null,
      attempts: 0,
      lane: s.lane ?? null,
    }));
    const due = rows.filter((r) => r.run_at <= now);
    const handed = due.slice(0, this.reserve(due.length));
    for (const r of handed) {
      r.lease_until = now + this.opts.leaseMs;
      r.attempts = 1;
    }
    try {
      await insertRows(q, 'jobs', rows);
    } catch (err) {
      this.reserved -= handed.length;
      throw err;
    }
    if (handed.length > 0) this.afterCommit(q, () => this.adopt(handed), () => (this.reserved -= handed.length));
    if (due.length > handed.length) this.wakeAfter(q);
    this.dueAt(q, rows.reduce((min, r) => Math.min(min, r.run_at), Infinity));
    return rows.map((r) => r.id);
  }

  /** Free slots for jobs enqueued already leased (none unless the worker runs and nothing older is due). */
  private reserve(n: number): number {
    if (!this.started || this.stopped || this.mayHaveDue) return 0;
    const k = Math.max(0, Math.min(n, this.freeSlots()));
    this.reserved += k;
    return k;
  }

  /** Runs jobs written already leased, once their transaction committed. */
  private adopt(rows: JobRow[]): void {
    this.reserved -= rows.length;
    if (this.stopped) return; // they keep their leases, which the next start() releases
    for (const r of rows) this.launch(jobOf(r));
  }

  /** Wakes the worker once `q`'s transaction commits (at once when `q` is not a transaction). */
  private wakeAfter(q: Queryable): void {
    this.afterCommit(q, () => this.wake());
  }

  /** Runs `committed` once `q`'s transaction commits (at once when `q` is not one), `failed` if it rolls back. */
  private afterCommit(q: Queryable, committed: () => void, failed: () => void = () => undefined): void {
    const tx = q as Partial<{ executionPromise: Promise<unknown>; isTransaction: boolean }>;
    if (tx.isTransaction && tx.executionPromise) tx.executionPromise.then(committed, failed);
    else committed();
  }

  /**
   * Deletes finished jobs in the caller's transaction (a handler's, which then answers FINISHED): the work and
   * the end of its job are then written together, and a crash cannot leave done work with its job to run again.
   */
  async finishIn(q: Queryable, ids: number[]): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      await write(q, `DELETE FROM jobs WHERE id IN (${placeholders(chunk.length)})`, chunk);
    }
  }

  /**
   * Moves a waiting job to another time (e.g. a rescheduled send). False when it no longer waits. A job
   * parked for its lane has not started: it waits too.
   */
  async reschedule(q: Queryable, id: number, runAt: Date): Promise<boolean> {
    this.dueAt(q, runAt.getTime());
    if (this.unpark(q, id)) {
      const n = await execute(q, `UPDATE jobs SET run_at = ?, lease_until = NULL, attempts = attempts - 1 WHERE id = ? AND state = 'ready'`, [runAt.getTime(), id]);
      return n > 0;
    }
    const n = await q('jobs').where({ id, state: 'ready' }).whereNull('lease_until').update({ run_at: runAt.getTime() });
    return n > 0;
  }

  /** Removes a job that has not started (e.g. a cancelled send), parked ones included. False when it is running or gone. */
  async cancel(q: Queryable, id: number): Promise<boolean> {
    const query = q('jobs').where({ id });
    const n = await (this.unpark(q, id) ? query : query.whereNull('lease_until')).delete();
    return n > 0;
  }

  /**
   * Takes a parked job out of its lane before `q` changes its row (it never starts); if `q`'s transaction
   * rolls back, the job is launched again (it waits in its lane once more). False when it is not parked here.
   */
  private unpark(q: Queryable, id: number): boolean {
    for (const lane of this.lanes.values()) {
      const i = lane.parked.findIndex((j) => j.id === id);
      if (i < 0) continue;
      const job = lane.parked.splice(i, 1)[0]!;
      this.parked--;
      this.held.delete(id);
      this.afterCommit(q, () => undefined, () => {
        if (!this.stopped) this.launch(job);
      });
      return true;
    }
    return false;
  }

  register(kind: string, handler: JobHandler): void {
    if (this.handlers.has(kind)) throw new Error(`job kind ${kind} already has a handler`);
    this.handlers.set(kind, handler);
  }

  /** Starts working. Leases left by a previous process are released: this process owns the queue now. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.db('jobs').whereNotNull('lease_until').update({ lease_until: null });
    this.wake();
  }

  /**
   * Stops leasing and waits for running handlers to finish, or at most `graceMs` when given: a handler still
   * running then keeps its lease, which expires (start() releases it after a restart): at-least-once.
   */
  async stop(graceMs?: number): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.renewTimer);
    this.renewTimer = undefined;
    // Parked jobs never started: their leases go, and the attempt their lease counted.
    const parked: number[] = [];
    for (const lane of this.lanes.values()) for (const job of lane.parked.splice(0)) parked.push(job.id);
    this.parked = 0;
    for (let i = 0; i < parked.length; i += 500) {
      const chunk = parked.slice(i, i + 500);
      await execute(this.db, `UPDATE jobs SET lease_until = NULL, attempts = attempts - 1 WHERE id IN (${placeholders(chunk.length)})`, chunk).catch((err: unknown) =>
        this.log.error({ err }, 'job queue: could not release the leases of parked jobs (start() will)'),
      );
    }
    for (const id of parked) this.held.delete(id);
    const settled = Promise.allSettled([...this.running]);
    if (graceMs === undefined) {
      await settled;
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }

  /** Looks for due work now rather than at the next poll. */
  wake(): void {
    this.mayHaveDue = true;
    this.kick();
  }

  private kick(): void {
    if (!this.started || this.stopped) return;
    setImmediate(() => void this.fill());
  }

  /**
   * Runs every job due at the clock's current time, and those they make due, until none is left
   * (tests move a fake clock and then drain). Works whether or not the worker was started.
   */
  async drain(): Promise<number> {
    let ran = 0;
    for (;;) {
      const free = this.freeSlots();
      const jobs = free > 0 ? await this.leaseNew(Math.min(free, this.opts.batch)) : [];
      for (const job of jobs) this.launch(job);
      ran += jobs.length;
      if (this.running.size === 0) return ran;
      await Promise.race(this.running);
    }
  }

  /** Count of jobs by state, for health and tests. */
  async stats(): Promise<{ ready: number; dead: number; due: number }> {
    const now = this.clock.now().getTime();
    const rows = (await this.db('jobs')
      .select('state')
      .count({ n: '*' })
      .sum({ due: this.db.raw('CASE WHEN run_at <= ? THEN 1 ELSE 0 END', [now]) })
      .groupBy('state')) as Array<{ state: string; n: number; due: number | null }>;
    const by = (s: string) => rows.find((r) => r.state === s);
    return { ready: Number(by('ready')?.n ?? 0), dead: Number(by('dead')?.n ?? 0), due: Number(by('ready')?.due ?? 0) };
  }

  private async fill(): Promise<void> {
    if (this.filling) {
      this.refill = true;
      return;
    }
    this.filling = true;
    try {
      do {
        this.refill = false;
        while (!this.stopped) {
          const free = this.idleSlots();
          if (free <= 0) break;
          const want = Math.min(free, this.opts.batch);
          // As many jobs as allowed wait for their lanes: only jobs that can start now.
          const saturated = this.parked >= this.opts.maxParked;
          const leased = saturated ? await this.leasePastFullLanes(want) : await this.lease(want);
          // stop() came while the lease was under way: its jobs keep their leases, which the next start() releases.
          if (this.stopped) break;
          const jobs = await this.dropHeld(leased);
          for (const job of jobs) this.launch(job);
          if (leased.length < want) {
            // Everything due was taken, unless a wake came in meanwhile (then `refill` looks again); past full
            // lanes, their jobs are still due.
            if (!this.refill && !saturated) this.mayHaveDue = false;
            break;
          }
        }
      } while (this.refill && !this.stopped);
    } catch (err) {
      this.log.error({ err }, 'job queue: leasing failed');
    } finally {
      this.filling = false;
      if (!this.stopped) {
        clearTimeout(this.timer);
        this.timer = setTimeout(() => this.wake(), this.opts.pollMs);
        this.timer.unref();
      }
    }
  }

  /** lease(), less the jobs this worker holds already. */
  private async leaseNew(limit: number): Promise<Job[]> {
    return this.dropHeld(await this.lease(limit));
  }

  /**
   * The leased jobs this worker does not hold already. One it holds (parked, or running longer than a lease) was
   * taken again because its lease ran out: it is not run twice, and that lease counted no attempt.
   */
  private async dropHeld(leased: Job[]): Promise<Job[]> {
    const again = leased.filter((j) => this.held.has(j.id)).map((j) => j.id);
    if (again.length === 0) return leased;
    await execute(this.db, `UPDATE jobs SET attempts = attempts - 1 WHERE id IN (${placeholders(again.length)})`, again);
    return leased.filter((j) => !this.held.has(j.id));
  }

  /** Leases up to `limit` due jobs, oldest first (see lease()), none of a lane at its limit; see the top. */
  private async leasePastFullLanes(limit: number): Promise<Job[]> {
    const skip = this.fullLanes();
    const c = this.skipCursor;
    const now = this.clock.now().getTime();
    const from = c && now - c.since < SKIP_CURSOR_MS && [...c.lanes].every((l) => skip.includes(l)) ? c : null;
    const horizon = now - SKIP_CURSOR_SLACK_MS;
    const epoch = this.cursorEpoch;
    const jobs = await this.lease(limit, skip, from ?? undefined);
    if (epoch !== this.cursorEpoch) return jobs; // a job went due behind where this lease looked: no cursor
    const last = jobs.at(-1);
    // The lease stopped at its last job, or saw every due one. Jobs due in the last few seconds are looked at
    // again: one may have been written (its run_at stamped) by a transaction that had not committed yet.
    const end = jobs.length === limit && last && last.runAt.getTime() <= horizon ? { runAt: last.runAt.getTime(), id: last.id } : { runAt: horizon, id: Number.MAX_SAFE_INTEGER };
    this.skipCursor = { ...end, lanes: new Set(skip), since: from?.since ?? now };
    return jobs;
  }

  /** Leases up to `limit` due jobs, oldest first: none of the lanes in `skip`, only after `after` when given. */
  private async lease(limit: number, skip: string[] = [], after?: { runAt: number; id: number }): Promise<Job[]> {
    const now = this.clock.now().getTime();
    const where = [
      ...(skip.length ? [`(lane IS NULL OR lane NOT IN (${placeholders(skip.length)}))`] : []),
      ...(after ? ['run_at >= ? AND (run_at > ? OR id > ?)'] : []),
    ];
    const rows = await queryRows<JobRow>(
      this.db,
      `UPDATE jobs SET lease_until = ?, attempts = attempts + 1
       WHERE id IN (
         SELECT id FROM jobs
         WHERE state = 'ready' AND run_at <= ? AND (lease_until IS NULL OR lease_until <= ?) ${where.map((w) => `AND ${w}`).join(' ')}
         ORDER BY run_at, id LIMIT ?)
       RETURNING id, kind, payload, run_at, attempts, lane`,
      [now + this.opts.leaseMs, now, now, ...skip, ...(after ? [after.runAt, after.runAt, after.id] : []), limit],
    );
    return rows.sort((a, b) => a.run_at - b.run_at || a.id - b.id).map(jobOf);
  }

  /** Runs a job now, or parks it when its lane is full. A job this worker holds already is not run twice. */
  private launch(job: Job): void {
    if (this.held.has(job.id)) return;
    this.held.add(job.id);
    if (job.lane !== null) {
      let lane = this.lanes.get(job.lane);
      if (!lane) this.lanes.set(job.lane, (lane = { running: 0, parked: [] }));
      if (lane.running >= this.opts.laneConcurrency) {
        lane.parked.push(job);
        this.parked++;
        this.renewParkedLeases();
        return;
      }
      lane.running++;
    }
    this.run(job);
  }

  private run(job: Job): void {
    const p: Promise<void> = this.execute(job).finally(() => {
      this.running.delete(p);
      this.held.delete(job.id);
      if (job.lane !== null) this.laneFinished(job.lane);
      if (this.mayHaveDue) this.kick();
    });
    this.running.add(p);
  }

  /** A job of `name` finished: its oldest parked job starts in its place. */
  private laneFinished(name: string): void {
    const lane = this.lanes.get(name)!;
    lane.running--;
    const next = this.stopped ? undefined : lane.parked.shift();
    if (next) {
      this.parked--;
      lane.running++;
      this.run(next);
    } else if (lane.running === 0) {
      this.lanes.delete(name);
    }
  }

  /**
   * Parked jobs keep their leases while they wait (which may be longer than a lease: a slow destination's
   * backlog), renewed every third of a lease while any is parked; otherwise they would be due again and each
   * lease would find them first, before any other work.
   */
  private renewParkedLeases(): void {
    if (this.renewTimer) return;
    this.renewTimer = setInterval(() => {
      const ids = [...this.lanes.values()].flatMap((l) => l.parked.map((j) => j.id));
      if (ids.length === 0) {
        clearInterval(this.renewTimer);
        this.renewTimer = undefined;
        return;
      }
      const until = this.clock.now().getTime() + this.opts.leaseMs;
      void (async () => {
        for (let i = 0; i < ids.length; i += 500) {
          const chunk = ids.slice(i, i + 500);
          // A job unparked meanwhile (cancelled, rescheduled, or run and retried) has no lease to renew.
          await execute(this.db, `UPDATE jobs SET lease_until = ? WHERE lease_until IS NOT NULL AND id IN (${placeholders(chunk.length)})`, [until, ...chunk]);
        }
      })().catch((err: unknown) => this.log.error({ err }, 'job queue: could not renew the leases of parked jobs'));
    }, Math.max(1000, Math.floor(this.opts.leaseMs / 3)));
    this.renewTimer.unref();
  }

  private async execute(job: Job): Promise<void> {
    const handler = this.handlers.get(job.kind);
    try {
      if (!handler) throw new Error(`no handler registered for job kind ${job.kind}`);
      const outcome = await handler(job);
      if (outcome === FINISHED) return;
      if (outcome && outcome.retryAt) {
        await this.db('jobs')
          .where({ id: job.id })
          .update({ run_at: outcome.retryAt.getTime(), lease_until: null, last_error: outcome.error ?? null });
        this.dueAt(this.db, outcome.retryAt.getTime());
      } else {
        await this.finished.submit(job.id);
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const dead = !handler || job.attempts >= this.opts.maxAttempts;
      this.log.error({ err, job: job.id, kind: job.kind, attempts: job.attempts, dead }, 'job failed');
      await this.db('jobs')
        .where({ id: job.id })
        .update({
          state: dead ? 'dead' : 'ready',
          run_at: this.clock.now().getTime() + errorBackoffMs(job.attempts),
          lease_until: null,
          last_error: message.slice(0, 2000),
        })
        .catch((e: unknown) => this.log.error({ err: e, job: job.id }, 'job queue: could not record a failure'));
    }
  }
}

const jobOf = (r: JobRow): Job => ({
  id: r.id,
  kind: r.kind,
  payload: JSON.parse(r.payload) as unknown,
  runAt: new Date(Number(r.run_at)),
  attempts: r.attempts,
  lane: r.lane ?? null,
});
