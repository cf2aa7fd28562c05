// Kill-and-restart: an email accepted by the API is never lost, whatever point the process stops at.
// Over real sockets: the appliance, a dns2 server whose MX records point at 127.0.0.1, and a remote MX
// (smtp-server) that the test steers: it defers at RCPT, or receives a message in full and holds its
// reply to the final dot until the test says what to answer, so a delivery can be caught "in flight".
//
// What the queue promises (src/jobs/queue.ts, README "Emails"): an accepted email and its delivery job are
// committed together; a job is leased while it runs and deleted (or rescheduled) in the transaction that
// records its outcome; at start-up every lease left by a previous process is released, so a job whose
// process died mid-run is run again. Delivery is therefore at-least-once:
//   - stopped or killed before the remote MX answered the final dot: the remote never acknowledged the
//     message (it discards it when the session dies), the job runs again, the email arrives exactly once;
//   - killed after the remote's 250 but before the outcome was committed: the job runs again and the
//     message is delivered a second time. That window (between the 250 and the commit that records it) is
//     the one place a duplicate can happen; RFC 5321 §6.1 accepts duplicates over losses.
// Counting at the sink is by Message-ID, which is stable across attempts (stored with the email).
import t from 'tap';
import { rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { FakeClock, MINUTE } from '../../src/core/clock.js';
import { openDatabase, type Db } from '../../src/db/index.js';
import { newToken } from '../../src/services/platform/api-keys.js';
import { makeDataDir, request, startTestApp, TEST_HOSTNAME, type TestApp, type TestResponse } from '../helpers/app.js';
import { startDns, type TestDns } from '../helpers/dns-server.js';
import { publishRecords, type DomainView } from '../helpers/domains.js';
import { ApplianceProcess, restartableEnv, until } from '../helpers/process.js';

// The process cases start real processes (tsx compiles the sources on the fly); machines are shared.
t.setTimeout(600_000);

const SENDER = 'acme.example';
const DEST = 'dest.example';

// ---------------------------------------------------------------------------------------- the remote MX

interface Held {
  messageId: string;
  /** Answers the final dot: 250 (the message is then delivered, as far as anyone can know) or a code. */
  answer(reply?: { code: number; text: string }): boolean;
}

interface RemoteMx {
  port: number;
  /** Addresses refused at RCPT TO with 451 (a greylisting MX). */
  defer: Set<string>;
  /** Hold the reply to the final dot of every message until the test answers it. */
  hold: boolean;
  /** Messages received in full whose reply is held. */
  held: Held[];
  /** Message-ID → how many times this MX answered 250 to it. */
  acks: Map<string, number>;
  /** Messages received in full but never acknowledged (the client went away first). */
  abandoned: string[];
  deferrals: number;
  close(): Promise<void>;
}

async function startRemoteMx(): Promise<RemoteMx> {
  const sockets = new Map<number, Socket>();
  const mx: RemoteMx = { port: 0, defer: new Set(), hold: false, held: [], acks: new Map(), abandoned: [], deferrals: 0, close: async () => undefined };
  const ack = (id: string) => mx.acks.set(id, (mx.acks.get(id) ?? 0) + 1);
  const server = new SMTPServer({
    name: 'mx.dest.example',
    logger: false,
    disableReverseLookup: true,
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    onRcptTo(address, _session, callback) {
      if (mx.defer.has(address.address.toLowerCase())) {
        mx.deferrals++;
        return callback(Object.assign(new Error('4.7.1 Greylisted, try again later'), { responseCode: 451 }));
      }
      callback();
    },
    onData(stream, session, callback) {
      let header = '';
      stream.on('data', (chunk: Buffer) => {
        if (!header.includes('\r\n\r\n')) header += chunk.toString('latin1');
      });
      stream.on('end', () => {
        const messageId = /^message-id:[ \t]*(<[^>\r\n]+>)/im.exec(header)?.[1] ?? '(none)';
        if (!mx.hold) {
          ack(messageId);
          return callback(null, 'Ok: queued');
        }
        const socket = sockets.get(session.remotePort);
        let answered = false;
        const entry: Held = {
          messageId,
          answer(reply) {
            if (answered) return false;
            answered = true;
            mx.held.splice(mx.held.indexOf(entry), 1);
            // A reply can only be given on a live session; otherwise the message was never acknowledged.
            if (!socket || socket.destroyed || !socket.writable) {
              mx.abandoned.push(messageId);
              return false;
            }
            if (reply && reply.code >= 400) callback(Object.assign(new Error(reply.text), { responseCode: reply.code }));
            else {
              ack(messageId);
              callback(null, 'Ok: queued');
            }
            return true;
          },
        };
        mx.held.push(entry);
        // The client went away while the reply was held: this copy is discarded, as a real MX would.
        socket?.once('close', () => entry.answer());
      });
    },
  });
  server.server.on('connection', (socket: Socket) => {
    const p = socket.remotePort;
    if (p === undefined) return;
    sockets.set(p, socket);
    socket.once('close', () => sockets.delete(p));
  });
  server.on('error', () => undefined); // clients die mid-session on purpose here
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  mx.port = (server.server.address() as { port: number }).port;
  mx.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets.values()) s.destroy();
      server.close(() => resolve());
    });
  return mx;
}

// ------------------------------------------------------------------------------------------- helpers

type Requester = <T = Record<string, unknown>>(method: string, path: string, opts?: { body?: unknown }) => Promise<TestResponse<T>>;

async function verifyDomain(req: Requester, dns: TestDns, name: string): Promise<void> {
  const created = await req<DomainView>('POST', '/domains', { body: { name } });
  if (created.status !== 201) throw new Error(`POST /domains: ${created.status} ${created.text}`);
  publishRecords(dns, created.body);
  const verified = await req<DomainView>('POST', `/domains/${created.body.id}/verify`);
  if (verified.body.status !== 'verified') throw new Error(`${name} did not verify: ${verified.text}`);
}

async function sendAll(req: Requester, locals: string[]): Promise<Array<{ id: string; messageId: string; to: string }>> {
  const out = [];
  for (const local of locals) {
    const to = `${local}@${DEST}`;
    const res = await req<{ id: string }>('POST', '/emails', { body: { from: `news@${SENDER}`, to: [to], subject: `For ${local}`, html: `<p>Hello ${local}</p>` } });
    if (res.status !== 202) throw new Error(`POST /emails: ${res.status} ${res.text}`);
    out.push({ id: res.body.id, messageId: `<${res.body.id}@${TEST_HOSTNAME}>`, to });
  }
  return out;
}

interface Detail {
  status: string;
  recipients: Array<{ status: string }>;
}
interface Timeline {
  events: Array<{ type: string; data: Record<string, unknown> }>;
}

/** The state the store is in, read directly while no appliance runs. */
async function storeState(dataDir: string): Promise<{ db: Db; jobs: Array<{ id: number; payload: string; lease_until: number | null; attempts: number; run_at: number }>; emails: Map<string, { id: number; status: string }> }> {
  const db = await openDatabase(dataDir);
  const jobs = await db('jobs').select('id', 'payload', 'lease_until', 'attempts', 'run_at').orderBy('id');
  const rows = (await db('emails').select('id', 'public_id', 'status')) as Array<{ id: number; public_id: string; status: string }>;
  return { db, jobs, emails: new Map(rows.map((r) => [r.public_id, { id: r.id, status: r.status }])) };
}

const jobOf = <J extends { payload: string }>(jobs: J[], emailRowId: number): J | undefined =>
  jobs.find((j) => (JSON.parse(j.payload) as { emailId: number }).emailId === emailRowId);

function processEnv(dns: TestDns, mx: RemoteMx): Record<string, string> {
  return {
    MAIL_DNS_SERVERS: `${dns.server.host}:${dns.server.port}`,
    MAIL_DNS_TIMEOUT_MS: '1000',
    MAIL_RATE_LIMITS: 'off', // the test polls faster than the edge limits allow
    MAIL_OUTBOUND_PORT: String(mx.port),
    MAIL_DELIVERY_CONCURRENCY: '2',
    MAIL_CONNECTIONS_PER_HOST: '2',
  };
}

// ------------------------------------------------------------------------------------------------ tests

t.test('crash and restart', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  dns.set('MX', DEST, [{ exchange: `mx.${DEST}`, priority: 10 }]);
  dns.set('A', `mx.${DEST}`, ['127.0.0.1']);

  t.test('stopped with deliveries deferred, in flight and pending (and a lease left by a dead worker): all delivered exactly once after a restart', async (t) => {
    const mx = await startRemoteMx();
    t.teardown(() => mx.close());
    const dataDir = makeDataDir();
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const clock = new FakeClock('2026-03-01T10:00:00.000Z');
    // Two deliveries at a time, so that some are in flight while the others wait in the queue.
    const config = { dnsServers: [dns.server], outboundPort: mx.port, deliveryConcurrency: 2, connectionsPerHost: 2, bootstrapApiKey: newToken('live') };
    const first: TestApp = await startTestApp(t, { dataDir, clock, config });
    await verifyDomain(first.request, dns, SENDER);

    // The first two are greylisted (451 at RCPT); the next two get through DATA and wait for their 250;
    // the last four cannot start while two deliveries run.
    mx.defer.add(`grey1@${DEST}`).add(`grey2@${DEST}`);
    mx.hold = true;
    const sent = await sendAll(first.request, ['grey1', 'grey2', 'a', 'b', 'c', 'd', 'e', 'f']);
    await until('two greylistings and two messages in flight', () => (mx.deferrals === 2 && mx.held.length === 2 ? true : undefined));
    t.same(mx.held.map((h) => h.messageId).sort(), [sent[2]!.messageId, sent[3]!.messageId].sort(), 'the next two by queue order are in flight');

    // Stop: the worker stops taking jobs and waits for the running ones, which finish when the MX answers
    // (a graceful stop lets in-flight deliveries end and be recorded before the database closes).
    const stopping = first.appliance.ctx.jobs.stop();
    for (const h of [...mx.held]) h.answer();
    await stopping;
    await first.stop();

    const before = await storeState(dataDir);
    const statusOf = (i: number) => before.emails.get(sent[i]!.id)!.status;
    t.same(sent.map((_, i) => statusOf(i)), ['sending', 'sending', 'delivered', 'delivered', 'queued', 'queued', 'queued', 'queued'], 'stored state at the stop');
    t.equal(before.jobs.length, 6, 'six jobs left: two deferred, four never started');
    t.ok(before.jobs.every((j) => j.lease_until === null), 'a graceful stop leaves no lease');
    const grey = jobOf(before.jobs, before.emails.get(sent[0]!.id)!.id)!;
    t.equal(grey.run_at, clock.now().getTime() + MINUTE, 'a deferred job waits for its retry time');
    // Make one waiting job look as a worker that died holding it would leave it: leased far ahead, its
    // attempt counted, the email marked sending. Start-up must release that lease.
    const victim = before.emails.get(sent[4]!.id)!;
    await before.db('jobs').where({ id: jobOf(before.jobs, victim.id)!.id }).update({ lease_until: clock.now().getTime() + 10 * MINUTE, attempts: 1 });
    await before.db('emails').where({ id: victim.id }).update({ status: 'sending', attempts: 1 });
    await before.db.destroy();

    // The MX takes everything from now on. Same data dir, same key, same clock.
    mx.defer.clear();
    mx.hold = false;
    const second = await startTestApp(t, { dataDir, clock, config });
    t.equal(second.appliance.bootstrap, null, 'the restarted appliance finds its data');
    await second.appliance.ctx.jobs.drain();
    const detail = (id: string) => second.request<Detail>('GET', `/emails/${id}`).then((r) => r.body);
    t.same(await Promise.all(sent.slice(2).map((e) => detail(e.id).then((d) => d.status))), Array(6).fill('delivered'), 'the pending ones and the dead worker’s job went out at start-up');
    t.equal((await detail(sent[0]!.id)).status, 'sending', 'the deferred ones wait for their retry time');
    clock.advance(MINUTE);
    await second.appliance.ctx.jobs.drain();

    for (const e of sent) {
      const d = await detail(e.id);
      t.equal(d.status, 'delivered', `${e.to} delivered`);
      t.equal(mx.acks.get(e.messageId), 1, `${e.to} accepted by the MX exactly once`);
    }
    t.equal(mx.acks.size, sent.length, 'nothing else arrived');
    t.same(await second.appliance.ctx.jobs.stats(), { ready: 0, dead: 0, due: 0 }, 'the queue is empty');
    const greyTimeline = (await second.request<Timeline>('GET', `/emails/${sent[0]!.id}/events`)).body.events.map((e) => e.type);
    t.same(greyTimeline, ['queued', 'sending', 'sending', 'sending', 'sent', 'delivered'], 'attempt, deferral, retry after the restart, delivery');
  });

  t.test('killed (SIGKILL) with deliveries in flight before the MX answered: every email delivered exactly once after a restart', async (t) => {
    const mx = await startRemoteMx();
    t.teardown(() => mx.close());
    const { env, apiKey, dataDir } = restartableEnv(t, processEnv(dns, mx));

    const first = new ApplianceProcess(t, env);
    const port1 = await first.port();
    const req1: Requester = (m, p, o) => request(`http://127.0.0.1:${port1}`, apiKey, m, p, o);
    await verifyDomain(req1, dns, SENDER);
    mx.hold = true;
    const sent = await sendAll(req1, ['k1', 'k2', 'k3', 'k4', 'k5']);
    await until('two messages in flight', () => (mx.held.length === 2 ? true : undefined));
    const inFlight = mx.held.map((h) => h.messageId);

    t.same(await first.kill(), { code: null, signal: 'SIGKILL' }, 'killed');
    await until('the MX to see the sessions die', () => (mx.abandoned.length === 2 ? true : undefined));
    t.equal(mx.acks.size, 0, 'nothing was acknowledged by the MX');

    const after = await storeState(dataDir);
    t.equal(after.emails.size, 5, 'every accepted email is in the store');
    t.equal(after.jobs.length, 5, 'with its job');
    const leased = after.jobs.filter((j) => j.lease_until !== null);
    t.equal(leased.length, 2, 'the two in flight are still leased by the dead process');
    for (const id of inFlight) t.equal(after.emails.get(id.slice(1, id.indexOf('@')))!.status, 'sending', `${id}: the store says sending`);
    await after.db.destroy();

    mx.hold = false;
    const second = new ApplianceProcess(t, env);
    const port2 = await second.port();
    const req2: Requester = (m, p, o) => request(`http://127.0.0.1:${port2}`, apiKey, m, p, o);
    const statuses = () => Promise.all(sent.map((e) => req2<Detail>('GET', `/emails/${e.id}`).then((r) => r.body.status)));
    await until('every email delivered', async () => ((await statuses()).every((s) => s === 'delivered') ? true : undefined), 60_000);
    for (const e of sent) t.equal(mx.acks.get(e.messageId), 1, `${e.to} accepted by the MX exactly once`);
    const timeline = (await req2<Timeline>('GET', `/emails/${sent[0]!.id}/events`)).body.events.map((e) => e.type);
    t.same(timeline, ['queued', 'sending', 'sending', 'sent', 'delivered'], 'an interrupted attempt, then the attempt after the restart');
    await second.kill();
  });

  t.test('killed after the MX answered 250 but before the outcome was recorded: delivered, at least once and at most twice', async (t) => {
    const mx = await startRemoteMx();
    t.teardown(() => mx.close());
    const { env, apiKey, dataDir } = restartableEnv(t, processEnv(dns, mx));

    const first = new ApplianceProcess(t, env);
    const port1 = await first.port();
    const req1: Requester = (m, p, o) => request(`http://127.0.0.1:${port1}`, apiKey, m, p, o);
    await verifyDomain(req1, dns, SENDER);
    mx.hold = true;
    const [email] = await sendAll(req1, ['dup']);
    await until('the message in flight', () => (mx.held.length === 1 ? true : undefined));

    // Freeze the process, let the MX answer 250 (the reply sits unread in the process's socket), then
    // kill it: the MX has the message, the appliance never learnt it.
    await first.freeze();
    t.ok(mx.held[0]!.answer(), 'the MX answered 250');
    t.equal(mx.acks.get(email!.messageId), 1, 'the MX took the message');
    await first.kill();

    const after = await storeState(dataDir);
    t.equal(after.emails.get(email!.id)!.status, 'sending', 'the store still says sending');
    t.equal(after.jobs.length, 1, 'and its job is still there, leased by the dead process');
    t.not(after.jobs[0]!.lease_until, null, 'its lease is set');
    await after.db.destroy();

    mx.hold = false;
    const second = new ApplianceProcess(t, env);
    const port2 = await second.port();
    const req2: Requester = (m, p, o) => request(`http://127.0.0.1:${port2}`, apiKey, m, p, o);
    await until('delivered', async () => ((await req2<Detail>('GET', `/emails/${email!.id}`)).body.status === 'delivered' ? true : undefined), 60_000);
    const copies = mx.acks.get(email!.messageId) ?? 0;
    // At-least-once: the restarted process cannot know the MX already took it, so it sends it again.
    t.ok(copies >= 1 && copies <= 2, `delivered at least once and at most twice (${copies})`);
    t.equal(copies, 2, 'here, the duplicate the queue documents: the same Message-ID twice');
    await second.kill();
  });
});
