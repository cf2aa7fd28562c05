// Prometheus metrics (issue 37 §2), one registry per appliance (a test process may run two). Counters are
// incremented where things happen (a few integer adds, no I/O); the queue is read from the database at scrape time
// by collectors registered with `onScrape`. Names follow Prometheus conventions: `mail_` prefix, units in names,
// `_total` counters, and bounded labels only (an outcome, a bounce category, a record type: never an address or id).
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  private readonly collectors: Array<() => Promise<void>> = [];

  readonly emailsAccepted = new Counter({ name: 'mail_emails_accepted_total', help: 'Emails accepted for sending (API, SMTP submission), each counted once', labelNames: ['source'] as const, registers: [this.registry] });
  readonly recipientOutcomes = new Counter({
    name: 'mail_recipient_outcomes_total',
    help: 'Delivery attempt outcomes per recipient: delivered, sent (via relay), bounced, deferred, failed; reason is the bounce category',
    labelNames: ['outcome', 'reason'] as const,
    registers: [this.registry],
  });
  readonly deliveryLatency = new Histogram({
    name: 'mail_delivery_latency_seconds',
    help: 'From acceptance to the first successful hand-over of an email (delivered or sent to the relay)',
    buckets: [0.1, 0.5, 1, 2, 5, 15, 60, 300, 1800, 3600, 21600],
    registers: [this.registry],
  });
  readonly dnsLookups = new Counter({ name: 'mail_dns_lookups_total', help: 'DNS look-ups by record type', labelNames: ['type'] as const, registers: [this.registry] });
  readonly dnsFailures = new Counter({ name: 'mail_dns_lookup_failures_total', help: 'DNS look-ups that got no answer (timeout, SERVFAIL, refused); "no such record" is an answer', labelNames: ['type'] as const, registers: [this.registry] });
  readonly jobsReady = new Gauge({ name: 'mail_queue_jobs', help: 'Jobs in the durable queue by state (ready: waiting or due; dead: given up)', labelNames: ['state'] as const, registers: [this.registry] });
  readonly jobsDue = new Gauge({ name: 'mail_queue_due_jobs', help: 'Ready jobs whose run time has come', registers: [this.registry] });
  readonly oldestDue = new Gauge({ name: 'mail_queue_oldest_due_age_seconds', help: 'How long the oldest due job has been due (0 when none)', registers: [this.registry] });
  readonly webhookAttempts = new Counter({
    name: 'mail_webhook_attempts_total',
    help: 'Webhook delivery attempts by result: success (2xx), http_3xx/4xx/5xx, no_response (timeout, refused, connection error)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly smtpMessages = new Counter({ name: 'mail_smtp_messages_received_total', help: 'Messages received over SMTP by listener (mx, submission)', labelNames: ['listener'] as const, registers: [this.registry] });
  readonly sessionsOpened = new Counter({ name: 'mail_sessions_opened_total', help: 'Protocol connections accepted by listener', labelNames: ['listener'] as const, registers: [this.registry] });
  readonly sessions = new Gauge({ name: 'mail_sessions', help: 'Open protocol sessions by listener', labelNames: ['listener'] as const, registers: [this.registry] });

  /** From BEGIN IMMEDIATE to COMMIT or ROLLBACK: how long a write transaction holds SQLite's one writer. */
  readonly dbWriteTransaction = new Histogram({
    name: 'mail_db_write_transaction_seconds',
    help: 'SQLite write transactions: time held, from BEGIN IMMEDIATE to its COMMIT or ROLLBACK',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly dbWriteRollbacks = new Counter({ name: 'mail_db_write_transaction_rollbacks_total', help: 'SQLite write transactions that ended in a ROLLBACK (an error inside, or a failed COMMIT)', registers: [this.registry] });
  /** From asking for a transaction to holding the write lock: the wait for the one connection and BEGIN IMMEDIATE. */
  readonly dbWriteLockWait = new Histogram({
    name: 'mail_db_write_lock_wait_seconds',
    help: 'SQLite write transactions: time waited for the writer (the one connection, then the write lock) before BEGIN IMMEDIATE succeeded',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  // Scheduled backups (MAIL_BACKUP_SCHEDULE): the last run's outcome, set from the stored record at start.
  readonly backupLastSuccess = new Gauge({ name: 'mail_backup_last_success_timestamp_seconds', help: 'When the last scheduled backup that succeeded finished (Unix time; 0: none yet)', registers: [this.registry] });
  readonly backupLastFailure = new Gauge({ name: 'mail_backup_last_failure_timestamp_seconds', help: 'When the last scheduled backup that failed gave up (Unix time; 0: none)', registers: [this.registry] });
  readonly backupLastDuration = new Gauge({ name: 'mail_backup_last_duration_seconds', help: 'How long the last scheduled backup took', registers: [this.registry] });
  readonly backupLastSize = new Gauge({ name: 'mail_backup_last_size_bytes', help: 'Size of the last successful scheduled backup file', registers: [this.registry] });
  readonly backups = new Counter({ name: 'mail_backups_total', help: 'Scheduled backups run by this process, by result (success, failure)', labelNames: ['result'] as const, registers: [this.registry] });
  readonly threadHeapUsed = new Gauge({ name: 'mail_thread_heap_used_bytes', help: 'V8 heap in use per isolate: main, render-<n>, auth-<n> (worker threads start on demand and retire when idle)', labelNames: ['thread'] as const, registers: [this.registry] });
  readonly threadHeapTotal = new Gauge({ name: 'mail_thread_heap_total_bytes', help: 'V8 heap reserved per isolate (main, render-<n>, auth-<n>)', labelNames: ['thread'] as const, registers: [this.registry] });
  readonly threadExternal = new Gauge({ name: 'mail_thread_external_bytes', help: 'Memory outside the V8 heap held by JS objects (Buffers, ArrayBuffers) per isolate', labelNames: ['thread'] as const, registers: [this.registry] });
  readonly arrayBuffers = new Gauge({ name: 'mail_process_array_buffers_bytes', help: "Memory of ArrayBuffers and Buffers of the main thread (process.memoryUsage().arrayBuffers)", registers: [this.registry] });
  readonly processPss = new Gauge({ name: 'mail_process_pss_bytes', help: 'Proportional set size of the whole process, all threads (Linux /proc/self/smaps_rollup): what the box actually spends on it', registers: [this.registry] });

  constructor() {
    // Event-loop lag, heap and RSS, GC, handles: prom-client's default process metrics, under our prefix.
    collectDefaultMetrics({ register: this.registry, prefix: 'mail_', eventLoopMonitoringPrecision: 20 });
  }

  /** `collect` runs before each scrape (gauges read from the database or the listeners). */
  onScrape(collect: () => Promise<void>): void {
    this.collectors.push(collect);
  }

  /** The text exposition format (and its content type). */
  async scrape(): Promise<{ contentType: string; body: string }> {
    await Promise.all(this.collectors.map((c) => c()));
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** Counts a listener's connections: opened (counter) and open now (gauge), from the TCP accept to the close. */
export function trackSessions(server: { on(event: 'connection', listener: (socket: import('node:net').Socket) => void): unknown }, metrics: Metrics, listener: string): void {
  server.on('connection', (socket) => {
    metrics.sessionsOpened.inc({ listener });
    metrics.sessions.inc({ listener });
    socket.once('close', () => metrics.sessions.dec({ listener }));
  });
}
