// Where mail for a domain goes (RFC 5321 §5.1): its MX hosts by preference; with no MX, the domain's own
// address records. A null MX (RFC 7505) is a permanent failure; a domain that does not resolve (it does not
// exist, or has neither MX nor address records) is retried like any temporary failure and fails when the
// retries run out (issue 3: "unresolvable domain is a permanent failure after retries"): a domain being set
// up, or a DNS change in flight, is not a reason to lose the mail.
import { DnsLookupError, type DnsResolver } from '../dns/resolver.js';

export interface MxHost {
  host: string;
  priority: number;
}

export type Destination =
  | { ok: true; hosts: MxHost[]; implicit: boolean }
  /** `enhanced`: the RFC 3463 code for the failure (5.1.10 null MX, 4.4.4 no route: no MX or address records, 4.4.3 look-up failed). */
  | { ok: false; permanent: boolean; reason: string; enhanced: string };

export async function resolveDestination(dns: Pick<DnsResolver, 'mx' | 'a' | 'aaaa'>, domain: string): Promise<Destination> {
  try {
    const mx = await dns.mx(domain);
    if (mx.length > 0) {
      if (mx.some((r) => r.exchange === '' || r.exchange === '.')) {
        return { ok: false, permanent: true, reason: `${domain} does not accept mail (null MX, RFC 7505)`, enhanced: '5.1.10' };
      }
      // Equal preferences are tried in random order (RFC 5321 §5.1) to spread load.
      const hosts = mx.map((r) => ({ host: r.exchange, priority: r.priority, shuffle: Math.random() }));
      hosts.sort((a, b) => a.priority - b.priority || a.shuffle - b.shuffle);
      return { ok: true, hosts: hosts.map(({ host, priority }) => ({ host, priority })), implicit: false };
    }
    const [a, aaaa] = await Promise.all([dns.a(domain), dns.aaaa(domain)]);
    if (a.length + aaaa.length > 0) return { ok: true, hosts: [{ host: domain, priority: 0 }], implicit: true };
    return { ok: false, permanent: false, reason: `${domain} has no MX or address records`, enhanced: '4.4.4' };
  } catch (err) {
    if (err instanceof DnsLookupError) return { ok: false, permanent: false, reason: err.message, enhanced: '4.4.3' };
    throw err;
  }
}
