// Shared pieces of the inbound tests: an appliance with a loopback DNS server, a real SMTP client
// (nodemailer) for the MX port, messages built by hand, a sender domain with SPF/DKIM/DMARC published.
import { generateKeyPairSync } from 'node:crypto';
import type { Test } from 'tap';
import nodemailer from 'nodemailer';
import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import type { Config } from '../../src/config.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startDns, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';

export interface InboundEnv {
  app: TestApp;
  dns: TestDns;
  mxPort: number;
}

export async function startInbound(t: Test, config: Partial<Config> = {}): Promise<InboundEnv> {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], ...config } });
  return { app, dns, mxPort: app.appliance.ports.mx.port };
}

export interface SmtpResult {
  ok: boolean;
  /** The server's final reply, e.g. "250 2.0.0 Ok: queued as …" or "550 5.1.1 No such user here". */
  response: string;
  code: number | undefined;
}

/** Sends `raw` to the MX with a real client. STARTTLS is used when offered unless `plain`. */
export async function smtpSend(port: number, envelope: { from: string; to: string[] }, raw: string | Buffer, opts: { plain?: boolean; requireTLS?: boolean; name?: string } = {}): Promise<SmtpResult> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: opts.plain ?? false,
    requireTLS: opts.requireTLS ?? false,
    name: opts.name ?? 'client.sender.example',
    tls: { rejectUnauthorized: false },
    connectionTimeout: 10_000,
    socketTimeout: 60_000,
  });
  try {
    const info = (await transport.sendMail({ envelope, raw })) as { response: string };
    return { ok: true, response: info.response, code: Number(info.response.slice(0, 3)) };
  } catch (err) {
    const e = err as { response?: string; responseCode?: number; message: string };
    return { ok: false, response: e.response ?? e.message, code: e.responseCode };
  } finally {
    transport.close();
  }
}

export interface MessageSpec {
  from: string;
  to: string;
  subject?: string;
  text?: string;
  messageId?: string;
  headers?: Record<string, string>;
  date?: string;
}

export function buildMessage(m: MessageSpec): string {
  const lines = [
    `From: ${m.from}`,
    `To: ${m.to}`,
    `Subject: ${m.subject ?? 'Hello'}`,
    `Date: ${m.date ?? 'Sun, 1 Mar 2026 10:00:00 +0000'}`,
    `Message-ID: ${m.messageId ?? `<${Math.random().toString(36).slice(2)}@sender.example>`}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    ...Object.entries(m.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
    '',
    m.text ?? 'Hello there.',
    '',
  ];
  return lines.join('\r\n');
}

export interface SenderDomain {
  name: string;
  selector: string;
  privateKey: string;
  sign(raw: string): Promise<string>;
}

/** A remote sender domain with SPF (127.0.0.1 allowed), a DKIM key and a DMARC policy published. */
export function publishSender(dns: TestDns, name: string, policy: 'none' | 'quarantine' | 'reject' = 'reject'): SenderDomain {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding: { type: 'spki', format: 'der' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } });
  const selector = 's1';
  dns.set('TXT', name, ['v=spf1 ip4:127.0.0.1 -all']);
  dns.set('TXT', `${selector}._domainkey.${name}`, [`v=DKIM1; k=rsa; p=${publicKey.toString('base64')}`]);
  dns.set('TXT', `_dmarc.${name}`, [`v=DMARC1; p=${policy}`]);
  return {
    name,
    selector,
    privateKey,
    async sign(raw: string) {
      const res = await dkimSign(raw, { signingDomain: name, selector, privateKey, canonicalization: 'relaxed/relaxed', signatureData: [{ signingDomain: name, selector, privateKey, canonicalization: 'relaxed/relaxed' }] });
      if (res.errors?.length) throw new Error(`dkimSign: ${JSON.stringify(res.errors)}`);
      return res.signatures + raw;
    },
  };
}

export { until } from '../helpers/process.js';

/** Creates a verified domain for the bootstrap team and sets its inbound routing mode (routing needs verification). */
export async function addInboundDomain(app: TestApp, dns: TestDns, name: string, mode: string): Promise<{ id: string }> {
  const domain = await addVerifiedDomain(app, dns, name);
  const patched = await app.request('PATCH', `/domains/${domain.id}`, { body: { inbound_mode: mode } });
  if (patched.status !== 200) throw new Error(`PATCH /domains: ${patched.status} ${patched.text}`);
  return domain;
}
