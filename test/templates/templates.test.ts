// Templates over the real API: versions, publishing, merge tags (escaping, raw, defaults, syntax errors),
// render, lists with counts, tenant isolation; and sends by template_id (single, batch, previews) received by
// a sink MX and DKIM-verified, with the email recording its template and version.
import t from 'tap';
import { simpleParser } from 'mailparser';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { createOtherTeam, startTestApp, type TestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

interface Template {
  id: string;
  name: string;
  subject: string;
  html: string;
  text: string | null;
  variables: string[];
  version: number;
  published: boolean;
  published_version: number | null;
  updated_at: string;
}
interface Err {
  error: string;
  code: string;
}
interface Rendered {
  version: number;
  subject: string;
  html: string;
  text: string | null;
  missing_variables: string[];
}

async function create(app: TestApp, body: Record<string, unknown>, key?: string): Promise<Template> {
  const res = await app.request<{ template: Template }>('POST', '/templates', { body, ...(key ? { key } : {}) });
  if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
  return res.body.template;
}

t.test('versions: every update is a version; publish, unpublish, restore, duplicate, delete', async (t) => {
  const app = await startTestApp(t);
  const tpl = await create(app, { name: 'Welcome', subject: 'Hi {{ name }}', html: '<p>v1 {{ name }}</p>', variables: ['name'] });
  t.match(tpl, { name: 'Welcome', version: 1, published: false, published_version: null, text: null, variables: ['name'] });
  t.match(tpl.id, /^tpl_/);

  app.clock.advance(1000);
  const v2 = await app.request<{ template: Template }>('PATCH', `/templates/${tpl.id}`, { body: { html: '<p>v2 {{ name }}</p>' } });
  t.equal(v2.status, 200);
  t.match(v2.body.template, { version: 2, html: '<p>v2 {{ name }}</p>', subject: 'Hi {{ name }}' });
  t.equal((await app.request<{ template: Template }>('POST', `/templates/${tpl.id}/publish`)).body.template.published_version, 2);
  app.clock.advance(1000);
  await app.request('PATCH', `/templates/${tpl.id}`, { body: { html: '<p>v3 {{ name }}</p>', name: 'Welcome!' } });

  const got = (await app.request<{ template: Template }>('GET', `/templates/${tpl.id}`)).body.template;
  t.match(got, { name: 'Welcome!', version: 3, published: true, published_version: 2 }, 'editing a published template keeps its published version');
  const versions = await app.request<{ data: Array<{ version: number; published: boolean; html: string }>; meta: { total: number } }>('GET', `/templates/${tpl.id}/versions`);
  t.same(versions.body.data.map((v) => [v.version, v.published]), [[3, false], [2, true], [1, false]], 'newest first');
  t.equal((await app.request<{ version: { html: string } }>('GET', `/templates/${tpl.id}/versions/1`)).body.version.html, '<p>v1 {{ name }}</p>');
  t.equal((await app.request<Err>('GET', `/templates/${tpl.id}/versions/9`)).body.error, 'Template version 9 not found');
  t.equal((await app.request<Err>('GET', `/templates/${tpl.id}/versions/x`)).status, 400);

  const restored = await app.request<{ template: Template }>('POST', `/templates/${tpl.id}/versions/1/restore`);
  t.match(restored.body.template, { version: 4, html: '<p>v1 {{ name }}</p>', name: 'Welcome', published_version: 2 }, 'a restore is a new version');
  t.equal((await app.request<{ template: Template }>('POST', `/templates/${tpl.id}/unpublish`)).body.template.published, false);

  const copy = await app.request<{ template: Template }>('POST', `/templates/${tpl.id}/duplicate`);
  t.equal(copy.status, 201);
  t.match(copy.body.template, { name: 'Welcome (copy)', version: 1, published: false, html: '<p>v1 {{ name }}</p>' });
  t.not(copy.body.template.id, tpl.id);

  t.equal((await app.request('DELETE', `/templates/${tpl.id}`)).status, 200);
  for (const [m, p] of [['GET', `/templates/${tpl.id}`], ['PATCH', `/templates/${tpl.id}`], ['POST', `/templates/${tpl.id}/publish`], ['GET', `/templates/${tpl.id}/versions`], ['POST', `/templates/${tpl.id}/render`]] as const) {
    const res = await app.request<Err>(m, p, m === 'PATCH' ? { body: { name: 'x' } } : {});
    t.same([res.status, res.body], [404, { error: 'Template not found', code: 'not_found' }], `${m} ${p}`);
  }
});

t.test('merge tags: escaped in html, plain in text and subject, raw and default forms; errors at save', async (t) => {
  const app = await startTestApp(t);
  const tpl = await create(app, {
    name: 'Tags',
    subject: 'Hello {{ name }}!',
    html: '<p>{{ name }}</p><div>{{{ block }}}</div><div>{{ block | raw }}</div><p>{{ greeting | default: "friend" }}</p>{% if vip %}<b>VIP</b>{% endif %}',
    text: 'Hi {{ name }}, {{ greeting | default: "friend" }}',
  });
  const r = await app.request<Rendered>('POST', `/templates/${tpl.id}/render`, { body: { variables: { name: '<script>alert(1)</script>', block: '<i>ok</i>', vip: true } } });
  t.equal(r.status, 200);
  t.equal(r.body.html, '<p>&lt;script&gt;alert(1)&lt;/script&gt;</p><div><i>ok</i></div><div><i>ok</i></div><p>friend</p><b>VIP</b>');
  t.equal(r.body.text, 'Hi <script>alert(1)</script>, friend', 'the text part is not escaped');
  t.equal(r.body.subject, 'Hello <script>alert(1)</script>!');
  t.same(r.body.missing_variables, ['greeting']);
  const empty = await app.request<Rendered>('POST', `/templates/${tpl.id}/render`, {});
  t.same(empty.body.missing_variables, ['block', 'greeting', 'name', 'vip'], 'unknown variables render empty and are listed');
  t.equal(empty.body.subject, 'Hello !');

  const cases: Array<[Record<string, unknown>, string]> = [
    [{ name: 'x', subject: 's', html: '<p>\n{% if %}</p>' }, 'html: invalid value expression: "", line:2, col:6'],
    [{ name: 'x', subject: '{{ a | nosuchfilter }}', html: 'h' }, 'subject: undefined filter: nosuchfilter, line:1, col:1'],
    [{ name: 'x', subject: 's', html: '{% include "/etc/passwd" %}' }, 'html: '],
    [{ name: 'x', subject: 's' }, 'Request body is missing required fields: html'],
    [{ name: 'x', html: 'h' }, 'Request body is missing required fields: subject'],
    [{ name: 'x', subject: 's', html: 'h', variables: ['bad name'] }, 'variables.0: must be a variable name (letters, digits, _)'],
  ];
  for (const [body, error] of cases) {
    const res = await app.request<Err>('POST', '/templates', { body });
    t.equal(res.status, 400, JSON.stringify(body));
    t.match(res.body.error, error);
  }
  const loop = await create(app, { name: 'loop', subject: 's', html: '{% for i in (1..100000000) %}{{ i }}{% endfor %}' });
  const refused = await app.request<Err>('POST', `/templates/${loop.id}/render`, {});
  t.equal(refused.status, 400, 'a template that would exhaust the box is refused, not run');
  t.match(refused.body.error, /^Template cannot be rendered: /);
});

t.test('lists: most recently updated first, search, published, counts; tenant isolation', async (t) => {
  const app = await startTestApp(t);
  const a = await create(app, { name: 'Alpha receipt', subject: 'Your receipt', html: 'a' });
  app.clock.advance(1000);
  const b = await create(app, { name: 'Beta', subject: 'Newsletter', html: 'b' });
  app.clock.advance(1000);
  await app.request('POST', `/templates/${a.id}/publish`);
  const list = await app.request<{ data: Template[]; meta: { total: number }; counts: { published: number; draft: number } }>('GET', '/templates');
  t.same(list.body.data.map((x) => x.id), [a.id, b.id], 'publishing updates');
  t.same(list.body.counts, { published: 1, draft: 1 });
  t.same((await app.request<{ data: Template[] }>('GET', '/templates?search=RECEIPT')).body.data.map((x) => x.id), [a.id]);
  t.same((await app.request<{ data: Template[] }>('GET', '/templates?search=newsl')).body.data.map((x) => x.id), [b.id], 'the subject too');
  const drafts = await app.request<{ data: Template[]; counts: { published: number; draft: number } }>('GET', '/templates?published=false');
  t.same(drafts.body.data.map((x) => x.id), [b.id]);
  t.same(drafts.body.counts, { published: 1, draft: 1 }, 'counts are the whole team’s');

  const other = await createOtherTeam(app);
  const theirs = await create(app, { name: 'Theirs', subject: 's', html: 'h' }, other.apiKey);
  t.equal((await app.request('GET', `/templates/${theirs.id}`)).status, 404);
  t.equal((await app.request('POST', `/templates/${theirs.id}/duplicate`)).status, 404);
  t.equal((await app.request<{ meta: { total: number } }>('GET', '/templates')).body.meta.total, 2);
});

t.test('sending by template: single, batch, previews, overrides; received and DKIM-verified', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: true });
  t.teardown(() => sink.close());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port } });
  await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);

  const tpl = await create(app, { name: 'Order', subject: 'Order {{ order }} shipped', html: '<p>Hi {{ name }}, order <b>{{ order }}</b> is on its way.</p>', variables: ['order'] });
  const send = (body: Record<string, unknown>) => app.request<{ id: string } & Err>('POST', '/emails', { body: { from: 'shop@acme.example', to: ['ann@dest.example'], ...body } });

  const unpublished = await send({ template_id: tpl.id, variables: { order: '1' } });
  t.same([unpublished.status, unpublished.body], [422, { error: 'Template is not published', code: 'unprocessable_entity' }]);
  const unknown = await send({ template_id: 'tpl_nope' });
  t.same([unknown.status, unknown.body.error], [422, "Template 'tpl_nope' not found"]);
  await app.request('POST', `/templates/${tpl.id}/publish`);
  const missing = await send({ template_id: tpl.id, variables: { name: 'Ann' } });
  t.same([missing.status, missing.body.error], [422, 'Missing template variables: order']);

  const ok = await send({ template_id: tpl.id, variables: { name: 'Ann <& co>', order: 'A-17' } });
  t.equal(ok.status, 202, ok.text);
  // An edit after the send changes nothing already accepted, nor what is sent until it is published again.
  await app.request('PATCH', `/templates/${tpl.id}`, { body: { subject: 'CHANGED {{ order }}' } });
  const batch = await app.request<{ data: Array<{ id: string }> }>('POST', '/emails/batch', {
    body: { emails: [{ from: 'shop@acme.example', to: ['bob@dest.example'], template_id: tpl.id, variables: { name: 'Bob', order: 'B-2' } }, { from: 'shop@acme.example', to: ['cy@dest.example'], template_id: tpl.id, variables: { order: 'C-3' }, subject: 'My own subject' }] },
  });
  t.equal(batch.status, 202, batch.text);
  await app.appliance.ctx.jobs.drain();
  t.equal(sink.accepted.length, 3);

  const byRcpt = new Map(sink.accepted.map((tx) => [tx.to[0]!, tx]));
  const ann = await simpleParser(byRcpt.get('ann@dest.example')!.raw);
  t.equal(ann.subject, 'Order A-17 shipped');
  t.equal(ann.html, '<p>Hi Ann &lt;&amp; co&gt;, order <b>A-17</b> is on its way.</p>');
  t.match(ann.text, /Hi Ann <& co>, order A-17 is on its way\./, 'the text part derived from the rendered html, unescaped');
  const bob = await simpleParser(byRcpt.get('bob@dest.example')!.raw);
  t.equal(bob.subject, 'Order B-2 shipped', 'the published version, not the later edit');
  t.equal((await simpleParser(byRcpt.get('cy@dest.example')!.raw)).subject, 'My own subject', 'the request’s own subject wins');
  for (const tx of sink.accepted) {
    const v = await dkimVerify(tx.raw, { resolver: (name: string, rr: string) => app.appliance.ctx.dns.raw(name, rr) as Promise<string[][]> });
    t.equal(v.results[0]?.status.result, 'pass', 'DKIM verifies');
  }

  const detail = await app.request<{ subject: string; html: string; template: { id: string; version: number } }>('GET', `/emails/${ok.body.id}`);
  t.same(detail.body.template, { id: tpl.id, version: 1 });
  t.equal(detail.body.subject, 'Order A-17 shipped', 'the rendering is what is stored');
  const plain = await send({ subject: 's', html: 'h' });
  t.equal((await app.request<{ template: null }>('GET', `/emails/${plain.body.id}`)).body.template, null);

  const preview = await app.request<{ subject: string; html: string }>('POST', '/emails/preview', { body: { from: 'shop@acme.example', to: ['x@dest.example'], template_id: tpl.id, variables: { order: 'P-1' } } });
  t.equal(preview.status, 200, preview.text);
  t.equal(preview.body.subject, 'Order P-1 shipped');

  // Idempotency compares the request as asked.
  const first = await send({ template_id: tpl.id, variables: { order: 'I-1' }, idempotency_key: 'k1' });
  const again = await send({ template_id: tpl.id, variables: { order: 'I-1' }, idempotency_key: 'k1' });
  t.equal(again.body.id, first.body.id, 'a replay answers the first id');
  const different = await send({ template_id: tpl.id, variables: { order: 'I-2' }, idempotency_key: 'k1' });
  t.equal(different.status, 409, 'other variables under the same key conflict');
});

t.test('the visual builder and presets: blocks compiled on save, refused with their path, presets used', async (t) => {
  const app = await startTestApp(t);
  const presets = await app.request<{ presets: Array<{ id: string; variables: string[] }> }>('GET', '/templates/presets');
  t.same(presets.body.presets.map((p) => p.id), ['welcome', 'password-reset', 'receipt', 'newsletter', 'announcement'], 'a fixed order');

  const used = await app.request<{ template: Template & { builder_type: string; builder_blocks: unknown[] } }>('POST', '/templates/presets/password-reset/use', { body: { name: 'Reset' } });
  t.equal(used.status, 201, used.text);
  t.match(used.body.template, { name: 'Reset', builder_type: 'visual', version: 1, published: false });
  t.ok(used.body.template.builder_blocks.length > 0, 'the blocks are kept');
  t.match(used.body.template.html, /<table/, 'compiled to email-safe tables');
  t.match(used.body.template.html, /\{\{ ?reset_url ?\}\}/, 'merge tags pass through the compiler');
  t.ok(used.body.template.text && used.body.template.text.length > 0, 'a text part is made');
  t.equal((await app.request<Err>('POST', '/templates/presets/nope/use', {})).status, 404);

  const blocks = [{ type: 'section', columns: [{ blocks: [{ type: 'text', text: 'Hello **{{ name }}** <script>' }, { type: 'button', label: 'Open', url: 'https://example.com/{{ id }}' }] }] }];
  const created = await create(app, { name: 'Visual', subject: 'Hi', builder_type: 'visual', builder_blocks: blocks });
  t.match(created.html, /<strong>/);
  t.notMatch(created.html, /<script>/, 'user text is escaped');
  const r = await app.request<Rendered>('POST', `/templates/${created.id}/render`, { body: { variables: { name: 'Ann', id: '42' } } });
  t.match(r.body.html, /<strong>Ann<\/strong>/);
  t.match(r.body.html, /https:\/\/example\.com\/42/);

  const bad = await app.request<Err>('POST', '/templates', { body: { name: 'Bad', subject: 's', builder_type: 'visual', builder_blocks: [{ type: 'section', columns: [{ blocks: [{ type: 'button', label: 'x', url: 'javascript:alert(1)' }] }] }] } });
  t.equal(bad.status, 400);
  t.match(bad.body.error, /^builder_blocks\.0\.columns\.0\.blocks\.0\.url: /, 'a bad block names its path');
  const missing = await app.request<Err>('POST', '/templates', { body: { name: 'No blocks', subject: 's', builder_type: 'visual' } });
  t.equal(missing.body.error, 'Request body is missing required fields: builder_blocks');

  const edited = await app.request<{ template: Template }>('PATCH', `/templates/${created.id}`, { body: { builder_blocks: [{ type: 'text', text: 'Second version' }] } });
  t.equal(edited.status, 200, edited.text);
  t.match(edited.body.template.html, /Second version/);
  t.equal(edited.body.template.version, 2);
  const htmlOnly = await app.request<Err>('PATCH', `/templates/${created.id}`, { body: { html: '<p>x</p>' } });
  t.equal(htmlOnly.status, 400, 'a visual template’s html is its blocks’');
});
