// Sending domains: creation with a DKIM key set (dkim-keys.ts), DNS verification, settings, deletion.
// Every change records its domain.* event in the same transaction. Key rotation: dkim-rotation.ts.
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import type { AppContext } from '../../context.js';
import type { Config, Plan } from '../../config.js';
import type { Queryable } from '../../db/index.js';
import { badRequest, conflict, forbidden, notFound, unprocessable } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { ipv6Bytes } from '../../core/ip.js';
import { recordEvent } from '../../events/recorder.js';
import { raiseAlert } from './alerts.js';
import { DEDICATED_IP_PLANS, limitsFor } from './limits.js';
import { checkRecord, expectedRecords, recordKey, recordRemoved, type DnsRecord, type RecordStatus } from './domain-records.js';
import { keyTypeOf, loadKeys, newKeySet, type DkimKeyRow, type DkimKeyType } from './dkim-keys.js';
import type { KeyMode } from './api-keys.js';

export const REGIONS = ['eu-west-1'] as const;
export const TLS_MODES = ['opportunistic', 'enforced'] as const;
export type TlsMode = (typeof TLS_MODES)[number];
/** What the MX does with a domain's mail (services/inbound/routing.ts acts on it). */
export const INBOUND_MODES = ['none', 'webhook', 'mailbox_then_webhook', 'mailbox_and_webhook'] as const;
export type InboundMode = (typeof INBOUND_MODES)[number];
export type DomainStatus = 'pending' | 'verified' | 'failed';
/**
 * Who verified a domain: `dns` (its records were found) or `operator` (a trusted domain, declared by the box's
 * operator with MAIL_LOCAL_DOMAINS or `admin domains add --trusted`: verified from its creation, its records
 * still checked and shown, its status not moved by them). Null while a DNS domain is not verified.
 */
export type Verification = 'dns' | 'operator' | null;

export interface Domain {
  id: string;
  name: string;
  status: DomainStatus;
  /** Who verified it (Verification). */
  verification: Verification;
  region: string;
  open_tracking: boolean;
  click_tracking: boolean;
  /**
   * The label of the name its open and click URLs use (`<label>.<domain>`, a CNAME to the box listed in
   * dns_records), or null: the box's own public URL. Used once its record is verified.
   */
  tracking_subdomain: string | null;
  tls_mode: TlsMode;
  /** What the MX does with mail for this domain (services/inbound/routing.ts). */
  inbound_mode: InboundMode;
  /** The type of the keys that sign: rsa, or ed25519 (with an RSA signature beside it). */
  dkim_key_type: DkimKeyType;
  /** The rotation under way (dkim-rotation.ts), or null. */
  dkim_rotation: DkimRotationSummary | null;
  /** The records a customer publishes for verification: TXT (SPF, DKIM, DMARC) and MX (the spec's types). */
  dns_records: DnsRecord[];
  /**
   * The RFC 6186 SRV records that let mail clients find IMAP, submission and POP3: useful, informational, never
   * part of verification (a verify still looks them up and reports each one's status).
   */
  mail_client_records: DnsRecord[];
  /** `degraded` while the periodic DNS check finds a watched record gone or wrong (dns-drift.ts); sending continues. */
  dns_health: 'ok' | 'degraded';
  /** What the periodic check found drifted: each record with what was expected and what was found. */
  dns_drift: DnsDrift[];
  /** The domain's dedicated outbound address (POST /domains/{id}/ip), or null: the box's shared addresses. */
  dedicated_ip: DedicatedIp | null;
  created_at: string;
  verified_at: string | null;
  last_checked_at: string | null;
}

export interface DedicatedIp {
  ip: string;
  /** The name its connections greet with (EHLO). */
  helo: string;
  /**
   * The last verify's check of the address's PTR record against the HELO name: `matches`, `mismatch` (a
   * warning: receivers distrust a HELO its address does not name back; ask the address's provider to set
   * the PTR), `missing`, or `unchecked` before a verify. Never blocks verification.
   */
  ptr: { status: 'matches' | 'mismatch' | 'missing' | 'unchecked'; found: string[]; warning: string | null; checked_at: string | null };
}

export interface DnsDrift {
  record: 'SPF' | 'DKIM' | 'MX';
  name: string;
  expected: string;
  /** The values found at the name (TXT strings, MX hosts); empty when there was none. */
  found: string[];
  reason: string | null;
  /** When the check first found it. */
  since: string;
}

/**
 * A rotation under way: `pending` (new keys made, waiting for their records and the activation) or `activated`
 * (the new keys sign; the old ones stay published until `retire_after`, when a job retires them).
 */
export interface DkimRotationSummary {
  state: 'pending' | 'activated';
  /** The type of the new keys. */
  key_type: DkimKeyType;
  selectors: { new: string[]; old: string[] };
  started_at: string;
  activated_at: string | null;
  retire_after: string | null;
}

export interface DomainRow {
  id: string;
  team_id: string;
  name: string;
  status: DomainStatus;
  region: string;
  open_tracking: number | boolean;
  click_tracking: number | boolean;
  tls_mode: TlsMode;
  inbound_mode?: InboundMode;
  tracking_subdomain?: string | null;
  /** Declared by the operator (migration 024); absent in rows read by older code paths. */
  trusted?: number | boolean;
  record_status: string;
  verified_at: string | null;
  last_checked_at: string | null;
  created_at: string;
  updated_at: string;
  dns_drift?: string | null;
  dns_checked_at?: string | null;
  dedicated_ip?: string | null;
  dedicated_ip_check?: string | null;
}

type StoredStatus = Record<string, { status: RecordStatus; reason?: string }>;

export interface CreateDomainInput {
  name: string;
  region: string;
  open_tracking: boolean;
  click_tracking: boolean;
  tls_mode: TlsMode;
  tracking_subdomain?: string | null | undefined;
  /** rsa (default) or ed25519 (an Ed25519 key with an RSA key beside it). */
  dkim_key_type?: DkimKeyType | undefined;
}

export interface UpdateDomainInput {
  open_tracking?: boolean | undefined;
  click_tracking?: boolean | undefined;
  tls_mode?: TlsMode | undefined;
  inbound_mode?: InboundMode | undefined;
  /** A label, or null to use the box's own public URL again. */
  tracking_subdomain?: string | null | undefined;
}

/** A tracking subdomain as typed (any case, no dots): the label, or null when it is not one. */
export function normaliseTrackingSubdomain(input: string): string | null {
  const label = input.trim().toLowerCase();
  return LABEL_RE.test(label) && !label.startsWith('_') ? label : null;
}

function trackingSubdomainOf(input: string | null | undefined): string | null {
  if (input === undefined || input === null) return null;
  const label = normaliseTrackingSubdomain(input);
  if (!label) throw badRequest('tracking_subdomain: must be one DNS label (letters, digits and hyphens, e.g. "track"), or null');
  return label;
}

const LABEL_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * Normalises a domain name as a customer may type it: case, a trailing dot, Unicode (IDNA to punycode).
 * Returns null when it is not a registrable host name (no IP literals, no single labels).
 */
export function normaliseDomainName(input: string): string | null {
  const trimmed = input.trim();
  if (!trimmed || /[\s/@:\\?#]/.test(trimmed)) return null;
  // IDNA mapping first: it turns ideographic full stops into dots, a trailing root one included.
  const ascii = domainToASCII(trimmed.toLowerCase()).replace(/\.$/, '');
  if (!ascii || ascii.length > 253) return null;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL_RE.test(l))) return null;
  if (/^\d+$/.test(labels[labels.length - 1]!)) return null;
  return ascii;
}

/** The box's name and client ports: what the records point at. */
type RecordTarget = Pick<Config, 'hostname' | 'imapsPort' | 'submissionPort' | 'submissionsPort' | 'pop3sPort' | 'outboundIps'>;

function dedicatedOf(row: DomainRow, box: RecordTarget): DedicatedIp | null {
  if (!row.dedicated_ip) return null;
  const helo = box.outboundIps.find((o) => o.ip === row.dedicated_ip)?.helo ?? box.hostname;
  const check = row.dedicated_ip_check ? (JSON.parse(row.dedicated_ip_check) as DedicatedIp['ptr']) : null;
  return { ip: row.dedicated_ip, helo, ptr: check ?? { status: 'unchecked', found: [], warning: null, checked_at: null } };
}

/** The PTR record(s) of `ip` against the HELO name: a warning when they do not name it. */
async function checkPtr(ctx: AppContext, ip: string, helo: string, at: Date): Promise<DedicatedIp['ptr']> {
  let found: string[] = [];
  try {
    found = ((await ctx.dns.raw(reverseName(ip), 'PTR')) as string[]).map((n) => String(n).toLowerCase().replace(/\.$/, ''));
  } catch {
    found = [];
  }
  const checked_at = at.toISOString();
  if (found.length === 0) return { status: 'missing', found, warning: `No PTR record for ${ip}: receivers distrust a sender whose address has no name; ask the address's provider to set its PTR to ${helo}`, checked_at };
  if (found.includes(helo.toLowerCase())) return { status: 'matches', found, warning: null, checked_at };
  return { status: 'mismatch', found, warning: `The PTR record of ${ip} names ${found.join(', ')}, not the HELO name ${helo}: ask the address's provider to set it to ${helo}`, checked_at };
}

/** The reverse-lookup name of an address (in-addr.arpa, ip6.arpa). */
function reverseName(ip: string): string {
  if (isIP(ip) === 4) return `${ip.split('.').reverse().join('.')}.in-addr.arpa`;
  const hex = ipv6Bytes(ip).map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${[...hex].reverse().join('.')}.ip6.arpa`;
}

function recordsOf(row: DomainRow, keys: DkimKeyRow[], box: RecordTarget): DnsRecord[] {
  const stored = JSON.parse(row.record_status) as StoredStatus;
  const published = keys.map((k) => ({ selector: k.selector, publicKey: k.public_key, algorithm: k.algorithm, state: k.state, retireAfter: k.retire_after }));
  const ports = { imaps: box.imapsPort, submission: box.submissionPort, pop3s: box.pop3sPort, submissions: box.submissionsPort };
  const retiredAt = new Map(keys.map((k) => [k.selector, k.retired_at]));
  return expectedRecords(row.name, box.hostname, published, ports, { sendFrom: row.dedicated_ip, trackingSubdomain: row.tracking_subdomain ?? null }).map((r) => {
    // A retired key's record is to be removed: so it says until a verify finds it gone (and the key's row goes).
    if (r.dkim?.state === 'retired') {
      return { ...r, status: 'pending', reason: `Remove this record: its key was retired at ${retiredAt.get(r.dkim.selector)} and signs no mail` };
    }
    const s = stored[recordKey(r)];
    return s ? { ...r, status: s.status, ...(s.reason ? { reason: s.reason } : {}) } : r;
  });
}

/** The rotation under way, told by the keys' states: new keys pending, or old keys retiring. */
export function rotationOf(keys: DkimKeyRow[]): DkimRotationSummary | null {
  const pending = keys.filter((k) => k.state === 'pending');
  const retiring = keys.filter((k) => k.state === 'retiring');
  const active = keys.filter((k) => k.state === 'active');
  if (pending.length > 0) {
    return {
      state: 'pending',
      key_type: keyTypeOf(pending),
      selectors: { new: pending.map((k) => k.selector), old: active.map((k) => k.selector) },
      started_at: pending[0]!.created_at,
      activated_at: null,
      retire_after: null,
    };
  }
  if (retiring.length > 0) {
    return {
      state: 'activated',
      key_type: keyTypeOf(active),
      selectors: { new: active.map((k) => k.selector), old: retiring.map((k) => k.selector) },
      started_at: active[0]?.created_at ?? retiring[0]!.created_at,
      activated_at: active[0]?.activated_at ?? null,
      retire_after: retiring[0]!.retire_after,
    };
  }
  return null;
}

export const driftOf = (row: Pick<DomainRow, 'dns_drift'>): DnsDrift[] => (row.dns_drift ? (JSON.parse(row.dns_drift) as DnsDrift[]) : []);

/** The spec's records (TXT, MX) apart from the mail clients' SRV records. */
function splitRecords(all: DnsRecord[]): Pick<Domain, 'dns_records' | 'mail_client_records'> {
  return { dns_records: all.filter((r) => r.type !== 'SRV'), mail_client_records: all.filter((r) => r.type === 'SRV') };
}

function toDomain(row: DomainRow, keys: DkimKeyRow[], box: RecordTarget): Domain {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    verification: row.trusted ? 'operator' : row.status === 'verified' ? 'dns' : null,
    region: row.region,
    open_tracking: Boolean(row.open_tracking),
    click_tracking: Boolean(row.click_tracking),
    tracking_subdomain: row.tracking_subdomain ?? null,
    tls_mode: row.tls_mode,
    inbound_mode: row.inbound_mode ?? 'none',
    dkim_key_type: keyTypeOf(keys.filter((k) => k.state === 'active')),
    dkim_rotation: rotationOf(keys),
    ...splitRecords(recordsOf(row, keys, box)),
    dns_health: driftOf(row).length > 0 ? 'degraded' : 'ok',
    dns_drift: driftOf(row),
    dedicated_ip: dedicatedOf(row, box),
    created_at: row.created_at,
    verified_at: row.verified_at,
    last_checked_at: row.last_checked_at,
  };
}

export async function findRow(q: Queryable, teamId: string, id: string): Promise<DomainRow> {
  const row = await q<DomainRow>('domains').where({ team_id: teamId, id }).first();
  if (!row) throw notFound('Domain not found');
  return row;
}

export async function domainView(ctx: AppContext, q: Queryable, row: DomainRow): Promise<Domain> {
  return toDomain(row, (await loadKeys(q, [row.id])).get(row.id) ?? [], ctx.config);
}

const isUniqueViolation = (err: unknown) => /UNIQUE constraint failed/.test(String((err as Error)?.message));

/**
 * `trusted`: the operator declares the domain theirs (admin CLI, MAIL_LOCAL_DOMAINS; never the API): it is verified at
 * once, `domain.created` then `domain.verified` (with `verification: "operator"`) are recorded together.
 */
export async function createDomain(ctx: AppContext, teamId: string, input: CreateDomainInput, opts: { trusted?: boolean } = {}): Promise<Domain> {
  const trusted = opts.trusted === true;
  const name = normaliseDomainName(input.name);
  if (!name) throw badRequest('name: must be a valid domain name');
  const trackingSubdomain = trackingSubdomainOf(input.tracking_subdomain);
  const at = ctx.clock.now();
  const id = newId();
  // Key generation takes a while: do it before the transaction so writers are not held up.
  const keys = await newKeySet(ctx, at, id, input.dkim_key_type ?? 'rsa', 'active');
  try {
    return await ctx.domainChanges.after(ctx.db.transaction(async (trx) => {
      const team = await trx<{ id: string; plan: Plan }>('teams').where('id', teamId).first('plan');
      if (!team) throw notFound('Team not found');
      if (await trx('domains').where({ name }).first('id')) throw conflict(`Domain '${name}' already exists`);
      const cap = limitsFor(team.plan).domains;
      const [{ n }] = (await trx('domains').where('team_id', teamId).count({ n: '*' })) as [{ n: number }];
      if (Number(n) >= cap) throw forbidden(`Domain limit reached: the ${team.plan} plan allows ${cap} domain${cap === 1 ? '' : 's'}`);
      const row: DomainRow = {
        id,
        team_id: teamId,
        name,
        status: trusted ? 'verified' : 'pending',
        trusted,
        region: input.region,
        open_tracking: input.open_tracking,
        click_tracking: input.click_tracking,
        tls_mode: input.tls_mode,
        tracking_subdomain: trackingSubdomain,
        record_status: '{}',
        verified_at: trusted ? at.toISOString() : null,
        last_checked_at: null,
        created_at: at.toISOString(),
        updated_at: at.toISOString(),
      };
      await trx('domains').insert(row);
      await trx('dkim_keys').insert(keys);
      const domain = toDomain(row, keys, ctx.config);
      await recordEvent(trx, at, teamId, 'domain.created', domain as unknown as Record<string, unknown>);
      if (trusted) await recordEvent(trx, at, teamId, 'domain.verified', domain as unknown as Record<string, unknown>);
      return domain;
    }));
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`Domain '${name}' already exists`);
    throw err;
  }
}

/** Newest first. */
export async function listDomains(ctx: AppContext, teamId: string): Promise<Domain[]> {
  // rowid breaks ties between domains created in the same millisecond: insertion order.
  const rows = await ctx.db<DomainRow>('domains').where('team_id', teamId).orderByRaw('created_at DESC, rowid DESC');
  const keys = await loadKeys(ctx.db, rows.map((r) => r.id));
  return rows.map((r) => toDomain(r, keys.get(r.id) ?? [], ctx.config));
}

export async function getDomain(ctx: AppContext, teamId: string, id: string): Promise<Domain> {
  return domainView(ctx, ctx.db, await findRow(ctx.db, teamId, id));
}

export async function updateDomain(ctx: AppContext, teamId: string, id: string, input: UpdateDomainInput): Promise<Domain> {
  return ctx.domainChanges.after(ctx.db.transaction(async (trx) => {
    const row = await findRow(trx, teamId, id);
    const at = ctx.clock.now();
    const changes: Partial<DomainRow> = {};
    if (input.open_tracking !== undefined) changes.open_tracking = input.open_tracking;
    if (input.click_tracking !== undefined) changes.click_tracking = input.click_tracking;
    if (input.tls_mode !== undefined) changes.tls_mode = input.tls_mode;
    if (input.tracking_subdomain !== undefined) changes.tracking_subdomain = trackingSubdomainOf(input.tracking_subdomain);
    if (input.inbound_mode !== undefined) {
      // Routing a domain's mail to the team is proof of ownership's business: on a box shared by teams, a
      // name anyone can add must not capture mail before its DNS shows the team controls it.
      if (input.inbound_mode !== 'none' && input.inbound_mode !== row.inbound_mode && row.status !== 'verified') {
        throw unprocessable(`Domain '${row.name}' is not verified: verify it before routing its inbound mail`);
      }
      changes.inbound_mode = input.inbound_mode;
    }
    const next: DomainRow = { ...row, ...changes, updated_at: at.toISOString() };
    await trx('domains').where({ id }).update({ ...changes, updated_at: next.updated_at });
    const domain = await domainView(ctx, trx, next);
    await recordEvent(trx, at, teamId, 'domain.updated', { ...domain, changes } as unknown as Record<string, unknown>);
    return domain;
  }));
}

/**
 * Gives the domain one of the box's outbound addresses (MAIL_OUTBOUND_IPS): its mail then leaves from that
 * address, over connections of its own, greeting with the address's HELO name; its SPF record names the
 * address. Plans from Scale up (403 below); 422 when the address is not one of the box's; 409 when another
 * team's domain has it (a team may put several of its domains on one address).
 */
export async function assignDedicatedIp(ctx: AppContext, teamId: string, id: string, ip: string): Promise<Domain> {
  return ctx.domainChanges.after(ctx.db.transaction(async (trx) => {
    const row = await findRow(trx, teamId, id);
    const team = (await trx('teams').where({ id: teamId }).first('plan')) as { plan: Plan } | undefined;
    if (!team || !DEDICATED_IP_PLANS.includes(team.plan)) throw forbidden(`Dedicated IPs need the Scale plan or above (this team is on ${team?.plan ?? 'no plan'})`);
    const entry = ctx.config.outboundIps.find((o) => o.ip === ip || (isIP(ip) === 6 && isIP(o.ip) === 6 && ipv6Bytes(o.ip).join() === ipv6Bytes(ip).join()));
    if (!entry) {
      const list = ctx.config.outboundIps.map((o) => o.ip).join(', ');
      throw unprocessable(`'${ip}' is not one of this box's outbound addresses (${list || 'none are configured: MAIL_OUTBOUND_IPS'})`);
    }
    const taken = (await trx('domains').where({ dedicated_ip: entry.ip }).whereNot({ team_id: teamId }).first('id')) as { id: string } | undefined;
    if (taken) throw conflict(`${entry.ip} is dedicated to another team`);
    return setDedicatedIp(ctx, trx, teamId, row, entry.ip);
  }));
}

/** Returns the domain to the shared addresses (idempotent). */
export async function releaseDedicatedIp(ctx: AppContext, teamId: string, id: string): Promise<Domain> {
  return ctx.domainChanges.after(ctx.db.transaction(async (trx) => {
    const row = await findRow(trx, teamId, id);
    if (!row.dedicated_ip) return domainView(ctx, trx, row);
    return setDedicatedIp(ctx, trx, teamId, row, null);
  }));
}

async function setDedicatedIp(ctx: AppContext, trx: Queryable, teamId: string, row: DomainRow, ip: string | null): Promise<Domain> {
  const at = ctx.clock.now();
  // The SPF record changes with it: its status starts over until the next verify.
  const stored = JSON.parse(row.record_status) as StoredStatus;
  const spfChanged = (row.dedicated_ip ?? null) !== ip;
  if (spfChanged) delete stored.SPF;
  const next: DomainRow = { ...row, dedicated_ip: ip, dedicated_ip_check: null, record_status: JSON.stringify(stored), updated_at: at.toISOString() };
  await trx('domains').where({ id: row.id }).update({ dedicated_ip: ip, dedicated_ip_check: null, record_status: next.record_status, updated_at: next.updated_at });
  const domain = await domainView(ctx, trx, next);
  await recordEvent(trx, at, teamId, 'domain.updated', { ...domain, changes: { dedicated_ip: ip } } as unknown as Record<string, unknown>);
  return domain;
}

/**
 * `callerMode`: the mode of the key asking (the admin CLI and internal callers pass none). A domain has no mode:
 * it signs and receives the team's live mail too, and deleting it takes its DKIM key with it (publishing a new
 * one means a DNS change). A test-mode key, the kind handed to CI and staging, may add and verify domains for
 * its test sends but not delete one, as it may not revoke or issue live keys.
 */
export async function deleteDomain(ctx: AppContext, teamId: string, id: string, callerMode?: KeyMode): Promise<void> {
  if (callerMode === 'test') {
    await findRow(ctx.db, teamId, id); // another team's domain stays a 404
    throw forbidden('A test-mode API key cannot delete domains: a domain serves live sending too');
  }
  // A domain with live mailboxes is not deleted: its mailboxes and all their mail would go with it, at once
  // (a mailbox deleted on its own is kept 30 days). As mail servers do, they are to be deleted first.
  const { name } = await findRow(ctx.db, teamId, id);
  const { total } = await ctx.mailstore.listAccounts({ teamId, domainId: id, offset: 0, limit: 0 });
  if (total > 0) throw conflict(`Domain '${name}' still has ${total} mailbox${total === 1 ? '' : 'es'}: delete ${total === 1 ? 'it' : 'them'} first (DELETE /mailboxes/{id})`);
  await ctx.domainChanges.after(ctx.db.transaction(async (trx) => {
    const row = await findRow(trx, teamId, id);
    await trx('domains').where({ id }).delete();
    await recordEvent(trx, ctx.clock.now(), teamId, 'domain.deleted', { id: row.id, name: row.name });
  }));
}

/**
 * Looks every record up through the configured resolver, stores each record's status, and moves the
 * domain to verified (every required record found with the right value) or failed.
 */
export async function verifyDomain(ctx: AppContext, teamId: string, id: string): Promise<Domain> {
  const row = await findRow(ctx.db, teamId, id);
  const before = await domainView(ctx, ctx.db, row);
  // DNS look-ups happen outside any transaction: they can take seconds. A retired key's record is looked for
  // the other way round: once it is gone, the key's row goes and the record is no longer listed.
  const listed = [...before.dns_records, ...before.mail_client_records];
  const retired = listed.filter((r) => r.dkim?.state === 'retired');
  const [checked, removed] = await Promise.all([
    Promise.all(
      listed.filter((r) => r.dkim?.state !== 'retired').map(async (r) => ({ record: r, result: await checkRecord(ctx.dns, row.name, ctx.config.hostname, r, row.dedicated_ip) })),
    ),
    Promise.all(retired.map((r) => recordRemoved(ctx.dns, r).then((gone) => (gone ? [r.dkim!.selector] : []), () => []))).then((s) => s.flat()),
  ]);
  // A look-up the DNS did not answer (timeout, SERVFAIL) says nothing about the record: a record found
  // before keeps its status (the reason says why it was not looked at again), and a verified domain is not
  // failed for it. The spec moves a verified domain only when a record disappears; one outage of a resolver
  // or of the customer's DNS host must not stop the domain's mail. A domain not yet verified needs every
  // required record answered and found.
  const wasVerified = row.status === 'verified';
  const stored: StoredStatus = {};
  let ok = true;
  // The spec's drift (domain.dns_drift): on a verified domain, the SPF record, or the MX record of a domain
  // that receives mail, found before and now answered as gone or wrong.
  const drift: Array<{ record: string; name: string; reason: string | undefined }> = [];
  for (const { record, result } of checked) {
    const kept = result.transient === true && record.status === 'verified';
    const status: RecordStatus = kept ? 'verified' : result.status;
    const reason = kept ? `${result.unanswered}; the last check's result is kept, try again later` : result.reason;
    stored[recordKey(record)] = reason ? { status, reason } : { status };
    if (record.required && result.status !== 'verified' && !(kept && wasVerified)) ok = false;
    const watched = record.record === 'SPF' || (record.record === 'MX' && (row.inbound_mode ?? 'none') !== 'none');
    if (wasVerified && watched && record.status === 'verified' && status === 'failed') drift.push({ record: record.record, name: record.name, reason });
  }
  // A trusted domain's records are checked and shown, but the operator's word keeps it verified.
  if (row.trusted) ok = true;
  const at = ctx.clock.now();
  // A dedicated address: its PTR against the HELO name (a warning, never blocking).
  const dedicated = dedicatedOf(row, ctx.config);
  const ptrCheck = dedicated ? await checkPtr(ctx, dedicated.ip, dedicated.helo, at) : null;
  return ctx.domainChanges.after(ctx.db.transaction(async (trx) => {
    const current = await findRow(trx, teamId, id); // still there?
    if (removed.length > 0) await trx('dkim_keys').where({ domain_id: id, state: 'retired' }).whereIn('selector', removed).delete();
    const next: DomainRow = {
      ...current,
      status: ok ? 'verified' : 'failed',
      record_status: JSON.stringify(stored),
      verified_at: ok ? (current.status === 'verified' && current.verified_at ? current.verified_at : at.toISOString()) : null,
      last_checked_at: at.toISOString(),
      updated_at: at.toISOString(),
    };
    const ptr = ptrCheck;
    // Everything found: any drift the periodic check reported is over.
    const restored = ok && driftOf(current).length > 0;
    if (restored) next.dns_drift = null;
    if (ptr && current.dedicated_ip === row.dedicated_ip) next.dedicated_ip_check = JSON.stringify(ptr);
    await trx('domains').where({ id }).update({
      ...(restored ? { dns_drift: null } : {}),
      ...(ptr && current.dedicated_ip === row.dedicated_ip ? { dedicated_ip_check: JSON.stringify(ptr) } : {}),
      status: next.status,
      record_status: next.record_status,
      verified_at: next.verified_at,
      last_checked_at: next.last_checked_at,
      updated_at: next.updated_at,
    });
    const domain = await domainView(ctx, trx, next);
    if (drift.length > 0 && current.status === 'verified') {
      await recordEvent(trx, at, teamId, 'domain.dns_drift', { ...domain, drift } as unknown as Record<string, unknown>);
      const what = drift.map((d) => `${d.record} (${d.name})`).join(', ');
      await raiseAlert(trx, at, teamId, 'dns_drift', `DNS of ${row.name} changed: ${what} no longer found as published.`, { domainId: row.id, domain: row.name, drift });
    }
    if (restored) await raiseAlert(trx, at, teamId, 'dns_restored', `The DNS records of ${row.name} are found again.`, { domainId: row.id, domain: row.name });
    await recordEvent(trx, at, teamId, ok ? 'domain.verified' : 'domain.failed', domain as unknown as Record<string, unknown>);
    // An alert when a verify moves the domain into `failed` (not at every failed retry of a failed domain).
    if (!ok && current.status !== 'failed') {
      const missing = domain.dns_records.filter((r) => r.required && r.status !== 'verified').map((r) => ({ record: r.record, name: r.name, reason: stored[recordKey(r)]?.reason }));
      await raiseAlert(trx, at, teamId, 'domain_verification_failed', `Verification of ${row.name} failed: ${missing.map((m) => m.record).join(', ') || 'required records'} not found as expected.`, { domainId: row.id, domain: row.name, records: missing });
    }
    return domain;
  }));
}

/**
 * Declares `name` trusted (issue 37 §1): created trusted in `teamId` when the box has no such domain, or an existing
 * domain of that name (any team) marked trusted and verified. Returns the domain and whether it was created.
 */
export async function trustDomain(ctx: AppContext, teamId: string, name: string): Promise<{ domain: Domain; created: boolean }> {
  const ascii = normaliseDomainName(name);
  if (!ascii) throw badRequest('name: must be a valid domain name');
  const existing = await ctx.db<DomainRow>('domains').where({ name: ascii }).first();
  if (!existing) {
    const domain = await createDomain(ctx, teamId, { name: ascii, region: REGIONS[0], open_tracking: false, click_tracking: false, tls_mode: 'opportunistic' }, { trusted: true });
    return { domain, created: true };
  }
  if (existing.trusted) return { domain: await domainView(ctx, ctx.db, existing), created: false };
  const at = ctx.clock.now();
  const domain = await ctx.domainChanges.after(ctx.db.transaction(async (trx) => {
    const row = await findRow(trx, existing.team_id, existing.id);
    const next: DomainRow = { ...row, trusted: true, status: 'verified', verified_at: row.status === 'verified' && row.verified_at ? row.verified_at : at.toISOString(), updated_at: at.toISOString() };
    await trx('domains').where({ id: row.id }).update({ trusted: true, status: next.status, verified_at: next.verified_at, updated_at: next.updated_at });
    const view = await domainView(ctx, trx, next);
    await recordEvent(trx, at, row.team_id, 'domain.verified', view as unknown as Record<string, unknown>);
    return view;
  }));
  return { domain, created: false };
}

/**
 * MAIL_LOCAL_DOMAINS at start: each name trusted (trustDomain), new ones in the box's first team. Nothing when the
 * list is empty; an error when there is no team to put them in (the bootstrap makes one on a fresh box).
 */
export async function trustLocalDomains(ctx: AppContext, names: readonly string[]): Promise<Domain[]> {
  if (names.length === 0) return [];
  const team = await ctx.db<{ id: string }>('teams').orderBy([{ column: 'created_at' }, { column: 'id' }]).first('id');
  if (!team) throw new Error('MAIL_LOCAL_DOMAINS: the box has no team to add the domains to');
  const out: Domain[] = [];
  for (const name of names) out.push((await trustDomain(ctx, team.id, name)).domain);
  return out;
}
