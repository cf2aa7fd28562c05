// The delivery job handler: loads an email, builds and signs its message, hands each destination domain
// to the MTA (or, in test mode, to the simulator), and records every outcome — recipient statuses, the
// timeline, webhook events, suppressions — in one transaction. Deferred recipients are retried by
// returning the next time to the job queue.
//
// The queue starts many deliveries in the same turn of the event loop, so the reads go through a Batcher
// and the "sending" mark and the outcome writes through the shared writer's batches (src/db/batcher.ts): one
// statement per table for every delivery in flight, instead of one per delivery. Each delivery still
// completes on its own.
import type { AppContext } from '../../context.js';
import { MINUTE, HOUR } from '../../core/clock.js';
import { addressKey, parseMailbox } from '../../core/address.js';
import { Batcher, insertRows, sharedWriterOf, updateFromValues } from '../../db/batcher.js';
import { placeholders, queryRows, readsOf, settleAll, type Queryable } from '../../db/index.js';
import { jsonObjectOf, queryJson } from '../../db/json-reads.js';
import { write } from '../../db/script.js';
import { recordEvents, type EventRow } from '../../events/recorder.js';
import { FINISHED, type Job, type JobHandler, type JobOutcome } from '../../jobs/queue.js';
import type { ComposeInput } from '../../mta/compose.js';
import { RenderThreadError, type RawMessage, type RenderPool, type SigningKey } from '../../mta/render-pool.js';
import type { DeliveryResult, Mta, RecipientOutcome, TlsMode } from '../../mta/types.js';
import { emailEventRow, json, RETURN_PATH_PREFIX, timelineRow, type AttachmentRow, type EmailBodyRow, type EmailRow, type RecipientRow, type TimelineRow } from './email-records.js';
import { deriveEmailStatus, isPending, type RecipientStatus } from './email-status.js';
import { simulateDelivery, type SimulatedResult } from './test-mode.js';
import { trackedHtml, trackingHostOf, type DomainTracking } from './tracking.js';
import { alertInsert } from '../platform/index.js';

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

/** One active signing key of a sender domain, as the delivery read answers it. */
interface DomainKeyRow {
  domain_id: string;
  name: string;
  tls_mode: TlsMode;
  /** The domain's dedicated outbound address, or null (the shared pool). */
  dedicated_ip: string | null;
  selector: string;
  algorithm: 'rsa' | 'ed25519';
  private_key_sealed: string;
  open_tracking: number;
  click_tracking: number;
  tracking_subdomain: string | null;
  record_status: string;
}

/** A sender domain with the keys that sign its mail: one RSA key, or an Ed25519 key and an RSA key beside it. */
interface SenderKeys {
  name: string;
  tls_mode: TlsMode;
  dedicated_ip?: string | null;
  keys: Array<Pick<DomainKeyRow, 'selector' | 'algorithm' | 'private_key_sealed'>>;
  /** What the domain tracks (tracking.ts): its html is rewritten before the message is built. */
  tracking: DomainTracking;
}

/** System emails (system-mail.ts: from the box's own name, no team domain, no API key) go unsigned and untracked. */
const SYSTEM_SENDER: SenderKeys = { name: '', tls_mode: 'opportunistic', keys: [], tracking: { open: false, click: false, host: null } };

/**
 * The active keys of each domain in `rows`. They are read in one statement with the emails, so one snapshot:
 * a rotation's activation switches the active keys in one transaction, and a message is signed by the old
 * set or the new one, never by both or neither (services/platform/dkim-rotation.ts). RSA signs first (on top):
 * a verifier that checks only the first signature knows RSA.
 */
function senderKeysOf(rows: DomainKeyRow[]): Map<string, SenderKeys> {
  const byDomain = new Map<string, SenderKeys>();
  for (const r of rows) {
    let sender = byDomain.get(r.domain_id);
    if (!sender) {
      const tracking = { open: Boolean(r.open_tracking), click: Boolean(r.click_tracking), host: trackingHostOf(r.name, r.tracking_subdomain, r.record_status) };
      byDomain.set(r.domain_id, (sender = { name: r.name, tls_mode: r.tls_mode, dedicated_ip: r.dedicated_ip, keys: [], tracking }));
    }
    sender.keys.push({ selector: r.selector, algorithm: r.algorithm, private_key_sealed: r.private_key_sealed });
  }
  for (const sender of byDomain.values()) sender.keys.sort((a, b) => Number(a.algorithm !== 'rsa') - Number(b.algorithm !== 'rsa'));
  return byDomain;
}

/** The sender domain's dedicated address with its HELO name (MAIL_OUTBOUND_IPS); none when unset or no longer configured. */
function sourceFor(ctx: AppContext, sender: SenderKeys): { address: string; helo: string } | undefined {
  if (!sender.dedicated_ip) return undefined;
  const entry = ctx.config.outboundIps.find((o) => o.ip === sender.dedicated_ip);
  return entry ? { address: entry.ip, helo: entry.helo } : undefined;
}

/** The return path: bounces come back to the sender's domain, tagged with the email's id (VERP-style). */
export const returnPath = (email: Pick<EmailRow, 'public_id' | 'from_domain'>) => `${RETURN_PATH_PREFIX}${email.public_id}@${email.from_domain}`;

interface Loaded {
  email: EmailRow;
  /** Its html and text (a raw send's, as parsed, are shown by the API; its source is what is sent). */
  body: EmailBodyRow | undefined;
  recipients: RecipientRow[];
  attachments: AttachmentRow[];
  /** The sender domain's signing keys; SYSTEM_SENDER for a system email; undefined when the domain is gone. */
  key: SenderKeys | undefined;
  /** A raw send's finished message (SMTP submission): signed as it is instead of composed. */
  source: Buffer | undefined;
}

/** What one delivery attempt changes, written together with other attempts' changes by one transaction. */
interface WriteSet {
  recipients: Array<Pick<RecipientRow, 'email_id' | 'address' | 'status' | 'last_code' | 'last_message' | 'bounce_category' | 'updated_at'>>;
  timeline: TimelineRow[];
  events: Array<Omit<EventRow, 'id'>>;
  suppressions: Array<{ team_id: string; email: string; reason: 'bounce' | 'complaint'; details: string | null; email_id: string; created_at: string }>;
  email: Pick<EmailRow, 'id' | 'status' | 'sent_at' | 'delivered_at' | 'updated_at'>;
  /** The delivery job, when this attempt finished it (nothing deferred): deleted with the outcome. */
  finishedJob: number | null;
  /** Seconds from acceptance to this first hand-over (mail_delivery_latency_seconds); null when not the first. */
  latencySeconds: number | null;
  /** Bounces of a blocking kind (spam_block, policy) by receiving provider: counted toward `provider_blocking`. */
  blocks?: Array<{ team_id: string; provider: string }>;
}

/** Bounce categories that say the provider refuses the box's mail (not the recipient's address). */
const BLOCKING = new Set(['spam_block', 'policy']);
/** Blocking bounces from one provider within one UTC hour that raise `provider_blocking` (once per provider and hour). */
export const PROVIDER_BLOCK_ALERT = 10;

/** Hours of blocking-bounce counts kept (the alert reads only the current hour); older rows are pruned by the retention job. */
export const PROVIDER_BLOCKS_KEEP_MS = 7 * 24 * HOUR;

/** Deletes at most `limit` provider block counters of hours before `before`; returns how many. */
export async function pruneProviderBlocks(ctx: AppContext, before: Date, limit: number): Promise<number> {
  const hour = before.toISOString().slice(0, 13); // 2026-11-29T07, as written
  return ctx.db.transaction((trx) => trx('provider_blocks').whereIn('rowid', trx('provider_blocks').where('hour', '<', hour).orderBy('hour').limit(limit).select('rowid')).delete());
}

/** The provider behind a route: the MX host's last two labels (gmail-smtp-in.l.google.com → google.com), else the recipient's domain. */
export function providerOf(host: string | null | undefined, recipient: string): string {
  const labels = (host ?? '').toLowerCase().replace(/\.$/, '').split('.').filter(Boolean);
  if (labels.length >= 2 && !/^\d+$/.test(labels.at(-1)!)) return labels.slice(-2).join('.');
  return recipient.slice(recipient.lastIndexOf('@') + 1).toLowerCase();
}

/** Counts blocking bounces per team, provider and hour, and writes the alert when a count reaches the threshold. */
function blockWrites(trx: Queryable, at: Date, sets: WriteSet[]): Array<Promise<void>> {
  const counts = new Map<string, { team_id: string; provider: string; n: number }>();
  for (const b of sets.flatMap((s) => s.blocks ?? [])) {
    const key = `${b.team_id}\u0000${b.provider}`;
    const c = counts.get(key) ?? { ...b, n: 0 };
    c.n++;
    counts.set(key, c);
  }
  const hour = at.toISOString().slice(0, 13);
  const out: Array<Promise<void>> = [];
  for (const { team_id, provider, n } of counts.values()) {
    out.push(write(trx, 'INSERT INTO provider_blocks (team_id, provider, hour, count) VALUES (?, ?, ?, ?) ON CONFLICT (team_id, provider, hour) DO UPDATE SET count = count + excluded.count', [team_id, provider, hour, n]));
    const a = alertInsert(at, team_id, 'provider_blocking', `${provider} is refusing this team's mail as spam or by policy: ${PROVIDER_BLOCK_ALERT} or more such bounces since ${hour}:00 UTC.`, { provider, threshold: PROVIDER_BLOCK_ALERT, since: `${hour}:00:00.000Z` }, { dedupeKey: `provider_blocking:${provider}:${hour}` });
    // Runs at COMMIT after the count above: raised once the hour's count reaches the threshold.
    out.push(write(trx, a.sql.replace(' VALUES (?, ?, ?, ?, ?, ?)', ' SELECT ?, ?, ?, ?, ?, ? WHERE (SELECT count FROM provider_blocks WHERE team_id = ? AND provider = ? AND hour = ?) >= ?'), [...a.bindings, team_id, provider, hour, PROVIDER_BLOCK_ALERT]));
  }
  return out;
}

/** Every statement at once (`settleAll`): they touch different rows or tables. */
async function writeOutcomes(ctx: AppContext, trx: Queryable, sets: WriteSet[]): Promise<void> {
  await settleAll([
    updateFromValues(
      trx,
      'email_recipients',
      ['email_id', 'address'],
      { status: 'v.status', last_code: 'v.last_code', last_message: 'v.last_message', bounce_category: 'v.bounce_category', updated_at: 'v.updated_at' },
      sets.flatMap((s) => s.recipients),
    ),
    insertRows(trx, 'email_events', sets.flatMap((s) => s.timeline)),
    recordEvents(trx, sets.flatMap((s) => s.events)),
    insertRows(trx, 'suppressions', sets.flatMap((s) => s.suppressions), ' ON CONFLICT (team_id, email) DO NOTHING'),
    updateFromValues(
      trx,
      'emails',
      ['id'],
      { status: 'v.status', sent_at: 'COALESCE(emails.sent_at, v.sent_at)', delivered_at: 'COALESCE(emails.delivered_at, v.delivered_at)', updated_at: 'v.updated_at' },
      sets.map((s) => s.email),
    ),
    ctx.jobs.finishIn(trx, sets.flatMap((s) => (s.finishedJob === null ? [] : [s.finishedJob]))),
    ...blockWrites(trx, ctx.clock.now(), sets),
  ]);
  // Counted once the statements are written (a failed batch throws above and is retried, then counted).
  const m = ctx.metrics;
  for (const s of sets) {
    for (const r of s.recipients) m.recipientOutcomes.inc({ outcome: r.status, reason: r.bounce_category ?? 'none' });
    if (s.latencySeconds !== null) m.deliveryLatency.observe(s.latencySeconds);
  }
}

function bounceData(o: RecipientOutcome): Record<string, unknown> {
  return { bounce_message: o.reply.message, bounce_code: o.code, bounce_category: o.category ?? 'unknown' };
}

/**
 * The handler's reads wait this long for others to share them (batcher.ts `gatherMs`): a delivery is
 * background work, and without the wait a main thread with time to spare reads each one nearly on its own.
 * (Its writes need no wait: they join the shared writer's next transaction, which starts only when the one
 * running commits.)
 */
const GATHER_MS = 4;
const MAX_BATCH = 200;

/**
 * Recipients the box serves itself, delivered without a network hop: the inbound area implements it
 * (services/inbound/local-delivery.ts) and appliance.ts hands it in. What a recipient carries besides its
 * address is the implementation's own.
 */
export interface LocalDelivery<R extends { address: string }> {
  /** Those of `recipients` (all at `domain`) that the box serves itself; none when the domain is not local. */
  recipients(domain: string, recipients: string[]): Promise<R[]>;
  /** Delivers a finished (signed) message to them, as the MX would have: one outcome per recipient. */
  deliver(raw: Buffer, envelopeFrom: string, recipients: R[]): Promise<DeliveryResult>;
}

/** The handler for DELIVER_JOB, with its batched reads and writes; messages are built by the render pool. */
export function createDeliveryHandler<R extends { address: string }>(ctx: AppContext, mta: Mta, renderer: RenderPool, local?: LocalDelivery<R>): JobHandler {
  const reads = readsOf(ctx.db);
  const shared = sharedWriterOf(ctx.db);
  const load = new Batcher<number, Loaded | undefined>(async (ids) => {
    // All at once: an email and its rows are committed together, and the three JSON reads go as one statement
    // (db/json-reads.ts), one snapshot. Its body comes with it, and whether it has attachments or a source:
    // most have neither, and those that do are read in a second round (rows that never change once written).
    const list = placeholders(ids.length);
    const [loaded, recipientRows, keyRows] = await settleAll([
      queryJson<Array<[EmailRow, string | null, string | null, number, number]>>(
        reads,
        `SELECT json_group_array(json_array(${jsonObjectOf('emails', 'e')}, b.html, b.text,
           EXISTS (SELECT 1 FROM email_attachments AS a WHERE a.email_id = e.id),
           EXISTS (SELECT 1 FROM email_sources AS s WHERE s.email_id = e.id)))
         FROM emails AS e LEFT JOIN email_bodies AS b ON b.email_id = e.id WHERE e.id IN (${list})`,
        ids,
      ),
      queryJson<RecipientRow[]>(
        reads,
        `SELECT json_group_array(${jsonObjectOf('email_recipients', 'r')} ORDER BY r.id) FROM email_recipients AS r WHERE r.email_id IN (${list})`,
        ids,
      ),
      queryJson<DomainKeyRow[]>(
        reads,
        `SELECT json_group_array(json_object('domain_id', d.id, 'name', d.name, 'tls_mode', d.tls_mode, 'dedicated_ip', d.dedicated_ip, 'selector', k.selector, 'algorithm', k.algorithm, 'private_key_sealed', k.private_key_sealed,
           'open_tracking', d.open_tracking, 'click_tracking', d.click_tracking, 'tracking_subdomain', d.tracking_subdomain, 'record_status', CASE WHEN d.tracking_subdomain IS NULL THEN '{}' ELSE d.record_status END))
         FROM domains AS d JOIN dkim_keys AS k ON k.domain_id = d.id
         WHERE d.id IN (SELECT DISTINCT domain_id FROM emails WHERE id IN (${list}) AND domain_id IS NOT NULL) AND k.state = 'active'`,
        ids,
      ),
    ]);
    // An aggregate answers a row (an empty array) also when nothing matched: null only in types.
    const [rows, recipients, domainKeys] = [loaded ?? [], recipientRows ?? [], senderKeysOf(keyRows ?? [])];
    const withAttachments = rows.filter(([, , , hasAttachments]) => hasAttachments).map(([email]) => email.id);
    const withSource = rows.filter(([, , , , hasSource]) => hasSource).map(([email]) => email.id);
    const [attachments, sources] = await settleAll([
      withAttachments.length
        ? queryRows<AttachmentRow>(reads, `SELECT * FROM email_attachments WHERE email_id IN (${placeholders(withAttachments.length)}) ORDER BY position`, withAttachments)
        : [],
      withSource.length ? queryRows<{ email_id: number; raw: Buffer }>(reads, `SELECT * FROM email_sources WHERE email_id IN (${placeholders(withSource.length)})`, withSource) : [],
    ]);
    return ids.map((id) => {
      const row = rows.find(([email]) => email.id === id);
      if (!row) return undefined;
      const [email, html, text, hasAttachments, hasSource] = row;
      const mine = attachments.filter((a) => a.email_id === id);
      const source = sources.find((s) => s.email_id === id)?.raw;
      // Deleted between the two rounds (retention): as if gone.
      if ((hasAttachments && mine.length === 0) || (hasSource && !source)) return undefined;
      return {
        email,
        body: html !== null || text !== null ? { email_id: id, html, text } : undefined,
        recipients: recipients.filter((r) => r.email_id === id),
        attachments: mine,
        key: isSystemEmail(email) ? SYSTEM_SENDER : email.domain_id === null ? undefined : domainKeys.get(email.domain_id),
        source,
      };
    });
  }, MAX_BATCH, GATHER_MS);

  const markSending = shared.batch(async (trx, items: Array<{ email: EmailRow; pending: RecipientRow[]; attempt: number; at: Date }>) => {
    const now = ctx.clock.now().toISOString();
    await settleAll([
      write(trx, `UPDATE emails SET attempts = attempts + 1, status = 'sending', job_id = NULL, updated_at = ? WHERE id IN (${placeholders(items.length)})`, [
        now,
        ...items.map((i) => i.email.id),
      ]),
      insertRows(
        trx,
        'email_events',
        items.map((i) => timelineRow(i.email, i.at, 'sending', { attempt: i.attempt, recipients: i.pending.map((r) => r.address) })),
      ),
    ]);
    return items.map(() => undefined);
  }, MAX_BATCH);

  const record = shared.batch(async (trx, sets: WriteSet[]) => {
    await writeOutcomes(ctx, trx, sets);
    return sets.map(() => undefined);
  }, MAX_BATCH);

  /** What the render pool builds: the message (composed, or a raw send's source) and the signing keys. */
  function renderInput(l: Loaded, key: SenderKeys): { message: ComposeInput | RawMessage; signer: SigningKey[] } {
    const { email } = l;
    const signer = key.keys.map((k) => ({ domain: key.name, selector: k.selector, pem: ctx.secrets.open(k.private_key_sealed) }));
    if (l.source) return { message: { raw: l.source }, signer };
    const boxes = (text: string) => json<string[]>(text).map((s) => parseMailbox(s)!);
    const html = l.body?.html ?? undefined;
    const message = {
      from: parseMailbox(email.from_header)!,
      to: boxes(email.to_addrs),
      cc: boxes(email.cc_addrs),
      replyTo: boxes(email.reply_to),
      subject: email.subject,
      // Open and click tracking rewrite the html here: the stored body stays as the API took it.
      html: html !== undefined && (key.tracking.open || key.tracking.click) ? trackedHtml(ctx, html, email, l.recipients, key.tracking) : html,
      text: l.body?.text ?? undefined,
      headers: json<Record<string, string>>(email.headers),
      attachments: l.attachments.map((a) => ({ filename: a.filename, contentType: a.content_type, content: a.content })),
      messageId: email.message_id,
      date: new Date(email.created_at),
    };
    return { message, signer };
  }

  // A deleted domain also leaves domain_id null (SET NULL), so a system email is told by all three marks.
  const isSystemEmail = (email: EmailRow) => email.domain_id === null && email.api_key_id === null && email.from_domain === ctx.config.hostname;

  /** email.delivery_delayed goes out on the email's first deferral only: an earlier one left `next_attempt_at` on a `sending` entry. */
  async function delayReportedBefore(email: EmailRow): Promise<boolean> {
    const row = await ctx.db('email_events').where({ email_id: email.id, type: 'sending' }).whereRaw(`json_extract(data, '$.next_attempt_at') IS NOT NULL`).first('id');
    return Boolean(row);
  }

  return async function deliverEmail(job: Job): Promise<JobOutcome> {
    const { emailId } = job.payload as { emailId: number };
    const loaded = await load.submit(emailId);
    if (!loaded || loaded.email.status === 'cancelled') return;
    const { email, recipients, key } = loaded;
    const pending = recipients.filter((r) => isPending(r.status));
    if (pending.length === 0) return;

    const started = ctx.clock.now();
    const attempt = email.attempts + 1;
    await markSending({ email, pending, attempt, at: started });

    let results: DeliveryResult[] = [];
    let failure: string | undefined;
    let raw: Buffer | undefined;
    const remote = destinations(pending);
    const here = email.mode === 'test' || !local ? [] : await takeLocal(local, remote);
    if (!key) {
      failure = 'The sending domain was removed before the email could be sent';
    } else {
      try {
        const { message, signer } = renderInput(loaded, key);
        if (email.mode !== 'test' && renderer.delivers && here.length === 0) {
          // The thread that builds and signs the message also runs its SMTP transactions (render-pool.ts).
          const source = sourceFor(ctx, key);
          const deliveries = [...remote].map(([domain, addresses]) => ({ domain, recipients: addresses, envelopeFrom: returnPath(email), tlsMode: key.tls_mode, source }));
          results = await renderer.renderAndDeliver(message, signer, started, deliveries, ctx.clock.now());
        } else {
          raw = await renderer.render(message, signer, started);
        }
      } catch (err) {
        if (err instanceof RenderThreadError) throw err; // the thread died, not the message: the job retries
        // Not something a retry mends (a lost master key, a key that cannot sign): the email fails now.
        ctx.log.error({ err, email: email.public_id }, 'delivery: the message could not be built or signed');
        failure = `The message could not be built or signed: ${err instanceof Error ? err.message : String(err)}`;
      }
    }
    if (raw && key) {
      const message = raw;
      results = await Promise.all(
        [...remote].map(([domain, addresses]) =>
          email.mode === 'test'
            ? simulateDelivery(addresses, attempt)
            : mta.deliver({ domain, recipients: addresses, envelopeFrom: returnPath(email), raw: message, tlsMode: key.tls_mode, source: sourceFor(ctx, key) }),
        ),
      );
      // Local copies last: stored at once, they are recorded with the others right after; were they stored
      // while a remote domain kept the attempt waiting (up to the SMTP timeout), a crash then would leave them
      // pending and the rerun would store them again. (Between storing and recording, as at the MX between
      // storing and answering 250, a crash still means a second copy: at least once.)
      if (here.length > 0 && local) results.push(await local.deliver(message, returnPath(email), here));
    }

    const at = ctx.clock.now();
    const expired = at.getTime() - new Date(email.scheduled_at ?? email.created_at).getTime() >= GIVE_UP_AFTER_MS;
    const deferring = !expired && results.some((r) => r.outcomes.some((o) => o.status === 'deferred'));
    const delayReported = deferring ? await delayReportedBefore(email) : true;
    const { set, deferred } = outcomeWrites(email, recipients, pending, results, failure, attempt, at, expired, delayReported);
    await record({ ...set, finishedJob: deferred > 0 ? null : job.id });
    if (deferred > 0) return { retryAt: new Date(at.getTime() + retryDelay(attempt)), error: `${deferred} recipient(s) deferred` };
    return FINISHED;
  };
}

/** Takes the recipients this box serves itself out of `remote` (emptied domains go): they are delivered locally. */
async function takeLocal<R extends { address: string }>(local: LocalDelivery<R>, remote: Map<string, string[]>): Promise<R[]> {
  const here: R[] = [];
  for (const [domain, addresses] of remote) {
    const found = await local.recipients(domain, addresses);
    if (found.length === 0) continue;
    here.push(...found);
    const left = addresses.filter((a) => !found.some((f) => f.address === a));
    if (left.length > 0) remote.set(domain, left);
    else remote.delete(domain);
  }
  return here;
}

/** Pending recipients by destination domain: one SMTP transaction each. */
function destinations(pending: RecipientRow[]): Map<string, string[]> {
  const byDomain = new Map<string, string[]>();
  for (const r of pending) byDomain.set(r.domain, [...(byDomain.get(r.domain) ?? []), r.address]);
  return byDomain;
}

/** Everything one attempt's results change, as rows (no I/O). */
function outcomeWrites(
  email: EmailRow,
  recipients: RecipientRow[],
  pending: RecipientRow[],
  results: DeliveryResult[],
  failure: string | undefined,
  attempt: number,
  at: Date,
  expired: boolean,
  delayReported: boolean,
): { set: Omit<WriteSet, 'finishedJob'>; deferred: number } {
  const now = at.toISOString();
  const final = new Map(recipients.map((r) => [r.address, { ...r }]));
  const timeline: TimelineRow[] = [];
  const events: Array<Omit<EventRow, 'id'>> = [];
  const suppressions: WriteSet['suppressions'] = [];
  const blocks: NonNullable<WriteSet['blocks']> = [];
  const changed = new Set<string>();
  const set = (address: string, values: Partial<RecipientRow>) => {
    const row = final.get(address);
    if (!row) return; // an MTA answer for an address this email does not have: nothing to record
    Object.assign(row, values, { updated_at: now });
    changed.add(address);
  };
  let deferred = 0;
  let firstDelay = !delayReported;

  if (failure) {
    for (const r of pending) {
      set(r.address, { status: 'failed', last_code: null, last_message: failure.slice(0, 2000), bounce_category: null });
      timeline.push(timelineRow(email, at, 'failed', { recipient: r.address, reason: failure }));
    }
    events.push(emailEventRow(email, at, 'email.failed', { reason: failure }));
  }

  for (const result of results) {
    const { route, outcomes } = result;
    const routeData = { route: route.name, via: route.kind, host: route.host, tls: route.tls };
    const accepted = outcomes.filter((o) => o.status === 'delivered');
    for (const o of outcomes) {
      let next: RecipientStatus = o.status === 'delivered' ? (route.kind === 'relay' ? 'sent' : 'delivered') : o.status === 'bounced' ? 'bounced' : 'deferred';
      if (next === 'deferred' && expired) next = 'failed';
      if (next === 'deferred') deferred++;
      set(o.recipient, { status: next, last_code: o.code, last_message: o.reply.message.slice(0, 2000), bounce_category: o.category ?? null });
      if (next === 'bounced') {
        timeline.push(timelineRow(email, at, 'bounced', { recipient: o.recipient, ...bounceData(o), ...routeData }));
        events.push(emailEventRow(email, at, 'email.bounced', { recipient: o.recipient, ...bounceData(o) }));
        // A simulated (test-mode) outcome never suppresses: the suppression list guards live sending.
        if (o.category !== undefined && BLOCKING.has(o.category) && email.mode !== 'test' && route.kind !== 'local') blocks.push({ team_id: email.team_id, provider: providerOf(route.host, o.recipient) });
        if (o.category === 'invalid_mailbox' && email.mode !== 'test') {
          suppressions.push({ team_id: email.team_id, email: addressKey(o.recipient), reason: 'bounce', details: `${o.code} ${o.reply.message}`.slice(0, 500), email_id: email.public_id, created_at: now });
        }
      } else if (next === 'deferred' || next === 'failed') {
        events.push(emailEventRow(email, at, 'email.soft_bounced', { recipient: o.recipient, ...bounceData(o) }));
        if (next === 'failed') {
          timeline.push(timelineRow(email, at, 'failed', { recipient: o.recipient, reason: 'retries exhausted', ...bounceData(o) }));
          events.push(emailEventRow(email, at, 'email.failed', { recipient: o.recipient, reason: 'retries exhausted', ...bounceData(o) }));
        } else if (firstDelay) {
          firstDelay = false;
          events.push(emailEventRow(email, at, 'email.delivery_delayed', { recipient: o.recipient, ...bounceData(o) }));
        }
      }
    }
    // One entry per server reply: usually one transaction, but a server's recipient limit splits the
    // recipients over several (each with its own queue id in the reply).
    const byResponse = new Map<string, string[]>();
    for (const o of accepted) byResponse.set(o.reply.message, [...(byResponse.get(o.reply.message) ?? []), o.recipient]);
    for (const [response, to] of byResponse) {
      timeline.push(timelineRow(email, at, 'sent', { recipients: to, response, ...routeData }));
      events.push(emailEventRow(email, at, 'email.sent', { recipients: to }));
      if (route.kind !== 'relay') {
        timeline.push(timelineRow(email, at, 'delivered', { recipients: to, response, ...routeData }));
        events.push(emailEventRow(email, at, 'email.delivered', { recipients: to }));
      }
    }
    for (const recipient of (result as Partial<SimulatedResult>).complained ?? []) {
      set(recipient, { status: 'complained' });
      timeline.push(timelineRow(email, at, 'complained', { recipient }));
      events.push(emailEventRow(email, at, 'email.complained', { recipient }));
      if (email.mode !== 'test') suppressions.push({ team_id: email.team_id, email: addressKey(recipient), reason: 'complaint', details: null, email_id: email.public_id, created_at: now });
    }
  }

  const statuses = [...final.values()].map((r) => r.status);
  const derived = deriveEmailStatus(statuses, true);
  const anySent = statuses.some((s) => s === 'sent' || s === 'delivered' || s === 'complained');
  const anyDelivered = statuses.some((s) => s === 'delivered' || s === 'complained');
  if (deferred > 0) timeline.push(timelineRow(email, at, 'sending', { deferred, next_attempt_at: new Date(at.getTime() + retryDelay(attempt)).toISOString() }));
  if (derived === 'failed' && !expired && !failure) events.push(emailEventRow(email, at, 'email.failed', { reason: 'no recipient could be delivered' }));

  return {
    deferred,
    set: {
      recipients: [...changed].map((a) => {
        const r = final.get(a)!;
        return { email_id: email.id, address: a, status: r.status, last_code: r.last_code, last_message: r.last_message, bounce_category: r.bounce_category, updated_at: now };
      }),
      timeline,
      events,
      suppressions,
      blocks,
      email: { id: email.id, status: derived, sent_at: anySent ? now : null, delivered_at: anyDelivered ? now : null, updated_at: now },
      latencySeconds: anySent && !email.sent_at ? Math.max(0, (at.getTime() - Date.parse(email.created_at)) / 1000) : null,
    },
  };
}
