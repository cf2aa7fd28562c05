// One resolver for every look-up the box makes, over the configured servers (MAIL_DNS_SERVERS),
// so tests can point it at a dns2 server on loopback.
import { promises as dns } from 'node:dns';
import { formatDnsServer, type DnsServer } from '../config.js';

export interface MxRecord {
  exchange: string;
  priority: number;
}

/** A look-up that could not be answered (timeout, SERVFAIL, refused): temporary, unlike "no such record". */
export class DnsLookupError extends Error {
  override name = 'DnsLookupError';
  constructor(
    readonly rrtype: string,
    readonly hostname: string,
    readonly dnsCode: string,
  ) {
    super(`DNS ${rrtype} look-up for ${hostname} failed (${dnsCode})`);
  }
}

export interface DnsResolver {
  /** TXT records, each record's character-strings joined (RFC 7208 §3.3). Empty when none exist. */
  txt(name: string): Promise<string[]>;
  mx(name: string): Promise<MxRecord[]>;
  a(name: string): Promise<string[]>;
  aaaa(name: string): Promise<string[]>;
  /** Generic form used by mailauth: rrtype as in dns.resolve; "no data" is thrown as ENODATA/ENOTFOUND. */
  raw(name: string, rrtype: string): Promise<unknown>;
}

const NO_DATA = new Set<string>([dns.NOTFOUND, dns.NODATA]);

export function createResolver(servers: DnsServer[], timeoutMs: number): DnsResolver {
  const resolver = new dns.Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) resolver.setServers(servers.map(formatDnsServer));

  async function lookup<T>(rrtype: string, name: string, fn: () => Promise<T[]>): Promise<T[]> {
    try {
      return await fn();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
      if (NO_DATA.has(code)) return [];
      throw new DnsLookupError(rrtype, name, code);
    }
  }

  return {
    txt: (name) => lookup('TXT', name, async () => (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''))),
    mx: (name) =>
      lookup('MX', name, async () =>
        (await resolver.resolveMx(name))
          .map((r) => ({ exchange: r.exchange.toLowerCase().replace(/\.$/, ''), priority: r.priority }))
          .sort((x, y) => x.priority - y.priority),
      ),
    a: (name) => lookup('A', name, () => resolver.resolve4(name)),
    aaaa: (name) => lookup('AAAA', name, () => resolver.resolve6(name)),
    raw: (name, rrtype) => resolver.resolve(name, rrtype as 'A'),
  };
}
