// Shared pieces of the unsubscribe tests: an appliance that delivers to a loopback SMTP sink through a
// loopback DNS server, contacts and topics made through the API, and the List-Unsubscribe header read from
// the message as the sink received it.
import type { Test } from 'tap';
import type { Config } from '../../src/config.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';

export interface UnsubscribeEnv {
  app: TestApp;
  sink: SmtpSink;
  /** Sends through POST /emails from news@acme.example; answers the status and body. */
  send(body: Record<string, unknown>): Promise<{ status: number; body: { id: string; error?: string; code?: string } }>;
  /** Runs every due job (deliveries) now. */
  drain(): Promise<void>;
  contact(email: string, extra?: Record<string, unknown>): Promise<string>;
  topic(name: string, defaultSubscription: 'opt_in' | 'opt_out', visibility?: 'public' | 'private'): Promise<string>;
}

export async function startUnsubscribeEnv(t: Test, config: Partial<Config> = {}): Promise<UnsubscribeEnv> {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink();
  t.teardown(() => sink.close());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port, ...config } });
  await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  return {
    app,
    sink,
    send: (body) => app.request<{ id: string; error?: string; code?: string }>('POST', '/emails', { body: { from: 'News <news@acme.example>', subject: 'Hello', html: '<p>Hi</p>', ...body } }),
    drain: async () => {
      await app.appliance.ctx.jobs.drain();
    },
    async contact(email, extra = {}) {
      const res = await app.request<{ contact: { id: string } }>('POST', '/contacts', { body: { email, ...extra } });
      if (res.status !== 201) throw new Error(`contact: ${res.status} ${res.text}`);
      return res.body.contact.id;
    },
    async topic(name, defaultSubscription, visibility = 'public') {
      const res = await app.request<{ topic: { id: string } }>('POST', '/subscription-topics', { body: { name, default_subscription: defaultSubscription, visibility } });
      if (res.status !== 201) throw new Error(`topic: ${res.status} ${res.text}`);
      return res.body.topic.id;
    },
  };
}

/** A header of a raw message, unfolded (RFC 5322 §2.2.3); undefined when absent. */
export function headerOf(raw: Buffer, name: string): string | undefined {
  const head = raw.toString('latin1').split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, ' ');
  const line = head.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line?.slice(name.length + 1).trim();
}

/** The https (or http) URL and the mailto address of a List-Unsubscribe value. */
export function unsubscribeTargets(value: string): { url: string; mailto: string } {
  const parts = [...value.matchAll(/<([^>]+)>/g)].map((m) => m[1]!);
  const url = parts.find((p) => /^https?:/.test(p));
  const mailto = parts.find((p) => p.startsWith('mailto:'));
  if (!url || !mailto) throw new Error(`List-Unsubscribe without both forms: ${value}`);
  return { url, mailto: mailto.slice('mailto:'.length).split('?')[0]! };
}
