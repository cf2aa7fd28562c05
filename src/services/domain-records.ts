// The DNS records a customer publishes for a sending domain, and the checks that prove they are there.
//   SPF   TXT  <domain>                   v=spf1 a:<box> ~all        required: authorises this box to send
//   DKIM  TXT  <selector>._domainkey.<d>  v=DKIM1; k=rsa; p=<key>    required: one per published key
//   DMARC TXT  _dmarc.<domain>            v=DMARC1; p=none; rua=…    recommended
//   MX    MX   <domain>                   <box> (priority 10)        recommended: inbound mail and late bounces
//   SRV   SRV  _imaps._tcp.<domain> (and _submission._tcp, _pop3s._tcp)  0 1 <port> <box>   informational (RFC 6186)
// The envelope sender of outbound mail is on the customer's domain, so SPF aligns for DMARC.
import { spf } from 'mailauth/lib/spf/index.js';
import { DnsLookupError, type DnsResolver } from '../dns/resolver.js';

export type RecordStatus = 'pending' | 'verified' | 'failed';
export type RecordKind = 'SPF' | 'DKIM' | 'DMARC' | 'MX' | 'SRV';

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
}

export interface PublishedDkimKey {
  selector: string;
  publicKey: string;
}

export interface CheckResult {
  status: 'verified' | 'failed';
  reason?: string;
}

/** Key of a record in the stored status map; stable across hostname changes. */
export function recordKey(r: Pick<DnsRecord, 'record' | 'name'>): string {
  return r.record === 'DKIM' || r.record === 'SRV' ? `${r.record}:${r.name}` : r.record;
}

export function dkimRecordValue(publicKey: string): string {
  return `v=DKIM1; k=rsa; p=${publicKey}`;
}

/** The client services a domain's SRV records point at (RFC 6186), with the box's port of each. */
export interface ServicePorts {
  imaps: number;
  submission: number;
  pop3s: number;
}

/** RFC 6186 SRV records: where mail clients find IMAP (TLS), submission and POP3 (TLS) for `domain`. */
export function srvRecords(domain: string, hostname: string, ports: ServicePorts): DnsRecord[] {
  const srv = (service: string, port: number): DnsRecord => ({
    record: 'SRV',
    type: 'SRV',
    name: `_${service}._tcp.${domain}`,
    value: `1 ${port} ${hostname}`,
    priority: 0,
    ttl: 'Auto',
    required: false,
    status: 'pending',
  });
  return [srv('imaps', ports.imaps), srv('submission', ports.submission), srv('pop3s', ports.pop3s)];
}

/**
 * The records to publish for `domain` on a box called `hostname`, every status `pending`. With `ports`, the
 * RFC 6186 SRV records for mail clients follow (informational: never required for verification).
 */
export function expectedRecords(domain: string, hostname: string, dkim: PublishedDkimKey[], ports?: ServicePorts): DnsRecord[] {
  const records: DnsRecord[] = [
    { record: 'SPF', type: 'TXT', name: domain, value: `v=spf1 a:${hostname} ~all`, ttl: 'Auto', required: true, status: 'pending' },
  ];
  for (const key of dkim) {
    records.push({
      record: 'DKIM',
      type: 'TXT',
      name: `${key.selector}._domainkey.${domain}`,
      value: dkimRecordValue(key.publicKey),
      ttl: 'Auto',
      required: true,
      status: 'pending',
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
  if (ports) records.push(...srvRecords(domain, hostname, ports));
  return records;
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

async function checkSpf(dns: DnsResolver, domain: string, hostname: string): Promise<CheckResult> {
  const records = (await dns.txt(domain)).filter((t) => /^v=spf1(\s|$)/i.test(t.trim()));
  if (records.length === 0) return failed(`No SPF record (v=spf1) found at ${domain}`);
  if (records.length > 1) return failed(`${records.length} SPF records found at ${domain}; there must be exactly one (RFC 7208 §4.5)`);
  const addresses = [...(await dns.a(hostname).catch(() => [])), ...(await dns.aaaa(hostname).catch(() => []))];
  if (addresses.length === 0) {
    // The box's own name does not resolve (yet): fall back to reading the record.
    const terms = records[0]!.toLowerCase().split(/\s+/);
    const names = ['a', 'mx', 'include'].flatMap((m) => [`${m}:${hostname}`, `+${m}:${hostname}`]);
    return terms.some((t) => names.includes(t)) ? verified : failed(`SPF record at ${domain} does not name ${hostname} (add a:${hostname})`);
  }
  // Evaluate the record as a receiver would (RFC 7208 §4), from every address the box may send from:
  // one that fails would fail SPF for the mail that leaves through it.
  const failures: string[] = [];
  for (const ip of addresses) {
    const res = await spf({
      sender: `postmaster@${domain}`,
      ip,
      helo: hostname,
      mta: hostname,
      resolver: (name: string, rrtype: string) => dns.raw(name, rrtype) as Promise<string[] | string[][]>,
    });
    if (res.status.result !== 'pass') failures.push(`${ip}: ${res.status.result}`);
  }
  return failures.length === 0
    ? verified
    : failed(`SPF record at ${domain} does not authorise ${hostname} (${failures.join(', ')}); add a:${hostname}`);
}

async function checkDkim(dns: DnsResolver, name: string, expected: string): Promise<CheckResult> {
  const records = await dns.txt(name);
  if (records.length === 0) return failed(`No DKIM record found at ${name}`);
  const want = parseTagList(expected)?.get('p');
  const match = records.some((r) => {
    const tags = parseTagList(r);
    return tags !== null && (tags.get('v') ?? 'DKIM1') === 'DKIM1' && tags.get('p') === want;
  });
  return match ? verified : failed(`The DKIM record at ${name} does not carry this domain's public key`);
}

async function checkDmarc(dns: DnsResolver, name: string): Promise<CheckResult> {
  const records = (await dns.txt(name)).filter((t) => /^v=DMARC1(\s*;|\s*$)/i.test(t.trim()));
  if (records.length === 0) return failed(`No DMARC record (v=DMARC1) found at ${name}`);
  if (records.length > 1) return failed(`${records.length} DMARC records found at ${name}; there must be exactly one (RFC 7489 §6.6.3)`);
  const policy = parseTagList(records[0]!)?.get('p')?.toLowerCase();
  return policy && ['none', 'quarantine', 'reject'].includes(policy) ? verified : failed(`The DMARC record at ${name} has no valid p= policy`);
}

async function checkMx(dns: DnsResolver, domain: string, hostname: string): Promise<CheckResult> {
  const mx = await dns.mx(domain);
  if (mx.length === 0) return failed(`No MX record found at ${domain}`);
  return mx.some((r) => r.exchange === hostname) ? verified : failed(`The MX records of ${domain} do not point at ${hostname}`);
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
    const code = (err as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
    if (code === 'ENOTFOUND' || code === 'ENODATA') return failed(`No SRV record found at ${record.name}`);
    throw new DnsLookupError('SRV', record.name, code);
  }
  if (answers.length === 0) return failed(`No SRV record found at ${record.name}`);
  const [, port, target] = record.value.split(' ');
  const match = answers.some((a) => a.name.toLowerCase().replace(/\.$/, '') === target && String(a.port) === port);
  return match ? verified : failed(`The SRV record at ${record.name} does not point at ${target} port ${port}`);
}

/** Looks one record up through the box's resolver. Never throws: a failed look-up is a failed check. */
export async function checkRecord(dns: DnsResolver, domain: string, hostname: string, record: DnsRecord): Promise<CheckResult> {
  try {
    switch (record.record) {
      case 'SPF':
        return await checkSpf(dns, domain, hostname);
      case 'DKIM':
        return await checkDkim(dns, record.name, record.value);
      case 'DMARC':
        return await checkDmarc(dns, record.name);
      case 'MX':
        return await checkMx(dns, domain, hostname);
      case 'SRV':
        return await checkSrv(dns, record);
    }
  } catch (err) {
    if (err instanceof DnsLookupError) return failed(`${err.message}; try again later`);
    return failed(`Check failed: ${(err as Error).message}`);
  }
}
