// Broadcasts end to end over real sockets: the API, the job queue on a fake clock, the send path, the MTA and
// a remote MX (the sink) found through a loopback DNS server; every received message parsed and checked
// (personalisation, unsubscribe headers, DKIM verified by mailauth); opens and clicks are the received
// messages' own pixel and link URLs, fetched over HTTP as a mail client does.
import t from 'tap';
import { simpleParser, type ParsedMail } from 'mailparser';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { MINUTE } from '../../src/core/clock.js';
import { createOtherTeam, startTestApp, type TestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink, type SinkTransaction } from '../helpers/smtp-sink.js';
import { freePort, trackingUrls, UA } from '../tracking/support.js';
import { headerOf, unsubscribeTargets } from '../audience/unsubscribe-support.js';

interface Broadcast {
  id: string;
  status: string;
  recipients: number;
  winner: string | null;
  test_ends_at: string | null;
  failure: string | null;
  resend_of: string | null;
}
interface Contact {
  id: string;
  email: string;
}

t.setTimeout(240_000);

t.test('broadcasts', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: true });
  t.teardown(() => sink.close());
  // The box's public URL is its own API listener: the tracking URLs in a received message are fetched as they are.
  const port = await freePort();
  const app: TestApp = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port, apiPort: port, publicUrl: `http://127.0.0.1:${port}` } });
  const domain = await addVerifiedDomain(app, dns, 'acme.example');
  t.equal((await app.request('PATCH', `/domains/${domain.id}`, { body: { open_tracking: true, click_tracking: true } })).status, 200);
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const drain = () => app.appliance.ctx.jobs.drain();
  /** Runs the jobs until the broadcast settles (a settle check waits a second of the clock for deliveries). */
  const settle = async (id: string) => {
    for (let i = 0; i < 20; i++) {
      await drain();
      const b = (await app.request<{ broadcast: Broadcast }>('GET', `/broadcasts/${id}`)).body.broadcast;
      if (!['sending', 'testing'].includes(b.status)) return b;
      app.clock.advance(1_000);
    }
    throw new Error(`broadcast ${id} did not settle`);
  };

  // The audience: 300 contacts in a segment, with a property; some who must not get marketing mail.
  t.equal((await app.request('POST', '/contact-properties', { body: { name: 'plan', type: 'string' } })).status, 201);
  const seg = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'Customers' } })).body.segment.id;
  const lines = ['email,first_name,plan,unsubscribed'];
  for (let i = 0; i < 300; i++) lines.push(`person${i}@dest.example,Name${i},${i % 2 ? 'pro' : 'free'},${i < 5 ? 'true' : 'false'}`);
  const imported = await app.request('POST', '/contacts/import', { body: { csv: lines.join('\n'), segment_id: seg } });
  t.equal(imported.status, 200, imported.text);
  // A second segment overlapping the first: each contact still gets one message.
  const seg2 = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'Pro' } })).body.segment.id;
  const contacts = (await app.request<{ data: Contact[] }>('GET', `/segments/${seg}/members?per_page=100`)).body.data;
  t.equal((await app.request('POST', `/segments/${seg2}/contacts`, { body: { contact_ids: contacts.slice(5, 40).map((c) => c.id) } })).status, 200);
  // Suppressed addresses are left out.
  for (const n of [10, 11]) t.equal((await app.request('POST', '/suppressions', { body: { email: `person${n}@dest.example`, reason: 'manual' } })).status, 201);
  const expected = 300 - 5 - 2;

  let firstId = '';
  t.test('CRUD and validation', async (t) => {
    const bad = await app.request('POST', '/broadcasts', { body: { name: 'x', from: 'news@acme.example', subject: 's' } });
    t.equal(bad.status, 400);
    t.match(bad.body, { code: 'invalid_request', error: /html/ });
    const oneVariant = await app.request('POST', '/broadcasts', {
      body: { name: 'x', from: 'news@acme.example', subject: 's', html: '<p>x</p>', segment_ids: [seg], ab_test: { variants: [{ name: 'A', subject: 'a', weight: 1 }], test_duration_minutes: 10 } },
    });
    t.equal(oneVariant.status, 400);
    const short = await app.request('POST', '/broadcasts', {
      body: { name: 'x', from: 'news@acme.example', subject: 's', html: '<p>x</p>', ab_test: { variants: [{ name: 'A', subject: 'a', weight: 1 }, { name: 'B', subject: 'b', weight: 1 }], test_duration_minutes: 4 } },
    });
    t.equal(short.status, 400);
    t.match(short.body.error, /test_duration_minutes/);
    const badTag = await app.request('POST', '/broadcasts', { body: { name: 'x', from: 'news@acme.example', subject: '{{ oops', html: '<p>x</p>' } });
    t.equal(badTag.status, 400, 'a merge-tag syntax error is refused at create');
    const unknownSeg = await app.request('POST', '/broadcasts', { body: { name: 'x', from: 'news@acme.example', subject: 's', html: 'x', segment_ids: ['seg_nope'] } });
    t.equal(unknownSeg.status, 422);

    const created = await app.request<{ broadcast: Broadcast }>('POST', '/broadcasts', {
      body: {
        name: 'March newsletter',
        from: 'Acme News <news@acme.example>',
        reply_to: 'support@acme.example',
        subject: 'Hello {{ contact.first_name }}',
        html: '<p>Hi {{ contact.first_name | default: "there" }}, your plan: {{ contact.plan }}.</p><p><a href="https://shop.acme.example/spring?plan={{ contact.plan }}">Spring sale</a></p><p><a href="{{ unsubscribe_url }}">Unsubscribe</a></p>',
        tags: ['newsletter'],
        segment_ids: [seg, seg2],
      },
    });
    t.equal(created.status, 201, created.text);
    t.equal(created.body.broadcast.status, 'draft');
    firstId = created.body.broadcast.id;
    t.match(firstId, /^bc_/);
    const patched = await app.request<{ broadcast: { name: string } }>('PATCH', `/broadcasts/${firstId}`, { body: { name: 'March newsletter!' } });
    t.equal(patched.body.broadcast.name, 'March newsletter!');
    const list = await app.request<{ data: Broadcast[]; meta: { total: number } }>('GET', '/broadcasts?search=march&status=draft');
    t.equal(list.body.meta.total, 1);
    t.equal((await app.request('GET', '/broadcasts?status=nope')).status, 400);
    const bySegment = await app.request<{ broadcasts: Broadcast[] }>('GET', `/segments/${seg2}/broadcasts`);
    t.same(bySegment.body.broadcasts.map((b) => b.id), [firstId]);
    // A draft can be deleted; nothing else can.
    const scrap = await app.request<{ broadcast: Broadcast }>('POST', '/broadcasts', { body: { name: 'scrap', from: 'news@acme.example', subject: 's', html: 'x' } });
    t.equal((await app.request('DELETE', `/broadcasts/${scrap.body.broadcast.id}`)).status, 200);
    t.equal((await app.request('GET', `/broadcasts/${scrap.body.broadcast.id}`)).status, 404);
    const noAudience = await app.request<{ broadcast: Broadcast }>('POST', '/broadcasts', { body: { name: 'n', from: 'news@acme.example', subject: 's', html: 'x' } });
    const refused = await app.request('POST', `/broadcasts/${noAudience.body.broadcast.id}/send`);
    t.equal(refused.status, 422);
    t.match(refused.body, { error: /audience/ });
  });

  t.test('/test sends to the given addresses only', async (t) => {
    const before = sink.accepted.length;
    const res = await app.request<{ data: Array<{ id: string; email: string }> }>('POST', `/broadcasts/${firstId}/test`, { body: { to: ['person20@dest.example', 'outsider@dest.example'] } });
    t.equal(res.status, 200, res.text);
    await drain();
    t.equal(sink.accepted.length, before + 2);
    const mine = await simpleParser(sink.accepted.find((tx) => tx.to.includes('person20@dest.example'))!.raw);
    t.equal(mine.subject, 'Hello Name20', 'a contact gets its own merge tags');
    const theirs = await simpleParser(sink.accepted.find((tx) => tx.to.includes('outsider@dest.example'))!.raw);
    t.equal(theirs.subject, 'Hello');
    t.match(theirs.html, /Hi there/);
    t.equal((await app.request<{ broadcast: Broadcast }>('GET', `/broadcasts/${firstId}`)).body.broadcast.status, 'draft', 'the broadcast is untouched');
  });

  const byContact = new Map<string, ParsedMail>();
  let sample: SinkTransaction | undefined;
  t.test('send: every marketable contact gets one personalised, signed message with one-click unsubscribe', async (t) => {
    const before = sink.accepted.length;
    const sent = await app.request<{ broadcast: Broadcast }>('POST', `/broadcasts/${firstId}/send`);
    t.equal(sent.status, 200, sent.text);
    t.equal(sent.body.broadcast.status, 'sending');
    const done = await settle(firstId);
    t.equal(done.status, 'sent');
    t.equal(done.recipients, expected, 'audience frozen: segment members ∪, less unsubscribed and suppressed');
    const mine = sink.accepted.slice(before);
    t.equal(mine.length, expected);
    const to = mine.flatMap((tx) => tx.to);
    t.equal(new Set(to).size, expected, 'each contact exactly once');
    for (const n of [0, 4, 10, 11]) t.notOk(to.includes(`person${n}@dest.example`), `person${n} left out`);
    for (const tx of mine) {
      const parsed = await simpleParser(tx.raw);
      byContact.set(tx.to[0]!, parsed);
    }
    const p = byContact.get('person21@dest.example')!;
    t.equal(p.subject, 'Hello Name21');
    t.match(p.html, /Hi Name21, your plan: pro\./);
    t.equal(p.replyTo?.value[0]?.address, 'support@acme.example');
    const raw21 = mine.find((tx) => tx.to[0] === 'person21@dest.example')!.raw;
    const targets = unsubscribeTargets(headerOf(raw21, 'List-Unsubscribe')!);
    t.match(targets.url, /\/unsubscribe\/[a-z0-9]+$/);
    t.match(targets.mailto, /^unsub-[a-z0-9]+@mx\.appliance\.test$/);
    t.equal(headerOf(raw21, 'List-Unsubscribe-Post'), 'List-Unsubscribe=One-Click');
    const link = /href="([^"]+\/unsubscribe\/[a-z0-9]+)"/.exec(String(p.html))?.[1];
    t.ok(link, 'the body carries the contact’s unsubscribe_url');
    t.match(byContact.get('person22@dest.example')!.html, /your plan: free\./);
    // person250 follows the one-click link of their message (RFC 8058): unsubscribed, counted by the analytics.
    const raw250 = mine.find((tx) => tx.to[0] === 'person250@dest.example')!.raw;
    const oneClick = await fetch(app.url + new URL(unsubscribeTargets(headerOf(raw250, 'List-Unsubscribe')!).url).pathname, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
      redirect: 'manual',
    });
    t.ok(oneClick.status < 300, `one-click answered ${oneClick.status}`);
    sample = mine.find((tx) => tx.to[0] === 'person21@dest.example');
    for (const tx of mine.slice(0, 3).concat(sample ? [sample] : [])) {
      const v = await dkimVerify(tx.raw, { resolver: (name: string, rr: string) => app.appliance.ctx.dns.raw(name, rr) as Promise<string[][]> });
      t.equal(v.results[0]?.status.result, 'pass', 'DKIM verifies');
    }
    // Its recipients were sent mail: the engagement segments see them (none has opened anything yet).
    const never = await app.request<{ meta: { total: number } }>('GET', '/contacts?engagement_segment=never_opened&per_page=1');
    t.equal(never.body.meta.total, expected);
    // Each recipient is an ordinary email, naming the broadcast.
    const emails = await app.request<{ data: Array<{ publicId: string; tags: string[] }>; meta: { total: number } }>('GET', '/emails?tag=newsletter&per_page=100');
    t.ok(emails.body.meta.total >= expected);
    const one = await app.request<{ broadcast_id: string; status: string }>('GET', `/emails/${emails.body.data[0]!.publicId}`);
    t.equal(one.body.broadcast_id, firstId);
    t.equal(one.body.status, 'delivered');
    const events = await app.request<{ data: Array<{ type: string; data: Record<string, unknown> }> }>('GET', '/events?per_page=100');
    const ev = events.body.data.find((e) => e.type === 'broadcast.sent');
    t.match(ev?.data, { broadcast_id: firstId, recipients: expected, sent: expected, failed: 0 });
    // Sent: no longer editable, deletable or sendable.
    t.equal((await app.request('PATCH', `/broadcasts/${firstId}`, { body: { name: 'y' } })).status, 422);
    t.equal((await app.request('DELETE', `/broadcasts/${firstId}`)).status, 422);
    t.equal((await app.request('POST', `/broadcasts/${firstId}/send`)).status, 422);
    t.equal((await app.request('POST', `/broadcasts/${firstId}/cancel`)).status, 422);
  });

  /** A mail client (or an image proxy) fetching a URL of a received message. */
  const hit = async (url: string, ua: string) => {
    const res = await fetch(url, { headers: { 'user-agent': ua }, redirect: 'manual' });
    await res.arrayBuffer();
    return res;
  };
  const urlsOf = (mail: ParsedMail) => trackingUrls(typeof mail.html === 'string' ? mail.html : '');

  t.test('analytics: opens and clicks fetched from the received messages, non-openers, performance, resend', async (t) => {
    const emails = (await app.appliance.ctx.db('emails').where({ broadcast_id: firstId }).orderBy('id').select('public_id', 'to_addrs')).map((e: { public_id: string; to_addrs: string }) => ({
      public_id: e.public_id,
      mail: byContact.get(JSON.parse(e.to_addrs)[0])!,
    }));
    t.equal(emails.length, expected);
    const first = urlsOf(emails[0]!.mail);
    t.equal(first.pixel.length, 1, 'one open pixel');
    t.equal(first.links.length, 1, 'the sale link is rewritten; the unsubscribe link is not');
    t.match(String(emails[0]!.mail.html), /\/unsubscribe\/[a-z0-9]+"/);
    // 30 people open (10 of them also click the sale link), one of them twice; Apple Mail Privacy Protection
    // fetches 5 more messages' images (machine opens): 30 unique opens.
    for (const e of emails.slice(0, 30)) {
      const res = await hit(urlsOf(e.mail).pixel[0]!, UA.appleMailIphone);
      t.equal(res.headers.get('content-type'), 'image/gif');
    }
    await hit(first.pixel[0]!, UA.chromeWindows);
    for (const e of emails.slice(30, 35)) await hit(urlsOf(e.mail).pixel[0]!, UA.appleMpp);
    for (const e of emails.slice(0, 10)) {
      const res = await hit(urlsOf(e.mail).links[0]!, UA.chromeWindows);
      t.equal(res.status, 302);
      t.equal(res.headers.get('location'), `https://shop.acme.example/spring?plan=${/your plan: (\w+)/.exec(String(e.mail.html))![1]}`, 'the click goes on to its own link');
    }
    // The first email's timeline and the team's events record the hits.
    const timeline = await app.request<{ events: Array<{ type: string; data: Record<string, unknown> }> }>('GET', `/emails/${emails[0]!.public_id}/events`);
    t.same(timeline.body.events.filter((e) => e.type === 'opened' || e.type === 'clicked').map((e) => e.type), ['opened', 'opened', 'clicked']);
    t.match(timeline.body.events.find((e) => e.type === 'clicked')?.data, { link: 0, url: /^https:\/\/shop\.acme\.example\/spring\?plan=/, machine: false });
    const opened = await app.request<{ data: Array<{ data: { email_id: string; first: boolean; machine: boolean } }> }>('GET', '/events?type=email.opened&per_page=100');
    t.equal(opened.body.data.length, 36, 'email.opened on every hit');
    t.equal(opened.body.data.filter((e) => e.data.first && !e.data.machine).length, 30);
    t.equal(opened.body.data.filter((e) => e.data.machine).length, 5);
    const clicked = await app.request<{ data: Array<{ data: { email_id: string } }> }>('GET', '/events?type=email.clicked&per_page=100');
    t.same(new Set(clicked.body.data.map((e) => e.data.email_id)), new Set(emails.slice(0, 10).map((e) => e.public_id)));
    const perf = await app.request<{ metric: string; since: string; broadcasts: Array<Record<string, number | string>> }>('GET', '/broadcasts/performance?limit=5');
    t.equal(perf.status, 200, perf.text);
    t.equal(perf.body.metric, 'open_rate');
    const mine = perf.body.broadcasts.find((b) => b.id === firstId)!;
    t.match(mine, { recipients: expected, sent: expected, delivered: expected, bounced: 0, complained: 0, unsubscribed: 1, unique_opens: 30, unique_clicks: 10 });
    t.equal(mine.open_rate, Math.round((30 / expected) * 10_000) / 10_000);
    t.equal((await app.request('GET', '/broadcasts/performance?limit=101')).status, 400);

    const non = await app.request<{ broadcast: string; count: number; contacts: Contact[] }>('GET', `/broadcasts/${firstId}/non-openers?limit=10`);
    t.equal(non.status, 200);
    t.equal(non.body.broadcast, firstId);
    t.equal(non.body.count, expected - 30, 'machine opens do not count as opens');
    t.equal(non.body.contacts.length, 10);
    const nonClickers = await app.request<{ count: number }>('GET', `/broadcasts/${firstId}/non-clickers`);
    t.equal(nonClickers.body.count, expected - 10);
    t.equal((await app.request('GET', `/broadcasts/${firstId}/non-openers?limit=5001`)).status, 400);

    // Resend to the non-openers: a new broadcast, only to them, and one of them has left meanwhile.
    const leaver = non.body.contacts[0]!;
    t.equal((await app.request('PATCH', `/contacts/${leaver.id}`, { body: { unsubscribed: true } })).status, 200);
    const before = sink.accepted.length;
    const re = await app.request<{ broadcast: Broadcast }>('POST', `/broadcasts/${firstId}/resend`, { body: { to: 'non_openers', subject: 'Did you miss this, {{ contact.first_name }}?' } });
    t.equal(re.status, 201, re.text);
    t.equal(re.body.broadcast.resend_of, firstId);
    const done = await settle(re.body.broadcast.id);
    t.equal(done.status, 'sent');
    t.equal(done.recipients, expected - 30 - 2, 'non-openers less the two who left');
    const got = sink.accepted.slice(before).map((tx) => tx.to[0]!);
    t.equal(got.length, expected - 30 - 2);
    t.notOk(got.includes('person250@dest.example'));
    t.notOk(got.includes(leaver.email), 'a contact who unsubscribed since is left out');
    const openers = new Set((await app.appliance.ctx.db('emails').whereIn('public_id', emails.slice(0, 30).map((e) => e.public_id)).select('to_addrs')).map((r: { to_addrs: string }) => JSON.parse(r.to_addrs)[0]));
    t.notOk(got.some((a) => openers.has(a)), 'openers are not sent it again');
  });

  t.test('A/B test: split by weight, winner by open rate when the clock passes the test duration', async (t) => {
    const abSeg = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'AB' } })).body.segment.id;
    const members = contacts.slice(40, 100); // 60 contacts, all marketable
    t.equal((await app.request('POST', `/segments/${abSeg}/contacts`, { body: { contact_ids: members.map((c) => c.id) } })).status, 200);
    const created = await app.request<{ broadcast: Broadcast }>('POST', '/broadcasts', {
      body: {
        name: 'AB',
        from: 'news@acme.example',
        subject: 'base',
        html: '<p>Hello {{ contact.first_name }}</p>',
        segment_ids: [abSeg],
        ab_test: {
          test_duration_minutes: 30,
          test_percentage: 50,
          variants: [
            { name: 'A', subject: 'Variant A for {{ contact.first_name }}', weight: 1 },
            { name: 'B', subject: 'Variant B for {{ contact.first_name }}', weight: 2, html: '<p>B says hi {{ contact.first_name }}</p>' },
          ],
        },
      },
    });
    t.equal(created.status, 201, created.text);
    const id = created.body.broadcast.id;
    const before = sink.accepted.length;
    t.equal((await app.request<{ broadcast: Broadcast }>('POST', `/broadcasts/${id}/send`)).body.broadcast.status, 'testing');
    await drain();
    let b = (await app.request<{ broadcast: Broadcast }>('GET', `/broadcasts/${id}`)).body.broadcast;
    t.equal(b.status, 'waiting_for_winner');
    t.equal(b.recipients, 60);
    const test = sink.accepted.slice(before);
    t.equal(test.length, 30, 'the test group is 50 % of the audience');
    const subjects = await Promise.all(test.map(async (tx) => (await simpleParser(tx.raw)).subject ?? ''));
    t.equal(subjects.filter((s) => s.startsWith('Variant A')).length, 10, 'weights 1:2');
    t.equal(subjects.filter((s) => s.startsWith('Variant B')).length, 20);
    let variants = await app.request<{ variants: Array<{ name: string; recipients: number; sent: number; opens: number; winner: boolean }>; winner: string | null }>('GET', `/broadcasts/${id}/variants`);
    t.match(variants.body.variants, [{ name: 'A', recipients: 10, sent: 10 }, { name: 'B', recipients: 20, sent: 20 }]);
    t.equal(variants.body.winner, null);
    // A opens 5 of 10 (50 %), B 6 of 20 (30 %): A wins although B has more opens.
    const rows = await app.appliance.ctx.db('broadcast_recipients as br').join('emails as e', 'e.id', 'br.email_id').join('broadcasts as b', 'b.pk', 'br.broadcast_pk').where('b.id', id).select('br.variant', 'e.public_id');
    const ofVariant = (v: number) => rows.filter((r: { variant: number }) => r.variant === v).map((r: { public_id: string }) => r.public_id);
    const pixelOf = async (publicId: string) => {
      const to = JSON.parse(((await app.appliance.ctx.db('emails').where({ public_id: publicId }).first('to_addrs')) as { to_addrs: string }).to_addrs)[0];
      return urlsOf(await simpleParser(test.find((tx) => tx.to[0] === to)!.raw)).pixel[0]!;
    };
    for (const e of [...ofVariant(0).slice(0, 5), ...ofVariant(1).slice(0, 6)]) t.equal((await hit(await pixelOf(e), UA.chromeAndroid)).status, 200);
    app.clock.advance(30 * MINUTE - 1_000);
    await drain();
    t.equal((await app.request<{ broadcast: Broadcast }>('GET', `/broadcasts/${id}`)).body.broadcast.winner, null, 'not before the duration');
    app.clock.advance(1_000);
    b = await settle(id);
    t.equal(b.status, 'sent');
    t.equal(b.winner, 'A');
    const rest = sink.accepted.slice(before + 30);
    t.equal(rest.length, 30, 'the winner goes to the remainder');
    const restSubjects = await Promise.all(rest.map(async (tx) => (await simpleParser(tx.raw)).subject ?? ''));
    t.ok(restSubjects.every((s) => s.startsWith('Variant A for Name')), 'every remaining contact got the winner, personalised');
    t.equal(new Set(sink.accepted.slice(before).map((tx) => tx.to[0])).size, 60, 'each contact once');
    variants = await app.request('GET', `/broadcasts/${id}/variants`);
    t.match(variants.body, { winner: 'A', variants: [{ name: 'A', opens: 5, winner: true }, { name: 'B', opens: 6, winner: false }] });
  });

  t.test('end-ab-test picks a named variant now', async (t) => {
    const abSeg = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'AB2' } })).body.segment.id;
    t.equal((await app.request('POST', `/segments/${abSeg}/contacts`, { body: { contact_ids: contacts.slice(40, 60).map((c) => c.id) } })).status, 200);
    const created = await app.request<{ broadcast: Broadcast }>('POST', '/broadcasts', {
      body: {
        name: 'AB2', from: 'news@acme.example', subject: 'base', html: '<p>x</p>', segment_ids: [abSeg],
        ab_test: { test_duration_minutes: 60, variants: [{ name: 'First', subject: 'one', weight: 50 }, { name: 'Second', subject: 'two', weight: 50 }, { name: 'Third', subject: 'three', weight: 50 }] },
      },
    });
    const id = created.body.broadcast.id;
    const before = sink.accepted.length;
    await app.request('POST', `/broadcasts/${id}/send`);
    await drain();
    const testSent = sink.accepted.length - before;
    t.equal(testSent, 4, '20 % of 20, rounded');
    t.equal((await app.request('POST', `/broadcasts/${id}/end-ab-test`, { body: { variant: 'Nope' } })).status, 422);
    const ended = await app.request<{ broadcast: Broadcast }>('POST', `/broadcasts/${id}/end-ab-test`, { body: { variant: 'Third' } });
    t.equal(ended.status, 200, ended.text);
    t.equal(ended.body.broadcast.winner, 'Third');
    const b = await settle(id);
    t.equal(b.status, 'sent');
    const rest = await Promise.all(sink.accepted.slice(before + testSent).map(async (tx) => (await simpleParser(tx.raw)).subject));
    t.equal(rest.length, 16);
    t.ok(rest.every((s) => s === 'three'));
    // The winner job at the test's end finds the test ended and does nothing more.
    app.clock.advance(61 * MINUTE);
    await drain();
    t.equal(sink.accepted.length, before + 20);
  });

  t.test('a topic: only contacts who receive it', async (t) => {
    const topic = (await app.request<{ topic: { id: string } }>('POST', '/subscription-topics', { body: { name: 'Product news', default_subscription: 'opt_in' } })).body;
    const topicId = (topic as unknown as { topic?: { id: string }; id?: string }).topic?.id ?? (topic as unknown as { id: string }).id;
    t.ok(topicId);
    const tSeg = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'Topic seg' } })).body.segment.id;
    const members = contacts.slice(60, 70);
    await app.request('POST', `/segments/${tSeg}/contacts`, { body: { contact_ids: members.map((c) => c.id) } });
    const left = await app.request('POST', `/subscription-topics/contacts/${members[0]!.id}/subscriptions`, { body: { subscriptions: [{ topic_id: topicId, subscribed: false }] } });
    t.equal(left.status, 200, left.text);
    const created = await app.request<{ broadcast: Broadcast }>('POST', '/broadcasts', { body: { name: 'Topic', from: 'news@acme.example', subject: 'News', html: '<p>n</p>', segment_ids: [tSeg], topic_id: topicId } });
    const before = sink.accepted.length;
    await app.request('POST', `/broadcasts/${created.body.broadcast.id}/send`);
    const b = await settle(created.body.broadcast.id);
    t.equal(b.recipients, 9);
    const got = sink.accepted.slice(before);
    t.equal(got.length, 9);
    t.notOk(got.some((tx) => tx.to[0] === members[0]!.email), 'a contact who left the topic is left out');
  });

  t.test('by template: the published version, rendered per contact', async (t) => {
    const tpl = await app.request<{ template: { id: string } }>('POST', '/templates', {
      body: { name: 'Tpl', subject: 'unused', html: '<p>Template for {{ contact.first_name }} ({{ contact.email }})</p><a href="{{ unsubscribe_url }}">leave</a>', text: 'Template for {{ contact.first_name }}' },
    });
    t.equal(tpl.status, 201, tpl.text);
    const draft = await app.request('POST', '/broadcasts', { body: { name: 'T', from: 'news@acme.example', subject: 'By template', template_id: tpl.body.template.id, segment_ids: [seg2] } });
    t.equal(draft.status, 422, 'an unpublished template is refused');
    t.equal((await app.request('POST', `/templates/${tpl.body.template.id}/publish`)).status, 200);
    const created = await app.request<{ broadcast: Broadcast }>('POST', '/broadcasts', { body: { name: 'T', from: 'news@acme.example', subject: 'By template, {{ contact.first_name }}', template_id: tpl.body.template.id, segment_ids: [seg2] } });
    t.equal(created.status, 201, created.text);
    const before = sink.accepted.length;
    await app.request('POST', `/broadcasts/${created.body.broadcast.id}/send`);
    const b = await settle(created.body.broadcast.id);
    t.equal(b.status, 'sent');
    const got = sink.accepted.slice(before);
    t.equal(got.length, b.recipients);
    const m = await simpleParser(got.find((tx) => tx.to[0] === 'person30@dest.example')!.raw);
    t.equal(m.subject, 'By template, Name30');
    t.match(m.html, /Template for Name30 \(person30@dest\.example\)/);
    t.match(m.html, /href="[^"]+\/unsubscribe\/[a-z0-9]+"/);
    t.match(m.text, /Template for Name30/);
  });

  t.test('tenant isolation and the Free plan quota', async (t) => {
    const other = await createOtherTeam(app, 'free');
    const as = (method: string, path: string, body?: unknown) => app.request(method, path, { key: other.apiKey, ...(body ? { body } : {}) });
    t.equal((await as('GET', `/broadcasts/${firstId}`)).status, 404);
    t.equal((await as('POST', `/broadcasts/${firstId}/send`)).status, 404);
    t.equal((await as('POST', `/broadcasts/${firstId}/resend`, { to: 'all' })).status, 404);
    t.equal((await as('GET', `/broadcasts/${firstId}/non-openers`)).status, 404);
    t.equal(((await as('GET', '/broadcasts')).body as { meta: { total: number } }).meta.total, 0);
    t.equal((await as('GET', `/segments/${seg}/broadcasts`)).status, 404);
    const theirs = await as('POST', '/broadcasts', { name: 'x', from: 'news@acme.example', subject: 's', html: 'x', segment_ids: [seg] });
    t.equal(theirs.status, 422, 'another team’s segment is not found');
    const perf = (await as('GET', '/broadcasts/performance')).body as { broadcasts: unknown[] };
    t.same(perf.broadcasts, []);

    // Free plan: 3,000 a month. 2,990 used, a broadcast to 20 → 429 before anything goes out.
    await addVerifiedDomain(app, dns, 'free.example', other.apiKey);
    const fseg = ((await as('POST', '/segments', { name: 'F' })).body as { segment: { id: string } }).segment.id;
    const csv = ['email', ...Array.from({ length: 20 }, (_, i) => `f${i}@dest.example`)].join('\n');
    t.equal((await as('POST', '/contacts/import', { csv, segment_id: fseg })).status, 200);
    await app.appliance.ctx.db('team_usage').insert({ team_id: other.teamId, month: app.clock.now().toISOString().slice(0, 7), sent: 2_990 });
    const fb = ((await as('POST', '/broadcasts', { name: 'F', from: 'news@free.example', subject: 's', html: 'x', segment_ids: [fseg] })).body as { broadcast: Broadcast }).broadcast;
    const before = sink.accepted.length;
    const refused = await as('POST', `/broadcasts/${fb.id}/send`);
    t.equal(refused.status, 429);
    t.match(refused.body, { code: 'monthly_limit_exceeded', error: /20 recipients/ });
    await drain();
    t.equal(sink.accepted.length, before, 'nothing went out');
    t.equal((((await as('GET', `/broadcasts/${fb.id}`)).body as { broadcast: Broadcast }).broadcast).status, 'draft');
    t.equal(Number((await app.appliance.ctx.db('emails').where({ broadcast_id: fb.id }).count({ n: '*' }))[0]!.n), 0);
  });

  t.test('scheduled: starts at scheduled_at on the clock; PATCH moves it; cancel before it starts', async (t) => {
    const at = new Date(app.clock.now().getTime() + 10 * MINUTE).toISOString();
    const created = await app.request<{ broadcast: Broadcast }>('POST', '/broadcasts', { body: { name: 'Later', from: 'news@acme.example', subject: 'Later', html: 'x', segment_ids: [seg2], scheduled_at: at } });
    const id = created.body.broadcast.id;
    const before = sink.accepted.length;
    t.equal((await app.request<{ broadcast: Broadcast }>('POST', `/broadcasts/${id}/send`)).body.broadcast.status, 'scheduled');
    await drain();
    t.equal(sink.accepted.length, before);
    const later = new Date(app.clock.now().getTime() + 20 * MINUTE).toISOString();
    t.equal((await app.request('PATCH', `/broadcasts/${id}`, { body: { scheduled_at: later } })).status, 200);
    app.clock.advance(15 * MINUTE);
    await drain();
    t.equal(sink.accepted.length, before, 'moved to the new time');
    app.clock.advance(5 * MINUTE);
    const b = await settle(id);
    t.equal(b.status, 'sent');
    t.equal(b.recipients, 32, 'segment 2 less the two suppressed and the one who unsubscribed');
    t.equal(sink.accepted.length - before, 32);

    const c = await app.request<{ broadcast: Broadcast }>('POST', '/broadcasts', { body: { name: 'Never', from: 'news@acme.example', subject: 'Never', html: 'x', segment_ids: [seg2], scheduled_at: later.replace(/T.*/, 'T23:00:00.000Z') } });
    await app.request('POST', `/broadcasts/${c.body.broadcast.id}/send`);
    const cancelled = await app.request<{ broadcast: Broadcast; cancelled: number }>('POST', `/broadcasts/${c.body.broadcast.id}/cancel`);
    t.equal(cancelled.status, 200);
    t.equal(cancelled.body.broadcast.status, 'cancelled');
    app.clock.advance(24 * 60 * MINUTE);
    await drain();
    t.equal(sink.accepted.length - before, 32, 'a cancelled schedule sends nothing');
  });
});
