// A broadcast's fan-out when things go wrong: the appliance stopped in the middle of it (and its jobs run
// again, as after a crash: at-least-once) and a cancel in the middle of it. The test runs the campaign's
// job handlers by hand with the worker stopped, so "the middle" is a known place; everything else (the send
// path, delivery, the remote MX over real sockets) is the real thing.
import t from 'tap';
import { rmSync } from 'node:fs';
import { FakeClock } from '../../src/core/clock.js';
import type { Job } from '../../src/jobs/queue.js';
import { FANOUT_JOB, runFanout, runStart, START_JOB } from '../../src/services/campaigns/fanout.js';
import { makeDataDir, startTestApp, type TestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

t.setTimeout(240_000);

interface Broadcast {
  id: string;
  status: string;
  recipients: number;
}

const PAGE = 25;
const CONTACTS = 200;

t.test('fan-out: stopped mid-way and started again; cancelled mid-way', async (top) => {
  const t = top;
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const dataDir = makeDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const clock = new FakeClock('2026-03-01T10:00:00.000Z');
  const config = { dnsServers: [dns.server], outboundPort: sink.port, broadcastPageSize: PAGE };
  let app: TestApp = await startTestApp(t, { dataDir, clock, config });
  await addVerifiedDomain(app, dns, 'acme.example');
  const seg = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'All' } })).body.segment.id;
  const csv = ['email,first_name', ...Array.from({ length: CONTACTS }, (_, i) => `c${i}@dest.example,C${i}`)].join('\n');
  t.equal((await app.request('POST', '/contacts/import', { body: { csv, segment_id: seg } })).status, 200);

  const newBroadcast = async (name: string) => {
    const r = await app.request<{ broadcast: Broadcast }>('POST', '/broadcasts', { body: { name, from: 'news@acme.example', subject: `${name} for {{ contact.first_name }}`, html: '<p>{{ contact.first_name }}</p>', segment_ids: [seg] } });
    if (r.status !== 201) throw new Error(r.text);
    const pk = ((await app.appliance.ctx.db('broadcasts').where({ id: r.body.broadcast.id }).first('pk')) as { pk: number }).pk;
    return { id: r.body.broadcast.id, pk };
  };
  const job = (kind: string, pk: number): Job => ({ id: 0, kind, payload: { pk }, runAt: clock.now(), attempts: 1, lane: 'campaigns' });
  const settle = async (id: string) => {
    for (let i = 0; i < 20; i++) {
      await app.appliance.ctx.jobs.drain();
      const b = (await app.request<{ broadcast: Broadcast }>('GET', `/broadcasts/${id}`)).body.broadcast;
      if (b.status !== 'sending') return b;
      clock.advance(1_000);
    }
    throw new Error('did not settle');
  };
  const messagesOf = (subject: string) => sink.accepted.filter((tx) => tx.raw.toString('latin1').includes(`Subject: ${subject} for `));

  top.test('stopped in the middle: every contact gets exactly one message', async (t) => {
    const b = await newBroadcast('Crash');
    await app.appliance.ctx.jobs.stop(); // no worker: the test runs the jobs
    const sent = await app.request<{ broadcast: Broadcast }>('POST', `/broadcasts/${b.id}/send`);
    t.equal(sent.status, 200, sent.text);
    await runStart(app.appliance.ctx, job(START_JOB, b.pk));
    for (let i = 0; i < 3; i++) await runFanout(app.appliance.ctx, job(FANOUT_JOB, b.pk));
    const counts = async () => Object.fromEntries(((await app.appliance.ctx.db('broadcast_recipients').where({ broadcast_pk: b.pk }).select('status').count({ n: '*' }).groupBy('status')) as Array<{ status: string; n: number }>).map((r) => [r.status, Number(r.n)]));
    t.same(await counts(), { queued: 3 * PAGE, pending: CONTACTS - 3 * PAGE }, 'three pages handed to the send path');
    // As after a crash: the jobs that ran were never deleted (start, and each page's successor), and more
    // fan-out runs are due than one; none of them may send anyone twice.
    await app.appliance.ctx.db('jobs').insert([FANOUT_JOB, FANOUT_JOB].map((kind) => ({ kind, payload: JSON.stringify({ pk: b.pk }), run_at: clock.now().getTime(), created_at: clock.now().getTime(), lane: 'campaigns' })));
    await app.stop();

    app = await startTestApp(top, { dataDir, clock, config: { ...config, bootstrapApiKey: app.apiKey } }); // the same data: its key
    const done = await settle(b.id);
    t.equal(done.status, 'sent');
    t.equal(done.recipients, CONTACTS);
    t.same(await counts(), { queued: CONTACTS });
    const got = messagesOf('Crash');
    t.equal(got.length, CONTACTS, 'no message lost, none doubled');
    t.equal(new Set(got.map((tx) => tx.to[0])).size, CONTACTS, 'each contact exactly once');
    const emails = Number(((await app.appliance.ctx.db('emails').where({ broadcast_id: b.id }).count({ n: '*' })) as Array<{ n: number }>)[0]!.n);
    t.equal(emails, CONTACTS, 'one email per contact');
  });

  top.test('cancelled in the middle: what went out stays out, the rest never goes', async (t) => {
    const b = await newBroadcast('Cancel');
    const ctx = app.appliance.ctx;
    await ctx.jobs.stop();
    t.equal((await app.request('POST', `/broadcasts/${b.id}/send`)).status, 200);
    await runStart(ctx, job(START_JOB, b.pk));
    await runFanout(ctx, job(FANOUT_JOB, b.pk)); // page 1
    await ctx.db('jobs').where('kind', 'like', 'broadcast.%').delete(); // the next page waits: the test runs it
    await ctx.jobs.drain(); // page 1 delivered
    t.equal(messagesOf('Cancel').length, PAGE);
    await runFanout(ctx, job(FANOUT_JOB, b.pk)); // page 2: queued, not delivered yet
    await ctx.db('jobs').where('kind', 'like', 'broadcast.%').delete();
    const cancelled = await app.request<{ broadcast: Broadcast; cancelled: number }>('POST', `/broadcasts/${b.id}/cancel`);
    t.equal(cancelled.status, 200, cancelled.text);
    t.equal(cancelled.body.broadcast.status, 'cancelled');
    t.equal(cancelled.body.cancelled, CONTACTS - PAGE, 'page 2’s emails and every recipient not handed over yet');
    await runFanout(ctx, job(FANOUT_JOB, b.pk)); // a fan-out run after the cancel does nothing
    clock.advance(60_000);
    await ctx.jobs.drain();
    t.equal(messagesOf('Cancel').length, PAGE, 'nothing more went out');
    const statuses = (await ctx.db('emails').where({ broadcast_id: b.id }).select('status').count({ n: '*' }).groupBy('status')) as Array<{ status: string; n: number }>;
    t.same(Object.fromEntries(statuses.map((s) => [s.status, Number(s.n)])), { delivered: PAGE, cancelled: PAGE });
    t.equal((await app.request<{ broadcast: Broadcast }>('GET', `/broadcasts/${b.id}`)).body.broadcast.status, 'cancelled');
    t.equal((await app.request('POST', `/broadcasts/${b.id}/cancel`)).status, 422, 'cancelled once');
  });
});
