// Shared pieces of the tracking tests: an appliance whose public URL is its own API listener (so the URLs in
// a delivered message can be fetched as they are), delivering through a loopback DNS server to an SMTP sink,
// with a verified sending domain whose tracking is switched through the API.
import net from 'node:net';
import type { Test } from 'tap';
import { simpleParser } from 'mailparser';
import type { Config } from '../../src/config.js';
import { createOtherTeam, startTestApp, type TestApp } from '../helpers/app.js';
import { startDns, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain, type DomainView } from '../helpers/domains.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';

export const TOKEN_RE = '[a-z2-7]{48}';

export interface TrackingEnv {
  app: TestApp;
  dns: TestDns;
  sink: SmtpSink;
  domain: DomainView;
  /** POST /emails from news@acme.example (html given by the body), then every due job run. */
  sendAndDeliver(body: Record<string, unknown>, key?: string): Promise<{ id: string; html: string; raw: Buffer }>;
  track(settings: Record<string, unknown>, domainId?: string, key?: string): Promise<void>;
  other(): Promise<{ teamId: string; apiKey: string }>;
}

/** A free TCP port on loopback (an appliance that must know its own public URL before it listens). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startTrackingEnv(t: Test, config: Partial<Config> = {}): Promise<TrackingEnv> {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink();
  t.teardown(() => sink.close());
  const port = await freePort();
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port, apiPort: port, publicUrl: `http://127.0.0.1:${port}`, ...config } });
  const domain = await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const env: TrackingEnv = {
    app,
    dns,
    sink,
    domain,
    async sendAndDeliver(body, key) {
      const before = sink.accepted.length;
      const res = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'News <news@acme.example>', subject: 'Hello', ...body }, ...(key ? { key } : {}) });
      if (res.status !== 202) throw new Error(`send: ${res.status} ${res.text}`);
      await app.appliance.ctx.jobs.drain();
      const tx = sink.accepted[before];
      if (!tx) throw new Error('nothing delivered');
      const parsed = await simpleParser(tx.raw);
      return { id: res.body.id, html: typeof parsed.html === 'string' ? parsed.html : '', raw: tx.raw };
    },
    async track(settings, domainId = domain.id, key) {
      const res = await app.request('PATCH', `/domains/${domainId}`, { body: settings, ...(key ? { key } : {}) });
      if (res.status !== 200) throw new Error(`PATCH /domains: ${res.status} ${res.text}`);
    },
    other: () => createOtherTeam(app),
  };
  return env;
}

/** The tracking URLs in a delivered html, in order: the pixel's and the links'. */
export function trackingUrls(html: string): { pixel: string[]; links: string[] } {
  const all = [...html.matchAll(/(?:src|href)="([^"]*\/track\/(open|click)\/[a-z2-7]{48})"/g)];
  return { pixel: all.filter((m) => m[2] === 'open').map((m) => m[1]!), links: all.filter((m) => m[2] === 'click').map((m) => m[1]!) };
}

export const UA = {
  gmailProxy: 'Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)',
  appleMpp: 'Mozilla/5.0',
  appleMailIphone: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
  chromeAndroid: 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36',
  chromeWindows: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36',
  outlookDesktop: 'Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.17029; Pro)',
  yahooProxy: 'YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html',
};
