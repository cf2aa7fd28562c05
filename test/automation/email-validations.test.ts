// POST /email-validations and /batch over real HTTP, against a loopback DNS server the test writes: every
// result and reason, the DNS outcomes (MX, A/AAAA fallback, null MX, NXDOMAIN, SERVFAIL, timeout), IDN and
// SMTPUTF8 addresses, the disposable, role, typo and suppression checks (per team), batch order and bound,
// the per-domain DNS cache counted at the server, errors, access, rate limits and the OpenAPI document.
import t from 'tap';
import { createOtherTeam, startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addSuppression } from '../../src/services/audience/suppressions.js';
import { DEADLINE_TIMEOUTS, mailRoutes, ROUTE_TTL_MS } from '../../src/services/automation/mail-routes.js';
import { validateEmail, type EmailValidation } from '../../src/services/automation/validation.js';
import { readsOf } from '../../src/db/index.js';

interface ErrorBody {
  error: string;
  code: string;
}

t.test('email validation', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  const other = await createOtherTeam(app);

  dns.set('MX', 'good.example', [{ exchange: 'mx2.good.example', priority: 20 }, { exchange: 'mx1.good.example', priority: 10 }]);
  dns.set('A', 'afallback.example', ['192.0.2.10']);
  dns.set('AAAA', 'v6only.example', ['2001:db8::25']);
  dns.set('MX', 'nullmx.example', [{ exchange: '', priority: 0 }]);
  dns.set('TXT', 'nomail.example', ['v=spf1 -all']); // exists, but neither MX nor address records
  dns.fail('broken.example');
  dns.drop('silent.example');
  dns.set('MX', 'xn--bcher-kva.example', [{ exchange: 'mx.xn--bcher-kva.example', priority: 10 }]);
  dns.set('MX', 'xn--fsqu00a.xn--4rr70v', [{ exchange: 'mx.xn--fsqu00a.xn--4rr70v', priority: 10 }]);
  dns.set('MX', 'mailinator.com', [{ exchange: 'mail.mailinator.com', priority: 1 }]);
  dns.set('MX', 'own-burner.example', [{ exchange: 'mail.mailinator.com', priority: 10 }]);
  dns.set('MX', 'gmail.com', [{ exchange: 'gmail-smtp-in.l.google.com', priority: 5 }]);
  dns.set('MX', 'gamil.com', [{ exchange: 'mx.gamil.com', priority: 10 }]); // a typo squatter that takes mail
  dns.set('MX', 'gmial.com', [{ exchange: 'mx.gmial.com', priority: 10 }]); // one the disposable list already names

  const validate = (email: unknown, key?: string) => app.request<EmailValidation>('POST', '/email-validations', { body: { email }, ...(key ? { key } : {}) });

  t.test('a deliverable address: the whole answer', async (t) => {
    const res = await validate('Ann.Lee@Good.Example');
    t.equal(res.status, 200, res.text);
    t.same(res.body, {
      success: true,
      email: 'Ann.Lee@Good.Example',
      normalized_email: 'Ann.Lee@good.example',
      user: 'Ann.Lee',
      domain: 'good.example',
      result: 'deliverable',
      reason: 'mail_server_found',
      did_you_mean: null,
      checks: {
        syntax: { valid: true, message: null, smtputf8: false, idn: false },
        mx: { status: 'found', records: [{ exchange: 'mx1.good.example', priority: 10 }, { exchange: 'mx2.good.example', priority: 20 }], message: null },
        disposable: false,
        role: false,
        typo: false,
        suppressed: false,
      },
    });
    t.equal((await validate('  ann@good.example ')).body.result, 'deliverable', 'surrounding spaces are not part of the address');
  });

  t.test('where the domain sends its mail: each DNS outcome', async (t) => {
    const cases: Array<[email: string, result: string, reason: string, status: string, records: Array<{ exchange: string; priority: number }>, message: RegExp | null]> = [
      ['a@afallback.example', 'deliverable', 'mail_server_found', 'implicit', [{ exchange: 'afallback.example', priority: 0 }], null],
      ['a@v6only.example', 'deliverable', 'mail_server_found', 'implicit', [{ exchange: 'v6only.example', priority: 0 }], null],
      ['a@nullmx.example', 'undeliverable', 'null_mx', 'null_mx', [], /null MX, RFC 7505/],
      ['a@nowhere.example', 'undeliverable', 'no_mail_server', 'no_records', [], /no MX or address records/], // NXDOMAIN
      ['a@nomail.example', 'undeliverable', 'no_mail_server', 'no_records', [], /no MX or address records/],
      ['a@broken.example', 'unknown', 'dns_unavailable', 'lookup_failed', [], /SERVFAIL|ESERVFAIL/],
    ];
    for (const [email, result, reason, status, records, message] of cases) {
      const res = await validate(email);
      t.equal(res.status, 200, email);
      t.same([res.body.result, res.body.reason, res.body.checks.mx.status, res.body.checks.mx.records], [result, reason, status, records], email);
      if (message) t.match(res.body.checks.mx.message, message, `${email}: the DNS's answer`);
      else t.equal(res.body.checks.mx.message, null, `${email}: no message`);
    }
  });

  t.test('a DNS server that does not answer: unknown, after the resolver gives up', async (t) => {
    const res = await validate('a@silent.example');
    t.same([res.status, res.body.result, res.body.reason, res.body.checks.mx.status], [200, 'unknown', 'dns_unavailable', 'lookup_failed']);
    t.match(res.body.checks.mx.message, /TIMEOUT/);
  });

  t.test('a request waits for the DNS no longer than its deadline', async (t) => {
    const dead = Array.from({ length: 40 }, (_, i) => `dead${i}.example`);
    for (const d of dead) dns.drop(d);
    const started = Date.now();
    const routes = await mailRoutes(app.appliance.ctx, ['good.example', ...dead], 300);
    t.ok(Date.now() - started < 1800, 'answered at the deadline, not after two rounds of the resolver giving up (2 s each)');
    t.same(dead.filter((d) => routes.get(d)?.status !== 'lookup_failed'), [], 'every unanswered domain: lookup_failed');
    t.match(routes.get('dead39.example')?.message, /no answer from the DNS within 300 ms/);
    t.equal(routes.get('good.example')?.status, 'found', 'a kept answer is given as it is');
    t.equal(DEADLINE_TIMEOUTS * app.appliance.ctx.config.dnsTimeoutMs, 3000, 'by default: three look-up timeouts');
  });

  t.test('syntax: not an address is an undeliverable answer, not an error', async (t) => {
    for (const [email, message] of [
      ['not-an-address', /no @/],
      ['ann..lee@good.example', /dot-atom/],
      ['ann@good', /top-level domain/],
      ['', /empty/],
    ] as const) {
      const res = await validate(email);
      t.equal(res.status, 200, email);
      t.same([res.body.result, res.body.reason, res.body.normalized_email, res.body.domain, res.body.checks.mx], ['undeliverable', 'invalid_syntax', null, null, { status: 'not_checked', records: [], message: null }], email);
      t.equal(res.body.checks.syntax.valid, false);
      t.match(res.body.checks.syntax.message, message, email);
    }
  });

  t.test('IDN and SMTPUTF8 addresses', async (t) => {
    const idn = await validate('anna@Bücher.example');
    t.same([idn.body.result, idn.body.domain, idn.body.normalized_email, idn.body.checks.syntax], ['deliverable', 'xn--bcher-kva.example', 'anna@xn--bcher-kva.example', { valid: true, message: null, smtputf8: false, idn: true }]);
    const ascii = await validate('anna@xn--bcher-kva.example');
    t.same([ascii.body.result, ascii.body.checks.syntax.idn], ['deliverable', true], 'the same domain written in ASCII');
    const utf8 = await validate('josé@good.example');
    t.same([utf8.body.result, utf8.body.user, utf8.body.checks.syntax], ['deliverable', 'josé', { valid: true, message: null, smtputf8: true, idn: false }]);
    const both = await validate('用户@例子.广告');
    t.same([both.body.result, both.body.normalized_email, both.body.checks.syntax.smtputf8, both.body.checks.syntax.idn], ['deliverable', '用户@xn--fsqu00a.xn--4rr70v', true, true]);
  });

  t.test('risky: disposable, typo, role account', async (t) => {
    const burner = await validate('x@mailinator.com');
    t.same([burner.body.result, burner.body.reason, burner.body.checks.disposable, burner.body.checks.mx.status], ['risky', 'disposable', true, 'found']);
    const own = await validate('x@own-burner.example');
    t.same([own.body.result, own.body.reason, own.body.checks.disposable], ['risky', 'disposable', true], 'a domain whose mail goes to a disposable provider');

    const typo = await validate('ann@gamil.com');
    t.same([typo.body.result, typo.body.reason, typo.body.did_you_mean, typo.body.checks.typo, typo.body.checks.mx.status], ['risky', 'possible_typo', 'ann@gmail.com', true, 'found']);
    const listed = await validate('ann@gmial.com');
    t.same([listed.body.reason, listed.body.did_you_mean, listed.body.checks.typo, listed.body.checks.disposable], ['disposable', 'ann@gmail.com', true, true], 'a squatter on the disposable list: disposable weighs more, the suggestion stays');
    const gone = await validate('ann@gmial.con');
    t.same([gone.body.result, gone.body.reason, gone.body.did_you_mean], ['undeliverable', 'no_mail_server', 'ann@gmail.com'], 'a typo that does not resolve is undeliverable, with its suggestion');
    const right = await validate('ann@gmail.com');
    t.same([right.body.result, right.body.did_you_mean, right.body.checks.typo], ['deliverable', null, false]);

    for (const local of ['postmaster', 'info', 'noreply', 'No-Reply', 'support+billing']) {
      const role = await validate(`${local}@good.example`);
      t.same([role.body.result, role.body.reason, role.body.checks.role], ['risky', 'role_account', true], local);
    }
    const roleAtBurner = await validate('info@mailinator.com');
    t.same([roleAtBurner.body.reason, roleAtBurner.body.checks.role, roleAtBurner.body.checks.disposable], ['disposable', true, true], 'disposable weighs more than role; both checks shown');
  });

  t.test("suppressed: the team's own list, whatever the case", async (t) => {
    await addSuppression(app.appliance.ctx.db, app.clock.now(), app.teamId, 'gone@good.example', 'bounce');
    const res = await validate('Gone@Good.Example');
    t.same([res.body.result, res.body.reason, res.body.checks.suppressed], ['undeliverable', 'suppressed', true]);
    const elsewhere = await validate('gone@good.example', other.apiKey);
    t.same([elsewhere.body.result, elsewhere.body.reason, elsewhere.body.checks.suppressed], ['deliverable', 'mail_server_found', false], "another team's list is not this one's");
    await addSuppression(app.appliance.ctx.db, app.clock.now(), other.teamId, 'theirs@good.example', 'complaint');
    t.equal((await validate('theirs@good.example')).body.checks.suppressed, false, 'nor the other way round');
    t.equal((await validate('theirs@good.example', other.apiKey)).body.reason, 'suppressed');

    // Concurrent requests of both teams share suppression reads (one statement): each still sees only its own list.
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const mine = i % 2 === 0;
        return validate(i % 4 < 2 ? 'gone@good.example' : 'theirs@good.example', mine ? undefined : other.apiKey).then((r) => ({ mine, email: r.body.email, suppressed: r.body.checks.suppressed }));
      }),
    );
    const wrong = answers.filter((a) => a.suppressed !== (a.mine ? a.email === 'gone@good.example' : a.email === 'theirs@good.example'));
    t.same(wrong, [], '40 concurrent requests of two teams: every answer from its own team\'s list');
    const batches = await Promise.all([
      app.request<{ data: EmailValidation[] }>('POST', '/email-validations/batch', { body: { emails: ['gone@good.example', 'theirs@good.example'] } }),
      app.request<{ data: EmailValidation[] }>('POST', '/email-validations/batch', { body: { emails: ['gone@good.example', 'theirs@good.example'] }, key: other.apiKey }),
    ]);
    t.same(batches.map((b) => b.body.data.map((v) => v.checks.suppressed)), [[true, false], [false, true]], 'and concurrent batches');

    // Validations asked in the same turn: one suppression statement for all of them, whatever their team.
    const ctx = app.appliance.ctx;
    const statements: string[] = [];
    const count = (q: { sql: string }) => void (q.sql.includes('FROM suppressions') && statements.push(q.sql));
    readsOf(ctx.db).on('query', count);
    const direct = await Promise.all(Array.from({ length: 10 }, (_, i) => validateEmail(ctx, i % 2 ? other.teamId : app.teamId, 'gone@good.example')));
    readsOf(ctx.db).off('query', count);
    t.same(direct.map((v) => v.checks.suppressed), Array.from({ length: 10 }, (_, i) => i % 2 === 0), 'each its own team\'s answer');
    t.equal(statements.length, 1, 'one statement for ten validations of two teams');
  });

  t.test('batch: one answer per address, in order', async (t) => {
    await addSuppression(app.appliance.ctx.db, app.clock.now(), app.teamId, 'blocked@good.example', 'manual');
    const emails = ['ann@good.example', 'nope', 'a@nullmx.example', 'info@good.example', 'ann@gamil.com', 'blocked@good.example', 'a@broken.example', 'x@mailinator.com', 'ann@good.example'];
    const res = await app.request<{ data: EmailValidation[] }>('POST', '/email-validations/batch', { body: { emails } });
    t.equal(res.status, 200);
    t.same(res.body.data.map((v) => v.email), emails, 'in the order given, duplicates kept');
    t.same(
      res.body.data.map((v) => `${v.result}/${v.reason}`),
      ['deliverable/mail_server_found', 'undeliverable/invalid_syntax', 'undeliverable/null_mx', 'risky/role_account', 'risky/possible_typo', 'undeliverable/suppressed', 'unknown/dns_unavailable', 'risky/disposable', 'deliverable/mail_server_found'],
    );
    const single = await validate('ann@gamil.com');
    t.same(res.body.data[4], single.body, 'a batch answer is the single answer');
  });

  t.test('batch bound: 1,000 addresses, 400 past it', async (t) => {
    const many = Array.from({ length: 1000 }, (_, i) => `user${i}@good.example`);
    const ok = await app.request<{ data: EmailValidation[] }>('POST', '/email-validations/batch', { body: { emails: many } });
    t.equal(ok.status, 200);
    t.equal(ok.body.data.length, 1000);
    t.equal(ok.body.data[999]!.email, 'user999@good.example');
    const over = await app.request<ErrorBody>('POST', '/email-validations/batch', { body: { emails: [...many, 'one@more.example'] } });
    t.same([over.status, over.body], [400, { error: 'emails: must contain at most 1,000 addresses (the batch limit)', code: 'invalid_request' }]);
  });

  t.test("errors in the spec's format", async (t) => {
    const cases: Array<[path: string, body: unknown, error: string]> = [
      ['/email-validations', {}, 'Request body is missing required fields: email'],
      ['/email-validations', { email: 42 }, 'email: must be a string'],
      ['/email-validations', { email: ['a@good.example'] }, 'email: must be a string'],
      ['/email-validations', { email: `${'a'.repeat(1100)}@good.example` }, 'email: must be at most 1,024 characters'],
      ['/email-validations/batch', {}, 'Request body is missing required fields: emails'],
      ['/email-validations/batch', { emails: 'a@good.example' }, 'emails: must be an array of strings'],
      ['/email-validations/batch', { emails: [] }, 'emails: must contain at least 1 address'],
      ['/email-validations/batch', { emails: ['a@good.example', 7] }, 'emails.1: must be a string'],
    ];
    for (const [path, body, error] of cases) {
      const res = await app.request<ErrorBody>('POST', path, { body });
      t.same([res.status, res.body], [400, { error, code: 'invalid_request' }], `${path} ${JSON.stringify(body).slice(0, 60)}`);
    }
    const noKey = await app.request<ErrorBody>('POST', '/email-validations', { body: { email: 'a@good.example' }, key: null });
    t.same([noKey.status, noKey.body], [401, { error: 'Invalid API key', code: 'unauthorized' }]);
  });

  t.test('a sending_access key may validate', async (t) => {
    const key = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'sender', permission: 'sending_access' } });
    t.equal(key.status, 201);
    t.equal((await validate('ann@good.example', key.body.token)).body.result, 'deliverable');
    const batch = await app.request('POST', '/email-validations/batch', { body: { emails: ['ann@good.example'] }, key: key.body.token });
    t.equal(batch.status, 200);
  });

  t.test('the OpenAPI document describes both routes and the answer', async (t) => {
    interface Op {
      summary: string;
      'x-permission': string;
      responses: Record<string, { content?: Record<string, { schema: { properties?: Record<string, { enum?: string[] }> } }> }>;
    }
    const doc = await app.request<{ paths: Record<string, { post?: Op }> }>('GET', '/openapi.json');
    const single = doc.body.paths['/email-validations']?.post;
    const batch = doc.body.paths['/email-validations/batch']?.post;
    t.match(single?.summary, /never probed over SMTP/);
    t.match(batch?.summary, /1,000 addresses/);
    t.same([single?.['x-permission'], batch?.['x-permission']], ['sending_access', 'sending_access']);
    const answer = single?.responses['200']?.content?.['application/json']?.schema.properties ?? {};
    t.same(Object.keys(answer).sort(), ['checks', 'did_you_mean', 'domain', 'email', 'normalized_email', 'reason', 'result', 'success', 'user']);
    t.same(answer.result?.enum, ['deliverable', 'risky', 'undeliverable', 'unknown']);
    t.ok(single?.responses['429'] && batch?.responses['429'], 'both answer 429 when over their rate limit');
  });
});

t.test('DNS answers are kept per domain: 1,000 addresses at 20 domains cost 20 look-ups', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  const domains = Array.from({ length: 20 }, (_, i) => `d${i}.cache.example`);
  for (const d of domains) dns.set('MX', d, [{ exchange: `mx.${d}`, priority: 10 }]);
  const emails = Array.from({ length: 1000 }, (_, i) => `user${i}@${domains[i % 20]}`);
  const batch = () => app.request<{ data: EmailValidation[] }>('POST', '/email-validations/batch', { body: { emails } });

  let before = dns.queries.length;
  const first = await batch();
  t.equal(first.status, 200);
  t.ok(first.body.data.every((v) => v.result === 'deliverable'), 'all deliverable');
  const asked = dns.queries.slice(before);
  t.equal(asked.length, 20, 'one question per domain');
  t.same([...asked].sort(), domains.map((d) => `MX ${d}`).sort(), 'each domain asked once, for its MX');

  before = dns.queries.length;
  t.equal((await batch()).status, 200);
  for (const d of domains.slice(0, 5)) t.equal((await app.request<EmailValidation>('POST', '/email-validations', { body: { email: `single@${d}` } })).body.result, 'deliverable');
  t.equal(dns.queries.length - before, 0, 'another batch and single requests within the minute: no look-up');

  app.clock.advance(ROUTE_TTL_MS - 1000);
  before = dns.queries.length;
  await batch();
  t.equal(dns.queries.length - before, 0, 'a second before the minute is up: still kept');
  app.clock.advance(1000);
  before = dns.queries.length;
  await batch();
  t.equal(dns.queries.length - before, 20, 'a minute on (the fake clock): asked again, once per domain');

  // A change in the DNS is seen once the answer has expired.
  dns.set('MX', 'd0.cache.example', [{ exchange: '', priority: 0 }]);
  const kept = await app.request<EmailValidation>('POST', '/email-validations', { body: { email: 'a@d0.cache.example' } });
  t.equal(kept.body.checks.mx.status, 'found', 'the kept answer, within the minute');
  app.clock.advance(ROUTE_TTL_MS);
  const fresh = await app.request<EmailValidation>('POST', '/email-validations', { body: { email: 'a@d0.cache.example' } });
  t.equal(fresh.body.checks.mx.status, 'null_mx', 'the new answer after it');

  // Failures are not kept: the next request asks again.
  dns.fail('flaky.example');
  await app.request('POST', '/email-validations', { body: { email: 'a@flaky.example' } });
  before = dns.queries.length;
  const again = await app.request<EmailValidation>('POST', '/email-validations', { body: { email: 'a@flaky.example' } });
  t.equal(again.body.result, 'unknown');
  t.ok(dns.queries.length - before >= 1, 'a SERVFAIL is asked again');
  dns.set('MX', 'flaky.example', [{ exchange: 'mx.flaky.example', priority: 10 }]);
  t.equal((await app.request<EmailValidation>('POST', '/email-validations', { body: { email: 'a@flaky.example' } })).body.result, 'deliverable', 'and answers once the DNS does');
});

t.test('rate limits: the spec rows for both routes (60/30 and 10/5 a minute)', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  dns.set('MX', 'good.example', [{ exchange: 'mx.good.example', priority: 10 }]);
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], rateLimits: true } });
  const free = await createOtherTeam(app, 'free');
  const pro = await createOtherTeam(app, 'pro');
  const single = (key: string) => app.request('POST', '/email-validations', { body: { email: 'a@good.example' }, key });
  const batch = (key: string) => app.request('POST', '/email-validations/batch', { body: { emails: ['a@good.example'] }, key });

  t.equal((await single(pro.apiKey)).headers.get('x-ratelimit-limit'), '60');
  t.equal((await single(free.apiKey)).headers.get('x-ratelimit-limit'), '30');
  t.equal((await batch(pro.apiKey)).headers.get('x-ratelimit-limit'), '10');
  for (let n = 1; n <= 5; n++) t.equal((await batch(free.apiKey)).status, 200, `free batch ${n} of 5`);
  const refused = await batch(free.apiKey);
  t.same([refused.status, refused.body, refused.headers.get('retry-after')], [429, { error: 'Rate limit exceeded. Please try again later.', code: 'rate_limit_exceeded' }, '60']);
  t.equal((await single(free.apiKey)).status, 200, 'the single route counts apart');
});
