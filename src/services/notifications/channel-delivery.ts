// Notification channel deliveries: what one attempt sends for each channel type, the outcome's bookkeeping
// and the NOTIFY_DELIVER_JOB handler. Retries follow the webhook schedule (30 s … 16 h, 8 attempts), and
// the HTTP kinds go through the same POST with the same private-address policy (events/webhook-http.ts).
//   webhook  `{ type: "alert.<kind>", created_at, data: <Alert> }`, signed exactly as webhook events are
//            (X-Service-Signature over the body with the channel's secret; id, timestamp, event headers);
//   slack    an incoming-webhook message: `{ text, blocks }` (mrkdwn section + context), text escaped;
//   discord  an incoming-webhook message: `{ username, content, embeds: [{ title, description, color,
//            timestamp, fields, footer }], allowed_mentions: { parse: [] } }` (no @everyone from an alert);
//   email    a system e-mail to the address through the one send path (sending/system-mail.ts), from
//            notifications@<MAIL_HOSTNAME>; delivered once the send path accepted it (its own delivery,
//            retries and bounces are then the email's, under GET /emails).
import type { AppContext } from '../../context.js';
import { AppError } from '../../core/errors.js';
import type { Job, JobOutcome } from '../../jobs/queue.js';
import { postWebhook, type WebhookResponse } from '../../events/webhook-http.js';
import { EVENT_HEADER, SIGNATURE_HEADER, signatureHeader, TIMESTAMP_HEADER, WEBHOOK_ID_HEADER } from '../../events/webhook-signature.js';
import type { Alert, AlertKind } from '../platform/index.js';
import { sendSystemEmail } from '../sending/index.js';
import { WEBHOOK_MAX_ATTEMPTS, WEBHOOK_RETRY_DELAYS_MS } from './webhook-delivery.js';

export const NOTIFY_DELIVER_JOB = 'notification.deliver';
export const notifyLane = (channelId: number) => `notify:${channelId}`;
export const CHANNEL_TYPES = ['webhook', 'slack', 'discord', 'email'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];
export type NotifyStatus = 'pending' | 'delivered' | 'failed';

export interface ChannelRow {
  id: number;
  team_id: string;
  name: string;
  type: ChannelType;
  target_sealed: string;
  target_shown: string;
  secret_sealed: string | null;
  alert_kinds: string;
  enabled: number | boolean;
  created_at: string;
  updated_at: string;
}

export interface NotifyDeliveryRow {
  id: number;
  channel_id: number;
  alert_id: number | null;
  alert_kind: string;
  payload: string;
  status: NotifyStatus;
  status_code: number | null;
  response_body: string | null;
  attempts: number;
  next_retry_at: string | null;
  delivered_at: string | null;
  created_at: string;
}

export interface NotifyJobPayload {
  deliveryId: number;
}

/** A short title per alert kind (Slack/Discord headline, e-mail subject). */
export const ALERT_TITLES: Record<AlertKind | 'test', string> = {
  webhook_disabled: 'Webhook endpoint disabled',
  domain_verification_failed: 'Domain verification failed',
  dns_drift: 'DNS records changed (drift)',
  dns_restored: 'DNS records restored',
  dkim_rotation_pending: 'DKIM rotation waiting for activation',
  dkim_rotation_completed: 'DKIM rotation completed',
  dmarc_failures: 'DMARC reports show failing sources',
  quota_80: 'Monthly sending quota at 80 %',
  quota_100: 'Monthly sending quota reached',
  sending_on_hold: 'Sending put on hold',
  provider_blocking: 'A mailbox provider is refusing mail',
  backup_failed: 'Scheduled backup failed',
  test: 'Test notification',
};

const COLORS: Partial<Record<AlertKind | 'test', number>> = { dns_restored: 0x2ecc71, dkim_rotation_completed: 0x2ecc71, test: 0x3498db, quota_80: 0xf1c40f, dkim_rotation_pending: 0xf1c40f };
const DEFAULT_COLOR = 0xe74c3c;

/** Slack's mrkdwn needs &, < and > escaped (they start links and mentions). */
const slackEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const cut = (s: string, n: number) => (s.length <= n ? s : `${s.slice(0, n - 1)}…`);

/** The alert's data as short "key: value" lines (objects as JSON). */
function facts(alert: Alert): Array<[string, string]> {
  return Object.entries(alert.data).slice(0, 10).map(([k, v]) => [k, cut(typeof v === 'string' ? v : JSON.stringify(v), 300)]);
}

export function slackMessage(alert: Alert, hostname: string): Record<string, unknown> {
  const title = ALERT_TITLES[alert.kind as AlertKind | 'test'] ?? alert.kind;
  const detail = facts(alert).map(([k, v]) => `*${slackEscape(k)}:* ${slackEscape(v)}`).join('\n');
  return {
    text: cut(`${title}: ${slackEscape(alert.message)}`, 3000),
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: cut(title, 150) } },
      { type: 'section', text: { type: 'mrkdwn', text: cut(slackEscape(alert.message), 3000) } },
      ...(detail ? [{ type: 'section', text: { type: 'mrkdwn', text: cut(detail, 3000) } }] : []),
      { type: 'context', elements: [{ type: 'mrkdwn', text: `${slackEscape(hostname)} · ${alert.kind} · ${alert.createdAt}` }] },
    ],
  };
}

export function discordMessage(alert: Alert, hostname: string): Record<string, unknown> {
  const title = ALERT_TITLES[alert.kind as AlertKind | 'test'] ?? alert.kind;
  return {
    username: 'Mail appliance',
    content: cut(`**${title}**`, 2000),
    embeds: [
      {
        title: cut(title, 256),
        description: cut(alert.message, 4096),
        color: COLORS[alert.kind as AlertKind | 'test'] ?? DEFAULT_COLOR,
        timestamp: alert.createdAt,
        fields: facts(alert).map(([name, value]) => ({ name: cut(name, 256), value: cut(value || '-', 1024), inline: false })),
        footer: { text: cut(`${hostname} · ${alert.kind}`, 2048) },
      },
    ],
    allowed_mentions: { parse: [] },
  };
}

/** The exact body of a signed webhook channel's request (the same bytes on every attempt of a delivery). */
export function channelWebhookBody(alert: Alert): string {
  return JSON.stringify({ type: `alert.${alert.kind}`, created_at: alert.createdAt, data: alert });
}

export function emailText(alert: Alert, hostname: string): { subject: string; text: string } {
  const title = ALERT_TITLES[alert.kind as AlertKind | 'test'] ?? alert.kind;
  const lines = [alert.message, '', ...facts(alert).map(([k, v]) => `${k}: ${v}`), '', `Alert ${alert.id} (${alert.kind}) raised at ${alert.createdAt} by ${hostname}.`, 'GET /alerts lists the team\'s alerts; POST /alerts/{id}/acknowledge marks one seen.'];
  return { subject: `[${hostname}] ${title}`, text: lines.join('\n') };
}

/** One attempt (no bookkeeping). Never throws for the receiver's faults. */
export async function sendChannelAttempt(ctx: AppContext, channel: ChannelRow, delivery: Pick<NotifyDeliveryRow, 'id' | 'payload'>): Promise<WebhookResponse> {
  const alert = JSON.parse(delivery.payload) as Alert;
  const target = ctx.secrets.open(channel.target_sealed);
  const hostname = ctx.config.hostname;
  if (channel.type === 'email') {
    const { subject, text } = emailText(alert, hostname);
    try {
      const id = await ctx.db.transaction((trx) => sendSystemEmail(ctx, trx, { teamId: channel.team_id, to: target, subject, text }));
      return { statusCode: 202, body: `accepted as email ${id}` };
    } catch (err) {
      if (err instanceof AppError) return { statusCode: err.status, body: err.message };
      throw err;
    }
  }
  let body: string;
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': `mail-appliance-notifications/${ctx.version}` };
  if (channel.type === 'webhook') {
    const at = ctx.clock.now();
    body = channelWebhookBody(alert);
    headers[SIGNATURE_HEADER] = signatureHeader(body, [ctx.secrets.open(channel.secret_sealed!)]);
    headers[WEBHOOK_ID_HEADER] = `ntf_${delivery.id}`;
    headers[TIMESTAMP_HEADER] = String(Math.floor(at.getTime() / 1000));
    headers[EVENT_HEADER] = `alert.${alert.kind}`;
  } else body = JSON.stringify(channel.type === 'slack' ? slackMessage(alert, hostname) : discordMessage(alert, hostname));
  return postWebhook({ url: target, body, headers, timeoutMs: ctx.config.webhookTimeoutMs, allowPrivate: ctx.config.webhookAllowPrivate, dns: ctx.dns });
}

/**
 * Records an attempt. `auto`: a failure is retried on the webhook schedule until 8 attempts; `manual`
 * (test, replay): one attempt, a failure ends it failed unless an automatic attempt is still due.
 */
export async function recordChannelAttempt(ctx: AppContext, delivery: NotifyDeliveryRow, res: WebhookResponse, mode: 'auto' | 'manual'): Promise<{ retryAt: Date | null; delivery: NotifyDeliveryRow }> {
  const at = ctx.clock.now();
  const ok = res.statusCode !== null && res.statusCode >= 200 && res.statusCode < 300;
  return ctx.db.transaction(async (trx) => {
    const current = ((await trx('notification_deliveries').where({ id: delivery.id }).first()) as NotifyDeliveryRow | undefined) ?? delivery;
    const attempts = current.attempts + 1;
    let status: NotifyStatus = ok ? 'delivered' : 'failed';
    let retryAt: Date | null = null;
    let nextRetryAt: string | null = null;
    if (!ok && mode === 'auto' && attempts < WEBHOOK_MAX_ATTEMPTS) {
      status = 'pending';
      retryAt = new Date(at.getTime() + WEBHOOK_RETRY_DELAYS_MS[attempts - 1]!);
      nextRetryAt = retryAt.toISOString();
    } else if (!ok && mode === 'manual' && current.status === 'pending' && current.next_retry_at !== null) {
      status = 'pending'; // its scheduled retry still comes
      nextRetryAt = current.next_retry_at;
    }
    const changes = { status, status_code: res.statusCode, response_body: res.body, attempts, next_retry_at: nextRetryAt, delivered_at: ok ? at.toISOString() : current.delivered_at };
    await trx('notification_deliveries').where({ id: delivery.id }).update(changes);
    return { retryAt, delivery: { ...current, ...changes } };
  });
}

export async function loadChannelDelivery(ctx: AppContext, deliveryId: number): Promise<{ delivery: NotifyDeliveryRow; channel: ChannelRow } | null> {
  const delivery = (await ctx.db('notification_deliveries').where({ id: deliveryId }).first()) as NotifyDeliveryRow | undefined;
  if (!delivery) return null;
  const channel = (await ctx.db('notification_channels').where({ id: delivery.channel_id }).first()) as ChannelRow | undefined;
  return channel ? { delivery, channel } : null;
}

/** The job handler for NOTIFY_DELIVER_JOB: one automatic attempt of a pending delivery. */
export async function deliverNotification(ctx: AppContext, job: Job): Promise<JobOutcome> {
  const { deliveryId } = job.payload as NotifyJobPayload;
  const loaded = await loadChannelDelivery(ctx, deliveryId);
  if (!loaded || loaded.delivery.status !== 'pending') return; // deleted, or answered already (a re-run)
  const { delivery, channel } = loaded;
  if (!channel.enabled) {
    await ctx.db('notification_deliveries').where({ id: delivery.id, status: 'pending' }).update({ status: 'failed', next_retry_at: null, response_body: 'channel disabled' });
    return;
  }
  const res = await sendChannelAttempt(ctx, channel, delivery);
  const { retryAt } = await recordChannelAttempt(ctx, delivery, res, 'auto');
  if (retryAt) return { retryAt, error: `${res.statusCode ?? 'no response'}: ${res.body.slice(0, 200)}` };
}
