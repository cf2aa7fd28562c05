// The HTTP side of a webhook delivery: one POST with a deadline, and the address policy (no loopback,
// private or link-local targets unless the operator allows them). The address is checked on what the
// name resolves to at connection time, so a name that later moves to a private address is refused too.
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { lookup as systemLookup } from 'node:dns';
import type { DnsResolver } from '../dns/resolver.js';

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
  ['ff00::', 8], // multicast
] as const)
  blocked.addSubnet(net, prefix, 'ipv6');

/** Loopback, private, link-local, multicast or otherwise not a public unicast address. */
export function isPrivateAddress(ip: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return isPrivateAddress(mapped[1]!);
  const family = isIP(ip);
  if (family === 4) return blocked.check(ip, 'ipv4');
  if (family === 6) return blocked.check(ip, 'ipv6');
  return true;
}

/** Host of a URL without IPv6 brackets. */
export const urlHost = (u: URL) => u.hostname.replace(/^\[|\]$/g, '');

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
