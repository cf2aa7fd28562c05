// The delivery job handler: loads an email, builds and signs its message, hands each destination domain
// to the MTA (or, in test mode, to the simulator), and records every outcome — recipient statuses, the
// timeline, webhook events, suppressions — in one transaction. Deferred recipients are retried by
// returning the next time to the job queue.
import type { AppContext } from '../context.js';
import { MINUTE, HOUR } from '../core/clock.js';
import { parseMailbox } from '../core/address.js';
import type { Job, JobOutcome } from '../jobs/queue.js';
import { composeMessage } from '../mta/compose.js';
import { signMessage } from '../mta/dkim.js';
import type { DeliveryResult, Mta, RecipientOutcome, TlsMode } from '../mta/types.js';
import { addTimeline, emitEmailEvent, json, type AttachmentRow, type EmailRow, type RecipientRow } from './email-records.js';
import { deriveEmailStatus, isPending, type RecipientStatus } from './email-status.js';
import { addSuppression } from './suppressions.js';
import { simulateDelivery, type SimulatedResult } from './test-mode.js';

/**
 * Waits between attempts for deferred recipients: 1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 4 h, then every
 * 8 h. A recipient still deferred 48 hours after the first attempt fails (RFC 5321 §4.5.4.1 suggests 4-5 days;
 * 48 h is what transactional senders expect).
 */
export const RETRY_DELAYS_MS = [1 * MINUTE, 5 * MINUTE, 15 * MINUTE, 30 * MINUTE, 1 * HOUR, 2 * HOUR, 4 * HOUR, 8 * HOUR];
export const GIVE_UP_AFTER_MS = 48 * HOUR;

export function retryDelay(attempt: number): number {
  return RETRY_DELAYS_MS[Math.min(attempt - 1, RETRY_DELAYS_MS.length - 1)]!;
}

interface DomainKeyRow {
  name: string;
  tls_mode: TlsMode;
  selector: string;
  private_key_sealed: string;
}

const SYSTEM_SENDER: DomainKeyRow = { name: '', tls_mode: 'opportunistic', selector: '', private_key_sealed: '' };

/** The return path: bounces come back to the sender's domain, tagged with the email's id (VERP-style). */
export const returnPath = (email: Pick<EmailRow, 'public_id' | 'from_domain'>) => `bounces+${email.public_id}@${email.from_domain}`;

async function buildSignedMessage(ctx: AppContext, email: EmailRow, key: DomainKeyRow, at: Date): Promise<Buffer> {
  const attachments = await ctx.db<AttachmentRow>('email_attachments').where('email_id', email.id).orderBy('position');
  const boxes = (text: string) => json<string[]>(text).map((s) => parseMailbox(s)!);
  const raw = await composeMessage({
    from: parseMailbox(email.from_header)!,
    to: boxes(email.to_addrs),
    cc: boxes(email.cc_addrs),
    replyTo: boxes(email.reply_to),
    subject: email.subject,
    html: email.html ?? undefined,
    text: email.text ?? undefined,
    headers: json(email.headers),
    attachments: attachments.map((a) => ({ filename: a.filename, contentType: a.content_type, content: a.content })),
    messageId: email.message_id,
    date: new Date(email.created_at),
  });
  if (!key.selector) return raw; // a system email (no sender domain of a team): sent unsigned
  return signMessage(raw, { domain: key.name, selector: key.selector, privateKey: ctx.secrets.open(key.private_key_sealed) }, at);
}

/** The job handler for DELIVER_JOB. */
export async function deliverEmail(ctx: AppContext, mta: Mta, job: Job): Promise<JobOutcome> {
  const { emailId } = job.payload as { emailId: number };
  const email = await ctx.db<EmailRow>('emails').where({ id: emailId }).first();
  if (!email || email.status === 'cancelled') return;
  const recipients = await ctx.db<RecipientRow>('email_recipients').where('email_id', emailId).orderBy('id');
  const pending = recipients.filter((r) => isPending(r.status));
  if (pending.length === 0) return;

  const started = ctx.clock.now();
  const attempt = email.attempts + 1;
  await ctx.db.transaction(async (trx) => {
    await trx('emails').where({ id: emailId }).update({ attempts: attempt, status: 'sending', job_id: null, updated_at: started.toISOString() });
    await addTimeline(trx, email, started, 'sending', { attempt, recipients: pending.map((r) => r.address) });
  });

  // System emails (system-mail.ts: from the box's own name, no key, no domain) go unsigned.
  const system = email.domain_id === null && email.api_key_id === null && email.from_domain === ctx.config.hostname;
  const key = system ? SYSTEM_SENDER : await ctx.db('domains as d')
    .join('dkim_keys as k', 'k.domain_id', 'd.id')
    .where({ 'd.id': email.domain_id, 'k.state': 'active' })
    .first<DomainKeyRow | undefined>('d.name', 'd.tls_mode', 'k.selector', 'k.private_key_sealed');
  let results: DeliveryResult[];
  if (!key) {
    // The sending domain was deleted after the email was accepted: nothing can sign it.
    results = [failAll(pending, 'The sending domain was removed before the email could be sent')];
  } else {
    const raw = await buildSignedMessage(ctx, email, key, started);
    const byDomain = new Map<string, string[]>();
    for (const r of pending) byDomain.set(r.domain, [...(byDomain.get(r.domain) ?? []), r.address]);
    results = await Promise.all(
      [...byDomain].map(([domain, addresses]) =>
        email.mode === 'test'
          ? simulateDelivery(addresses, attempt)
          : mta.deliver({ domain, recipients: addresses, envelopeFrom: returnPath(email), raw, tlsMode: key.tls_mode }),
      ),
    );
  }
  return recordOutcomes(ctx, email, recipients, results, attempt);
}

function failAll(recipients: RecipientRow[], message: string): DeliveryResult {
  return {
    route: { kind: 'direct', name: 'none', tls: false },
    outcomes: recipients.map((r) => ({ recipient: r.address, status: 'bounced', reply: { message }, code: '5.0.0', category: 'unknown' })),
  };
}

function bounceData(o: RecipientOutcome): Record<string, unknown> {
  return { bounce_message: o.reply.message, bounce_code: o.code, bounce_category: o.category ?? 'unknown' };
}

async function recordOutcomes(ctx: AppContext, email: EmailRow, recipients: RecipientRow[], results: DeliveryResult[], attempt: number): Promise<JobOutcome> {
  const at = ctx.clock.now();
  const now = at.toISOString();
  const expired = at.getTime() - new Date(email.scheduled_at ?? email.created_at).getTime() >= GIVE_UP_AFTER_MS;
  const status = new Map<string, RecipientStatus>(recipients.map((r) => [r.address, r.status]));
  let deferred = 0;

  await ctx.db.transaction(async (trx) => {
    // email.delivery_delayed goes out on the email's first deferral only. An earlier deferral left a
    // `sending` timeline entry with `next_attempt_at`; look only when this attempt defers someone.
    let delayReported: boolean | undefined;
    const firstDelay = async () => {
      delayReported ??= Boolean(
        await trx('email_events').where({ email_id: email.id, type: 'sending' }).whereRaw(`json_extract(data, '$.next_attempt_at') IS NOT NULL`).first('id'),
      );
      if (delayReported) return false;
      delayReported = true;
      return true;
    };
    for (const result of results) {
      const { route, outcomes } = result;
      const routeData = { route: route.name, via: route.kind, host: route.host, tls: route.tls };
      const accepted = outcomes.filter((o) => o.status === 'delivered');
      for (const o of outcomes) {
        let next: RecipientStatus = o.status === 'delivered' ? (route.kind === 'relay' ? 'sent' : 'delivered') : o.status === 'bounced' ? 'bounced' : 'deferred';
        if (next === 'deferred' && expired) next = 'failed';
        if (next === 'deferred') deferred++;
        status.set(o.recipient, next);
        await trx('email_recipients')
          .where({ email_id: email.id, address: o.recipient })
          .update({ status: next, last_code: o.code, last_message: o.reply.message.slice(0, 2000), bounce_category: o.category ?? null, updated_at: now });
        if (next === 'bounced') {
          await addTimeline(trx, email, at, 'bounced', { recipient: o.recipient, ...bounceData(o), ...routeData });
          await emitEmailEvent(trx, email, at, 'email.bounced', { recipient: o.recipient, ...bounceData(o) });
          if (o.category === 'invalid_mailbox') await addSuppression(trx, at, email.team_id, o.recipient, 'bounce', `${o.code} ${o.reply.message}`.slice(0, 500));
        } else if (next === 'deferred' || next === 'failed') {
          await emitEmailEvent(trx, email, at, 'email.soft_bounced', { recipient: o.recipient, ...bounceData(o) });
          if (next === 'failed') {
            await addTimeline(trx, email, at, 'failed', { recipient: o.recipient, reason: 'retries exhausted', ...bounceData(o) });
            await emitEmailEvent(trx, email, at, 'email.failed', { recipient: o.recipient, reason: 'retries exhausted', ...bounceData(o) });
          } else if (await firstDelay()) {
            await emitEmailEvent(trx, email, at, 'email.delivery_delayed', { recipient: o.recipient, ...bounceData(o) });
          }
        }
      }
      if (accepted.length) {
        const to = accepted.map((o) => o.recipient);
        const response = accepted[0]!.reply.message;
        await addTimeline(trx, email, at, 'sent', { recipients: to, response, ...routeData });
        await emitEmailEvent(trx, email, at, 'email.sent', { recipients: to });
        if (route.kind === 'direct') {
          await addTimeline(trx, email, at, 'delivered', { recipients: to, response, ...routeData });
          await emitEmailEvent(trx, email, at, 'email.delivered', { recipients: to });
        }
      }
      for (const recipient of (result as Partial<SimulatedResult>).complained ?? []) {
        status.set(recipient, 'complained');
        await trx('email_recipients').where({ email_id: email.id, address: recipient }).update({ status: 'complained', updated_at: now });
        await addTimeline(trx, email, at, 'complained', { recipient });
        await emitEmailEvent(trx, email, at, 'email.complained', { recipient });
        await addSuppression(trx, at, email.team_id, recipient, 'complaint');
      }
    }
    const derived = deriveEmailStatus([...status.values()], true);
    const retryAt = deferred > 0 ? new Date(at.getTime() + retryDelay(attempt)) : null;
    const values = [...status.values()];
    const anySent = values.some((s) => s === 'sent' || s === 'delivered' || s === 'complained');
    const anyDelivered = values.some((s) => s === 'delivered' || s === 'complained');
    await trx('emails')
      .where({ id: email.id })
      .update({
        status: derived,
        sent_at: email.sent_at ?? (anySent ? now : null),
        delivered_at: email.delivered_at ?? (anyDelivered ? now : null),
        updated_at: now,
      });
    if (retryAt) await addTimeline(trx, email, at, 'sending', { deferred, next_attempt_at: retryAt.toISOString() });
    if (derived === 'failed' && !expired) {
      await emitEmailEvent(trx, email, at, 'email.failed', { reason: 'no recipient could be delivered' });
    }
  });
  if (deferred > 0) return { retryAt: new Date(at.getTime() + retryDelay(attempt)), error: `${deferred} recipient(s) deferred` };
}
