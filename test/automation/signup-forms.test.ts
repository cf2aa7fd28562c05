// Signup forms over HTTP: every endpoint with its errors and tenant isolation; the public submit (JSON and a
// plain form post) with and without the honeypot, from an allowed and a foreign Origin, over the per-IP rate
// limit; double opt-in end to end over a sink MX: the pending contact is not marketable, not a topic subscriber,
// not in a dynamic segment; the link from the received email confirms it into the segment and topic.
import { simpleParser } from 'mailparser';
import t, { type Test } from 'tap';
import { startTestApp, createOtherTeam, type TestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

interface Form {
  id: string;
  hosted_url: string;
  submit_url: string;
  embed_html: string;
  double_opt_in: unknown;
}
interface ContactView {
  id: string;
  email: string;
  first_name: string | null;
  opt_in_status: string;
  confirmed_at: string | null;
  properties: Record<string, unknown>;
}

async function env(t: Test, config: Record<string, unknown> = {}) {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port, ...config } });
  await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  dns.set('MX', 'nomail.example', [{ exchange: '.', priority: 0 }]);
  return { app, dns, sink, drain: () => app.appliance.ctx.jobs.drain() };
}

async function audience(app: TestApp) {
  const seg = await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'Newsletter list' } });
  const dyn = await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'Everyone', rules: { match: 'all', conditions: [{ field: 'email', operator: 'contains', value: '@' }] } } });
  const topic = await app.request<{ topic: { id: string } }>('POST', '/subscription-topics', { body: { name: 'News', default_subscription: 'opt_out' } });
  const prop = await app.request('POST', '/contact-properties', { body: { name: 'company', type: 'string' } });
  if (!seg.body.segment || !dyn.body.segment || !topic.body.topic || prop.status !== 201) throw new Error(`audience setup: ${seg.text} ${dyn.text} ${topic.text} ${prop.text}`);
  return { segment: seg.body.segment.id, dynamic: dyn.body.segment.id, topic: topic.body.topic.id };
}

const submit = (app: TestApp, id: string, body: unknown, headers: Record<string, string> = {}) =>
  app.request<{ success?: boolean; confirmation_required?: boolean; error?: string; code?: string }>('POST', `/signup-forms/${id}/submit`, { body, key: null, headers });

t.test('management: create, list newest first, get, patch, delete, errors, tenant isolation', async (t) => {
  const { app } = await env(t);
  const a = await audience(app);
  const created = await app.request<{ signup_form: Form }>('POST', '/signup-forms', {
    body: { name: 'Newsletter', fields: [{ property: 'first_name', label: 'First name' }, { property: 'company', label: 'Company', required: true }], segment_id: a.segment, topic_ids: [a.topic], allowed_origins: ['https://shop.example'] },
  });
  t.equal(created.status, 201, created.text);
  const form = created.body.signup_form;
  t.match(form.id, /^sf_/);
  t.match(form.hosted_url, new RegExp(`/f/${form.id}$`));
  t.match(form.embed_html, /<form method="post" action="[^"]*\/signup-forms\/sf_[^"]+\/submit"/);
  t.match(form.embed_html, /name="website_url" tabindex="-1"/, 'the snippet carries the honeypot');
  const second = await app.request<{ signup_form: Form }>('POST', '/signup-forms', { body: { name: 'Second' } });
  const list = await app.request<{ data: Form[]; meta: { total: number } }>('GET', '/signup-forms');
  t.same(list.body.data.map((f) => f.id), [second.body.signup_form.id, form.id], 'newest first');
  t.equal(list.body.meta.total, 2);
  t.equal((await app.request('GET', `/signup-forms/${form.id}`)).status, 200);
  const patched = await app.request<{ signup_form: { name: string; segment_id: string | null } }>('PATCH', `/signup-forms/${form.id}`, { body: { name: 'Renamed', segment_id: null } });
  t.equal(patched.status, 200, patched.text);
  t.same([patched.body.signup_form.name, patched.body.signup_form.segment_id], ['Renamed', null]);

  const errors: Array<[string, string, unknown, number, RegExp]> = [
    ['POST', '/signup-forms', {}, 400, /name/],
    ['POST', '/signup-forms', { name: 'x', fields: [{ property: 'email', label: 'E' }] }, 422, /reserved/],
    ['POST', '/signup-forms', { name: 'x', fields: [{ property: 'nope', label: 'N' }] }, 422, /not a contact property/],
    ['POST', '/signup-forms', { name: 'x', segment_id: 'seg_missing' }, 422, /Segment 'seg_missing' not found/],
    ['POST', '/signup-forms', { name: 'x', segment_id: a.dynamic }, 422, /dynamic/],
    ['POST', '/signup-forms', { name: 'x', topic_ids: ['top_missing'] }, 422, /Topics not found/],
    ['POST', '/signup-forms', { name: 'x', double_opt_in: { from: 'hi@acme.example', subject: 'S', html: '<p>no link</p>' } }, 422, /confirm_url/],
    ['POST', '/signup-forms', { name: 'x', double_opt_in: { from: 'hi@acme.example' } }, 422, /subject and html, or template_id/],
    ['POST', '/signup-forms', { name: 'x', allowed_origins: ['https://a.example/path'] }, 400, /origin/],
    ['PATCH', `/signup-forms/${form.id}`, {}, 400, /at least one/],
    ['PATCH', '/signup-forms/sf_missing', { name: 'y' }, 404, /Signup form not found/],
    ['GET', '/signup-forms/sf_missing', undefined, 404, /Signup form not found/],
    ['DELETE', '/signup-forms/sf_missing', undefined, 404, /Signup form not found/],
  ];
  for (const [method, path, body, status, message] of errors) {
    const r = await app.request<{ error: string; code: string }>(method, path, body === undefined ? {} : { body });
    t.equal(r.status, status, `${method} ${path} ${JSON.stringify(body)} → ${status}: ${r.text}`);
    t.match(r.body.error, message);
    t.type(r.body.code, 'string');
  }
  t.equal((await app.request('GET', '/signup-forms', { key: null })).status, 401, 'management needs a credential');

  const other = await createOtherTeam(app);
  t.same((await app.request<{ data: Form[] }>('GET', '/signup-forms', { key: other.apiKey })).body.data, [], 'another team sees none');
  for (const [method, body] of [['GET', undefined], ['PATCH', { name: 'z' }], ['DELETE', undefined]] as const) {
    t.equal((await app.request(method, `/signup-forms/${form.id}`, { key: other.apiKey, ...(body ? { body } : {}) })).status, 404, `${method} of another team's form: 404`);
  }
  t.equal((await app.request('DELETE', `/signup-forms/${form.id}`)).status, 200);
  t.equal((await app.request('GET', `/signup-forms/${form.id}`)).status, 404);
  t.equal((await submit(app, form.id, { email: 'a@dest.example' })).status, 404, 'a deleted form takes no signups');
});

t.test('submit without double opt-in: honeypot, validation, CORS, form posts', async (t) => {
  const { app } = await env(t);
  const a = await audience(app);
  const form = (
    await app.request<{ signup_form: Form }>('POST', '/signup-forms', {
      body: { name: 'Open', fields: [{ property: 'first_name', label: 'First name' }, { property: 'company', label: 'Company' }], segment_id: a.segment, topic_ids: [a.topic], allowed_origins: ['http://shop.example:8080'], success_message: 'Welcome aboard!' },
    })
  ).body.signup_form;

  const trap = await submit(app, form.id, { email: 'bot@dest.example', website_url: 'http://spam.example' });
  t.same([trap.status, trap.body], [200, { success: true, confirmation_required: false }], 'a filled honeypot answers like a success');
  t.equal((await app.request('GET', '/contacts/bot@dest.example')).status, 404, 'and stores nothing');

  const bad = [
    [{}, 400, /email/],
    [{ email: 'not an address' }, 400, /email/],
    [{ email: 'x@nomail.example' }, 422, /does not receive mail/],
    [{ email: 'x@dest.example', properties: { plan: 'pro' } }, 422, /not a field of this form/],
  ] as const;
  for (const [body, status, message] of bad) {
    const r = await submit(app, form.id, body);
    t.equal(r.status, status, `${JSON.stringify(body)}: ${r.text}`);
    t.match(r.body.error, message);
  }
  t.equal((await app.request<{ meta: { total: number } }>('GET', '/contacts')).body.meta.total, 0, 'nothing stored for a refused signup');

  const foreign = await submit(app, form.id, { email: 'eve@dest.example' }, { origin: 'https://evil.example' });
  t.equal(foreign.status, 403);
  t.equal(foreign.headers.get('access-control-allow-origin'), null, 'no CORS header for a foreign origin');
  const preflightBad = await app.request('OPTIONS', `/signup-forms/${form.id}/submit`, { key: null, headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
  t.equal(preflightBad.status, 204);
  t.equal(preflightBad.headers.get('access-control-allow-origin'), null, 'preflight of a foreign origin: refused');
  const preflight = await app.request('OPTIONS', `/signup-forms/${form.id}/submit`, { key: null, headers: { origin: 'http://shop.example:8080', 'access-control-request-method': 'POST' } });
  t.equal(preflight.headers.get('access-control-allow-origin'), 'http://shop.example:8080');
  t.match(preflight.headers.get('access-control-allow-methods'), /POST/);

  const ok = await submit(app, form.id, { email: 'Ann@Dest.example', properties: { first_name: 'Ann', company: 'Acme' } }, { origin: 'http://shop.example:8080' });
  t.same([ok.status, ok.body], [200, { success: true, confirmation_required: false }], ok.text);
  t.equal(ok.headers.get('access-control-allow-origin'), 'http://shop.example:8080');
  const ann = (await app.request<{ contact: ContactView }>('GET', '/contacts/Ann@dest.example')).body.contact;
  t.match(ann, { first_name: 'Ann', opt_in_status: 'none', properties: { company: 'Acme' } });
  const members = await app.request<{ data: Array<{ id: string }> }>('GET', `/contacts?segment_id=${a.segment}`);
  t.same(members.body.data.map((c) => c.id), [ann.id], 'joined the segment');
  const subs = await app.request<{ data: Array<{ contact_id: string }> }>('GET', `/subscription-topics/${a.topic}/subscribers?subscribed=true`);
  t.same(subs.body.data?.map((s) => s.contact_id), [ann.id], 'subscribed to the topic');

  // A plain HTML form post: the success page, escaped, with a CSP.
  const res = await fetch(`${app.url}/signup-forms/${form.id}/submit`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'email=bob%40dest.example&first_name=%3Cb%3EBob&website_url=', redirect: 'manual' });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /text\/html/);
  t.match(await res.text(), /Welcome aboard!/);
  t.equal((await app.request<{ contact: ContactView }>('GET', '/contacts/bob@dest.example')).body.contact.first_name, '<b>Bob');
  const badForm = await fetch(`${app.url}/signup-forms/${form.id}/submit`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'email=x%40nomail.example' });
  t.equal(badForm.status, 422);
  t.match(await badForm.text(), /<p class="warn" role="alert">email: the domain nomail.example does not receive mail/, 'a form post gets its error as a page');

  await app.request('PATCH', `/signup-forms/${form.id}`, { body: { redirect_url: 'https://shop.example/thanks' } });
  const redirected = await fetch(`${app.url}/signup-forms/${form.id}/submit`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'email=cy%40dest.example', redirect: 'manual' });
  t.equal(redirected.status, 303);
  t.equal(redirected.headers.get('location'), 'https://shop.example/thanks');

  const hosted = await fetch(`${app.url}/f/${form.id}`);
  t.equal(hosted.status, 200);
  t.match(hosted.headers.get('content-security-policy'), /default-src 'none'.*form-action 'self' https:\/\/shop.example/);
  t.equal((await fetch(`${app.url}/f/sf_missing`)).status, 404);
});

t.test('10 submits per minute per client IP', async (t) => {
  const { app } = await env(t, { rateLimits: true });
  const form = (await app.request<{ signup_form: Form }>('POST', '/signup-forms', { body: { name: 'Limited', allowed_origins: ['http://shop.example'] } })).body.signup_form;
  const statuses: number[] = [];
  for (let i = 0; i < 11; i++) statuses.push((await submit(app, form.id, { email: `p${i}@dest.example` })).status);
  t.same(statuses, [...Array(10).fill(200), 429]);
  const over = await submit(app, form.id, { email: 'late@dest.example' }, { origin: 'http://shop.example' });
  t.equal(over.status, 429);
  t.equal(over.headers.get('access-control-allow-origin'), 'http://shop.example', 'the page that posted can read its 429');
  t.equal((await app.request('GET', '/contacts/late@dest.example')).status, 404);
  app.clock.advance(61_000);
  t.equal((await submit(app, form.id, { email: 'later@dest.example' })).status, 200, 'a new window');
});

t.test('double opt-in over a sink MX: pending until the emailed link is confirmed', async (t) => {
  const { app, sink, drain } = await env(t);
  const a = await audience(app);
  const form = (
    await app.request<{ signup_form: Form }>('POST', '/signup-forms', {
      body: {
        name: 'Weekly news',
        fields: [{ property: 'first_name', label: 'First name' }],
        segment_id: a.segment,
        topic_ids: [a.topic],
        double_opt_in: { from: 'News <news@acme.example>', subject: 'Confirm, please', html: '<p>Click <a href="{{ confirm_url }}">here</a> for {{ email }}</p>' },
      },
    })
  ).body.signup_form;
  const r = await submit(app, form.id, { email: 'dana@dest.example', properties: { first_name: 'Dana' } });
  t.same(r.body, { success: true, confirmation_required: true });
  const pending = (await app.request<{ contact: ContactView }>('GET', '/contacts/dana@dest.example')).body.contact;
  t.match(pending, { opt_in_status: 'pending', confirmed_at: null, first_name: 'Dana' });
  const events = async () => (await app.request<{ data: Array<{ type: string; data: Record<string, unknown> }> }>('GET', '/events?per_page=100')).body.data.filter((e) => e.type.startsWith('contact.'));
  t.same(await events(), [], 'no contact event while pending');
  t.same((await app.request<{ data: unknown[] }>('GET', `/contacts?segment_id=${a.dynamic}`)).body.data, [], 'not in a dynamic segment');
  t.same((await app.request<{ data: unknown[] }>('GET', `/subscription-topics/${a.topic}/subscribers?subscribed=true`)).body.data, [], 'not a topic subscriber');
  const { marketableContactSql } = await import('../../src/services/audience/index.js');
  const count = async () => ((await app.appliance.ctx.db.raw(`SELECT count(*) AS n FROM contacts AS c WHERE ${marketableContactSql}`)) as Array<{ n: number }>)[0]!.n;
  t.equal(await count(), 0, 'not marketable');

  t.equal((await submit(app, form.id, { email: 'dana@dest.example' })).status, 200);
  await drain();
  t.equal(sink.accepted.length, 1, 'one confirmation email (a second submit within the hour sends none)');
  const mail = await simpleParser(sink.accepted[0]!.raw);
  t.equal(mail.subject, 'Confirm, please');
  const link = /href="([^"]+)"/.exec(String(mail.html))![1]!.replaceAll('&#38;', '&');
  t.match(link, /\/f\/confirm\/[a-z2-7]+$/);
  const path = new URL(link).pathname;
  const page = await fetch(app.url + path);
  t.equal(page.status, 200);
  t.match(await page.text(), /Confirm my subscription/);
  t.equal((await app.request<{ contact: ContactView }>('GET', '/contacts/dana@dest.example')).body.contact.opt_in_status, 'pending', 'a GET changes nothing');
  const done = await fetch(app.url + path, { method: 'POST' });
  t.equal(done.status, 200);
  t.match(await done.text(), /Subscription confirmed/);
  const confirmed = (await app.request<{ contact: ContactView }>('GET', '/contacts/dana@dest.example')).body.contact;
  t.match(confirmed, { opt_in_status: 'confirmed', confirmed_at: app.clock.now().toISOString() });
  t.same((await app.request<{ data: Array<{ id: string }> }>('GET', `/contacts?segment_id=${a.segment}`)).body.data.map((c) => c.id), [confirmed.id], 'in the segment');
  t.same((await app.request<{ data: Array<{ contact_id: string }> }>('GET', `/subscription-topics/${a.topic}/subscribers?subscribed=true`)).body.data.map((s) => s.contact_id), [confirmed.id]);
  t.equal(await count(), 1, 'marketable');
  t.same((await events()).map((e) => e.type), ['contact.created'], 'contact.created at confirmation');
  t.match(await (await fetch(app.url + path, { method: 'POST' })).text(), /confirmed already/);

  const altered = path.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a'));
  t.equal((await fetch(app.url + altered)).status, 404);
  // Expiry: a new signup's link, 8 days later.
  await submit(app, form.id, { email: 'eli@dest.example' });
  await drain();
  const link2 = /href="([^"]+)"/.exec(String((await simpleParser(sink.accepted[1]!.raw)).html))![1]!;
  app.clock.advance(8 * 24 * 3600_000);
  t.equal((await fetch(app.url + new URL(link2).pathname, { method: 'POST' })).status, 410);
  t.equal((await app.request<{ contact: ContactView }>('GET', '/contacts/eli@dest.example')).body.contact.opt_in_status, 'pending');
});
