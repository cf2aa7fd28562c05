// Mail the box sends to addresses it serves itself is delivered without leaving it (services/inbound/local-delivery.ts):
// a mailbox's copy through the MX's own receiver (trace headers, DKIM checked), an inbound email for a domain
// whose mail goes to webhooks. Every other recipient — another domain, an address no mailbox serves — still goes
// out by MX. Here the box's domains' MX records point at a sink on MAIL_OUTBOUND_PORT: anything sent over the
// network shows up there. (Before, a mailbox writing to a colleague on the same box went to that sink; outside
// Docker, to port 25 of MAIL_HOSTNAME, where by default nothing listens.)
import t from 'tap';
import { simpleParser } from 'mailparser';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';
import { addInboundDomain, startInbound } from './support.js';

interface Detail {
  status: string;
  recipients: Array<{ email: string; status: string; message: string | null }>;
}
interface Timeline {
  events: Array<{ type: string; data: Record<string, unknown> }>;
}

t.test('local delivery', async (t) => {
  const sink = await startSmtpSink();
  t.teardown(() => sink.close());
  const { app, dns } = await startInbound(t, { outboundPort: sink.port });
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  await addVerifiedDomain(app, dns, 'corp.example');
  const store = app.appliance.ctx.mailstore;
  const mailbox = async (address: string, quotaBytes?: number) => {
    const res = await app.request<{ id: number }>('POST', '/mailboxes', { body: { address, password: 'correct horse battery', ...(quotaBytes !== undefined ? { quotaBytes } : {}) } });
    if (res.status !== 201) throw new Error(`POST /mailboxes: ${res.status} ${res.text}`);
    return res.body.id;
  };
  await mailbox('alice@corp.example');
  const bob = await mailbox('bob@corp.example');
  const inbox = async (mailboxId: number) => {
    const folder = (await store.getFolder(mailboxId, 'INBOX'))!;
    return Promise.all((await store.listMessages(folder.id)).map(async (m) => (await store.readMessage(folder.id, m.uid))!));
  };
  const send = async (to: string[], subject: string) => {
    const res = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'Alice <alice@corp.example>', to, subject, text: 'Hello from the same box' } });
    t.equal(res.status, 202, res.text);
    await app.appliance.ctx.jobs.drain();
    return res.body.id;
  };
  const detail = async (id: string) => (await app.request<Detail>('GET', `/emails/${id}`)).body;
  const timeline = async (id: string) => (await app.request<Timeline>('GET', `/emails/${id}/events`)).body.events;

  t.test('a mailbox on the box gets its copy locally; other recipients go out by MX', async (t) => {
    const id = await send(['bob@corp.example', 'ext@dest.example', 'nobody@corp.example'], 'Lunch?');
    const d = await detail(id);
    t.equal(d.status, 'delivered');
    t.same(
      d.recipients.map((r) => [r.email, r.status]),
      [
        ['bob@corp.example', 'delivered'],
        ['ext@dest.example', 'delivered'],
        ['nobody@corp.example', 'delivered'],
      ],
    );
    t.same(sink.accepted.map((x) => x.to).flat().sort(), ['ext@dest.example', 'nobody@corp.example'], 'the sink got the other two, not bob');

    const [raw] = await inbox(bob);
    t.ok(raw, "in bob's INBOX");
    const text = raw!.toString();
    t.match(text, /^Return-Path: <bounces\+em_\w+@corp\.example>\r\n/, 'the return path as the MX writes it');
    t.match(text, /Authentication-Results: mx\.appliance\.test;.*dkim=pass/s, 'our own signature checked, as for any message');
    t.equal((await simpleParser(raw!)).subject, 'Lunch?');

    const local = (await timeline(id)).find((e) => e.type === 'delivered' && e.data.via === 'local');
    t.same(local?.data.recipients, ['bob@corp.example'], 'the timeline names the local route');
    t.match(String(local?.data.response), /^2\.0\.0 Ok: delivered on this box as \w+/);
  });

  // Checked from 127.0.0.1, which no SPF record names: with its DKIM key broken in DNS, the domain's own mail
  // fails DMARC here, and under p=reject the MX's rule would have refused it.
  t.test('DMARC is recorded for a local copy but never refuses it or files it as junk', async (t) => {
    const domain = await addVerifiedDomain(app, dns, 'strict.example');
    await app.request('POST', '/mailboxes', { body: { address: 'eve@strict.example', password: 'correct horse battery' } });
    const dkim = domain.dns_records.find((r) => r.type === 'TXT' && r.name.includes('._domainkey.'))!;
    dns.set('TXT', dkim.name, ['v=DKIM1; k=rsa; p=MFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAKk3']);
    dns.set('TXT', 'strict.example', ['v=spf1 ip4:192.0.2.1 -all']);
    dns.set('TXT', '_dmarc.strict.example', ['v=DMARC1; p=reject']);
    const res = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'boss@strict.example', to: ['eve@strict.example'], subject: 'Strict', text: 'x' } });
    await app.appliance.ctx.jobs.drain();
    t.equal((await detail(res.body.id)).status, 'delivered');
    const eve = (await app.request<{ data: Array<{ id: number; address: string }> }>('GET', '/mailboxes')).body.data.find((m) => m.address === 'eve@strict.example')!;
    const [raw] = await inbox(eve.id);
    t.match(raw?.toString(), /Authentication-Results: mx\.appliance\.test;.*dmarc=fail/s, 'the verdict is in the header');
    t.equal((await store.getFolder(eve.id, 'Junk'))?.id ? (await store.listMessages((await store.getFolder(eve.id, 'Junk'))!.id)).length : 0, 0, 'not in Junk');
  });

  t.test('a domain whose inbound mail goes to webhooks gets an inbound email', async (t) => {
    await addInboundDomain(app, dns, 'hooks.example', 'webhook');
    const before = sink.accepted.length;
    const id = await send(['support@hooks.example'], 'Ticket from a colleague');
    t.equal((await detail(id)).status, 'delivered');
    t.equal(sink.accepted.length, before, 'nothing went over the network');
    const list = await app.request<{ data: Array<{ subject: string }> }>('GET', '/inbound?domain=hooks.example');
    t.ok(list.body.data.some((d) => d.subject === 'Ticket from a colleague'), 'listed under GET /inbound');
  });

  t.test('a mailbox the message would push over its quota defers the recipient (452 4.2.2), as the MX would', async (t) => {
    const tiny = await mailbox('tiny@corp.example', 3000);
    await send(['tiny@corp.example'], 'First');
    t.equal((await inbox(tiny)).length, 1, 'the first fits');
    const bobHad = (await inbox(bob)).length;
    const id = await send(['tiny@corp.example', 'bob@corp.example'], 'Second');
    const [r, other] = (await detail(id)).recipients;
    t.equal(r!.status, 'deferred');
    t.match(r!.message, /^4\.2\.2 Mailbox full/);
    t.equal((await inbox(tiny)).length, 1, 'not stored');
    t.equal(other!.status, 'delivered', 'a colleague with room is not held back');
    t.equal((await inbox(bob)).length, bobHad + 1, "bob's copy stored");
  });

  // Local delivery runs a forward ring at the queue's speed; before, each forward named only its own mailbox in
  // X-Forwarded-By, so A→B→A went round for ever (each turn wrapping the last one as an attachment).
  t.test('a ring of filter forwards (carol → dave → carol) stops where it began', async (t) => {
    const carol = await mailbox('carol@corp.example');
    const dave = await mailbox('dave@corp.example');
    const forwardTo = (to: string) => ({ rules: [{ conditions: [{ field: 'subject', op: 'contains', value: 'ring' }], actions: [{ type: 'forward', to }] }] });
    t.equal((await app.request('PUT', `/mailboxes/${carol}/filters`, { body: forwardTo('dave@corp.example') })).status, 200);
    t.equal((await app.request('PUT', `/mailboxes/${dave}/filters`, { body: forwardTo('carol@corp.example') })).status, 200);
    const res = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'alice@corp.example', to: ['carol@corp.example'], subject: 'ring', text: 'round and round' } });
    t.equal(res.status, 202);
    const drained = await Promise.race([app.appliance.ctx.jobs.drain(), new Promise<'looping'>((r) => setTimeout(() => r('looping'), 20_000).unref())]);
    t.not(drained, 'looping', 'the queue comes to rest');
    const subjects = async (id: number) => Promise.all((await inbox(id)).map(async (raw) => (await simpleParser(raw)).subject));
    t.same(await subjects(carol), ['ring', 'Fwd: ring'], 'carol: the original, and dave’s forward (not forwarded again)');
    t.same(await subjects(dave), ['Fwd: ring'], 'dave: carol’s forward');
    const [back] = (await inbox(carol)).slice(1);
    t.match(back!.toString(), /\r\nX-Forwarded-By: carol@corp\.example, dave@corp\.example\r\n/, 'the chain so far');
  });

  // Dropping the oldest entries of a chain too long for its header would drop the mailbox that began the ring.
  t.test('a ring too long for X-Forwarded-By stops where the chain no longer fits', async (t) => {
    const long = `${'d'.repeat(60)}.example`;
    await addVerifiedDomain(app, dns, long);
    const addr = (i: number) => `${String(i).padStart(2, '0')}${'m'.repeat(54)}@${long}`; // 125 characters
    const ids: number[] = [];
    for (let i = 0; i < 8; i++) ids.push(await mailbox(addr(i)));
    for (let i = 0; i < 8; i++) {
      const body = { rules: [{ conditions: [{ field: 'subject', op: 'contains', value: 'long ring' }], actions: [{ type: 'forward', to: addr((i + 1) % 8) }] }] };
      t.equal((await app.request('PUT', `/mailboxes/${ids[i]}/filters`, { body })).status, 200);
    }
    const res = await app.request('POST', '/emails', { body: { from: 'alice@corp.example', to: [addr(0)], subject: 'long ring', text: 'round' } });
    t.equal(res.status, 202);
    const drained = await Promise.race([app.appliance.ctx.jobs.drain(), new Promise<'looping'>((r) => setTimeout(() => r('looping'), 20_000).unref())]);
    t.not(drained, 'looping', 'the queue comes to rest');
    // 00 … 06 forward (a chain of 7 × 125 characters and separators fits in 1,000); 07's chain of 8 would not.
    t.equal((await inbox(ids[7]!)).length, 1, 'the last mailbox got the forward');
    t.equal((await inbox(ids[0]!)).length, 1, 'and did not forward it on: the first mailbox has only the original');
  });

  t.test('a domain added but not verified is not taken for local: its mail goes out by MX', async (t) => {
    const created = await app.request<{ id: string }>('POST', '/domains', { body: { name: 'claimed.example' } });
    t.equal(created.status, 201);
    dns.set('MX', 'claimed.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
    const before = sink.accepted.length;
    const id = await send(['someone@claimed.example'], 'Not yours');
    t.equal((await detail(id)).status, 'delivered');
    t.same(sink.accepted.slice(before).map((x) => x.to), [['someone@claimed.example']]);
  });
});
