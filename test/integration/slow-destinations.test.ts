// One dead or slow destination must not hold up the queue.
// - Dead: deliveries waiting for a session to a host that never answers fail with the first one instead of
//   each waiting out its own connection timeout while it holds one of the box's delivery slots (with 40
//   queued for a blackholed MX, an email to a healthy domain waited ~20 s here; with MAIL_SMTP_TIMEOUT_MS's
//   30 s default and hundreds queued, the whole queue stalled for minutes).
// - Slow: a backlog for one domain runs in its job lane, at most 3/4 of the delivery slots, so an email to
//   another domain does not wait behind it (1,000 queued for an MX taking 100 ms a message delayed one
//   transactional email 9.4 s, behind 771 of them); and a backlog larger than the lanes hold (maxParked)
//   is skipped over in the table.
import { createServer, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { SMTPServer } from 'smtp-server';
import type { WorkerOptions } from '../../src/jobs/queue.js';
import { startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

interface Detail {
  status: string;
  recipients: Array<{ email: string; status: string; message: string | null }>;
}

t.test('emails to a blackholed MX fail together; the queue goes on with the others', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const good = await startSmtpSink({ host: '127.0.0.2', starttls: false });
  t.teardown(() => good.close());
  // Accepts TCP on the same port and never says a word.
  const sockets = new Set<Socket>();
  let connections = 0;
  const blackhole = createServer((s) => {
    connections++;
    sockets.add(s);
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => blackhole.listen(good.port, '127.0.0.3', r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    blackhole.close();
  });
  const connectionsPerHost = 2;
  const app = await startTestApp(t, {
    config: { dnsServers: [dns.server], outboundPort: good.port, smtpTimeoutMs: 1000, deliveryConcurrency: 8, connectionsPerHost },
  });
  await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'dead.example', [{ exchange: 'mx.dead.example', priority: 10 }]);
  dns.set('A', 'mx.dead.example', ['127.0.0.3']);
  dns.set('MX', 'good.example', [{ exchange: 'mx.good.example', priority: 10 }]);
  dns.set('A', 'mx.good.example', ['127.0.0.2']);

  const emails = Array.from({ length: 40 }, (_, i) => ({ from: 'a@acme.example', to: [`u${i}@dead.example`], subject: `s${i}`, text: 'x' }));
  const batch = await app.request<{ data: Array<{ id: string }> }>('POST', '/emails/batch', { body: { emails } });
  t.equal(batch.status, 202);
  const single = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'a@acme.example', to: ['g@good.example'], subject: 'g', text: 'y' } });
  t.equal(single.status, 202);
  await app.appliance.ctx.jobs.drain();

  t.equal(good.accepted.length, 1, 'the healthy domain got its email');
  t.ok(connections <= connectionsPerHost, `the dead host was connected to ${connections} time(s), not once per email`);
  const messages = new Map<string, number>();
  for (const { id } of batch.body.data) {
    const detail = (await app.request<Detail>('GET', `/emails/${id}`)).body;
    const r = detail.recipients[0]!;
    t.equal(r.status, 'deferred', `${r.email} deferred`);
    const kind = /^Delivery temporarily suspended: /.test(r.message ?? '') ? 'suspended' : (r.message ?? 'none');
    messages.set(kind, (messages.get(kind) ?? 0) + 1);
  }
  t.ok((messages.get('suspended') ?? 0) >= 40 - connectionsPerHost, `the others were deferred without a connection of their own: ${JSON.stringify([...messages])}`);
});

/** A sink for good.example, an MX for big.example taking 100 ms to accept each message, and the appliance. */
async function slowDestination(t: Test, jobs?: Partial<WorkerOptions>) {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const good = await startSmtpSink({ host: '127.0.0.2', starttls: false });
  t.teardown(() => good.close());
  const slow = { delivered: 0 };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, cb) {
      stream.resume();
      stream.on('end', () =>
        setTimeout(() => {
          slow.delivered++;
          cb();
        }, 100),
      );
    },
  });
  await new Promise<void>((r) => server.listen(good.port, '127.0.0.3', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const app = await startTestApp(t, {
    config: { dnsServers: [dns.server], outboundPort: good.port, smtpTimeoutMs: 5000, deliveryConcurrency: 16, connectionsPerHost: 2 },
    ...(jobs ? { jobs } : {}),
  });
  await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'big.example', [{ exchange: 'mx.big.example', priority: 10 }]);
  dns.set('A', 'mx.big.example', ['127.0.0.3']);
  dns.set('MX', 'good.example', [{ exchange: 'mx.good.example', priority: 10 }]);
  dns.set('A', 'mx.good.example', ['127.0.0.2']);

  return {
    app,
    slow,
    /** n emails to big.example (~20 a second get through its two sessions). */
    async backlog(n: number) {
      for (let b = 0; b < n / 100; b++) {
        const emails = Array.from({ length: 100 }, (_, i) => ({ from: 'news@acme.example', to: [`u${b * 100 + i}@big.example`], subject: 'news', text: 'x' }));
        t.equal((await app.request('POST', '/emails/batch', { body: { emails } })).status, 202);
      }
    },
    /** Sends one email to good.example and waits for it to be delivered. */
    async sendElsewhere() {
      const single = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'a@acme.example', to: ['g@good.example'], subject: 'reset', text: 'y' } });
      let status = '';
      for (let i = 0; i < 600 && status !== 'delivered'; i++) {
        status = (await app.request<{ status: string }>('GET', `/emails/${single.body.id}`)).body.status;
        if (status !== 'delivered') await new Promise((r) => setTimeout(r, 50));
      }
      t.equal(status, 'delivered');
    },
  };
}

t.test('a backlog for a slow MX takes at most 3/4 of the delivery slots: an email to another domain goes at once', async (t) => {
  const { app, slow, backlog, sendElsewhere } = await slowDestination(t);
  await backlog(300);
  // The last of the backlog waits in its lane (leased, not started): it can still be cancelled.
  const last = (await app.request<{ data: Array<{ publicId: string }> }>('GET', '/emails?per_page=1')).body.data[0]!;
  const db = app.appliance.ctx.db;
  const jobId = (await db('emails').where({ public_id: last.publicId }).first('job_id')).job_id as number;
  for (let i = 0; i < 200 && !(await db('jobs').where({ id: jobId }).first('lease_until'))?.lease_until; i++) await new Promise((r) => setTimeout(r, 25));
  t.ok((await db('jobs').where({ id: jobId }).first('lease_until'))?.lease_until, 'its job is leased, parked in the lane');
  t.equal((await db('emails').where({ public_id: last.publicId }).first('status')).status, 'queued', 'and has not started');
  t.equal((await app.request('POST', `/emails/${last.publicId}/cancel`)).status, 200, 'a queued email waiting in its lane is cancelled');
  await sendElsewhere();
  t.ok(slow.delivered < 100, `delivered ahead of the backlog (${slow.delivered} of its 300 were delivered first)`);
  await app.appliance.ctx.jobs.drain();
  t.equal(slow.delivered, 299, 'the backlog is delivered too, but for the cancelled one');
  t.equal((await app.request<{ status: string }>('GET', `/emails/${last.publicId}`)).body.status, 'cancelled');
});

t.test('a backlog larger than the lanes hold (maxParked) does not hold other domains up either', async (t) => {
  const { app, slow, backlog, sendElsewhere } = await slowDestination(t, { maxParked: 20 });
  await backlog(200);
  await sendElsewhere();
  t.ok(slow.delivered < 100, `delivered ahead of the backlog (${slow.delivered} of its 200 were delivered first)`);
  await app.appliance.ctx.jobs.drain();
  t.equal(slow.delivered, 200, 'the backlog is delivered too');
});
