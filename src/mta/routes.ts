// Which way a domain's mail goes: the operator's route rules (recipient domain or MX host patterns →
// a named relay or direct), then the global relay, then direct to the domain's MX.
import type { RouteRule } from '../config.js';

/** A smarthost parsed from `smtp://[user:pass@]host[:port]` (STARTTLS as the TLS mode says) or `smtps://…` (TLS from the start). */
export interface RelayTarget {
  host: string;
  port: number;
  implicitTls: boolean;
  auth?: { user: string; pass: string } | undefined;
}

export type RouteChoice =
  | { kind: 'direct'; name: string }
  | { kind: 'relay'; name: string; relay: RelayTarget }
  /** An `mx:` rule had to be checked but the domain's MX hosts are not known (temporary DNS failure). */
  | { kind: 'undecided'; name: string };

/** Default ports: submission (587) for smtp://, implicit TLS submission (465, RFC 8314) for smtps://. */
const SMTP_RELAY_PORT = 587;
const SMTPS_RELAY_PORT = 465;

export function parseRelayUrl(url: string): RelayTarget {
  const u = new URL(url);
  if (u.protocol !== 'smtp:' && u.protocol !== 'smtps:') throw new Error(`relay URL must be smtp:// or smtps://, not ${u.protocol}`);
  const implicitTls = u.protocol === 'smtps:';
  // URL keeps IPv6 literals bracketed.
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = u.port ? Number(u.port) : implicitTls ? SMTPS_RELAY_PORT : SMTP_RELAY_PORT;
  const auth = u.username ? { user: decodeURIComponent(u.username), pass: decodeURIComponent(u.password) } : undefined;
  return { host, port, implicitTls, auth };
}

const normalize = (name: string) => name.trim().toLowerCase().replace(/\.$/, '');

/**
 * Glob over a host name, case-insensitive: `*` is any run of characters (dots included, so
 * `*.outlook.com` matches every subdomain at any depth but not `outlook.com` itself), `?` one character.
 */
export function globMatch(pattern: string, name: string): boolean {
  const re = normalize(pattern)
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${re}$`).test(normalize(name));
}

const MX_PREFIX = 'mx:';

/** True when a rule list has an `mx:` pattern, i.e. choosing a route may need the domain's MX hosts. */
export function needsMxHosts(rules: RouteRule[]): boolean {
  return rules.some((r) => r.match.some((p) => p.toLowerCase().startsWith(MX_PREFIX)));
}

/**
 * The first rule with a pattern matching the recipient domain (or, for `mx:` patterns, one of its MX
 * hosts) decides; else the global relay; else direct. `mxHosts` null: the MX hosts are unknown because
 * the look-up failed for now, so a rule that needs them cannot be decided. A domain with no MX hosts
 * (permanent DNS failure, or A fallback) simply matches no `mx:` pattern.
 */
export function chooseRoute(domain: string, rules: RouteRule[], globalRelay: string | null, mxHosts: string[] | null): RouteChoice {
  for (const rule of rules) {
    for (const pattern of rule.match) {
      let matched: boolean;
      if (pattern.toLowerCase().startsWith(MX_PREFIX)) {
        if (mxHosts === null) return { kind: 'undecided', name: rule.name };
        const hostPattern = pattern.slice(MX_PREFIX.length);
        matched = mxHosts.some((h) => globMatch(hostPattern, h));
      } else {
        matched = globMatch(pattern, domain);
      }
      if (matched) return rule.relay ? { kind: 'relay', name: rule.name, relay: parseRelayUrl(rule.relay) } : { kind: 'direct', name: rule.name };
    }
  }
  if (globalRelay) return { kind: 'relay', name: 'default', relay: parseRelayUrl(globalRelay) };
  return { kind: 'direct', name: 'default' };
}
