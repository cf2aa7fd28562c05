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

/** A look-up's error code, when the DNS answered that the name or record does not exist (not a failure to answer). */
export const isNoData = (err: unknown): boolean => NO_DATA.has((err as NodeJS.ErrnoException | undefined)?.code ?? '');

/**
 * `raw`'s errors for mailauth: its SPF takes an unanswered look-up as a temperror only when the error says so (it
 * knows ETIMEOUT and EREFUSED, and skips an `include:` that fails otherwise, SERVFAIL say, which can turn a
 * temperror into a fail; RFC 7208 §5.2 says temperror). Its DKIM and DMARC ignore the mark.
 */
export function markUnanswered(err: unknown, name: string): unknown {
  if (!isNoData(err) && err && typeof err === 'object') {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    Object.assign(err, { spfResult: { error: 'temperror', text: `DNS ${code} looking up ${name}` } });
  }
  return err;
}

export function createResolver(servers: DnsServer[], timeoutMs: number): DnsResolver {
  const resolver = new dns.Resolver({ timeout: timeoutMs, tries: 2 });
  if (servers.length > 0) resolver.setServers(servers.map(formatDnsServer));

  async function lookup<T>(rrtype: string, name: string, fn: () => Promise<T[]>): Promise<T[]> {
    try {
      return await fn();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
      if (isNoData(err)) return [];
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
    raw: (name, rrtype) =>
      resolver.resolve(name, rrtype as 'A').catch((err: unknown) => {
        throw markUnanswered(err, name);
      }),
  };
}
