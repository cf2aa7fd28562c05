// Webhook delivery attempts: the `webhook.deliver` job handler and the inline attempts of test and replay.
// An attempt signs the stored body with the secrets in force, POSTs it (events/webhook-http.ts) and records
// the outcome in one transaction (spec: Events, Delivery and retry):
//   2xx  delivered (deliveredAt set, nextRetryAt null), the endpoint's failure streak reset;
//   406  rejected: no retry, not counted as a failure (and the streak is left as it is);
//   else failed attempt: retried after 30 s, 2 min, 10 min, 30 min, 2 h, 8 h, 16 h (8 attempts in all).
//        A delivery whose first attempt fails counts once toward the endpoint's streak (its retries and
//        replays do not count again): the 20th consecutive failed delivery disables the endpoint, records
//        an alert and e-mails the team owner (spec: "20 consecutive failed deliveries").
// Attempts to one endpoint are limited (EndpointSlots); different endpoints proceed in parallel.
import http from 'node:http';
import https from 'node:https';
import type { AppContext } from '../../context.js';
import { Batcher } from '../../db/batcher.js';
import { readsOf, type Queryable } from '../../db/index.js';
import { HOUR, MINUTE, SECOND } from '../../core/clock.js';
import type { Job, JobOutcome } from '../../jobs/queue.js';
import { WEBHOOK_DELIVER_JOB, webhookLane, type DeliverJobPayload } from '../../events/webhook-dispatcher.js';
import { postWebhook, type WebhookResponse } from '../../events/webhook-http.js';
import { EVENT_HEADER, SIGNATURE_HEADER, signatureHeader, TIMESTAMP_HEADER, WEBHOOK_ID_HEADER } from '../../events/webhook-signature.js';
import { raiseAlert } from '../platform/index.js';
import { sendSystemEmail } from '../sending/index.js';

/** Waits after failed attempts 1..7; the 8th failure is final. */
export const WEBHOOK_RETRY_DELAYS_MS = [30 * SECOND, 2 * MINUTE, 10 * MINUTE, 30 * MINUTE, 2 * HOUR, 8 * HOUR, 16 * HOUR];
export const WEBHOOK_MAX_ATTEMPTS = WEBHOOK_RETRY_DELAYS_MS.length + 1;
/** Consecutive failed deliveries (each counted at its first failed attempt; 406 not counted) that disable an endpoint. */
export const AUTO_DISABLE_FAILURES = 20;
export const WEBHOOK_TIMEOUT_MS = 10 * SECOND;
/** Requests in flight to one endpoint at a time. */
export const ENDPOINT_CONCURRENCY = 16;
/** Further attempts that may wait for a slot of one endpoint (holding a job worker); beyond that they are put back. */
export const ENDPOINT_MAX_WAITING = 16;
/** When an endpoint is that busy, a due attempt is put back in the queue for this long. */
export const ENDPOINT_BUSY_DELAY_MS = 1 * SECOND;

export type DeliveryStatus = 'pending' | 'delivered' | 'rejected' | 'failed';

export interface DeliveryRow {
  id: number;
  webhook_id: number;
  event_id: number | null;
  event_type: string;
  payload: string;
  status: DeliveryStatus;
  status_code: number | null;
  response_body: string | null;
  attempts: number;
  next_retry_at: string | null;
  delivered_at: string | null;
  created_at: string;
}

export interface WebhookRow {
  id: number;
  team_id: string;
  url: string;
  events: string;
  active: number | boolean;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: string | null;
  consecutive_failures: number;
  from_event_id: number;
  disabled_at: string | null;
  created_at: string;
  updated_at: string;
}

/** Per-endpoint admission: a few requests at once, a few more waiting, the rest told to come back later. */
export class EndpointSlots {
  private readonly running = new Map<number, number>();
  private readonly waiting = new Map<number, Array<() => void>>();

  constructor(
    readonly perEndpoint = ENDPOINT_CONCURRENCY,
    readonly maxWaiting = ENDPOINT_MAX_WAITING,
  ) {}

  /** Resolves true with a slot held, or false at once when the endpoint is too busy. */
  async acquire(id: number): Promise<boolean> {
    const n = this.running.get(id) ?? 0;
    if (n < this.perEndpoint) {
      this.running.set(id, n + 1);
      return true;
    }
    const queue = this.waiting.get(id) ?? [];
    if (queue.length >= this.maxWaiting) return false;
    this.waiting.set(id, queue);
    await new Promise<void>((resolve) => queue.push(resolve));
    return true;
  }

  /** Waits for a slot however long the line (a job already admitted, working through its own list). */
  async acquireWait(id: number): Promise<void> {
    const n = this.running.get(id) ?? 0;
    if (n < this.perEndpoint) {
      this.running.set(id, n + 1);
      return;
    }
    const queue = this.waiting.get(id) ?? [];
    this.waiting.set(id, queue);
    await new Promise<void>((resolve) => queue.push(resolve));
  }

  /** Every slot taken and the waiting room full. */
  busy(id: number): boolean {
    return (this.running.get(id) ?? 0) >= this.perEndpoint && (this.waiting.get(id)?.length ?? 0) >= this.maxWaiting;
  }

  release(id: number): void {
    const next = this.waiting.get(id)?.shift();
    if (next) return next(); // the slot passes to a waiter
    if (this.waiting.get(id)?.length === 0) this.waiting.delete(id);
    const n = (this.running.get(id) ?? 1) - 1;
    if (n <= 0) this.running.delete(id);
    else this.running.set(id, n);
  }
}

/** First attempts answered 2xx or 406, of one endpoint: recorded together (see `recordAnswered`). */
interface Answered {
  hookId: number;
  rows: Array<{ id: number; statusCode: number; body: string }>;
}

/** What delivery attempts share in one appliance: keep-alive agents, endpoint slots, the timeout, the outcome writer. */
export class WebhookSender {
  readonly slots: EndpointSlots;
  private answered: Batcher<Answered, void> | undefined;
  /**
   * Keep-alive agents with no cap of their own per host: EndpointSlots limits each endpoint. A per-host cap
   * would be shared by every endpoint on that host (many customers' endpoints on one webhook platform), so a
   * slow one would hold the others' requests in the agent's queue, their deadlines running.
   */
  readonly agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: Infinity }),
    https: new https.Agent({ keepAlive: true, maxSockets: Infinity }),
  };

  constructor(readonly timeoutMs = WEBHOOK_TIMEOUT_MS, slots = new EndpointSlots()) {
    // MAIL_WEBHOOK_TIMEOUT_MS; 10 s by default.
    this.slots = slots;
  }

  /**
   * Group commit of answered first attempts: the jobs that finish while one write transaction runs share the
   * next one (one UPDATE … FROM VALUES per 100 deliveries, one streak reset for every endpoint with a 2xx).
   * Resolves once committed.
   */
  recordAnswered(ctx: AppContext, item: Answered): Promise<void> {
    this.answered ??= new Batcher<Answered, void>(async (items) => {
      await writeAnswered(ctx, items);
      return items.map(() => undefined);
    }, 100);
    return this.answered.submit(item);
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

/** The secrets a delivery is signed with now: the current one, then the previous one during its grace window. */
export function secretsInForce(
  ctx: AppContext,
  hook: Pick<WebhookRow, 'secret_sealed' | 'previous_secret_sealed' | 'previous_secret_expires_at'>,
  at: Date,
): string[] {
  const out = [ctx.secrets.open(hook.secret_sealed)];
  if (hook.previous_secret_sealed && hook.previous_secret_expires_at && new Date(hook.previous_secret_expires_at).getTime() > at.getTime()) {
    out.push(ctx.secrets.open(hook.previous_secret_sealed));
  }
  return out;
}

/** Sends one attempt of a delivery (no bookkeeping). */
export async function sendAttempt(ctx: AppContext, sender: WebhookSender | null, hook: WebhookRow, delivery: Pick<DeliveryRow, 'id' | 'payload' | 'event_type'>): Promise<WebhookResponse> {
  const at = ctx.clock.now();
  const res = await postWebhook({
    url: hook.url,
    body: delivery.payload,
    headers: {
      'content-type': 'application/json',
      'user-agent': `mail-appliance-webhooks/${ctx.version}`,
      [SIGNATURE_HEADER]: signatureHeader(delivery.payload, secretsInForce(ctx, hook, at)),
      [WEBHOOK_ID_HEADER]: String(delivery.id),
      [TIMESTAMP_HEADER]: String(Math.floor(at.getTime() / 1000)),
      [EVENT_HEADER]: delivery.event_type,
    },
    timeoutMs: sender?.timeoutMs ?? ctx.config.webhookTimeoutMs,
    allowPrivate: ctx.config.webhookAllowPrivate,
    dns: ctx.dns,
    agents: sender?.agents,
  });
  const code = res.statusCode;
  ctx.metrics.webhookAttempts.inc({ result: code === null ? 'no_response' : code >= 200 && code < 300 ? 'success' : `http_${Math.floor(code / 100)}xx` });
  return res;
}

export type AttemptMode = 'auto' | 'manual';

/**
 * Records an attempt's outcome in one transaction. `auto` attempts follow the retry schedule; `manual` ones
 * (test, replay) do not: a failed manual attempt leaves a pending delivery's schedule as it was (its first
 * attempt or its retry still comes) and marks any other delivery failed. Returns when the next automatic attempt is due, if any.
 */
export async function recordAttempt(
  ctx: AppContext,
  hook: WebhookRow,
  delivery: DeliveryRow,
  res: WebhookResponse,
  mode: AttemptMode,
  /** Enqueue the retry as its own job in the same transaction (first attempts made by a group job). */
  retryJob = false,
): Promise<{ retryAt: Date | null; delivery: DeliveryRow }> {
  const at = ctx.clock.now();
  const now = at.toISOString();
  const ok = res.statusCode !== null && res.statusCode >= 200 && res.statusCode < 300;
  const rejected = res.statusCode === 406;
  if (ok && mode === 'auto' && hook.consecutive_failures === 0) {
    // The common case in one statement: delivered, and no failure streak to reset.
    const changes = { status: 'delivered' as const, status_code: res.statusCode, response_body: res.body, attempts: delivery.attempts + 1, next_retry_at: null, delivered_at: now };
    await ctx.db('webhook_deliveries').where({ id: delivery.id }).update({ ...changes, attempts: ctx.db.raw('attempts + 1') });
    return { retryAt: null, delivery: { ...delivery, ...changes } };
  }
  return ctx.db.transaction(async (trx) => {
    const current = (await trx<DeliveryRow>('webhook_deliveries').where({ id: delivery.id }).first()) ?? delivery;
    const attempts = current.attempts + 1;
    let status: DeliveryStatus;
    let nextRetryAt: string | null = null;
    let retryAt: Date | null = null;
    if (ok) status = 'delivered';
    else if (rejected) status = 'rejected';
    else if (mode === 'auto' && attempts < WEBHOOK_MAX_ATTEMPTS) {
      status = 'pending';
      retryAt = new Date(at.getTime() + WEBHOOK_RETRY_DELAYS_MS[attempts - 1]!);
      nextRetryAt = retryAt.toISOString();
    } else if (mode === 'manual' && current.status === 'pending' && (current.next_retry_at !== null || current.attempts === 0)) {
      // An automatic attempt is due (a retry, or the first one, not yet made): a failed manual attempt
      // leaves it in place (marked failed, the attempt's job would skip it and its retries were lost). A
      // batch replay's queued attempt (pending, attempts made, no retry time) ends failed when it fails.
      status = 'pending';
      nextRetryAt = current.next_retry_at;
    } else status = 'failed';
    const changes: Partial<DeliveryRow> = {
      status,
      status_code: res.statusCode,
      response_body: res.body,
      attempts,
      next_retry_at: nextRetryAt,
      delivered_at: ok ? now : current.delivered_at,
    };
    await trx('webhook_deliveries').where({ id: delivery.id }).update(changes);
    if (ok) {
      await trx('webhooks').where({ id: hook.id }).andWhere('consecutive_failures', '>', 0).update({ consecutive_failures: 0 });
    } else if (!rejected && current.attempts === 0) {
      // The delivery's first attempt: one failed delivery. Its retries and replays are the same delivery.
      await countFailure(ctx, trx, hook, at);
    } else if (!rejected) {
      // A retry or replay, not counted again; if the endpoint was disabled meanwhile, no retry after it.
      const endpoint = (await trx('webhooks').where({ id: hook.id }).first('active')) as { active: number | boolean } | undefined;
      if (endpoint && !endpoint.active) await dropSchedule(trx, hook.id);
    }
    if (retryAt && retryJob) {
      const payload: DeliverJobPayload = { deliveryId: delivery.id };
      await ctx.jobs.enqueue(trx, WEBHOOK_DELIVER_JOB, payload, { runAt: retryAt, lane: webhookLane(hook.id) });
    }
    return { retryAt, delivery: { ...current, ...changes } };
  });
}

/**
 * An endpoint being disabled drops its automatic schedule at once: pending first attempts and scheduled
 * retries become `failed` (re-sendable by replay), so that the log says so and re-enabling before they were
 * due does not send them. A replay under way (pending, no retry scheduled, attempted before) keeps going.
 * Their jobs find nothing pending and end.
 */
export async function dropSchedule(trx: Queryable, hookId: number): Promise<void> {
  await trx('webhook_deliveries')
    .where({ webhook_id: hookId, status: 'pending' })
    .andWhere((q) => q.whereNotNull('next_retry_at').orWhere('attempts', 0))
    .update({ status: 'failed', next_retry_at: null });
}

async function countFailure(ctx: AppContext, trx: Queryable, hook: WebhookRow, at: Date): Promise<void> {
  const [row] = (await trx('webhooks')
    .where({ id: hook.id })
    .increment('consecutive_failures', 1)
    .returning(['consecutive_failures', 'active', 'url', 'team_id'])) as Array<{ consecutive_failures: number; active: number | boolean; url: string; team_id: string }>;
  // A failure recorded after the endpoint was disabled (another of a group of first attempts): no retry either.
  if (row && !row.active) return dropSchedule(trx, hook.id);
  if (!row || row.consecutive_failures < AUTO_DISABLE_FAILURES) return;
  const now = at.toISOString();
  await trx('webhooks').where({ id: hook.id }).update({ active: false, disabled_at: now, updated_at: now });
  await dropSchedule(trx, hook.id);
  const message = `Webhook ${hook.id} (${row.url}) was disabled after ${AUTO_DISABLE_FAILURES} consecutive failed deliveries.`;
  await raiseAlert(trx, at, row.team_id, 'webhook_disabled', message, { webhookId: hook.id, url: row.url, consecutiveFailures: row.consecutive_failures });
  const team = (await trx('teams').where({ id: row.team_id }).first('owner_email')) as { owner_email: string } | undefined;
  if (!team) return;
  try {
    await sendSystemEmail(ctx, trx, {
      teamId: row.team_id,
      to: team.owner_email,
      subject: `Webhook endpoint disabled: ${row.url}`,
      text: [
        message,
        '',
        'Events that occur while it is disabled are not delivered to it.',
        `Re-enable it with PATCH /webhooks/${hook.id} {"enabled": true} once the endpoint answers 2xx again;`,
        `failed deliveries can be re-sent with POST /webhooks/${hook.id}/deliveries/batch-replay.`,
      ].join('\n'),
    });
  } catch (err) {
    // An owner address the send path refuses must not undo the disable and the alert.
    ctx.log.error({ err, team: row.team_id, webhook: hook.id }, 'webhook disabled: could not e-mail the team owner');
  }
}

const HOOK_COLUMNS = ['team_id', 'url', 'events', 'active', 'secret_sealed', 'previous_secret_sealed', 'previous_secret_expires_at', 'consecutive_failures', 'from_event_id', 'disabled_at', 'updated_at'] as const;

/** A delivery and its endpoint, in one query. */
export async function loadDelivery(q: Queryable, deliveryId: number): Promise<{ delivery: DeliveryRow; hook: WebhookRow } | null> {
  const row = (await q('webhook_deliveries as d')
    .join('webhooks as w', 'w.id', 'd.webhook_id')
    .where('d.id', deliveryId)
    .first(['d.*', ...HOOK_COLUMNS.map((c) => `w.${c} as w_${c}`), 'w.created_at as w_created_at'])) as (DeliveryRow & Record<string, unknown>) | undefined;
  if (!row) return null;
  const hook = { id: row.webhook_id, created_at: row.w_created_at } as Record<string, unknown>;
  const delivery = { ...row } as Record<string, unknown>;
  for (const c of [...HOOK_COLUMNS, 'created_at']) {
    if (c !== 'created_at') hook[c] = row[`w_${c}`];
    delete delivery[`w_${c}`];
  }
  return { delivery: delivery as unknown as DeliveryRow, hook: hook as unknown as WebhookRow };
}

async function writeAnswered(ctx: AppContext, items: Answered[]): Promise<void> {
  const now = ctx.clock.now().toISOString();
  const rows = items.flatMap((a) => a.rows);
  const reset = [...new Set(items.filter((a) => a.rows.some((r) => r.statusCode !== 406)).map((a) => a.hookId))];
  await ctx.db.transaction(async (trx) => {
    for (let i = 0; i < rows.length; i += 100) {
      const chunk = rows.slice(i, i + 100);
      // One statement for the chunk: status, code and body per delivery from a VALUES list.
      await trx.raw(
        `UPDATE webhook_deliveries SET
           status = v.column2, status_code = v.column3, response_body = v.column4, attempts = attempts + 1, next_retry_at = NULL,
           delivered_at = CASE WHEN v.column2 = 'delivered' THEN ? ELSE delivered_at END
         FROM (VALUES ${chunk.map(() => '(?, ?, ?, ?)').join(', ')}) AS v
         WHERE webhook_deliveries.id = v.column1 AND webhook_deliveries.status = 'pending'`,
        [now, ...chunk.flatMap((r) => [r.id, r.statusCode === 406 ? 'rejected' : 'delivered', r.statusCode, r.body])],
      );
    }
    // A 2xx ends the endpoint's failure streak (a 406 leaves it as it is).
    if (reset.length > 0) await trx('webhooks').whereIn('id', reset).andWhere('consecutive_failures', '>', 0).update({ consecutive_failures: 0 });
  });
}

/** Deliveries still waiting for their first attempt, with their endpoint, in one query. */
async function loadFirst(q: Queryable, ids: number[]): Promise<{ deliveries: DeliveryRow[]; hook: WebhookRow } | null> {
  const rows = (await q('webhook_deliveries as d')
    .join('webhooks as w', 'w.id', 'd.webhook_id')
    .whereIn('d.id', ids)
    .andWhere({ 'd.status': 'pending', 'd.attempts': 0 })
    .orderBy('d.id')
    .select(['d.*', ...HOOK_COLUMNS.map((c) => `w.${c} as w_${c}`), 'w.created_at as w_created_at'])) as Array<DeliveryRow & Record<string, unknown>>;
  if (rows.length === 0) return null;
  const first = rows[0]!;
  const hook = { id: first.webhook_id, created_at: first.w_created_at } as Record<string, unknown>;
  for (const c of HOOK_COLUMNS) hook[c] = first[`w_${c}`];
  const deliveries = rows.map((row) => {
    const d = { ...row } as Record<string, unknown>;
    for (const c of [...HOOK_COLUMNS, 'created_at']) delete d[`w_${c}`];
    return d as unknown as DeliveryRow;
  });
  return { deliveries, hook: hook as unknown as WebhookRow };
}

/**
 * First attempts of a group of new deliveries of one endpoint (one job for up to FIRST_ATTEMPT_GROUP): sent
 * through the endpoint's slots; 2xx and 406 answers recorded by the sender's group commit (shared with the
 * other jobs finishing meanwhile), each failure recorded on its own with its retry job in the same
 * transaction. Idempotent: a re-run (after a crash) takes only the deliveries still pending with no attempt
 * recorded. The group and its endpoint are read on the read-only connections (committed before this job was
 * leased), off the writer.
 */
async function deliverFirstAttempts(ctx: AppContext, sender: WebhookSender, ids: number[]): Promise<JobOutcome> {
  const loaded = await loadFirst(readsOf(ctx.db), ids);
  if (!loaded) return;
  const { deliveries, hook } = loaded;
  if (!hook.active) {
    await ctx.db('webhook_deliveries').whereIn('id', deliveries.map((d) => d.id)).andWhere({ status: 'pending' }).update({ status: 'failed', next_retry_at: null });
    return;
  }
  if (sender.slots.busy(hook.id)) return { retryAt: new Date(ctx.clock.now().getTime() + ENDPOINT_BUSY_DELAY_MS), error: 'endpoint busy' };
  const results: Array<{ delivery: DeliveryRow; res: WebhookResponse }> = [];
  let next = 0;
  const lane = async () => {
    while (next < deliveries.length) {
      const delivery = deliveries[next++]!;
      await sender.slots.acquireWait(hook.id);
      try {
        results.push({ delivery, res: await sendAttempt(ctx, sender, hook, delivery) });
      } finally {
        sender.slots.release(hook.id);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(sender.slots.perEndpoint, deliveries.length) }, lane));

  const isAnswer = (res: WebhookResponse) => res.statusCode !== null && ((res.statusCode >= 200 && res.statusCode < 300) || res.statusCode === 406);
  const answered = results.filter(({ res }) => isAnswer(res));
  if (answered.length > 0) {
    await sender.recordAnswered(ctx, { hookId: hook.id, rows: answered.map(({ delivery, res }) => ({ id: delivery.id, statusCode: res.statusCode!, body: res.body })) });
  }
  for (const { delivery, res } of results) if (!isAnswer(res)) await recordAttempt(ctx, hook, delivery, res, 'auto', true);
}

/** The job handler for WEBHOOK_DELIVER_JOB. */
export async function deliverWebhook(ctx: AppContext, sender: WebhookSender, job: Job): Promise<JobOutcome> {
  const payload = job.payload as DeliverJobPayload;
  if ('first' in payload) return deliverFirstAttempts(ctx, sender, payload.first);
  const { deliveryId, replay } = payload;
  const loaded = await loadDelivery(ctx.db, deliveryId);
  if (!loaded || loaded.delivery.status !== 'pending') return; // deleted, or already answered (a re-run after a crash)
  const { delivery, hook } = loaded;
  if (!replay && !hook.active) {
    // Disabled since: the remaining schedule is dropped (a replay can still send it).
    await ctx.db('webhook_deliveries').where({ id: delivery.id, status: 'pending' }).update({ status: 'failed', next_retry_at: null });
    return;
  }
  if (!(await sender.slots.acquire(hook.id))) {
    return { retryAt: new Date(ctx.clock.now().getTime() + ENDPOINT_BUSY_DELAY_MS), error: 'endpoint busy' };
  }
  let res: WebhookResponse;
  try {
    res = await sendAttempt(ctx, sender, hook, delivery);
  } finally {
    sender.slots.release(hook.id);
  }
  const { retryAt } = await recordAttempt(ctx, hook, delivery, res, replay ? 'manual' : 'auto');
  if (retryAt) return { retryAt, error: `HTTP ${res.statusCode ?? 'no response'}: ${res.body.slice(0, 200)}` };
}
