// Regressions found by a black-box conformance sweep of the REST API against the spec and the README:
// each block names the request that answered differently from what the documents (or a Resend/Postmark user)
// expect.
import t from 'tap';
import { startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';

interface ErrorBody {
  error: string;
  code: string;
}

t.test('conformance sweep', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  const idn = await addVerifiedDomain(app, dns, 'Bücher.example');
  t.equal(idn.name, 'xn--bcher-kva.example');

  t.test('POST /mailboxes takes an address on an IDN domain written in Unicode, as aliases and sends do', async (t) => {
    const res = await app.request<{ id: number; address: string; domainId: string }>('POST', '/mailboxes', {
      body: { address: 'Anna@Bücher.example', password: 'correct horse' },
    });
    t.equal(res.status, 201, res.text);
    t.equal(res.body.address, 'anna@xn--bcher-kva.example', 'stored under the ASCII form, lower-cased');
    t.equal(res.body.domainId, idn.id);
    const again = await app.request<ErrorBody>('POST', '/mailboxes', { body: { address: 'anna@xn--bcher-kva.example', password: 'correct horse' } });
    t.equal(again.status, 409, 'the same mailbox in its ASCII form');

    const alias = await app.request<{ address: string }>('POST', '/mailboxes/aliases', { body: { address: 'info@bücher.example', mailboxIds: [res.body.id] } });
    t.equal(alias.status, 201);
    t.equal(alias.body.address, 'info@xn--bcher-kva.example', 'as aliases always did');

    const filters = await app.request<{ rules: Array<{ actions: Array<{ type: string; to?: string }> }> }>('PUT', `/mailboxes/${res.body.id}/filters`, {
      body: { rules: [{ conditions: [], actions: [{ type: 'forward', to: 'Boss@Bücher.example' }] }] },
    });
    t.equal(filters.status, 200, filters.text);
    t.same(filters.body.rules[0]!.actions[0], { type: 'forward', to: 'Boss@xn--bcher-kva.example' }, 'a forward target too');

    for (const address of ['not-an-address', 'a@b', 'x@-bad.example', 'a@bücher']) {
      const bad = await app.request<ErrorBody>('POST', '/mailboxes', { body: { address, password: 'correct horse' } });
      t.equal(bad.status, 400, address);
      t.same(bad.body, { error: 'address: must be a valid email address', code: 'invalid_request' });
    }
    const missing = await app.request<ErrorBody>('POST', '/mailboxes', { body: { password: 'correct horse' } });
    t.same(missing.body, { error: 'Request body is missing required fields: address', code: 'invalid_request' });
    const bad = await app.request<ErrorBody>('PUT', `/mailboxes/${res.body.id}/filters`, { body: { rules: [{ conditions: [], actions: [{ type: 'forward', to: 'nobody' }] }] } });
    t.same(bad.body, { error: 'rules.0.actions.0.to: must be a valid email address', code: 'invalid_request' });
  });

  t.test('GET /inbound?domain= normalises the name as domains are (IDN to punycode, case, trailing dot)', async (t) => {
    // An inbound email of the IDN domain, as the MX stores it (under the domain's stored, ASCII name).
    await app.appliance.ctx.db('inbound_emails').insert({
      team_id: app.teamId,
      domain_id: idn.id,
      domain: idn.name,
      mail_from: 'sender@example.net',
      rcpt_to: JSON.stringify([`info@${idn.name}`]),
      from_header: 'sender@example.net',
      to_addrs: JSON.stringify([`info@${idn.name}`]),
      cc_addrs: '[]',
      reply_to: '[]',
      subject: 'hello',
      text: 'hi',
      headers: '[]',
      auth: JSON.stringify({ spf: 'none', dkim: 'none', dmarc: 'none', arc: 'none' }),
      mailbox_ids: '[]',
      raw: Buffer.from('Subject: hello\r\n\r\nhi\r\n'),
      size: 20,
      created_at: app.clock.now().toISOString(),
    });
    for (const name of ['xn--bcher-kva.example', 'bücher.example', 'BÜCHER.Example.']) {
      const res = await app.request<{ data: Array<{ domain: string }>; meta: { total: number } }>('GET', `/inbound?domain=${encodeURIComponent(name)}`);
      t.equal(res.status, 200);
      t.equal(res.body.meta.total, 1, name);
      t.equal(res.body.data[0]?.domain, 'xn--bcher-kva.example');
    }
    const unknown = await app.request<{ meta: { total: number } }>('GET', '/inbound?domain=nowhere.example');
    t.equal(unknown.body.meta.total, 0, 'an unknown name is an empty page');
  });

  t.test('a test-mode key reads live emails but neither cancels nor reschedules one', async (t) => {
    const key = (await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'ci', permission: 'full_access', mode: 'test' } })).body.token;
    const send = { from: 'me@bücher.example', to: 'you@example.net', subject: 'later', text: 'hi', scheduled_at: '2026-04-01T00:00:00Z' };
    const live = (await app.request<{ id: string }>('POST', '/emails', { body: send })).body.id;
    t.equal((await app.request('GET', `/emails/${live}`, { key })).status, 200, 'it reads a live email');
    const cancel = await app.request<ErrorBody>('POST', `/emails/${live}/cancel`, { key });
    t.equal(cancel.status, 403);
    t.same(cancel.body, { error: 'A test-mode API key can only cancel test-mode emails', code: 'forbidden' });
    const move = await app.request<ErrorBody>('PATCH', `/emails/${live}`, { key, body: { scheduled_at: '2026-05-01T00:00:00Z' } });
    t.equal(move.status, 403);
    t.same(move.body, { error: 'A test-mode API key can only reschedule test-mode emails', code: 'forbidden' });
    const after = await app.request<{ status: string; scheduled_at: string }>('GET', `/emails/${live}`);
    t.match(after.body, { status: 'queued', scheduled_at: '2026-04-01T00:00:00.000Z' }, 'the live email is untouched');

    const test = (await app.request<{ id: string }>('POST', '/emails', { body: send, key })).body.id;
    t.same((await app.request('PATCH', `/emails/${test}`, { key, body: { scheduled_at: '2026-05-01T00:00:00Z' } })).body, { success: true }, 'its own test email moves');
    t.same((await app.request('POST', `/emails/${test}/cancel`, { key })).body, { success: true }, 'and is cancelled');
    t.equal((await app.request('POST', `/emails/${live}/cancel`)).status, 200, 'a live key cancels the live one');
  });

  t.test('GET /openapi.json carries the interface version 1.0 (spec, Versioning)', async (t) => {
    const res = await app.request<{ info: { version: string; 'x-appliance-version': string } }>('GET', '/openapi.json', { key: null });
    t.equal(res.status, 200);
    t.equal(res.body.info.version, '1.0');
    t.equal(res.body.info['x-appliance-version'], app.appliance.ctx.version, "the software's own version beside it");
  });

  t.test('the Idempotency-Key header is held to the body field’s 256 characters', async (t) => {
    const send = { from: 'me@bücher.example', to: 'you@example.net', subject: 'hi', text: 'hi' };
    const long = await app.request<ErrorBody>('POST', '/emails', { body: send, headers: { 'Idempotency-Key': 'k'.repeat(257) } });
    t.equal(long.status, 400);
    t.same(long.body, { error: 'Idempotency-Key: must be at most 256 characters', code: 'invalid_request' });
    const inBody = await app.request<ErrorBody>('POST', '/emails', { body: { ...send, idempotency_key: 'k'.repeat(257) } });
    t.same(inBody.body, { error: 'idempotency_key: must be at most 256 characters', code: 'invalid_request' }, 'as in the body');
    const first = await app.request<{ id: string }>('POST', '/emails', { body: send, headers: { 'Idempotency-Key': 'k'.repeat(256) } });
    t.equal(first.status, 202);
    const replay = await app.request<{ id: string }>('POST', '/emails/send', { body: send, headers: { 'Idempotency-Key': 'k'.repeat(256) } });
    t.equal(replay.body.id, first.body.id, '256 characters work and replay');
  });

  t.test('wrong types name the field in the spec’s words, not zod’s', async (t) => {
    const send = { from: 'me@bücher.example', to: 'you@example.net', text: 'hi' };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...send, idempotency_key: null }, 'idempotency_key: must be a string'],
      [{ ...send, template_id: 5 }, 'template_id: must be a string'],
      [{ ...send, variables: { name: { first: 'Ann' } } }, 'variables.name: must be a string, number or boolean'],
      [{ ...send, variables: 'x' }, 'variables: must be an object of variable values'],
      [{ ...send, attachments: [null] }, 'attachments.0: must be an object with filename and content'],
      [{ ...send, attachments: [{ filename: 'a.txt', content: 'aGk=', content_type: 7 }] }, 'attachments.0.content_type: must be a MIME type such as application/pdf'],
    ];
    for (const [body, error] of cases) {
      const res = await app.request<ErrorBody>('POST', '/emails', { body });
      t.equal(res.status, 400, error);
      t.same(res.body, { error, code: 'invalid_request' });
    }
    const month = await app.request<ErrorBody>('GET', '/usage?month=2026-03&month=2026-04');
    t.same(month.body, { error: "Invalid query parameter 'month': must be a month as YYYY-MM", code: 'invalid_request' });
  });
});

t.test('rate limits count the path as routed: case and a trailing slash open no new window', async (t) => {
  const app = await startTestApp(t, { config: { rateLimits: true } });
  const body = { name: 'rl', permission: 'sending_access', mode: 'test' };
  const variants = ['/api-keys', '/API-KEYS', '/Api-Keys', '/api-keys/', '/API-keys/'];
  for (let i = 0; i < 10; i++) {
    const res = await app.request('POST', variants[i % variants.length]!, { body });
    t.equal(res.status, 201, `request ${i + 1}`);
    t.equal(res.headers.get('x-ratelimit-remaining'), String(9 - i), 'one window for every spelling');
  }
  for (const path of variants) {
    const res = await app.request<ErrorBody>('POST', path, { body });
    t.equal(res.status, 429, `${path}: the 11th in the minute is refused`);
    t.equal(res.body.code, 'rate_limit_exceeded');
  }
  // Ids stay apart: each email is its own counter, as the spec says.
  const a = await app.request('POST', '/emails/em_AAAAAAAAAAAAAAAAAAAAAAAA/cancel');
  const b = await app.request('POST', '/EMAILS/em_aaaaaaaaaaaaaaaaaaaaaaaa/cancel/');
  t.equal(a.headers.get('x-ratelimit-remaining'), '29');
  t.equal(b.headers.get('x-ratelimit-remaining'), '29', 'another id, another counter');
  const c = await app.request('POST', '/Emails/em_AAAAAAAAAAAAAAAAAAAAAAAA/Cancel');
  t.equal(c.headers.get('x-ratelimit-remaining'), '28', 'the same id in another spelling of the path, the same counter');
});

t.test('the edge send bucket takes POST /emails/send and /emails/batch in any case', async (t) => {
  const app = await startTestApp(t, { config: { rateLimits: true } });
  // The fake clock stands still: no token comes back. The send bucket holds 20 (the other one 50).
  const paths = ['/EMAILS/SEND', '/Emails/Batch/', '/emails/Send'];
  for (let i = 0; i < 20; i++) {
    const res = await app.request('POST', paths[i % paths.length]!, { key: null, body: {} });
    t.equal(res.status, 401, `request ${i + 1} passes the edge`);
  }
  const refused = await app.request('POST', '/Emails/Send', { key: null, body: {} });
  t.equal(refused.status, 429, 'the 21st is refused at the edge');
  t.match(refused.headers.get('content-type'), /^text\/html/);
  t.equal((await app.request('GET', '/health', { key: null })).status, 200, 'the other bucket is untouched');
});
