// Notification channels (spec: /notification-channels): where a team is told about alerts. Create (a
// webhook channel's signing secret shown once), list newest first, replace (PUT), delete, a test
// notification, the delivery log (Form A) and replay. Targets are sealed: a Slack or Discord
// incoming-webhook URL is a credential, so the API shows it only up to its host.
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../db/index.js';
import { badRequest, forbidden, notFound, unprocessable } from '../../core/errors.js';
import { randomBase62 } from '../../core/ids.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';
import { ALERT_KINDS, type Alert, type AlertKind } from '../platform/index.js';
import { loadChannelDelivery, recordChannelAttempt, sendChannelAttempt, type ChannelRow, type ChannelType, type NotifyDeliveryRow, type NotifyStatus } from './channel-delivery.js';
import { checkUrl } from './webhooks.js';

/** Channels per team. */
export const MAX_CHANNELS = 20;

export interface Channel {
  id: number;
  name: string;
  type: ChannelType;
  /** The webhook URL or e-mail address; a Slack/Discord URL only up to its host (`https://hooks.slack.com/…`). */
  target: string;
  alerts: AlertKind[];
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface CreatedChannel extends Channel {
  /** A webhook channel's signing secret, shown once (null for the other types). */
  secret: string | null;
}

export interface ChannelDelivery {
  id: number;
  channelId: number;
  alertId: number | null;
  alertKind: string;
  payload: Alert;
  status: NotifyStatus;
  statusCode: number | null;
  responseBody: string | null;
  attempts: number;
  nextRetryAt: string | null;
  deliveredAt: string | null;
  createdAt: string;
}

export interface ChannelInput {
  name: string;
  type: ChannelType;
  /** webhook, slack, discord. */
  url?: string | undefined;
  /** email. */
  email?: string | undefined;
  /** Alert kinds it receives; every kind when omitted. */
  alerts?: AlertKind[] | undefined;
  enabled?: boolean | undefined;
}

export type ChannelUpdate = Partial<ChannelInput>;

function toChannel(r: ChannelRow): Channel {
  return {
    id: r.id,
    name: r.name,
    type: r.type,
    target: r.target_shown,
    alerts: JSON.parse(r.alert_kinds) as AlertKind[],
    enabled: Boolean(r.enabled),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function toChannelDelivery(r: NotifyDeliveryRow): ChannelDelivery {
  return {
    id: r.id,
    channelId: r.channel_id,
    alertId: r.alert_id,
    alertKind: r.alert_kind,
    payload: JSON.parse(r.payload) as Alert,
    status: r.status,
    statusCode: r.status_code,
    responseBody: r.response_body,
    attempts: r.attempts,
    nextRetryAt: r.next_retry_at,
    deliveredAt: r.delivered_at,
    createdAt: r.created_at,
  };
}

/** The target a type needs, checked (URL rules and private-address policy as for webhooks), and its shown form. */
async function checkTarget(ctx: AppContext, type: ChannelType, input: { url?: string | undefined; email?: string | undefined }): Promise<{ target: string; shown: string }> {
  if (type === 'email') {
    if (input.url !== undefined) throw badRequest('url: not used by an email channel (give `email`)');
    if (input.email === undefined) throw badRequest('Request body is missing required fields: email');
    return { target: input.email, shown: input.email };
  }
  if (input.email !== undefined) throw badRequest(`email: not used by a ${type} channel (give \`url\`)`);
  if (input.url === undefined) throw badRequest('Request body is missing required fields: url');
  const url = await checkUrl(ctx, input.url);
  if (type === 'webhook') return { target: url, shown: url };
  const u = new URL(url);
  return { target: url, shown: `${u.protocol}//${u.host}/…` };
}

async function findRow(q: Queryable, teamId: string, id: string): Promise<ChannelRow> {
  const row = /^\d{1,15}$/.test(id) ? ((await q('notification_channels').where({ team_id: teamId, id: Number(id) }).first()) as ChannelRow | undefined) : undefined;
  if (!row) throw notFound('Notification channel not found');
  return row;
}

const kindsOf = (alerts: AlertKind[] | undefined) => JSON.stringify(alerts === undefined ? [...ALERT_KINDS] : [...new Set(alerts)]);

export async function createChannel(ctx: AppContext, teamId: string, input: ChannelInput): Promise<CreatedChannel> {
  const { target, shown } = await checkTarget(ctx, input.type, input);
  const secret = input.type === 'webhook' ? `whsec_${randomBase62(32)}` : null;
  return ctx.db.transaction(async (trx) => {
    const [{ n }] = (await trx('notification_channels').where('team_id', teamId).count({ n: '*' })) as [{ n: number }];
    if (Number(n) >= MAX_CHANNELS) throw forbidden(`Notification channel limit reached: ${MAX_CHANNELS} channels per team`);
    const now = ctx.clock.now().toISOString();
    const row: Omit<ChannelRow, 'id'> = {
      team_id: teamId,
      name: input.name,
      type: input.type,
      target_sealed: ctx.secrets.seal(target),
      target_shown: shown,
      secret_sealed: secret ? ctx.secrets.seal(secret) : null,
      alert_kinds: kindsOf(input.alerts),
      enabled: input.enabled ?? true,
      created_at: now,
      updated_at: now,
    };
    const [id] = (await trx('notification_channels').insert(row)) as [number];
    return { ...toChannel({ id, ...row }), secret };
  });
}

/** Newest first. */
export async function listChannels(ctx: AppContext, teamId: string): Promise<Channel[]> {
  const rows = (await ctx.db('notification_channels').where('team_id', teamId).orderBy('id', 'desc')) as ChannelRow[];
  return rows.map(toChannel);
}

/**
 * PUT: the fields given replace the channel's (a new `url`/`email` replaces its target); `type` cannot
 * change (422: delete the channel and create another).
 */
export async function updateChannel(ctx: AppContext, teamId: string, id: string, input: ChannelUpdate): Promise<Channel> {
  const existing = await findRow(ctx.db, teamId, id);
  if (input.type !== undefined && input.type !== existing.type) throw unprocessable(`A channel's type cannot be changed (it is ${existing.type})`);
  const target = input.url !== undefined || input.email !== undefined ? await checkTarget(ctx, existing.type, input) : undefined;
  return ctx.db.transaction(async (trx) => {
    const row = await findRow(trx, teamId, id);
    const changes: Partial<ChannelRow> = { updated_at: ctx.clock.now().toISOString() };
    if (input.name !== undefined) changes.name = input.name;
    if (input.alerts !== undefined) changes.alert_kinds = kindsOf(input.alerts);
    if (input.enabled !== undefined) changes.enabled = input.enabled;
    if (target) Object.assign(changes, { target_sealed: ctx.secrets.seal(target.target), target_shown: target.shown });
    await trx('notification_channels').where({ id: row.id }).update(changes);
    return toChannel({ ...row, ...changes });
  });
}

/** Deletes the channel and its delivery log; a queued attempt finds nothing and sends nothing. */
export async function deleteChannel(ctx: AppContext, teamId: string, id: string): Promise<void> {
  const row = await findRow(ctx.db, teamId, id);
  await ctx.db('notification_channels').where({ id: row.id }).delete();
}

/** Sends a test notification now (enabled or not), one attempt, recorded in the log; answers with it. */
export async function testChannel(ctx: AppContext, teamId: string, id: string): Promise<ChannelDelivery> {
  const channel = await findRow(ctx.db, teamId, id);
  const at = ctx.clock.now().toISOString();
  const alert = {
    id: 0,
    kind: 'test',
    message: `This is a test notification for channel "${channel.name}".`,
    data: { channelId: channel.id },
    createdAt: at,
    acknowledgedAt: null,
  };
  const row: Omit<NotifyDeliveryRow, 'id'> = {
    channel_id: channel.id,
    alert_id: null,
    alert_kind: 'test',
    payload: JSON.stringify(alert),
    status: 'failed',
    status_code: null,
    response_body: null,
    attempts: 0,
    next_retry_at: null,
    delivered_at: null,
    created_at: at,
  };
  const [deliveryId] = (await ctx.db('notification_deliveries').insert(row)) as [number];
  const delivery: NotifyDeliveryRow = { id: deliveryId, ...row };
  const res = await sendChannelAttempt(ctx, channel, delivery);
  return toChannelDelivery((await recordChannelAttempt(ctx, delivery, res, 'manual')).delivery);
}

/** Newest first. */
export async function listChannelDeliveries(ctx: AppContext, teamId: string, id: string, paging: PageRequest): Promise<Page<ChannelDelivery>> {
  const channel = await findRow(ctx.db, teamId, id);
  const base = ctx.db('notification_deliveries').where('channel_id', channel.id);
  const [{ n }] = (await base.clone().count({ n: '*' })) as [{ n: number }];
  const rows = (await base.clone().orderBy('id', 'desc').offset(paging.offset).limit(paging.perPage)) as NotifyDeliveryRow[];
  return toPage(rows.map(toChannelDelivery), Number(n), paging);
}

/** Re-sends a delivery's alert now: one attempt on that delivery, answered with it (a failure is not retried). */
export async function replayChannelDelivery(ctx: AppContext, teamId: string, id: string, deliveryId: string): Promise<ChannelDelivery> {
  const channel = await findRow(ctx.db, teamId, id);
  const loaded = /^\d{1,15}$/.test(deliveryId) ? await loadChannelDelivery(ctx, Number(deliveryId)) : null;
  if (!loaded || loaded.delivery.channel_id !== channel.id) throw notFound('Delivery not found');
  const res = await sendChannelAttempt(ctx, channel, loaded.delivery);
  return toChannelDelivery((await recordChannelAttempt(ctx, loaded.delivery, res, 'manual')).delivery);
}
