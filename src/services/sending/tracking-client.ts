// Who fetched a pixel or followed a link, as far as the request tells (pure but for the lazily loaded GeoIP
// table): the user agent parsed into a provider and a device (ua-parser-js), the client address's country
// (geoip-country: MaxMind's GeoLite2 country table shipped inside the npm package; nothing leaves the box),
// and whether the hit came through a mail provider's image proxy or from a machine.
//
//   provider  gmail, apple, outlook, yahoo, thunderbird, other, unknown (no user agent)
//   device    desktop, mobile, tablet, unknown (a proxy's hit, or nothing to tell)
//   country   ISO 3166-1 alpha-2, or null: loopback, private and unknown addresses, and every proxy's hit
//             (the address is the proxy's, not the reader's)
//   proxy     gmail (GoogleImageProxy), yahoo (YahooMailProxy), apple_mpp (Apple Mail Privacy Protection),
//             outlook (Microsoft's mail scanning ranges), or null
//   machine   true when no person is behind the hit: Apple MPP fetches every image of every message as it
//             arrives, Microsoft's Safe Links and other scanners follow every link, and bots say so. Gmail's and
//             Yahoo's proxies fetch when the message is shown: a person (the device and country unknown).
// The heuristics are the known signatures: Apple's proxy sends the bare `Mozilla/5.0` and comes from Apple's
// 17.0.0.0/8; Microsoft's scanners from Exchange Online Protection's published ranges.
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import type UAParserType from 'ua-parser-js';

export type Device = 'desktop' | 'mobile' | 'tablet' | 'unknown';
export const PROVIDERS = ['gmail', 'apple', 'outlook', 'yahoo', 'thunderbird', 'other', 'unknown'] as const;
export type Provider = (typeof PROVIDERS)[number];
export const DEVICES: readonly Device[] = ['desktop', 'mobile', 'tablet', 'unknown'];

export interface AgentInfo {
  provider: Provider;
  /** The browser or mail client ua-parser-js names (`Chrome`, `WebKit`), or null. */
  client: string | null;
  os: string | null;
  device: Device;
  proxy: 'gmail' | 'yahoo' | 'apple_mpp' | 'outlook' | null;
  machine: boolean;
}

export interface ClientInfo extends AgentInfo {
  country: string | null;
}

/** ua-parser-js, loaded with the first open or click (its regex tables stay out of a box that tracks nothing). */
let uaParser: typeof UAParserType | undefined;

type Geo = { lookup(ip: string): { country: string } | null };
let geo: Geo | undefined;

/**
 * The country of `ip` (ISO 3166-1 alpha-2), or null for loopback, private, reserved and unknown addresses. The
 * table (about 8 MB on disk, about 15 MB of RSS) is loaded on the first call, synchronously (~80 ms once).
 */
export function countryOf(ip: string): string | null {
  const bare = ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
  if (isIP(bare) === 0) return null;
  geo ??= createRequire(import.meta.url)('geoip-country') as Geo;
  try {
    return geo.lookup(bare)?.country ?? null;
  } catch {
    return null;
  }
}

/** Whether the GeoIP table has been loaded (it is, from the first hit on). */
export const geoLoaded = () => geo !== undefined;

function ipv4Number(ip: string): number | null {
  const bare = ip.startsWith('::ffff:') ? ip.slice(7) : ip;
  if (isIP(bare) !== 4) return null;
  return bare.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

const cidr = (base: string, bits: number) => ({ base: ipv4Number(base)!, size: 2 ** (32 - bits) });
/** Apple's own network, where Mail Privacy Protection's prefetches come from. */
const APPLE = [cidr('17.0.0.0', 8)];
/** Exchange Online Protection (Microsoft's published ranges), whose scanners fetch and follow everything. */
const MICROSOFT_SCANNERS = [cidr('40.92.0.0', 15), cidr('40.107.0.0', 16), cidr('52.100.0.0', 14), cidr('104.47.0.0', 17)];
const within = (ip: string, ranges: Array<{ base: number; size: number }>) => {
  const n = ipv4Number(ip);
  return n !== null && ranges.some((r) => n >= r.base && n < r.base + r.size);
};

const BOT_RE = /bot\b|crawler|spider|scanner|preview|curl\/|wget\/|python-requests|python-urllib|go-http-client|java\/|okhttp|headless|barracuda|mimecast|proofpoint|safelinks/i;

const parsed = new Map<string, AgentInfo>();
const PARSED_KEPT = 2000;

/** The user agent as provider, client, os and device (cached: a few agents make most hits). */
export function parseAgent(userAgent: string): AgentInfo {
  const ua = userAgent.slice(0, 512);
  let info = parsed.get(ua);
  if (info) return info;
  info = classify(ua);
  if (parsed.size >= PARSED_KEPT) parsed.clear();
  parsed.set(ua, info);
  return info;
}

function classify(ua: string): AgentInfo {
  const trimmed = ua.trim();
  if (trimmed === '') return { provider: 'unknown', client: null, os: null, device: 'unknown', proxy: null, machine: false };
  if (/GoogleImageProxy|via ggpht\.com/i.test(trimmed)) return { provider: 'gmail', client: 'GoogleImageProxy', os: null, device: 'unknown', proxy: 'gmail', machine: false };
  if (/YahooMailProxy/i.test(trimmed)) return { provider: 'yahoo', client: 'YahooMailProxy', os: null, device: 'unknown', proxy: 'yahoo', machine: false };
  if (trimmed === 'Mozilla/5.0') return { provider: 'apple', client: null, os: null, device: 'unknown', proxy: 'apple_mpp', machine: true };
  uaParser ??= createRequire(import.meta.url)('ua-parser-js') as typeof UAParserType;
  const r = new uaParser(trimmed).getResult();
  const os = r.os.name ?? null;
  const type = r.device.type;
  const device: Device =
    type === 'mobile' || type === 'wearable' ? 'mobile' : type === 'tablet' ? 'tablet' : type === undefined && os !== null ? 'desktop' : 'unknown';
  const machine = BOT_RE.test(trimmed);
  let provider: Provider = 'other';
  if (/Microsoft Outlook|ms-office|MSOffice|Outlook-/i.test(trimmed)) provider = 'outlook';
  else if (/Thunderbird\//i.test(trimmed)) provider = 'thunderbird';
  // Apple Mail (macOS, iOS) loads images as WebKit without Safari's own tokens.
  else if (/AppleWebKit\//.test(trimmed) && !/Safari\/|Version\/|Chrome\/|CriOS|FxiOS|EdgiOS/.test(trimmed) && /Mac OS X|iPhone|iPad/.test(trimmed)) provider = 'apple';
  return { provider, client: r.browser.name ?? null, os, device, proxy: null, machine };
}

/** The client of one hit: its agent, and its address's country unless it came through a proxy. */
export function describeClient(ip: string, userAgent: string): ClientInfo {
  let agent = parseAgent(userAgent);
  if (within(ip, APPLE) && agent.proxy === null && (agent.provider === 'apple' || agent.provider === 'other')) {
    agent = { provider: 'apple', client: agent.client, os: null, device: 'unknown', proxy: 'apple_mpp', machine: true };
  } else if (within(ip, MICROSOFT_SCANNERS) && agent.proxy === null) {
    agent = { provider: 'outlook', client: agent.client, os: null, device: 'unknown', proxy: 'outlook', machine: true };
  }
  return { ...agent, country: agent.proxy !== null ? null : countryOf(ip) };
}
