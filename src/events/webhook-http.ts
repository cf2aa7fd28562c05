// The HTTP side of a webhook delivery: one POST with a deadline, and the address policy (no loopback,
// private or link-local targets unless the operator allows them). The address is checked on what the
// name resolves to at connection time, so a name that later moves to a private address is refused too.
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { lookup as systemLookup } from 'node:dns';
import type { DnsResolver } from '../dns/resolver.js';
import { ipv6Bytes } from '../core/ip.js';

/** Response bodies are kept up to this many characters. */
export const RESPONSE_BODY_LIMIT = 2048;

const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local (cloud metadata)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const)
  blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated by RFC 3879, still routed as private where configured)
  ['ff00::', 8], // multicast
  ['64:ff9b:1::', 48], // NAT64 for local use (RFC 8215): translated to addresses of the operator's choosing
] as const)
  blocked.addSubnet(net, prefix, 'ipv6');

/**
 * The IPv4 address an IPv6 address leads to, when it carries one: IPv4-mapped and IPv4-compatible (::/96,
 * RFC 4291 §2.5.5), NAT64's well-known prefix (64:ff9b::/96, RFC 6052: a NAT64 gateway translates it to the
 * IPv4 address) and 6to4 (2002::/16, RFC 3056).
 */
function embeddedIPv4(ip: string): string | null {
  const b = ipv6Bytes(ip);
  const v4 = (at: number) => b.slice(at, at + 4).join('.');
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && ((b[10] === 0xff && b[11] === 0xff) || (b[10] === 0 && b[11] === 0))) return v4(12);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return v4(12);
  if (b[0] === 0x20 && b[1] === 0x02) return v4(2);
  return null;
}

/** Loopback, private, link-local, multicast or otherwise not a public unicast address. */
export function isPrivateAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return blocked.check(ip, 'ipv4');
  if (family === 6) {
    if (blocked.check(ip, 'ipv6')) return true;
    const inner = embeddedIPv4(ip);
    return inner !== null && isPrivateAddress(inner);
  }
  return true;
}

/** Host of a URL without IPv6 brackets, and without the trailing dot of a fully qualified name (`localhost.`). */
export const urlHost = (u: URL) => u.hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '');

const LOCAL_NAMES = /(^|\.)(localhost|local|internal|localdomain)$/i;

export class AddressRefused extends Error {
  override name = 'AddressRefused';
}

/** Every address `host` resolves to (A and AAAA) through the box's resolver. */
async function resolveAll(dns: DnsResolver, host: string): Promise<string[]> {
  const [a, aaaa] = await Promise.allSettled([dns.a(host), dns.aaaa(host)]);
  const out = [...(a.status === 'fulfilled' ? a.value : []), ...(aaaa.status === 'fulfilled' ? aaaa.value : [])];
  if (out.length === 0 && a.status === 'rejected') throw a.reason;
  return out;
}

/**
 * The creation-time check of a URL's host: an IP literal or a local name that is private is refused, and so
 * is a name that resolves (now) to a private address. A name that does not resolve yet is accepted: the
 * delivery-time check covers it.
 */
export async function checkWebhookHost(dns: DnsResolver, url: URL): Promise<void> {
  const host = urlHost(url);
  if (isIP(host)) {
    if (isPrivateAddress(host)) throw new AddressRefused(`${host} is a loopback, private or link-local address`);
    return;
  }
  if (LOCAL_NAMES.test(host)) throw new AddressRefused(`${host} is a local name`);
  let addresses: string[] = [];
  try {
    addresses = await resolveAll(dns, host);
  } catch {
    return;
  }
  const bad = addresses.find(isPrivateAddress);
  if (bad) throw new AddressRefused(`${host} resolves to ${bad}, a loopback, private or link-local address`);
}

/** A `lookup` for http.request that resolves through the box's resolver and refuses private addresses. */
function guardedLookup(dns: DnsResolver): LookupFunction {
  return (hostname, options, callback) => {
    resolveAll(dns, hostname).then(
      (addresses) => {
        const bad = addresses.find(isPrivateAddress);
        if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), '', 4);
        if (bad) return callback(new AddressRefused(`refused: ${hostname} resolves to ${bad}, a loopback, private or link-local address`), '', 4);
        const list = addresses.map((address) => ({ address, family: isIP(address) }));
        if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: typeof list) => void)(null, list);
        else callback(null, list[0]!.address, list[0]!.family);
      },
      (err: Error) => callback(Object.assign(err, { code: 'ENOTFOUND' }), '', 4),
    );
  };
}

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** MAIL_WEBHOOK_ALLOW_PRIVATE: when false, every resolved address is checked. */
  allowPrivate: boolean;
  dns: DnsResolver;
  /** Keep-alive agents shared by deliveries; a one-off connection when omitted. */
  agents?: { http: http.Agent; https: https.Agent } | undefined;
}

export interface WebhookResponse {
  /** Null when no response came (timeout, connection error, refused address). */
  statusCode: number | null;
  /** The response body (truncated), or what went wrong. */
  body: string;
}

/** POSTs the body; never throws. */
export function postWebhook(req: WebhookRequest): Promise<WebhookResponse> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (r: WebhookResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ statusCode: r.statusCode, body: r.body.slice(0, RESPONSE_BODY_LIMIT) });
    };
    let url: URL;
    try {
      url = new URL(req.url);
    } catch {
      return resolve({ statusCode: null, body: 'invalid URL' });
    }
    const host = urlHost(url);
    if (!req.allowPrivate && isIP(host) && isPrivateAddress(host)) {
      return resolve({ statusCode: null, body: `refused: ${host} is a loopback, private or link-local address` });
    }
    const secure = url.protocol === 'https:';
    const options: http.RequestOptions = {
      method: 'POST',
      headers: { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
      agent: req.agents ? (secure ? req.agents.https : req.agents.http) : false,
      ...(req.allowPrivate ? { lookup: systemLookup } : { lookup: guardedLookup(req.dns) }),
    };
    const r = (secure ? https : http).request(url, options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (text.length < RESPONSE_BODY_LIMIT) text += chunk;
        if (text.length >= RESPONSE_BODY_LIMIT) {
          // The answer is the status line; what we keep of the body is in. The rest is not read: a body
          // that goes on (or trickles) past the deadline must not turn a 2xx into a failed attempt.
          finish({ statusCode: res.statusCode ?? null, body: text });
          res.destroy();
        }
      });
      res.on('end', () => finish({ statusCode: res.statusCode ?? null, body: text }));
      res.on('error', () => finish({ statusCode: res.statusCode ?? null, body: text }));
      res.on('close', () => finish(res.complete ? { statusCode: res.statusCode ?? null, body: text } : { statusCode: null, body: 'connection closed before the response ended' }));
    });
    const timer = setTimeout(() => {
      finish({ statusCode: null, body: `timed out after ${req.timeoutMs} ms` });
      r.destroy();
    }, req.timeoutMs);
    r.on('error', (err: Error) => finish({ statusCode: null, body: err instanceof AddressRefused ? err.message : `connection failed: ${err.message}` }));
    r.end(req.body);
  });
}
