// Webhook endpoints (spec: Webhooks): create (the signing secret shown once), list, get, update, delete,
// a test event, the delivery log, replay and batch replay, and secret rotation with a grace window.
import type { AppContext } from '../../context.js';
import type { Plan } from '../../config.js';
import type { Queryable } from '../../db/index.js';
import { HOUR, MINUTE } from '../../core/clock.js';
import { badRequest, forbidden, notFound } from '../../core/errors.js';
import { randomBase62 } from '../../core/ids.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';
import { WEBHOOK_DELIVER_JOB, eventBody, webhookLane, type DeliverJobPayload } from '../../events/webhook-dispatcher.js';
import { AddressRefused, checkWebhookHost } from '../../events/webhook-http.js';
import type { EventType } from '../../events/types.js';
import { limitsFor } from '../platform/index.js';
import { dropSchedule, loadDelivery, recordAttempt, sendAttempt, type DeliveryRow, type DeliveryStatus, type WebhookRow } from './webhook-delivery.js';

export const TEST_EVENT = 'webhook.test';
export const MAX_BATCH_REPLAY = 1000;
export const DEFAULT_BATCH_REPLAY = 100;
export const DEFAULT_GRACE_HOURS = 24;

export interface Webhook {
  id: number;
  url: string;
  events: string[];
  active: boolean;
  createdAt: string;
}

export interface CreatedWebhook extends Webhook {
  /** The signing secret, shown once. */
  secret: string;
}

export interface WebhookDelivery {
  id: number;
  webhookId: number;
  eventType: string;
  payload: Record<string, unknown>;
  statusCode: number | null;
  responseBody: string | null;
  attempts: number;
  nextRetryAt: string | null;
  deliveredAt: string | null;
  createdAt: string;
  /** pending | delivered | rejected (406) | failed — not in the spec's record; says which rule applied. */
  status: DeliveryStatus;
}

export interface CreateWebhookInput {
  url: string;
  events: EventType[];
}

export interface UpdateWebhookInput {
  url?: string | undefined;
  events?: EventType[] | undefined;
  enabled?: boolean | undefined;
}

export interface BatchReplayInput {
  withinMinutes?: number | undefined;
  eventType?: string | undefined;
  limit?: number | undefined;
}

const newSecret = () => `whsec_${randomBase62(32)}`;

function toWebhook(r: WebhookRow): Webhook {
  return { id: r.id, url: r.url, events: JSON.parse(r.events) as string[], active: Boolean(r.active), createdAt: r.created_at };
}

export function toDelivery(r: DeliveryRow): WebhookDelivery {
  return {
    id: r.id,
    webhookId: r.webhook_id,
    eventType: r.event_type,
    payload: JSON.parse(r.payload) as Record<string, unknown>,
    statusCode: r.status_code,
    responseBody: r.response_body,
    attempts: r.attempts,
    nextRetryAt: r.next_retry_at,
    deliveredAt: r.delivered_at,
    createdAt: r.created_at,
    status: r.status,
  };
}

/** http(s) only, no credentials in the URL, and (unless the operator allows it) no private target. */
async function checkUrl(ctx: AppContext, raw: string): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw badRequest('url: must be an http or https URL');
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) throw badRequest('url: must be an http or https URL');
  if (url.username || url.password) throw badRequest('url: must not contain credentials');
  if (url.port === '0') throw badRequest('url: port 0 cannot be connected to');
  if (!ctx.config.webhookAllowPrivate) {
    try {
      await checkWebhookHost(ctx.dns, url);
    } catch (err) {
      if (err instanceof AddressRefused) throw badRequest(`url: must not point at a loopback, private or link-local address (${err.message})`);
      throw err;
    }
  }
  return url.toString();
}

async function lastEventId(q: Queryable): Promise<number> {
  const [{ last }] = (await q('events').max({ last: 'id' })) as [{ last: number | null }];
  return last ?? 0;
}

async function findRow(q: Queryable, teamId: string, id: string | number): Promise<WebhookRow> {
  const n = typeof id === 'number' ? id : /^\d{1,15}$/.test(id) ? Number(id) : NaN;
  const row = Number.isNaN(n) ? undefined : await q<WebhookRow>('webhooks').where({ team_id: teamId, id: n }).first();
  if (!row) throw notFound('Webhook not found');
  return row;
}

export async function createWebhook(ctx: AppContext, teamId: string, input: CreateWebhookInput): Promise<CreatedWebhook> {
  const url = await checkUrl(ctx, input.url);
  const secret = newSecret();
  return ctx.db.transaction(async (trx) => {
    const team = await trx<{ plan: Plan }>('teams').where('id', teamId).first('plan');
    if (!team) throw notFound('Team not found');
    const cap = limitsFor(team.plan).webhooks;
    const [{ n }] = (await trx('webhooks').where('team_id', teamId).count({ n: '*' })) as [{ n: number }];
    if (Number(n) >= cap) throw forbidden(`Webhook limit reached: ${cap} webhooks per team`);
    const now = ctx.clock.now().toISOString();
    const row: Omit<WebhookRow, 'id'> = {
      team_id: teamId,
      url,
      events: JSON.stringify([...new Set(input.events)]),
      active: true,
      secret_sealed: ctx.secrets.seal(secret),
      previous_secret_sealed: null,
      previous_secret_expires_at: null,
      consecutive_failures: 0,
      from_event_id: await lastEventId(trx),
      disabled_at: null,
      created_at: now,
      updated_at: now,
    };
    const [id] = (await trx('webhooks').insert(row)) as [number];
    return { ...toWebhook({ id, ...row }), secret };
  });
}

/** Newest first. */
export async function listWebhooks(ctx: AppContext, teamId: string): Promise<Webhook[]> {
  const rows = await ctx.db<WebhookRow>('webhooks').where('team_id', teamId).orderBy('id', 'desc');
  return rows.map(toWebhook);
}

export async function getWebhook(ctx: AppContext, teamId: string, id: string): Promise<Webhook> {
  return toWebhook(await findRow(ctx.db, teamId, id));
}

export async function updateWebhook(ctx: AppContext, teamId: string, id: string, input: UpdateWebhookInput): Promise<Webhook> {
  const url = input.url !== undefined ? await checkUrl(ctx, input.url) : undefined;
  return ctx.db.transaction(async (trx) => {
    const row = await findRow(trx, teamId, id);
    const now = ctx.clock.now().toISOString();
    const changes: Partial<WebhookRow> = { updated_at: now };
    if (url !== undefined) changes.url = url;
    if (input.events !== undefined) changes.events = JSON.stringify([...new Set(input.events)]);
    if (input.enabled === true && !row.active) {
      // Re-enabled: a clean failure streak, and only events from now on.
      Object.assign(changes, { active: true, consecutive_failures: 0, disabled_at: null, from_event_id: await lastEventId(trx) });
    } else if (input.enabled === false && row.active) {
      Object.assign(changes, { active: false, disabled_at: now });
      await dropSchedule(trx, row.id);
    }
    await trx('webhooks').where({ id: row.id }).update(changes);
    return toWebhook({ ...row, ...changes });
  });
}

/** Deleting drops its deliveries too; a queued attempt finds nothing and sends nothing. */
export async function deleteWebhook(ctx: AppContext, teamId: string, id: string): Promise<void> {
  const row = await findRow(ctx.db, teamId, id);
  await ctx.db('webhooks').where({ id: row.id }).delete();
}

export async function rotateWebhookSecret(
  ctx: AppContext,
  teamId: string,
  id: string,
  graceHours: number,
): Promise<{ secret: string; previousSecretExpiresAt: string | null }> {
  const secret = newSecret();
  return ctx.db.transaction(async (trx) => {
    const row = await findRow(trx, teamId, id);
    const at = ctx.clock.now();
    const expires = graceHours > 0 ? new Date(at.getTime() + graceHours * HOUR).toISOString() : null;
    await trx('webhooks')
      .where({ id: row.id })
      .update({
        secret_sealed: ctx.secrets.seal(secret),
        previous_secret_sealed: expires ? row.secret_sealed : null,
        previous_secret_expires_at: expires,
        updated_at: at.toISOString(),
      });
    return { secret, previousSecretExpiresAt: expires };
  });
}

/** Sends a `webhook.test` event now (whether or not the endpoint is enabled) and returns the recorded delivery. */
export async function testWebhook(ctx: AppContext, teamId: string, id: string): Promise<WebhookDelivery> {
  const hook = await findRow(ctx.db, teamId, id);
  const at = ctx.clock.now().toISOString();
  const data = { webhook_id: hook.id, message: 'This is a test event from your mail appliance.' };
  const row: Omit<DeliveryRow, 'id'> = {
    webhook_id: hook.id,
    event_id: null,
    event_type: TEST_EVENT,
    payload: eventBody(TEST_EVENT, at, JSON.stringify(data)),
    status: 'failed',
    status_code: null,
    response_body: null,
    attempts: 0,
    next_retry_at: null,
    delivered_at: null,
    created_at: at,
  };
  const [deliveryId] = (await ctx.db('webhook_deliveries').insert(row)) as [number];
  const delivery: DeliveryRow = { id: deliveryId, ...row };
  const res = await sendAttempt(ctx, null, hook, delivery);
  return toDelivery((await recordAttempt(ctx, hook, delivery, res, 'manual')).delivery);
}

/** Newest first. */
export async function listDeliveries(
  ctx: AppContext,
  teamId: string,
  id: string,
  paging: PageRequest,
  filter: { status?: DeliveryStatus | undefined } = {},
): Promise<Page<WebhookDelivery>> {
  const hook = await findRow(ctx.db, teamId, id);
  const base = ctx.db<DeliveryRow>('webhook_deliveries').where('webhook_id', hook.id);
  if (filter.status) base.andWhere('status', filter.status);
  const [{ n }] = (await base.clone().count({ n: '*' })) as [{ n: number }];
  const rows = await base.clone().orderBy('id', 'desc').offset(paging.offset).limit(paging.perPage);
  return toPage(rows.map(toDelivery), Number(n), paging);
}

/**
 * Re-sends a delivery's stored payload now (same body, same delivery id; signed with the secrets in force)
 * as a new attempt on that delivery, and returns it. One attempt: a failure is not retried on a schedule.
 */
export async function replayDelivery(ctx: AppContext, teamId: string, id: string, deliveryId: string): Promise<WebhookDelivery> {
  const hook = await findRow(ctx.db, teamId, id);
  const loaded = /^\d{1,15}$/.test(deliveryId) ? await loadDelivery(ctx.db, Number(deliveryId)) : null;
  if (!loaded || loaded.delivery.webhook_id !== hook.id) throw notFound('Delivery not found');
  const res = await sendAttempt(ctx, null, hook, loaded.delivery);
  return toDelivery((await recordAttempt(ctx, hook, loaded.delivery, res, 'manual')).delivery);
}

/**
 * Queues a replay of the endpoint's failed deliveries (retries exhausted, or dropped when it was disabled),
 * oldest first, at most `limit`; never a delivered (now or ever before), rejected (406) or still pending one.
 * Each goes back to pending with one attempt queued, so a second call does not pick it again.
 */
export async function batchReplay(ctx: AppContext, teamId: string, id: string, input: BatchReplayInput): Promise<{ replayed: number; remaining: number }> {
  const limit = input.limit ?? DEFAULT_BATCH_REPLAY;
  return ctx.db.transaction(async (trx) => {
    const hook = await findRow(trx, teamId, id);
    const at = ctx.clock.now();
    // Failed and never delivered: a delivery that succeeded once and then failed a manual replay is failed
    // too, but the spec's batch replay never re-sends an already-succeeded delivery.
    const base = trx<DeliveryRow>('webhook_deliveries').where({ webhook_id: hook.id, status: 'failed' }).whereNull('delivered_at');
    if (input.withinMinutes !== undefined) base.andWhere('created_at', '>=', new Date(at.getTime() - input.withinMinutes * MINUTE).toISOString());
    if (input.eventType !== undefined) base.andWhere('event_type', input.eventType);
    const ids = ((await base.clone().orderBy('id', 'asc').limit(limit).select('id')) as Array<{ id: number }>).map((r) => r.id);
    for (let i = 0; i < ids.length; i += 500) {
      await trx('webhook_deliveries').whereIn('id', ids.slice(i, i + 500)).update({ status: 'pending', next_retry_at: null });
    }
    for (const deliveryId of ids) {
      const payload: DeliverJobPayload = { deliveryId, replay: true };
      await ctx.jobs.enqueue(trx, WEBHOOK_DELIVER_JOB, payload, { lane: webhookLane(hook.id) });
    }
    const [{ n }] = (await base.clone().count({ n: '*' })) as [{ n: number }];
    return { replayed: ids.length, remaining: Number(n) };
  });
}
