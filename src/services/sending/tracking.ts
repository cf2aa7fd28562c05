// Open and click tracking: what delivery puts in an email's html when its sender domain tracks opens and/or
// clicks, and what a hit on those URLs records.
//
// Delivery (delivery.ts) composes one message per email, so the html is rewritten there (the stored body is
// left as it was sent through the API): a pixel before </body> (`open_tracking`) and every tracked link
// (tracking-html.ts) pointing at `<base>/track/click/<token>` (`click_tracking`); the pixel is
// `<base>/track/open/<token>`. `<base>` is the domain's tracking subdomain once its CNAME is verified
// (`https://<label>.<domain>`, the scheme and port of MAIL_PUBLIC_URL), else the box's public URL
// (MAIL_PUBLIC_URL, else https://<MAIL_HOSTNAME>), as for the unsubscribe links.
//
// A hit: the token is checked (tracking-tokens.ts; a bad one reads nothing), the email and recipient are read
// (a Batcher on the read connections: the hits in flight share statements; a click's links come from the
// stored html; both kept a minute, so a campaign's repeated hits on the same emails mostly read nothing), and
// the hit is written through the send path's shared writer (db/batcher.ts): every hit that arrives while a
// write transaction runs shares the next one. Per hit:
//   - a timeline entry (email_events, type `opened` / `clicked`): every hit;
//   - a webhook event (email.opened / email.clicked): every hit, with `first` true for the recipient's first
//     hit of that kind (email_engagement as read with the email, and the first hits claimed since in this
//     process: the box is the only writer) and `machine`;
//   - email_engagement: hits, machine hits, first hit, first hit of a person, last hit;
//   - a person's hit (not `machine`) on an email to one recipient who is a contact of the team (by address
//     key): that contact's last_opened_at / last_clicked_at.
// Raw sends (SMTP submission) are signed as they were submitted: not tracked.
import type { AppContext } from '../../context.js';
import { addressKey } from '../../core/address.js';
import { ForgetfulCache } from '../../core/forgetful-cache.js';
import { Batcher, sharedWriterOf, updateFromValues } from '../../db/batcher.js';
import { write } from '../../db/script.js';
import { placeholders, queryRows, readsOf, settleAll, type Tx } from '../../db/index.js';
import { recordEvents, type EventRow } from '../../events/recorder.js';
import { publicBaseUrl } from '../platform/index.js';
import { emailEventRow, timelineRow, type EmailRow, type RecipientRow } from './email-records.js';
import { describeClient, type ClientInfo } from './tracking-client.js';
import { rewriteForTracking, trackedLinks } from './tracking-html.js';
import { readTrackingToken, signTrackingToken, type HitKind } from './tracking-tokens.js';

export const TRACK_OPEN_PATH = '/track/open';
export const TRACK_CLICK_PATH = '/track/click';

/** Links the box never tracks: its own unsubscribe and tracking URLs (any host, so the rule needs no config). */
const KEPT_PATH_RE = /^\/(unsubscribe|track)(\/|$)/i;
export function keptLink(url: string): boolean {
  try {
    return KEPT_PATH_RE.test(new URL(url).pathname);
  } catch {
    return true;
  }
}

/** The links of an email's stored html that a click's link index names. */
export const linksOf = (html: string) => trackedLinks(html, keptLink);

/** What a sender domain tracks, as delivery reads it. */
export interface DomainTracking {
  open: boolean;
  click: boolean;
  /** `<label>.<domain>` when the domain's tracking CNAME is verified, else null (the box's public URL). */
  host: string | null;
}

/** Where a message's tracking URLs point. */
export function trackingBaseUrl(ctx: AppContext, host: string | null): string {
  const base = publicBaseUrl(ctx);
  if (host === null) return base;
  const url = new URL(base);
  return `${url.protocol}//${host}${url.port ? `:${url.port}` : ''}`;
}

/**
 * The tracking host of a domain row: its subdomain's name when the TRACKING record's stored status is
 * verified. `recordStatus` is the domain's record_status JSON.
 */
export function trackingHostOf(domain: string, subdomain: string | null, recordStatus: string): string | null {
  if (!subdomain) return null;
  const name = `${subdomain}.${domain}`;
  try {
    const stored = JSON.parse(recordStatus) as Record<string, { status?: string }>;
    return stored[`TRACKING:${name}`]?.status === 'verified' ? name : null;
  } catch {
    return null;
  }
}

/**
 * The html delivery sends for an email with tracking on: `recipients` are the email's recipient rows (one:
 * its key is in the tokens; several: 0, see tracking-tokens.ts).
 */
export function trackedHtml(ctx: AppContext, html: string, email: Pick<EmailRow, 'id'>, recipients: Array<Pick<RecipientRow, 'id'>>, tracking: DomainTracking): string {
  if (!tracking.open && !tracking.click) return html;
  const base = trackingBaseUrl(ctx, tracking.host);
  const recipientKey = recipients.length === 1 ? recipients[0]!.id : 0;
  const token = (kind: HitKind, link: number) => signTrackingToken(ctx, { kind, emailKey: email.id, recipientKey, link });
  return rewriteForTracking(html, {
    pixelUrl: tracking.open ? `${base}${TRACK_OPEN_PATH}/${token('open', 0)}` : undefined,
    linkUrl: tracking.click ? (i) => `${base}${TRACK_CLICK_PATH}/${token('click', i)}` : undefined,
    keep: keptLink,
  });
}

/** The request a hit came with. */
export interface HitRequest {
  ip: string;
  userAgent: string;
}

/**
 * What a hit needs of its email, kept a minute: what it uses of the rows (ids, team, from, to, subject, the
 * recipients' addresses) never changes once written, and a hit on an email deleted meanwhile is dropped at the
 * write.
 */
/** The columns of an email a hit uses (kept: a small row). */
type HitEmail = Pick<EmailRow, 'id' | 'team_id' | 'public_id' | 'from_header' | 'to_addrs' | 'subject'>;
type HitRecipient = Pick<RecipientRow, 'id' | 'email_id' | 'address'>;

interface EmailFacts {
  email: HitEmail;
  recipients: Map<number, HitRecipient>;
  /**
   * The (recipient, kind) pairs with a hit (`<recipient id>:<kind>`): those of email_engagement when read, and
   * each first hit since, claimed here at once — so of the hits in flight exactly one is first.
   */
  engaged: Set<string>;
}

interface Hit {
  kind: HitKind;
  first: boolean;
  email: HitEmail;
  recipient: HitRecipient | null;
  link: number;
  url: string | null;
  client: ClientInfo;
  userAgent: string;
  at: Date;
}

/**
 * Emails and their links are kept this long and this many: a campaign's opens and clicks come back to the
 * same emails, so most hits read nothing. The time bounds how long a deleted email's link still redirects.
 */
const KEPT_MS = 60_000;
const FACTS_KEPT = 20_000;
const LINKS_KEPT = 2_000;
/** Their ceilings in bytes (a recipient's facts ~0.5 KiB; an email's links are its URLs). */
const FACTS_BYTES = 16 * 1024 * 1024;
const LINKS_BYTES = 8 * 1024 * 1024;
const MAX_BATCH = 1000;
const CLAIMS_KEPT = 100_000;

/** The tracker of one appliance: its batched reads and writes. Made once per context (`trackerOf`). */
class Tracker {
  private readonly facts = new ForgetfulCache<number, EmailFacts | null>(KEPT_MS, FACTS_KEPT, FACTS_BYTES);
  private readonly links = new ForgetfulCache<number, string[] | null>(KEPT_MS, LINKS_KEPT, LINKS_BYTES);
  private readonly loadFacts: Batcher<number, EmailFacts | null>;
  private readonly loadLinks: Batcher<number, string[] | null>;
  private readonly write: (hit: Hit) => Promise<void>;
  /** First hits claimed lately (see `hit`). */
  private readonly claimed = new Set<string>();

  constructor(private readonly ctx: AppContext) {
    const reads = readsOf(ctx.db);
    this.loadFacts = new Batcher(async (keys) => {
      const list = placeholders(keys.length);
      const [emails, recipients, engaged] = await settleAll([
        queryRows<HitEmail>(reads, `SELECT id, team_id, public_id, from_header, to_addrs, subject FROM emails WHERE id IN (${list})`, keys),
        queryRows<HitRecipient>(reads, `SELECT id, email_id, address FROM email_recipients WHERE email_id IN (${list})`, keys),
        queryRows<{ email_id: number; recipient_id: number; kind: HitKind }>(reads, `SELECT email_id, recipient_id, kind FROM email_engagement WHERE email_id IN (${list})`, keys),
      ]);
      const byId = new Map<number, EmailFacts>(emails.map((e) => [e.id, { email: e, recipients: new Map(), engaged: new Set() }]));
      for (const r of recipients) byId.get(r.email_id)?.recipients.set(r.id, r);
      for (const g of engaged) byId.get(g.email_id)?.engaged.add(`${g.recipient_id}:${g.kind}`);
      return keys.map((k) => byId.get(k) ?? null);
    }, MAX_BATCH);
    this.loadLinks = new Batcher(async (keys) => {
      const bodies = await queryRows<{ email_id: number; html: string | null }>(reads, `SELECT email_id, html FROM email_bodies WHERE email_id IN (${placeholders(keys.length)})`, keys);
      const byId = new Map(bodies.map((b) => [b.email_id, b.html ? linksOf(b.html) : []]));
      return keys.map((k) => byId.get(k) ?? null);
    }, MAX_BATCH);
    this.write = sharedWriterOf(ctx.db).batch((trx, hits: Hit[]) => writeHits(trx, hits).then(() => hits.map(() => undefined)), MAX_BATCH);
  }

  /**
   * Records a hit (unless `record` is false: a HEAD); answers a click's target URL (null: a bad token, a gone
   * email or no such link).
   */
  async hit(kind: HitKind, token: string, req: HitRequest, record = true): Promise<string | null> {
    const claims = readTrackingToken(this.ctx, kind, token);
    if (!claims) return null;
    const keep = (v: unknown) => v !== null;
    const [facts, links] = await Promise.all([
      this.facts.get(claims.emailKey, () => this.loadFacts.submit(claims.emailKey), keep),
      kind === 'click' ? this.links.get(claims.emailKey, () => this.loadLinks.submit(claims.emailKey), keep) : null,
    ]);
    if (!facts) return null;
    const recipient = claims.recipientKey === 0 ? null : facts.recipients.get(claims.recipientKey);
    if (recipient === undefined) return null;
    const url = kind === 'click' ? (links?.[claims.link] ?? null) : null;
    if ((kind === 'click' && url === null) || !record) return url;
    const userAgent = req.userAgent.slice(0, 512);
    const client = describeClient(req.ip, userAgent);
    const pair = `${claims.recipientKey}:${kind}`;
    const claim = `${claims.emailKey}:${pair}`;
    // Claimed in this process before the write commits: a hit's facts may be read again (after a minute)
    // while an earlier first hit's write is still on its way.
    const first = !facts.engaged.has(pair) && !this.claimed.has(claim);
    if (first) {
      facts.engaged.add(pair);
      if (this.claimed.size >= CLAIMS_KEPT) this.claimed.clear();
      this.claimed.add(claim);
    }
    try {
      await this.write({ kind, first, email: facts.email, recipient, link: claims.link, url, client, userAgent, at: this.ctx.clock.now() });
    } catch (err) {
      // The person still gets the pixel or the page they asked for; only the record of the hit is lost.
      this.ctx.log.error({ err, email: facts.email.public_id, kind }, 'tracking: a hit could not be recorded');
    }
    return url;
  }
}


/**
 * One shared write transaction's hits (see the head of this file). Every write joins the transaction's write
 * script; each is guarded by the email's existence (a hit on an email deleted within the minute its facts are
 * kept is dropped, rather than failing the shared transaction's foreign keys).
 */
async function writeHits(trx: Tx, hits: Hit[]): Promise<void> {
  const groups = new Map<string, { emailId: number; recipientId: number; kind: HitKind; hits: number; machine: number; first: string; firstPerson: string | null; last: string }>();
  const timeline: unknown[] = [];
  const events: Array<Omit<EventRow, 'id'>> = [];
  const opened = new Map<string, { team_id: string; email_key: string; last_opened_at: string }>();
  const clicked = new Map<string, { team_id: string; email_key: string; last_clicked_at: string }>();
  for (const h of hits) {
    const at = h.at.toISOString();
    const recipientId = h.recipient?.id ?? 0;
    const key = `${h.email.id}:${recipientId}:${h.kind}`;
    const g = groups.get(key) ?? { emailId: h.email.id, recipientId, kind: h.kind, hits: 0, machine: 0, first: at, firstPerson: null, last: at };
    g.hits++;
    if (h.client.machine) g.machine++;
    else g.firstPerson ??= at;
    if (at > g.last) g.last = at;
    groups.set(key, g);

    const c = h.client;
    const data: Record<string, unknown> = {
      recipient: h.recipient?.address ?? null,
      first: h.first,
      machine: c.machine,
      proxy: c.proxy,
      provider: c.provider,
      device: c.device,
      country: c.country,
      client: c.client,
      os: c.os,
      ...(h.kind === 'click' ? { link: h.link, url: h.url } : {}),
      user_agent: h.userAgent,
    };
    const row = timelineRow(h.email, h.at, h.kind === 'open' ? 'opened' : 'clicked', data);
    timeline.push(row.email_id, row.type, row.data, row.created_at);
    events.push(emailEventRow(h.email, h.at, h.kind === 'open' ? 'email.opened' : 'email.clicked', data));
    if (h.recipient && !c.machine) {
      const emailKey = addressKey(h.recipient.address);
      const contactKey = `${h.email.team_id}\0${emailKey}`;
      if (h.kind === 'open') {
        const prev = opened.get(contactKey);
        if (!prev || prev.last_opened_at < at) opened.set(contactKey, { team_id: h.email.team_id, email_key: emailKey, last_opened_at: at });
      } else {
        const prev = clicked.get(contactKey);
        if (!prev || prev.last_clicked_at < at) clicked.set(contactKey, { team_id: h.email.team_id, email_key: emailKey, last_clicked_at: at });
      }
    }
  }
  const rows = [...groups.values()];
  await settleAll([
    write(
      trx,
      `INSERT INTO email_engagement (email_id, recipient_id, kind, hits, machine_hits, first_at, first_person_at, last_at)
       SELECT * FROM (VALUES ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}) AS v WHERE EXISTS (SELECT 1 FROM emails WHERE emails.id = v.column1)
       ON CONFLICT (email_id, recipient_id, kind) DO UPDATE SET
         hits = email_engagement.hits + excluded.hits,
         machine_hits = email_engagement.machine_hits + excluded.machine_hits,
         first_person_at = coalesce(email_engagement.first_person_at, excluded.first_person_at),
         last_at = max(email_engagement.last_at, excluded.last_at)`,
      rows.flatMap((r) => [r.emailId, r.recipientId, r.kind, r.hits, r.machine, r.first, r.firstPerson, r.last]),
    ),
    write(
      trx,
      `INSERT INTO email_events (email_id, type, data, created_at)
       SELECT * FROM (VALUES ${hits.map(() => '(?, ?, ?, ?)').join(', ')}) AS v WHERE EXISTS (SELECT 1 FROM emails WHERE emails.id = v.column1)`,
      timeline,
    ),
    recordEvents(trx, events),
    updateFromValues(trx, 'contacts', ['team_id', 'email_key'], { last_opened_at: "max(coalesce(contacts.last_opened_at, ''), v.last_opened_at)" }, [...opened.values()]),
    updateFromValues(trx, 'contacts', ['team_id', 'email_key'], { last_clicked_at: "max(coalesce(contacts.last_clicked_at, ''), v.last_clicked_at)" }, [...clicked.values()]),
  ]);
}

const trackers = new WeakMap<AppContext, Tracker>();
const trackerOf = (ctx: AppContext) => {
  let t = trackers.get(ctx);
  if (!t) trackers.set(ctx, (t = new Tracker(ctx)));
  return t;
};

/** A pixel was fetched: records the open. Never throws for a bad token (nothing is recorded). */
export async function recordOpen(ctx: AppContext, token: string, req: HitRequest): Promise<void> {
  await trackerOf(ctx).hit('open', token, req);
}

/**
 * A tracked link was followed: records the click (unless `record` is false) and answers the link's URL, or
 * null (answer 404).
 */
export async function recordClick(ctx: AppContext, token: string, req: HitRequest, record = true): Promise<string | null> {
  return trackerOf(ctx).hit('click', token, req, record);
}
