// The DNS records a customer publishes for a sending domain, and the checks that prove they are there.
//   SPF   TXT  <domain>                   v=spf1 a:<box> ~all        required: authorises this box to send
//                                          (v=spf1 ip4:<addr> a:<box> ~all with a dedicated address)
//   DKIM  TXT  <selector>._domainkey.<d>  v=DKIM1; k=rsa; p=<key>    required: one per signing key (k=ed25519 for an
//                                                                   Ed25519 key); a rotation's new and old keys are
//                                                                   listed too, not required (dkim-rotation.ts)
//   DMARC TXT  _dmarc.<domain>            v=DMARC1; p=none; rua=…    recommended
//   MX    MX   <domain>                   <box> (priority 10)        recommended: inbound mail and late bounces
//   SRV   SRV  _imaps._tcp.<domain> (and _submission._tcp, _pop3s._tcp, RFC 8314's _submissions._tcp)  0 1 <port> <box>   informational (RFC 6186)
//   TRACKING CNAME <tracking_subdomain>.<domain>  <box>            optional: only when the domain names a tracking
//                                                                   subdomain; its open and click URLs use that
//                                                                   name once this record is verified
// The envelope sender of outbound mail is on the customer's domain, so SPF aligns for DMARC.
import { isIP } from 'node:net';

/** mailauth's SPF check, loaded at the first domain check that needs it. */
let spfModule: Promise<typeof import('mailauth/lib/spf/index.js')> | undefined;
import { DnsLookupError, isNoData, type DnsResolver } from '../../dns/resolver.js';
import type { DkimAlgorithm, DkimKeyState } from './dkim-keys.js';

export type RecordStatus = 'pending' | 'verified' | 'failed';
export type RecordKind = 'SPF' | 'DKIM' | 'DMARC' | 'MX' | 'SRV' | 'TRACKING';

export interface DnsRecord {
  /** What the record is for. */
  record: RecordKind;
  type: 'TXT' | 'MX' | 'CNAME' | 'SRV';
  name: string;
  /** SRV: `<weight> <port> <target>` (the priority is `priority`, as for MX). */
  value: string;
  priority?: number;
  ttl: 'Auto';
  /** Needed for the domain to become verified; the others are recommended. */
  required: boolean;
  status: RecordStatus;
  /** Why the last check failed, in words a customer can act on. */
  reason?: string;
  /**
   * The record as one line of a zone file (BIND, NSD, Knot; Route 53 takes the part after the type): an
   * absolute name with its trailing dot, TXT values split into quoted strings of at most 255 characters
   * (RFC 1035 §3.3.14), which a DKIM key's value needs.
   */
  zone_file_line: string;
  /** DKIM records only: which key the record publishes, and where it is in its life (dkim-rotation.ts). */
  dkim?: DkimRecordKey;
}

/**
 * A DKIM record's key. `state`: active (signs; the record is required), pending (a rotation's new key: publish
 * it, then activate), retiring (replaced by a rotation: keep it published until `retire_after`), retired (no
 * longer signs: remove the record).
 */
export interface DkimRecordKey {
  selector: string;
  algorithm: DkimAlgorithm;
  state: DkimKeyState;
  /** retiring: when the key is retired and its record may go; null otherwise. */
  retire_after: string | null;
}

export interface PublishedDkimKey {
  selector: string;
  publicKey: string;
  /** rsa unless stated. */
  algorithm?: DkimAlgorithm;
  /** active unless stated. */
  state?: DkimKeyState;
  retireAfter?: string | null;
}

export interface CheckResult {
  status: 'verified' | 'failed';
  reason?: string;
  /** The look-up was not answered (timeout, SERVFAIL, refused): the check says nothing about the record. */
  transient?: true;
  /** With `transient`: which look-up went unanswered. */
  unanswered?: string;
}

/** Key of a record in the stored status map; stable across hostname changes. */
export function recordKey(r: Pick<DnsRecord, 'record' | 'name'>): string {
  return r.record === 'DKIM' || r.record === 'SRV' || r.record === 'TRACKING' ? `${r.record}:${r.name}` : r.record;
}

export function dkimRecordValue(publicKey: string, algorithm: DkimAlgorithm = 'rsa'): string {
  return `v=DKIM1; k=${algorithm}; p=${publicKey}`;
}

/** A TXT value as zone-file character-strings: quoted, at most 255 characters each (RFC 1035 §3.3.14). */
export function txtStrings(value: string): string {
  const parts: string[] = [];
  for (let i = 0; i < value.length || i === 0; i += 255) parts.push(value.slice(i, i + 255));
  return parts.map((p) => `"${p.replace(/["\\]/g, '\\$&')}"`).join(' ');
}

/** `record` as one zone-file line (see DnsRecord.zone_file_line). */
export function zoneFileLine(record: Pick<DnsRecord, 'type' | 'name' | 'value' | 'priority'>): string {
  const owner = `${record.name}.`;
  switch (record.type) {
    case 'TXT':
      return `${owner} IN TXT ${txtStrings(record.value)}`;
    case 'MX':
      return `${owner} IN MX ${record.priority ?? 10} ${record.value}.`;
    case 'SRV': {
      const [weight, port, target] = record.value.split(' ');
      return `${owner} IN SRV ${record.priority ?? 0} ${weight} ${port} ${target}.`;
    }
    case 'CNAME':
      return `${owner} IN CNAME ${record.value}.`;
  }
}

type Unlined = Omit<DnsRecord, 'zone_file_line'>;
const lined = (r: Unlined): DnsRecord => ({ ...r, zone_file_line: zoneFileLine(r) });

/** The client services a domain's SRV records point at (RFC 6186), with the box's port of each. */
export interface ServicePorts {
  imaps: number;
  submission: number;
  pop3s: number;
  /** Submission over implicit TLS (RFC 8314 §5.1: `_submissions._tcp`). */
  submissions: number;
}

/**
 * RFC 6186 SRV records: where mail clients find IMAP (TLS), submission (STARTTLS), POP3 (TLS) and, as RFC 8314
 * §5.1 adds, submission over implicit TLS for `domain`.
 */
export function srvRecords(domain: string, hostname: string, ports: ServicePorts): DnsRecord[] {
  const srv = (service: string, port: number): DnsRecord =>
    lined({
      record: 'SRV',
      type: 'SRV',
      name: `_${service}._tcp.${domain}`,
      value: `1 ${port} ${hostname}`,
      priority: 0,
      ttl: 'Auto',
      required: false,
      status: 'pending',
    });
  return [srv('imaps', ports.imaps), srv('submission', ports.submission), srv('pop3s', ports.pop3s), srv('submissions', ports.submissions)];
}

/** The CNAME that publishes a domain's tracking subdomain (`<subdomain>.<domain>` → the box): optional. */
export function trackingRecord(domain: string, hostname: string, subdomain: string): DnsRecord {
  return lined({ record: 'TRACKING', type: 'CNAME', name: `${subdomain}.${domain}`, value: hostname, ttl: 'Auto', required: false, status: 'pending' });
}

/**
 * The records to publish for `domain` on a box called `hostname`, every status `pending`. With `ports`, the
 * RFC 6186 SRV records for mail clients follow (informational, split off into `mail_client_records` by
 * domains.ts); with `trackingSubdomain`, the tracking CNAME last (optional); with `sendFrom` (a dedicated
 * address), SPF names it.
 */
export function expectedRecords(
  domain: string,
  hostname: string,
  dkim: PublishedDkimKey[],
  ports?: ServicePorts,
  opts: { sendFrom?: string | null; trackingSubdomain?: string | null } = {},
): DnsRecord[] {
  // A dedicated outbound address (domains.ts) is named first: the domain's mail leaves from it.
  const ipTerm = opts.sendFrom ? `${isIP(opts.sendFrom) === 6 ? 'ip6' : 'ip4'}:${opts.sendFrom} ` : '';
  const records: Unlined[] = [
    { record: 'SPF', type: 'TXT', name: domain, value: `v=spf1 ${ipTerm}a:${hostname} ~all`, ttl: 'Auto', required: true, status: 'pending' },
  ];
  for (const key of dkim) {
    const algorithm = key.algorithm ?? 'rsa';
    const state = key.state ?? 'active';
    records.push({
      record: 'DKIM',
      type: 'TXT',
      name: `${key.selector}._domainkey.${domain}`,
      value: dkimRecordValue(key.publicKey, algorithm),
      ttl: 'Auto',
      // Only the signing keys' records make the domain verified: a rotation's new record is checked by its
      // activation, and an old one is on its way out.
      required: state === 'active',
      status: 'pending',
      dkim: { selector: key.selector, algorithm, state, retire_after: key.retireAfter ?? null },
    });
  }
  records.push(
    {
      record: 'DMARC',
      type: 'TXT',
      name: `_dmarc.${domain}`,
      value: `v=DMARC1; p=none; rua=mailto:dmarc-reports@${domain}`,
      ttl: 'Auto',
      required: false,
      status: 'pending',
    },
    { record: 'MX', type: 'MX', name: domain, value: hostname, priority: 10, ttl: 'Auto', required: false, status: 'pending' },
  );
  return [
    ...records.map(lined),
    ...(ports ? srvRecords(domain, hostname, ports) : []),
    ...(opts.trackingSubdomain ? [trackingRecord(domain, hostname, opts.trackingSubdomain)] : []),
  ];
}

/**
 * RFC 6376 §3.2 tag list: `k=v; k=v`, whitespace around tags and inside values ignored.
 * Null when a tag repeats, which makes the whole list invalid.
 */
export function parseTagList(text: string): Map<string, string> | null {
  const tags = new Map<string, string>();
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim().toLowerCase();
    if (tags.has(name)) return null;
    tags.set(name, part.slice(eq + 1).replace(/\s+/g, ''));
  }
  return tags;
}

const failed = (reason: string): CheckResult => ({ status: 'failed', reason });
const verified: CheckResult = { status: 'verified' };

const errCode = (err: unknown) => (err as NodeJS.ErrnoException)?.code ?? 'EUNKNOWN';

/** The name a customer types at a DNS host that appends the zone itself: `@` for the apex. */
function relativeName(name: string, domain: string): string {
  return name === domain ? '@' : name.endsWith(`.${domain}`) ? name.slice(0, -(domain.length + 1)) : name;
}

/**
 * Why a record the customer published is not at `name`, when it can be told: the usual mistakes are a name
 * entered in full at a DNS host that appends the zone (or without its trailing dot in a zone file), which
 * puts it at `<name>.<domain>`, and a CNAME to a name without the record. `found` tells a record of the
 * kind. Best effort: a look-up that fails adds nothing. Empty when nothing was found.
 */
async function whereInstead(dns: DnsResolver, name: string, domain: string, found: (txt: string[]) => boolean): Promise<string> {
  const doubled = `${name}.${domain}`;
  try {
    if (found(await dns.txt(doubled))) {
      return (
        `; one was found at ${doubled}: your DNS host added ${domain} to the name entered. ` +
        `Enter the name as ${relativeName(name, domain)}, or in full with a trailing dot (${name}.)`
      );
    }
  } catch {
    // best effort
  }
  try {
    const [target] = (await dns.raw(name, 'CNAME')) as string[];
    if (target) return `; ${name} is a CNAME to ${target.replace(/\.$/, '')}, which has no such TXT record`;
  } catch {
    // best effort
  }
  return '';
}

/** A TXT value with what a copy-and-paste may wrap around it: blanks and quotation marks. */
const unwrapped = (txt: string) => txt.replace(/^[\s"'\\]+|[\s"'\\]+$/g, '');
const SPF_RE = /^v=spf1(\s|$)/i;
const DMARC_RE = /^v=DMARC1(\s*;|\s*$)/i;

async function checkSpf(dns: DnsResolver, domain: string, hostname: string, sendFrom?: string | null): Promise<CheckResult> {
  const txt = await dns.txt(domain);
  // Receivers take a record for SPF when it begins with exactly `v=spf1` (RFC 7208 §4.5); some trim it
  // first (mailauth does), so a record with a leading blank counts as a second one for them.
  const records = txt.filter((t) => SPF_RE.test(t.trim()));
  if (records.length > 1) return failed(`${records.length} SPF records found at ${domain}; there must be exactly one (RFC 7208 §4.5): merge them into one`);
  if (records.length === 1 && !SPF_RE.test(records[0]!)) {
    return failed(`The SPF record at ${domain} starts with a blank ("${records[0]}"): receivers only read a record that begins exactly with v=spf1 (RFC 7208 §4.5); remove the leading space`);
  }
  if (records.length === 0) {
    const quoted = txt.find((t) => SPF_RE.test(unwrapped(t)));
    if (quoted) return failed(`The TXT record at ${domain} has quotation marks inside its value (${quoted}), so it is not an SPF record: enter the value without the quotes around it`);
    return failed(`No SPF record (v=spf1) found at ${domain}${await whereInstead(dns, domain, domain, (t) => t.some((v) => SPF_RE.test(v.trim())))}`);
  }
  // A domain with a dedicated address sends from it alone: that is the address receivers check.
  const addresses = sendFrom ? [sendFrom] : [...(await dns.a(hostname)), ...(await dns.aaaa(hostname))];
  if (addresses.length === 0) {
    // The box's own name does not resolve (yet): fall back to reading the record.
    const terms = records[0]!.toLowerCase().split(/\s+/);
    const names = ['a', 'mx', 'include'].flatMap((m) => [`${m}:${hostname}`, `+${m}:${hostname}`]);
    return terms.some((t) => names.includes(t)) ? verified : failed(`SPF record at ${domain} does not name ${hostname} (add a:${hostname})`);
  }
  // Evaluate the record as a receiver would (RFC 7208 §4), from every address the box may send from:
  // one that fails would fail SPF for the mail that leaves through it. A look-up that is not answered makes
  // the evaluation a temperror (RFC 7208 §5.2, include:; the resolver marks such errors for mailauth): the
  // first one is kept to say which.
  let unanswered: DnsLookupError | undefined;
  const resolver = async (name: string, rrtype: string): Promise<string[] | string[][]> => {
    try {
      return (await dns.raw(name, rrtype)) as string[] | string[][];
    } catch (err) {
      const code = errCode(err);
      if (!isNoData(err)) unanswered ??= new DnsLookupError(rrtype, name, code);
      throw err;
    }
  };
  const failures: string[] = [];
  for (const ip of addresses) {
    const { spf } = await (spfModule ??= import('mailauth/lib/spf/index.js'));
    const res = await spf({ sender: `postmaster@${domain}`, ip, helo: hostname, mta: hostname, resolver });
    const result = res.status.result;
    if (result === 'temperror') throw unanswered ?? new DnsLookupError('SPF', domain, 'temperror');
    if (result === 'permerror') {
      const why = /: permanent error in processing during lookup of [^:]+: (.*)$/.exec(res.status.comment ?? '')?.[1];
      return failed(`The SPF record at ${domain} is invalid (permerror${why ? `: ${why}` : ''}); receivers treat it as no authorisation`);
    }
    if (result !== 'pass') failures.push(`${ip}: ${result}`);
  }
  return failures.length === 0
    ? verified
    : failed(
        sendFrom
          ? `SPF record at ${domain} does not authorise the domain's dedicated address (${failures.join(', ')}); add ${isIP(sendFrom) === 6 ? 'ip6' : 'ip4'}:${sendFrom}`
          : `SPF record at ${domain} does not authorise ${hostname} (${failures.join(', ')}); add a:${hostname}`,
      );
}

async function checkDkim(dns: DnsResolver, name: string, domain: string, expected: string): Promise<CheckResult> {
  const records = await dns.txt(name);
  const looksLikeKey = (t: string) => /(^|;)\s*p\s*=/i.test(unwrapped(t));
  if (records.length === 0) return failed(`No DKIM record found at ${name}${await whereInstead(dns, name, domain, (t) => t.some(looksLikeKey))}`);
  const wanted = parseTagList(expected);
  const want = wanted?.get('p');
  const keyType = (tags: Map<string, string>) => (tags.get('k') ?? 'rsa').toLowerCase();
  const ours = records.filter((r) => {
    const tags = parseTagList(r);
    return tags !== null && (tags.get('v') ?? 'DKIM1') === 'DKIM1' && tags.get('p') === want && keyType(tags) === keyType(wanted!);
  });
  // A verifier reads one of the TXT records at a selector, whichever it picks (RFC 6376 §3.6.2.2; mailauth
  // takes the first): any other record there fails DKIM for the mail of a receiver that picks it.
  if (records.length > 1) {
    return failed(
      `${records.length} TXT records found at ${name}${ours.length ? ", one with this domain's key" : ''}: a verifier reads only one of them ` +
        `(RFC 6376 §3.6.2.2), so keep only this domain's record there`,
    );
  }
  if (ours.length === 1) return verified;
  if (records[0]!.includes('"')) {
    return failed(`The DKIM record at ${name} has quotation marks inside its value: enter the value without the quotes around it (split over several strings, each one quoted, where your DNS host needs it)`);
  }
  const tags = parseTagList(records[0]!);
  if (tags && tags.get('p') === want && keyType(tags) !== keyType(wanted!)) {
    return failed(`The DKIM record at ${name} has this domain's public key with k=${keyType(tags)} (found: "${abbreviated(records[0]!)}"); it must say k=${keyType(wanted!)}`);
  }
  return failed(`The DKIM record at ${name} does not carry this domain's public key (found: "${abbreviated(records[0]!)}")`);
}

/** A TXT value for a message: a long p= (a key) shortened to its first and last characters. */
function abbreviated(txt: string): string {
  const short = txt.replace(/(p\s*=\s*)([A-Za-z0-9+/=]{24,})/, (_, tag: string, key: string) => `${tag}${key.slice(0, 10)}…${key.slice(-10)}`);
  return short.length > 300 ? `${short.slice(0, 300)}…` : short;
}

/**
 * Whether the record a retired key had is gone from the DNS (no TXT record at `record.name` carries its p=).
 * Throws DnsLookupError when the look-up was not answered.
 */
export async function recordRemoved(dns: DnsResolver, record: Pick<DnsRecord, 'name' | 'value'>): Promise<boolean> {
  const want = parseTagList(record.value)?.get('p');
  const records = await dns.txt(record.name);
  return !records.some((r) => parseTagList(r)?.get('p') === want);
}

async function checkDmarc(dns: DnsResolver, name: string, domain: string): Promise<CheckResult> {
  const txt = await dns.txt(name);
  const records = txt.filter((t) => DMARC_RE.test(t.trim()));
  if (records.length === 0) {
    const quoted = txt.find((t) => DMARC_RE.test(unwrapped(t)));
    if (quoted) return failed(`The TXT record at ${name} has quotation marks inside its value (${quoted}), so it is not a DMARC record: enter the value without the quotes around it`);
    return failed(`No DMARC record (v=DMARC1) found at ${name}${await whereInstead(dns, name, domain, (t) => t.some((v) => DMARC_RE.test(v.trim())))}`);
  }
  if (records.length > 1) return failed(`${records.length} DMARC records found at ${name}; there must be exactly one (RFC 7489 §6.6.3)`);
  const policy = parseTagList(records[0]!)?.get('p')?.toLowerCase();
  return policy && ['none', 'quarantine', 'reject'].includes(policy) ? verified : failed(`The DMARC record at ${name} has no valid p= policy`);
}

async function checkMx(dns: DnsResolver, domain: string, hostname: string): Promise<CheckResult> {
  const mx = await dns.mx(domain);
  const box = hostname.toLowerCase();
  if (mx.length === 0) {
    let instead = '';
    try {
      const doubled = `${domain}.${domain}`;
      if ((await dns.mx(doubled)).length > 0) {
        instead = `; one was found at ${doubled}: your DNS host added ${domain} to the name entered. Enter the name as @, or in full with a trailing dot (${domain}.)`;
      }
    } catch {
      // best effort
    }
    return failed(`No MX record found at ${domain}${instead}`);
  }
  if (mx.some((r) => r.exchange === box)) return verified;
  const found = mx.map((r) => `${r.priority} ${r.exchange}`).join(', ');
  const dotless = mx.some((r) => r.exchange === `${box}.${domain}`)
    ? `: ${box}.${domain} is ${box} written without its trailing dot, to which the zone was appended; enter ${box}. (with the dot)`
    : '';
  return failed(`The MX records of ${domain} do not point at ${box} (found: ${found})${dotless}`);
}

interface SrvAnswer {
  priority: number;
  weight: number;
  port: number;
  name: string;
}

async function checkSrv(dns: DnsResolver, record: DnsRecord): Promise<CheckResult> {
  let answers: SrvAnswer[];
  try {
    answers = (await dns.raw(record.name, 'SRV')) as SrvAnswer[];
  } catch (err) {
    const code = errCode(err);
    if (isNoData(err)) return failed(`No SRV record found at ${record.name}`);
    throw new DnsLookupError('SRV', record.name, code);
  }
  if (answers.length === 0) return failed(`No SRV record found at ${record.name}`);
  const [, port, target] = record.value.split(' ');
  const match = answers.some((a) => a.name.toLowerCase().replace(/\.$/, '') === target && String(a.port) === port);
  return match ? verified : failed(`The SRV record at ${record.name} does not point at ${target} port ${port}`);
}

/** The tracking CNAME: `record.name` must be an alias of the box's name (its value). */
async function checkTracking(dns: DnsResolver, record: DnsRecord): Promise<CheckResult> {
  let targets: string[];
  try {
    targets = (await dns.raw(record.name, 'CNAME')) as string[];
  } catch (err) {
    if (isNoData(err)) targets = [];
    else throw new DnsLookupError('CNAME', record.name, errCode(err));
  }
  const box = record.value.toLowerCase();
  const found = targets.map((t) => t.toLowerCase().replace(/\.$/, ''));
  if (found.includes(box)) return verified;
  if (found.length === 0) return failed(`No CNAME record found at ${record.name}: publish ${record.name} CNAME ${box}. (an A record is not enough: the box's address may change)`);
  return failed(`The CNAME record at ${record.name} points at ${found.join(', ')}, not at ${box}`);
}

/**
 * Looks one record up through the box's resolver. Never throws: a failed look-up is a failed check, marked
 * `transient` when the DNS did not answer (timeout, SERVFAIL, refused), as opposed to answering without it.
 */
export async function checkRecord(dns: DnsResolver, domain: string, hostname: string, record: DnsRecord, sendFrom?: string | null): Promise<CheckResult> {
  try {
    switch (record.record) {
      case 'SPF':
        return await checkSpf(dns, domain, hostname, sendFrom);
      case 'DKIM':
        return await checkDkim(dns, record.name, domain, record.value);
      case 'DMARC':
        return await checkDmarc(dns, record.name, domain);
      case 'MX':
        return await checkMx(dns, domain, hostname);
      case 'SRV':
        return await checkSrv(dns, record);
      case 'TRACKING':
        return await checkTracking(dns, record);
    }
  } catch (err) {
    if (err instanceof DnsLookupError) return { status: 'failed', reason: `${err.message}; try again later`, transient: true, unanswered: err.message };
    return failed(`Check failed: ${(err as Error).message}`);
  }
}
