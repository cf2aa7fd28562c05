// Shared set-up of the submission tests: an appliance whose outbound MTA reaches a sink MX through the
// loopback DNS, a verified sending domain with a mailbox, and nodemailer clients for both ports.
import type { Test } from 'tap';
import nodemailer, { type Transporter } from 'nodemailer';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import type { Config } from '../../src/config.js';
import { startDns, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';

export interface SubmissionFixture {
  app: TestApp;
  dns: TestDns;
  sink: SmtpSink;
  /** The mailbox alice@acme.example (password `alice-password`). */
  alice: number;
  /** A nodemailer transport to the STARTTLS port (TLS required) or the implicit-TLS port. */
  transport(auth: { user: string; pass: string }, opts?: { implicit?: boolean }): Transporter;
  /** Runs due jobs (delivery). */
  drain(): Promise<void>;
  /** DKIM verification of a message as a receiver does it, through the loopback DNS. */
  dkim(raw: Buffer): Promise<Array<{ result: string; domain: string }>>;
}

export const ALICE = { user: 'alice@acme.example', pass: 'alice-password' };

/** `config` over the test defaults, e.g. `{ trustedNetworks: [] }` to speak as an untrusted client from loopback. */
export async function submissionFixture(t: Test, config: Partial<Config> = {}): Promise<SubmissionFixture> {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: true });
  t.teardown(() => sink.close());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port, ...config } });
  const domain = await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const account = await app.appliance.ctx.mailstore.createAccount({ teamId: app.teamId, domainId: domain.id, address: ALICE.user, password: ALICE.pass });
  const transports: Transporter[] = [];
  t.teardown(() => transports.forEach((x) => x.close()));
  return {
    app,
    dns,
    sink,
    alice: account.id,
    transport(auth, opts = {}) {
      const { ports } = app.appliance;
      const x = nodemailer.createTransport({
        host: '127.0.0.1',
        port: opts.implicit ? ports.submissions.port : ports.submission.port,
        secure: Boolean(opts.implicit),
        requireTLS: !opts.implicit,
        tls: { rejectUnauthorized: false },
        auth,
      });
      transports.push(x);
      return x;
    },
    drain: async () => void (await app.appliance.ctx.jobs.drain()),
    async dkim(raw) {
      const v = await dkimVerify(raw, { resolver: (name: string, rr: string) => app.appliance.ctx.dns.raw(name, rr) as Promise<string[][]> });
      return v.results.map((r) => ({ result: r.status.result, domain: r.signingDomain }));
    },
  };
}
