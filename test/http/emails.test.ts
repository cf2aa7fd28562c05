// The email API over real HTTP, in test mode (sk_test_ keys: everything runs, nothing leaves the box),
// with the job queue drained by hand after moving the fake clock.
import t from 'tap';
import { MINUTE, HOUR } from '../../src/core/clock.js';
import { INLINE_TEXT_LIMIT } from '../../src/services/sending/emails.js';
import { startTestApp, createOtherTeam, type TestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';

interface Page<T> {
  data: T[];
  meta: { page: number; perPage: number; total: number; totalPages: number };
}
interface ListItem {
  id: number;
  publicId: string;
  status: string;
  subject: string;
  to: string[];
  tags: string[];
  createdAt: string;
}
interface Detail {
  id: string;
  status: string;
  mode: string;
  text: string | null;
  to: string[];
  recipients: Array<{ email: string; status: string; code: string | null; bounce_category: string | null }>;
  attachments: Array<{ filename: string; content_type: string; size: number }>;
  scheduled_at: string | null;
  delivered_at: string | null;
}
interface Timeline {
  events: Array<{ type: string; timestamp: string; data: Record<string, unknown> }>;
}

async function testKey(app: TestApp, permission = 'full_access'): Promise<string> {
  const res = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: `test ${permission}`, permission, mode: 'test' } });
  return res.body.token;
}

t.test('emails in test mode', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  await addVerifiedDomain(app, dns, 'send.example');
  const key = await testKey(app);
  const send = (body: Record<string, unknown>, k = key) => app.request<{ id: string; error?: string; code?: string }>('POST', '/emails', { body, key: k });
  const base = { from: 'Acme <hello@send.example>', to: ['someone@dest.example'], subject: 'Hi', html: '<p>Hello <b>there</b></p>' };
  const drain = () => app.appliance.ctx.jobs.drain();

  t.test('accepted with 202 and an em_ id, then delivered (simulated)', async (t) => {
    const res = await send(base);
    t.equal(res.status, 202);
    t.match(res.body.id, /^em_[A-Za-z0-9]{24}$/);
    let detail = await app.request<Detail>('GET', `/emails/${res.body.id}`, { key });
    t.equal(detail.body.status, 'queued');
    await drain();
    detail = await app.request<Detail>('GET', `/emails/${res.body.id}`, { key });
    t.equal(detail.body.status, 'delivered');
    t.ok(detail.body.delivered_at);
    t.match(detail.body.text, /Hello there/, 'text derived from html');
    const timeline = await app.request<Timeline>('GET', `/emails/${res.body.id}/events`, { key });
    t.same(timeline.body.events.map((e) => e.type), ['queued', 'sending', 'sent', 'delivered']);
    const events = await app.request<Page<{ type: string; data: { email_id: string; to: string[]; subject: string } }>>('GET', '/events?per_page=100');
    const mine = events.body.data.filter((e) => e.data.email_id === res.body.id).map((e) => e.type);
    t.same(mine.sort(), ['email.delivered', 'email.sent']);
  });

  t.test('a large html body has its text part derived too (on a render thread above INLINE_TEXT_LIMIT)', async (t) => {
    const html = `<h1>Big news</h1>${'<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>'.repeat(400)}<p>The end</p>`;
    t.ok(html.length > INLINE_TEXT_LIMIT);
    const res = await send({ ...base, html });
    t.equal(res.status, 202);
    const detail = await app.request<Detail>('GET', `/emails/${res.body.id}`, { key });
    t.match(detail.body.text, /^BIG NEWS/);
    t.match(detail.body.text, /The end\s*$/);
  });

  t.test('a blank text beside html counts as none: the stored text is derived, as the message sent', async (t) => {
    for (const text of ['', '  \n ']) {
      const res = await send({ ...base, text });
      t.equal(res.status, 202);
      t.match((await app.request<Detail>('GET', `/emails/${res.body.id}`, { key })).body.text, /Hello there/, JSON.stringify(text));
    }
    // Without html a blank text is no body at all (an empty message went out): refused like a missing one.
    for (const body of [{ text: ' ' }, { text: '' }, { text: '', html: '' }, { text: ' \r\n', html: '\t' }]) {
      const res = await send({ from: base.from, to: base.to, subject: 'Blank', ...body });
      t.equal(res.status, 400, JSON.stringify(body));
      t.match(res.body, { code: 'invalid_request', error: 'Request body must include html, text or template_id' });
    }
  });

  t.test('POST /emails/send is the same operation', async (t) => {
    const res = await app.request<{ id: string }>('POST', '/emails/send', { body: base, key });
    t.equal(res.status, 202);
    t.match(res.body.id, /^em_/);
  });

  t.test('validation answers 400 in the spec’s words', async (t) => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...base, from: undefined }, /^Request body is missing required fields: from$/],
      [{ ...base, to: undefined }, /^Request body is missing required fields: to$/],
      [{ ...base, to: ['ok@x.example', 'not an address'] }, /^to\.1: must be a valid email address$/],
      [{ ...base, from: 'nope' }, /^from: must be a valid email address$/],
      // Control characters (a NUL went out as From: <"a b"@…>; in a recipient it reached the remote MX).
      [{ ...base, from: 'a\u0000b@send.example' }, /^from: must be a valid email address$/],
      [{ ...base, from: 'Acme\u0007 <hello@send.example>' }, /^from: must be a valid email address$/],
      [{ ...base, to: ['ok@x.example', 'a\u0000b@x.example'] }, /^to\.1: must be a valid email address$/],
      [{ ...base, to: ['j\u00f6rg\u0085@x.example'] }, /^to\.0: must be a valid email address$/],
      [{ ...base, subject: 'x'.repeat(999) }, /subject: must be at most 998 characters/],
      [{ ...base, tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }, /tags: must contain at most 10 tags/],
      [{ ...base, tags: ['x'.repeat(65)] }, /tags\.0: must be at most 64 characters/],
      [{ ...base, headers: { 'X-Long': 'v'.repeat(1025) } }, /headers\.X-Long: must be at most 1,024 characters/],
      [{ ...base, headers: { From: 'evil@x.example' } }, /headers\.From/],
      // A structured field cannot be folded inside a token (RFC 5322 §2.1.1: 998 characters a line).
      [{ ...base, headers: { 'List-Unsubscribe': `<mailto:u@send.example>, <https://send.example/u/${'a'.repeat(960)}>` } }, /^headers\.List-Unsubscribe: has a run without spaces too long for one header line/],
      [{ ...base, headers: { 'X Bad': '1' } }, /^headers\.X Bad: header names must be printable ASCII without colons$/],
      [{ ...base, attachments: Array.from({ length: 11 }, () => ({ filename: 'a.txt', content: 'YQ==' })) }, /attachments: must contain at most 10 attachments/],
      [{ ...base, attachments: [{ filename: 'a.txt', content: 'not*base64' }] }, /attachments\.0\.content: must be base64/],
      // A lone sixth-bit character, or padding that completes no quantum, is no base64 (Buffer decoded it silently).
      [{ ...base, attachments: [{ filename: 'a.txt', content: 'Y' }] }, /^attachments\.0\.content: must be base64$/],
      [{ ...base, attachments: [{ filename: 'a.txt', content: 'YWJj=' }] }, /^attachments\.0\.content: must be base64$/],
      [{ ...base, attachments: [{ filename: 'a.txt', content: 'YWJjZA=' }] }, /^attachments\.0\.content: must be base64$/],
      // Two mailboxes in one string are not one with a strange name: every one but the last was dropped.
      [{ ...base, to: 'A <a@x.example>, B <b@x.example>' }, /^to\.0: must be a valid email address$/],
      [{ ...base, to: ['ok@x.example', 'a@x.example, B <b@x.example>'] }, /^to\.1: must be a valid email address$/],
      [{ ...base, to: ['A <a@x.example>; B <b@x.example>'] }, /^to\.0: must be a valid email address$/],
      [{ ...base, from: 'A <a@send.example>, B <b@elsewhere.example>' }, /^from: must be a valid email address$/],
      [{ ...base, cc: ['"Unclosed <a@x.example>'] }, /^cc\.0: must be a valid email address$/],
      // A name that no fold can fit in 998 columns (a quoted string folds only at its spaces).
      [{ ...base, from: `${'N'.repeat(5000)} <hello@send.example>` }, /^from: has a display name with a run without spaces too long for one header line/],
      [{ ...base, to: [`"${'N'.repeat(990)}" <a@x.example>`] }, /^to\.0: has a display name with a run without spaces too long/],
      [{ ...base, headers: { [`X-${'a'.repeat(1000)}`]: 'v' } }, /header names must be at most 256 characters$/],
      [{ ...base, headers: null }, /^headers: must be an object$/],
      [{ ...base, headers: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`X-H${i}`, 'v'.repeat(700)])) }, /^headers: must total at most 64 KB \(names and values\)$/],
      [{ ...base, html: undefined }, /html, text or template_id/],
      [{ ...base, to: Array.from({ length: 51 }, (_, i) => `r${i}@x.example`) }, /to: must contain at most 50 addresses/],
    ];
    for (const [body, message] of cases) {
      const res = await send(body);
      t.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
      t.equal(res.body.code, 'invalid_request');
      t.match(res.body.error, message);
    }
  });

  t.test('checks after validation answer 422', async (t) => {
    const recipients = (n: number) => Array.from({ length: n }, (_, i) => `r${i}@x.example`);
    let res = await send({ ...base, to: recipients(30), cc: recipients(21) });
    t.equal(res.status, 422);
    t.match(res.body.error, /51.*50/);
    res = await send({ ...base, from: 'a@unknown.example' });
    t.same(res.body, { error: "Domain 'unknown.example' not found for this team", code: 'unprocessable_entity' });
    await app.request('POST', '/domains', { body: { name: 'pending.example' } });
    res = await send({ ...base, from: 'a@pending.example' });
    t.same(res.body, { error: "Domain 'pending.example' is not verified", code: 'unprocessable_entity' });
    const big = Buffer.alloc(10 * 1024 * 1024 + 1, 1).toString('base64');
    res = await send({ ...base, attachments: [{ filename: 'big.bin', content: big }] });
    t.equal(res.status, 422);
    t.equal(res.body.error, "attachments.0: 'big.bin' is 10,485,761 bytes decoded; one attachment may be at most 10 MB (10,485,760 bytes)");
    // 26 MB decoded, still under the 36 MB request limit once base64-encoded.
    const part = (mib: number) => Buffer.alloc(mib * 1024 * 1024, 1).toString('base64');
    res = await send({ ...base, attachments: [9.5, 9.5, 7].map((n, i) => ({ filename: `p${i}.bin`, content: part(n) })) });
    t.equal(res.status, 422);
    t.match(res.body.error, /25 MB/);
    res = await send({ ...base, template_id: 'tpl_missing' });
    t.equal(res.status, 422);
  });

  t.test('an address named twice (to and cc, or in another case) is one recipient', async (t) => {
    const res = await send({ ...base, to: ['twice@dest.example', 'TWICE@Dest.Example'], cc: ['twice@dest.example', 'other@dest.example'], bcc: ['Other@dest.example'] });
    t.equal(res.status, 202);
    const detail = await app.request<Detail>('GET', `/emails/${res.body.id}`, { key });
    t.same(detail.body.recipients.map((r) => r.email), ['twice@dest.example', 'other@dest.example']);
    t.same(detail.body.to, ['twice@dest.example', 'TWICE@dest.example'], 'the headers keep what was given');
  });

  t.test('attachments: content type inferred, sizes recorded', async (t) => {
    const res = await send({ ...base, attachments: [{ filename: 'report.pdf', content: Buffer.from('%PDF-1.4').toString('base64') }, { filename: 'a.txt', content: 'aGk=', content_type: 'text/plain' }] });
    t.equal(res.status, 202);
    const detail = await app.request<Detail>('GET', `/emails/${res.body.id}`, { key });
    t.same(detail.body.attachments, [
      { filename: 'report.pdf', content_type: 'application/pdf', size: 8 },
      { filename: 'a.txt', content_type: 'text/plain', size: 2 },
    ]);
  });

  t.test('idempotency: same key and body → same id, nothing new; different body → 409; after 24 h a new send', async (t) => {
    const first = await send({ ...base, idempotency_key: 'order-1' });
    const again = await send({ ...base, idempotency_key: 'order-1' });
    t.equal(again.status, 202);
    t.equal(again.body.id, first.body.id);
    const header = await app.request<{ id: string }>('POST', '/emails', { body: base, key, headers: { 'Idempotency-Key': 'order-1' } });
    t.equal(header.body.id, first.body.id, 'the Idempotency-Key header works too');
    const empty = await app.request<{ error: string }>('POST', '/emails', { body: base, key, headers: { 'Idempotency-Key': '' } });
    t.same([empty.status, empty.body], [400, { error: 'Idempotency-Key: must not be empty', code: 'invalid_request' }], 'a header sent empty is refused, not ignored');
    const other = await send({ ...base, subject: 'different', idempotency_key: 'order-1' });
    t.equal(other.status, 409);
    t.equal(other.body.code, 'conflict');
    const count = await app.appliance.ctx.db('emails').where({ idempotency_key: 'order-1' }).count({ n: '*' }).first();
    t.equal(Number(count?.n), 1);
    app.clock.advance(24 * HOUR + 1);
    const later = await send({ ...base, idempotency_key: 'order-1' });
    t.not(later.body.id, first.body.id);
  });

  t.test('idempotency: the same request written another way is the same request', async (t) => {
    const at = new Date(Math.floor((app.clock.now().getTime() + 2 * HOUR) / 1000) * 1000); // whole seconds
    const first = await send({ ...base, idempotency_key: 'forms-1', scheduled_at: at.toISOString().replace('.000Z', 'Z') });
    t.equal(first.status, 202);
    const local = new Date(at.getTime() + HOUR).toISOString().replace('Z', '+01:00');
    for (const body of [
      { ...base, scheduled_at: at.toISOString() },
      { ...base, scheduled_at: local },
      { ...base, scheduled_at: at.toISOString(), headers: {}, cc: [], tags: [] },
      { scheduled_at: at.toISOString(), subject: base.subject, html: base.html, to: base.to, from: base.from },
    ]) {
      const again = await send({ ...body, idempotency_key: 'forms-1' });
      t.same([again.status, again.body.id], [202, first.body.id], JSON.stringify(body).slice(0, 100));
    }
    const other = await send({ ...base, idempotency_key: 'forms-1', scheduled_at: new Date(at.getTime() + 1000).toISOString() });
    t.equal(other.status, 409, 'another instant is another request');
    t.equal((await app.request('POST', `/emails/${first.body.id}/cancel`, { key })).status, 200, 'nothing left scheduled');
  });

  t.test('idempotency keys are per mode: a live send is never answered by a test-mode email, nor the reverse', async (t) => {
    // Found by a walkthrough of the README: a CI run with the test key swallowed the production send that
    // reused its key (202 with the test email's id; nothing left the box).
    const body = { ...base, idempotency_key: 'shared-1', scheduled_at: new Date(app.clock.now().getTime() + HOUR).toISOString() };
    const inTest = await send(body);
    const live = await app.request<{ id: string }>('POST', '/emails', { body });
    t.equal(inTest.status, 202);
    t.equal(live.status, 202);
    t.not(live.body.id, inTest.body.id, 'the live send is a new email');
    t.equal((await app.request<Detail>('GET', `/emails/${live.body.id}`)).body.mode, 'live');
    t.equal((await app.request<Detail>('GET', `/emails/${inTest.body.id}`)).body.mode, 'test');
    t.equal((await app.request<{ id: string }>('POST', '/emails', { body })).body.id, live.body.id, 'each mode replays its own');
    t.equal((await send(body)).body.id, inTest.body.id);
    for (const id of [live.body.id, inTest.body.id]) t.equal((await app.request('POST', `/emails/${id}/cancel`)).status, 200);
  });

  t.test('idempotency holds for sends written in the same transaction (concurrent requests, one batch)', async (t) => {
    const together = await Promise.all(Array.from({ length: 5 }, () => send({ ...base, idempotency_key: 'together-1' })));
    t.same(new Set(together.map((r) => r.status)), new Set([202]));
    t.equal(new Set(together.map((r) => r.body.id)).size, 1, 'five concurrent requests, one email');
    const batch = await app.request<{ data: Array<{ id?: string; error?: string; code?: string }> }>('POST', '/emails/batch', {
      key,
      body: { emails: [{ ...base, idempotency_key: 'together-2' }, { ...base, idempotency_key: 'together-2' }, { ...base, subject: 'other', idempotency_key: 'together-2' }] },
    });
    t.equal(batch.body.data[0]!.id, batch.body.data[1]!.id, 'a repeated element answers the first one’s id');
    t.equal(batch.body.data[2]!.code, 'conflict');
    for (const k of ['together-1', 'together-2']) {
      const count = await app.appliance.ctx.db('emails').where({ idempotency_key: k }).count({ n: '*' }).first();
      t.equal(Number(count?.n), 1, `${k}: stored once`);
    }
  });

  t.test('scheduled: waits, can be rescheduled, then goes out at its time', async (t) => {
    const at = new Date(app.clock.now().getTime() + 30 * MINUTE).toISOString();
    const res = await send({ ...base, scheduled_at: at });
    const id = res.body.id;
    await drain();
    let detail = await app.request<Detail>('GET', `/emails/${id}`, { key });
    t.equal(detail.body.status, 'queued');
    t.equal(detail.body.scheduled_at, at);
    const later = new Date(app.clock.now().getTime() + 60 * MINUTE).toISOString();
    const patch = await app.request('PATCH', `/emails/${id}`, { body: { scheduled_at: later }, key });
    t.same(patch.body, { success: true });
    app.clock.advance(45 * MINUTE);
    await drain();
    t.equal((await app.request<Detail>('GET', `/emails/${id}`, { key })).body.status, 'queued', 'not at the old time');
    app.clock.advance(15 * MINUTE);
    await drain();
    detail = await app.request<Detail>('GET', `/emails/${id}`, { key });
    t.equal(detail.body.status, 'delivered');
    const events = await app.request<Page<{ type: string; data: { email_id: string } }>>('GET', '/events?type=email.scheduled&per_page=100');
    t.equal(events.body.data.filter((e) => e.data.email_id === id).length, 2, 'scheduled, then rescheduled');
    const tooLate = await app.request<{ code: string; error: string }>('PATCH', `/emails/${id}`, { body: { scheduled_at: later }, key });
    t.equal(tooLate.status, 422);
    t.match(tooLate.body.error, /delivered/);
  });

  t.test('cancel: a scheduled email is cancelled and never sent; a sent one cannot be', async (t) => {
    const at = new Date(app.clock.now().getTime() + 10 * MINUTE).toISOString();
    const { body } = await send({ ...base, scheduled_at: at });
    const res = await app.request('POST', `/emails/${body.id}/cancel`, { key });
    t.same(res.body, { success: true });
    app.clock.advance(20 * MINUTE);
    await drain();
    const detail = await app.request<Detail>('GET', `/emails/${body.id}`, { key });
    t.equal(detail.body.status, 'cancelled');
    t.same(detail.body.recipients.map((r) => r.status), ['cancelled']);
    const timeline = await app.request<Timeline>('GET', `/emails/${body.id}/events`, { key });
    t.same(timeline.body.events.map((e) => e.type), ['queued', 'cancelled']);
    const again = await app.request<{ error: string }>('POST', `/emails/${body.id}/cancel`, { key });
    t.equal(again.status, 422);
    t.match(again.body.error, /cancelled/);
    t.equal((await app.request('POST', '/emails/em_doesnotexist/cancel', { key })).status, 404);
  });

  t.test('magic recipients simulate bounces, deferrals and complaints', async (t) => {
    const { body } = await send({ ...base, to: ['bounced@dest.example', 'bounced+mailbox_full@dest.example', 'deferred@dest.example', 'complained@dest.example'] });
    await drain();
    let detail = await app.request<Detail>('GET', `/emails/${body.id}`, { key });
    const byEmail = Object.fromEntries(detail.body.recipients.map((r) => [r.email, r]));
    t.equal(byEmail['bounced@dest.example']!.status, 'bounced');
    t.equal(byEmail['bounced@dest.example']!.code, '5.1.1');
    t.equal(byEmail['bounced@dest.example']!.bounce_category, 'invalid_mailbox');
    t.equal(byEmail['bounced+mailbox_full@dest.example']!.bounce_category, 'mailbox_full');
    t.equal(byEmail['deferred@dest.example']!.status, 'deferred');
    t.equal(byEmail['complained@dest.example']!.status, 'complained');
    t.equal(detail.body.status, 'sending', 'a recipient still waits for its retry');
    app.clock.advance(1 * MINUTE);
    await drain();
    detail = await app.request<Detail>('GET', `/emails/${body.id}`, { key });
    t.equal(detail.body.recipients.find((r) => r.email === 'deferred@dest.example')!.status, 'delivered');
    t.equal(detail.body.status, 'complained');
    const events = await app.request<Page<{ type: string; data: Record<string, unknown> }>>('GET', '/events?per_page=100');
    const mine = events.body.data.filter((e) => e.data.email_id === body.id);
    const bounce = mine.find((e) => e.type === 'email.bounced' && e.data.recipient === 'bounced@dest.example')!;
    t.match(bounce.data, { bounce_code: '5.1.1', bounce_category: 'invalid_mailbox', bounce_message: /5\.1\.1/, subject: 'Hi', from: base.from.replace('Acme', '"Acme"') });
    t.ok(mine.find((e) => e.type === 'email.soft_bounced'));
    t.ok(mine.find((e) => e.type === 'email.delivery_delayed'));
    t.ok(mine.find((e) => e.type === 'email.complained'));

    // Simulated outcomes suppress nothing: a later live send to the same addresses goes out.
    t.same(await app.appliance.ctx.db('suppressions').whereIn('email', ['bounced@dest.example', 'complained@dest.example']).select('email'), [], 'not on the suppression list');
    const live = await send({ ...base, to: ['bounced@dest.example', 'complained@dest.example'] }, app.apiKey);
    t.equal(live.status, 202);
    const after = await app.request<Detail>('GET', `/emails/${live.body.id}`, { key: app.apiKey });
    t.equal(after.body.status, 'queued');
    t.same(after.body.recipients.map((r) => r.status), ['queued', 'queued']);
    await app.request('POST', `/emails/${live.body.id}/cancel`, { key: app.apiKey });
  });

  t.test('POST /emails/preview renders, signs and sends nothing', async (t) => {
    const before = await app.appliance.ctx.db('emails').count({ n: '*' }).first();
    const res = await app.request<{ subject: string; text: string; size: number; signed: boolean; headers: Array<{ name: string; value: string }>; warnings: string[] }>(
      'POST',
      '/emails/preview',
      { key, body: { ...base, headers: { 'X-Campaign': 'spring' }, attachments: [{ filename: 'a.csv', content: 'YSxiCg==' }] } },
    );
    t.equal(res.status, 200);
    t.equal(res.body.subject, 'Hi');
    t.match(res.body.text, /Hello there/);
    t.equal(res.body.signed, true);
    const names = res.body.headers.map((h) => h.name.toLowerCase());
    t.ok(names.includes('dkim-signature'));
    t.ok(names.includes('x-campaign'));
    t.ok(res.body.size > 500);
    t.same(res.body.warnings, []);
    const after = await app.appliance.ctx.db('emails').count({ n: '*' }).first();
    t.equal(Number(after?.n), Number(before?.n), 'nothing stored');
    const unverified = await app.request<{ signed: boolean; warnings: string[] }>('POST', '/emails/preview', { key, body: { ...base, from: 'x@elsewhere.example' } });
    t.equal(unverified.status, 200);
    t.equal(unverified.body.signed, false);
    t.match(unverified.body.warnings[0], /not found for this team/);
    t.equal((await app.request('POST', '/emails/preview', { key, body: { ...base, to: ['bad'] } })).status, 400);
  });

  t.test('POST /emails/spam-preview scores content with named rules', async (t) => {
    const clean = await app.request<{ score: number; verdict: string; rules: Array<{ name: string }> }>('POST', '/emails/spam-preview', {
      key,
      body: { ...base, text: 'Hello there, your receipt is attached.' },
    });
    t.equal(clean.status, 200);
    t.equal(clean.body.verdict, 'ok');
    t.same(clean.body.rules, []);
    const spammy = await app.request<{ score: number; verdict: string; threshold: number; rules: Array<{ name: string }> }>('POST', '/emails/spam-preview', {
      key,
      body: {
        from: 'promo@unverified.example',
        to: base.to,
        subject: 'FREE MONEY WINNER!!!',
        html: '<a href="https://bit.ly/x">https://mybank.example</a><img src="x.png"><script>1</script>',
        tags: ['newsletter'],
      },
    });
    t.equal(spammy.body.verdict, 'likely_spam');
    t.ok(spammy.body.score >= spammy.body.threshold);
    const fired = spammy.body.rules.map((r) => r.name);
    for (const rule of ['UNVERIFIED_FROM', 'SUBJECT_ALL_CAPS', 'SUBJECT_EXCLAMATIONS', 'URL_SHORTENER', 'LINK_TEXT_MISMATCH', 'ACTIVE_CONTENT', 'IMAGE_ONLY', 'BULK_WITHOUT_UNSUBSCRIBE', 'SPAM_PHRASES', 'NO_TEXT_PART']) {
      t.ok(fired.includes(rule), rule);
    }
  });

  t.test('batch: per-element results, 100 at most', async (t) => {
    const res = await app.request<{ data: Array<{ id?: string; error?: string; code?: string }> }>('POST', '/emails/batch', {
      key,
      body: { emails: [base, { ...base, from: 'x@nowhere.example' }, { ...base, subject: 'third' }] },
    });
    t.equal(res.status, 202);
    t.equal(res.body.data.length, 3);
    t.match(res.body.data[0]!.id, /^em_/);
    t.same(res.body.data[1], { error: "Domain 'nowhere.example' not found for this team", code: 'unprocessable_entity' });
    t.match(res.body.data[2]!.id, /^em_/);
    const tooMany = await app.request<{ error: string }>('POST', '/emails/batch', { key, body: { emails: Array.from({ length: 101 }, () => base) } });
    t.equal(tooMany.status, 400);
    t.match(tooMany.body.error, /emails.*100/);
    const empty = await app.request('POST', '/emails/batch', { key, body: { emails: [] } });
    t.equal(empty.status, 400);
  });

  t.test('batch: a bare JSON array (as Resend’s SDKs post it) is the same batch', async (t) => {
    const res = await app.request<{ data: Array<{ id?: string; error?: string; code?: string }> }>('POST', '/emails/batch', {
      key,
      body: [base, { ...base, from: 'x@nowhere.example' }],
    });
    t.equal(res.status, 202);
    t.match(res.body.data[0]!.id, /^em_/);
    t.same(res.body.data[1], { error: "Domain 'nowhere.example' not found for this team", code: 'unprocessable_entity' });
    const bad = await app.request<{ error: string; code: string }>('POST', '/emails/batch', { key, body: [{ ...base, to: ['not an address'] }] });
    t.same(bad.body, { error: 'emails.0.to.0: must be a valid email address', code: 'invalid_request' }, 'element errors named as in the object form');
    const tooMany = await app.request<{ error: string }>('POST', '/emails/batch', { key, body: Array.from({ length: 101 }, () => base) });
    t.equal(tooMany.status, 400);
    t.match(tooMany.body.error, /at most 100/);
    const single = await app.request<{ error: string }>('POST', '/emails', { key, body: [base] });
    t.same(single.body, { error: 'Request body must be a JSON object', code: 'invalid_request' }, 'other routes still refuse an array');
  });

  t.test('GET /emails: Form A, newest first, filters', async (t) => {
    await send({ ...base, subject: 'Invoice 42', tags: ['billing'], to: ['pay@dest.example'] });
    const all = await app.request<Page<ListItem>>('GET', '/emails?per_page=5', { key });
    t.equal(all.status, 200);
    t.equal(all.body.meta.perPage, 5);
    t.ok(all.body.meta.total >= 5);
    const ids = all.body.data.map((e) => e.id);
    t.same(ids, [...ids].sort((a, b) => b - a), 'newest first');
    t.type(all.body.data[0]!.id, 'number');
    t.match(all.body.data[0]!.publicId, /^em_/);
    t.notOk('html' in all.body.data[0]!, 'no bodies in list items');
    const bySubject = await app.request<Page<ListItem>>('GET', '/emails?subject=invoice', { key });
    t.same(bySubject.body.data.map((e) => e.subject), ['Invoice 42']);
    const byTag = await app.request<Page<ListItem>>('GET', '/emails?tag=billing', { key });
    t.equal(byTag.body.meta.total, 1);
    const byTo = await app.request<Page<ListItem>>('GET', '/emails?to=pay@dest.example', { key });
    t.equal(byTo.body.meta.total, 1);
    const byStatus = await app.request<Page<ListItem>>('GET', '/emails?status=cancelled', { key });
    t.ok(byStatus.body.data.every((e) => e.status === 'cancelled'));
    t.ok(byStatus.body.meta.total >= 1);
    const future = await app.request<Page<ListItem>>('GET', `/emails?date_from=${encodeURIComponent(new Date(app.clock.now().getTime() + HOUR).toISOString())}`, { key });
    t.equal(future.body.meta.total, 0);
    const device = await app.request<Page<ListItem>>('GET', '/emails?device=mobile', { key });
    t.equal(device.body.meta.total, 0, 'no tracking data yet');
    const bad = await app.request('GET', '/emails?status=lost', { key });
    t.equal(bad.status, 400);
    const badPage = await app.request<{ error: string }>('GET', '/emails?per_page=500', { key });
    t.match(badPage.body.error, /per_page/);
    // A parameter given twice is named in our words, not zod's "Invalid input: expected string, received array".
    const twice = await app.request<{ error: string }>('GET', '/emails?tag=a&tag=b', { key });
    t.same([twice.status, twice.body], [400, { error: "Invalid query parameter 'tag': must be given once", code: 'invalid_request' }]);
    const nul = await app.request<{ error: string }>('GET', '/emails?to=%00', { key });
    t.same([nul.status, nul.body.error], [400, "Invalid query parameter 'to': must not contain control characters"], 'a NUL matched every email');
  });

  t.test('a message that cannot be signed fails at once, with the reason, and is not retried', async (t) => {
    const domain = await addVerifiedDomain(app, dns, 'broken.example');
    await app.appliance.ctx.db('dkim_keys').where({ domain_id: domain.id }).update({ private_key_sealed: 'not-a-sealed-key' });
    const res = await send({ ...base, from: 'x@broken.example' });
    t.equal(res.status, 202);
    await drain();
    const detail = await app.request<Detail>('GET', `/emails/${res.body.id}`, { key });
    t.equal(detail.body.status, 'failed');
    t.equal(detail.body.recipients[0]!.status, 'failed');
    const timeline = await app.request<Timeline>('GET', `/emails/${res.body.id}/events`, { key });
    t.match(timeline.body.events.at(-1), { type: 'failed', data: { reason: /could not be built or signed/ } });
    // (Other emails of this file wait for retries: mail to a domain that does not resolve is deferred.)
    const { job_id: jobId } = (await app.appliance.ctx.db('emails').where({ public_id: res.body.id }).first('job_id')) as { job_id: number };
    t.notOk(await app.appliance.ctx.db('jobs').where({ id: jobId }).first(), 'no job left to retry it');
  });

  t.test('sending_access keys send and read only their own emails; other teams see nothing', async (t) => {
    const sendingKey = await testKey(app, 'sending_access');
    const mine = await send(base, sendingKey);
    t.equal(mine.status, 202);
    const list = await app.request<Page<ListItem>>('GET', '/emails', { key: sendingKey });
    t.same(list.body.data.map((e) => e.publicId), [mine.body.id]);
    const someoneElses = await send(base);
    t.equal((await app.request('GET', `/emails/${someoneElses.body.id}`, { key: sendingKey })).status, 404);
    t.equal((await app.request('GET', `/emails/${mine.body.id}`, { key: sendingKey })).status, 200);
    t.equal((await app.request('GET', '/domains', { key: sendingKey })).status, 403);
    const other = await createOtherTeam(app);
    t.equal((await app.request('GET', `/emails/${mine.body.id}`, { key: other.apiKey })).status, 404);
    t.equal((await app.request<Page<ListItem>>('GET', '/emails', { key: other.apiKey })).body.meta.total, 0);
    const foreign = await app.request<{ error: string }>('POST', '/emails', { key: other.apiKey, body: base });
    t.equal(foreign.status, 422, 'another team cannot send from this team’s domain');
  });
});
