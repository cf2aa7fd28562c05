// End to end: POST /emails with a live key → the job queue → the MTA → a real SMTP server found through
// a real (loopback) DNS server, DKIM-verified by mailauth the way a receiver would.
import t from 'tap';
import { simpleParser } from 'mailparser';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { HOUR, MINUTE } from '../../src/core/clock.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

interface Detail {
  status: string;
  recipients: Array<{ email: string; status: string; code: string | null; bounce_category: string | null }>;
}
interface Timeline {
  events: Array<{ type: string; data: Record<string, unknown> }>;
}
interface EventPage {
  data: Array<{ type: string; data: Record<string, unknown> }>;
}

t.test('live sending to a remote MX', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: true });
  t.teardown(() => sink.close());
  const app: TestApp = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port } });
  await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);

  const send = (body: Record<string, unknown>) => app.request<{ id: string }>('POST', '/emails', { body });
  const drain = () => app.appliance.ctx.jobs.drain();
  const detail = (id: string) => app.request<Detail>('GET', `/emails/${id}`).then((r) => r.body);
  const timeline = (id: string) => app.request<Timeline>('GET', `/emails/${id}/events`).then((r) => r.body.events);
  const events = async (id: string) =>
    (await app.request<EventPage>('GET', '/events?per_page=100')).body.data.filter((e) => e.data.email_id === id);

  t.test('delivered, DKIM-signed, with its attachment and headers intact', async (t) => {
    const res = await send({
      from: 'Acme Billing <billing@acme.example>',
      to: ['alice@dest.example', 'Bob <bob@dest.example>'],
      cc: ['carol@dest.example'],
      bcc: ['dave@dest.example'],
      reply_to: 'support@acme.example',
      subject: 'Your invoice — März',
      html: '<h1>Invoice</h1><p>Total: 42 €</p>',
      headers: { 'X-Entity-Ref': 'inv-42' },
      tags: ['billing'],
      attachments: [{ filename: 'invoice.pdf', content: Buffer.from('%PDF-1.4 fake').toString('base64') }],
    });
    t.equal(res.status, 202);
    await drain();
    t.equal(sink.accepted.length, 1, 'one SMTP transaction for the four recipients at one domain');
    const tx = sink.accepted[0]!;
    t.equal(tx.from, `bounces+${res.body.id}@acme.example`, 'return path names the email');
    t.same([...tx.to].sort(), ['alice@dest.example', 'bob@dest.example', 'carol@dest.example', 'dave@dest.example']);
    t.equal(tx.tls, true, 'STARTTLS used when offered');
    t.equal(tx.helo, 'mx.appliance.test');

    const parsed = await simpleParser(tx.raw);
    t.equal(parsed.subject, 'Your invoice — März');
    t.match(parsed.text, /Total: 42 €/);
    t.match(parsed.html, /<h1>Invoice<\/h1>/);
    t.equal(parsed.from?.value[0]?.address, 'billing@acme.example');
    t.equal(parsed.from?.value[0]?.name, 'Acme Billing');
    t.equal(parsed.messageId, `<${res.body.id}@mx.appliance.test>`);
    t.equal(parsed.headers.get('x-entity-ref'), 'inv-42');
    t.notOk(parsed.headers.has('bcc'), 'Bcc is not disclosed');
    t.equal(parsed.attachments[0]?.filename, 'invoice.pdf');
    t.equal(parsed.attachments[0]?.contentType, 'application/pdf');
    t.equal(parsed.attachments[0]?.content.toString(), '%PDF-1.4 fake');

    const verification = await dkimVerify(tx.raw, { resolver: (name: string, rr: string) => app.appliance.ctx.dns.raw(name, rr) as Promise<string[][]> });
    t.equal(verification.results.length, 1);
    t.equal(verification.results[0]?.status.result, 'pass', 'mailauth verifies the DKIM signature');
    t.equal(verification.results[0]?.signingDomain, 'acme.example');

    const d = await detail(res.body.id);
    t.equal(d.status, 'delivered');
    t.ok(d.recipients.every((r) => r.status === 'delivered' && r.code?.startsWith('2')));
    const types = (await timeline(res.body.id)).map((e) => e.type);
    t.same(types, ['queued', 'sending', 'sent', 'delivered']);
    const delivered = (await timeline(res.body.id)).find((e) => e.type === 'delivered')!;
    t.match(delivered.data, { via: 'direct', tls: true, host: 'mx.dest.example' });
    t.same((await events(res.body.id)).map((e) => e.type).sort(), ['email.delivered', 'email.sent']);
  });

  t.test('a 5xx for one recipient bounces it, suppresses it, and delivers the others', async (t) => {
    sink.recipients.set('ghost@dest.example', { code: 550, text: '5.1.1 <ghost@dest.example>: Recipient address rejected: User unknown' });
    t.teardown(() => sink.recipients.clear());
    const res = await send({ from: 'hello@acme.example', to: ['ghost@dest.example', 'erin@dest.example'], subject: 'Hi', text: 'Hello' });
    await drain();
    const d = await detail(res.body.id);
    t.equal(d.status, 'delivered');
    const ghost = d.recipients.find((r) => r.email === 'ghost@dest.example')!;
    t.match(ghost, { status: 'bounced', code: '5.1.1', bounce_category: 'invalid_mailbox' });
    const bounce = (await events(res.body.id)).find((e) => e.type === 'email.bounced')!;
    t.match(bounce.data, { bounce_code: '5.1.1', bounce_category: 'invalid_mailbox', bounce_message: /User unknown/, recipient: 'ghost@dest.example' });
    const again = await send({ from: 'hello@acme.example', to: ['ghost@dest.example'], subject: 'Again', text: 'Hello' });
    await drain();
    t.equal((await detail(again.body.id)).status, 'failed', 'suppressed after the hard bounce');
    // One suppressed recipient beside another: the timeline says who gets nothing and why.
    const some = await send({ from: 'hello@acme.example', to: ['ghost@dest.example', 'erin@dest.example'], subject: 'Some', text: 'Hello' });
    await drain();
    t.equal((await detail(some.body.id)).status, 'delivered');
    const steps = await timeline(some.body.id);
    t.match(steps.find((e) => e.type === 'failed'), { data: { recipient: 'ghost@dest.example', reason: 'on the suppression list' } });
    t.match(steps.find((e) => e.type === 'delivered'), { data: { recipients: ['erin@dest.example'] } });
    t.match((await events(some.body.id)).find((e) => e.type === 'email.suppressed'), { data: { suppressed: ['ghost@dest.example'] } });
  });

  t.test('a 4xx defers, retries on the schedule, then delivers', async (t) => {
    sink.message = { code: 451, text: '4.7.1 Greylisted, try again later' };
    const before = sink.accepted.length;
    const res = await send({ from: 'hello@acme.example', to: ['frank@dest.example'], subject: 'Grey', text: 'x' });
    await drain();
    let d = await detail(res.body.id);
    t.equal(d.status, 'sending');
    t.equal(d.recipients[0]!.status, 'deferred');
    const evs = (await events(res.body.id)).map((e) => e.type);
    t.ok(evs.includes('email.soft_bounced'));
    t.ok(evs.includes('email.delivery_delayed'));
    sink.message = null;
    app.clock.advance(MINUTE - 1);
    await drain();
    t.equal(sink.accepted.length, before, 'not before the first retry is due');
    app.clock.advance(1);
    await drain();
    d = await detail(res.body.id);
    t.equal(d.status, 'delivered');
    t.equal(sink.accepted.length, before + 1);
  });

  t.test('a recipient deferred for 48 hours fails; the schedule is 1 min, 5 min, 15 min, … 8 h', async (t) => {
    sink.recipients.set('slow@dest.example', { code: 452, text: '4.2.2 Mailbox full, try later' });
    t.teardown(() => sink.recipients.clear());
    const res = await send({ from: 'hello@acme.example', to: ['slow@dest.example'], subject: 'Never', text: 'x' });
    await drain();
    const waits: number[] = [];
    for (let i = 0; i < 30; i++) {
      const d = await detail(res.body.id);
      if (d.status !== 'sending') break;
      const last = (await timeline(res.body.id)).filter((e) => e.type === 'sending' && e.data.next_attempt_at).pop()!;
      const wait = new Date(last.data.next_attempt_at as string).getTime() - app.clock.now().getTime();
      waits.push(wait / MINUTE);
      app.clock.advance(wait);
      await drain();
    }
    t.same(waits.slice(0, 8), [1, 5, 15, 30, 60, 120, 240, 480], 'retry waits in minutes');
    const d = await detail(res.body.id);
    t.equal(d.status, 'failed');
    t.match(d.recipients[0], { status: 'failed', code: '4.2.2', bounce_category: 'mailbox_full' });
    const evs = await events(res.body.id);
    t.equal(evs.filter((e) => e.type === 'email.delivery_delayed').length, 1, 'delivery_delayed only once');
    t.ok(evs.find((e) => e.type === 'email.failed'));
    const types = (await timeline(res.body.id)).map((e) => e.type);
    t.equal(types[types.length - 1], 'failed');
  });

  t.test('a domain that does not resolve is retried, then fails when the retries run out', async (t) => {
    const res = await send({ from: 'hello@acme.example', to: ['someone@no-such-domain.example'], subject: 'Typo', text: 'x' });
    await drain();
    let d = await detail(res.body.id);
    t.equal(d.status, 'sending', 'not bounced at once: DNS may be on its way');
    t.match(d.recipients[0], { status: 'deferred', code: '4.4.4', bounce_category: 'dns_failure' });
    t.match((await events(res.body.id)).find((e) => e.type === 'email.soft_bounced'), { data: { bounce_message: /no-such-domain\.example has no MX or address records/ } });
    for (let i = 0; i < 30 && d.status === 'sending'; i++) {
      app.clock.advance(8 * HOUR);
      await drain();
      d = await detail(res.body.id);
    }
    t.equal(d.status, 'failed');
    t.match((await timeline(res.body.id)).at(-1), { type: 'failed', data: { recipient: 'someone@no-such-domain.example', reason: 'retries exhausted' } });
  });

  t.test('enforced TLS refuses a server without STARTTLS', async (t) => {
    const plain = await startSmtpSink({ starttls: false, host: '127.0.0.2', port: sink.port }).catch(() => null);
    if (!plain) {
      t.comment('127.0.0.2 is not bindable on this host: skipped');
      return;
    }
    t.teardown(() => plain.close());
    dns.set('MX', 'plain.example', [{ exchange: 'mx.plain.example', priority: 10 }]);
    dns.set('A', 'mx.plain.example', ['127.0.0.2']);
    const dom = await addVerifiedDomain(app, dns, 'strict.example');
    await app.request('PATCH', `/domains/${dom.id}`, { body: { tls_mode: 'enforced' } });
    const res = await send({ from: 'a@strict.example', to: ['x@plain.example'], subject: 'TLS', text: 'x' });
    await drain();
    const d = await detail(res.body.id);
    t.equal(d.status, 'sending');
    t.equal(d.recipients[0]!.status, 'deferred');
    t.equal(plain.transactions.length, 0, 'nothing sent in the clear');
    const soft = (await events(res.body.id)).find((e) => e.type === 'email.soft_bounced')!;
    t.match(soft.data.bounce_message, /TLS|STARTTLS/);
  });
});

// A server's recipient limit (Postfix's smtpd_recipient_limit, 452 4.5.3): the recipients go in as many
// transactions as it takes, at once, and the timeline has one sent/delivered entry per server reply.
t.test('a recipient limit of 2: five recipients in three transactions, each recorded with its own reply', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false, recipientLimit: 2 });
  t.teardown(() => sink.close());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port } });
  await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);

  const to = ['a', 'b', 'c', 'd', 'e'].map((l) => `${l}@dest.example`);
  const res = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'hello@acme.example', to, subject: 'Many', text: 'Hello' } });
  t.equal(res.status, 202);
  await app.appliance.ctx.jobs.drain();
  t.same(sink.accepted.map((tx) => tx.to), [to.slice(0, 2), to.slice(2, 4), to.slice(4)]);
  const detail = (await app.request<Detail>('GET', `/emails/${res.body.id}`)).body;
  t.equal(detail.status, 'delivered');
  t.ok(detail.recipients.every((r) => r.status === 'delivered'), 'every recipient delivered in the first attempt');
  const delivered = (await app.request<Timeline>('GET', `/emails/${res.body.id}/events`)).body.events.filter((e) => e.type === 'delivered');
  t.same(
    delivered.map((e) => [e.data.recipients, e.data.response]),
    [
      [to.slice(0, 2), '250 Ok: queued as Q1'],
      [to.slice(2, 4), '250 Ok: queued as Q2'],
      [to.slice(4), '250 Ok: queued as Q3'],
    ],
  );
  t.notOk((await app.request<Timeline>('GET', `/emails/${res.body.id}/events`)).body.events.some((e) => e.type === 'delivery_delayed'), 'no delay');
});
