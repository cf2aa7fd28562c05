// Wakes a job-driven worker (the webhook dispatcher, the alert dispatcher, the workflow intake) without a timer
// that holds work: a statement seen on the database's query stream that makes work for it (an insert into the
// table it reads, inside the writer's transaction) enqueues one job of its kind, which the queue runs after that
// transaction commits. While such a job waits no other is enqueued; once it has started (`claimed`), the next
// write enqueues a new one, so work committed during a run is picked up by the following run. A poll every
// `pollMs` is the safety net for work the stream did not show (written by another process, say).
import type { Db } from '../db/index.js';
import type { JobQueue } from './queue.js';

export abstract class JobWaker {
  private queued = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly listener = (q: { sql?: string }) => {
    if (typeof q.sql === 'string') this.observe(q.sql);
  };

  constructor(
    protected readonly db: Db,
    protected readonly jobs: JobQueue,
    private readonly kind: string,
    protected readonly onError: (err: unknown) => void,
  ) {}

  /** A statement sent to the database: calls `wake()` when it makes work. */
  protected abstract observe(sql: string): void;

  /** The safety net: wakes when there is work past the worker's cursor. */
  protected abstract poll(): Promise<void>;

  /** Listens, looks once now (work left by a previous process) and then every `pollMs`. */
  start(pollMs: number): void {
    this.db.on('query', this.listener);
    void this.safePoll();
    this.timer = setInterval(() => void this.safePoll(), pollMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    this.db.off('query', this.listener);
    clearInterval(this.timer);
  }

  /** Called first by the job's handler: work written from now on needs a new job. */
  protected claimed(): void {
    this.queued = false;
  }

  wake(): void {
    if (this.queued || this.stopped) return;
    this.queued = true;
    this.jobs.enqueue(this.db, this.kind, null).catch((err: unknown) => {
      this.queued = false;
      this.onError(err);
    });
  }

  private async safePoll(): Promise<void> {
    try {
      await this.poll();
    } catch (err) {
      this.onError(err);
    }
  }
}
