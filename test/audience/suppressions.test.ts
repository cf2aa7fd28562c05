// The suppression list over the real API: add, list (Form A), remove, 400/404/409 with their messages,
// the streamed CSV export and the one-transaction CSV import (reason column or default, quotes, BOM, CRLF,
// 10,001 rows, a bad row in the middle), entries written by a hard bounce with their email id and time, the
// send path honouring a manual entry, tenant isolation.
import t from 'tap';
import { MINUTE } from '../../src/core/clock.js';
import { createOtherTeam, startTestApp, type TestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

interface Suppression {
  email: string;
  reason: string;
  details: string | null;
  email_id: string | null;
  created_at: string;
}
interface Page<T> {
  data: T[];
  meta: { page: number; perPage: number; total: number; totalPages: number };
}
interface Err {
  error: string;
  code: string;
}
interface ImportResult {
  success: true;
  created: number;
  skipped: number;
  failed: number;
  errors: Array<{ line: number; email: string | null; error: string }>;
  ignored_columns: string[];
}

const add = (app: TestApp, email: string, reason: string, key?: string) => app.request<{ suppression: Suppression } & Err>('POST', '/suppressions', { body: { email, reason }, ...(key ? { key } : {}) });
const list = (app: TestApp, query = '') => app.request<Page<Suppression>>('GET', `/suppressions${query}`);
const importCsv = (app: TestApp, body: Record<string, unknown>) => app.request<ImportResult & Err>('POST', '/suppressions/import', { body });

t.test('add, list newest first with paging, remove', async (t) => {
  const app = await startTestApp(t);
  const res = await add(app, 'Bob@Example.COM', 'manual');
  t.equal(res.status, 201);
  t.same(res.body.suppression, { email: 'bob@example.com', reason: 'manual', details: null, email_id: null, created_at: '2026-03-01T10:00:00.000Z' }, 'kept as the compared form');
  for (let i = 0; i < 4; i++) {
    app.clock.advance(MINUTE);
    t.equal((await add(app, `p${i}@example.com`, i % 2 ? 'bounce' : 'complaint')).status, 201);
  }
  const page = await list(app, '?per_page=2');
  t.same(page.body.data.map((s) => s.email), ['p3@example.com', 'p2@example.com']);
  t.same(page.body.meta, { page: 1, perPage: 2, total: 5, totalPages: 3 });
  t.same((await list(app, '?per_page=2&page=3')).body.data.map((s) => s.email), ['bob@example.com']);
  t.same((await list(app, '?page=9')).body.data, []);
  t.equal((await list(app, '?page=0')).body.data, undefined);
  t.same((await app.request<Err>('GET', '/suppressions?page=0')).body, { error: "Invalid query parameter 'page': must be an integer between 1 and 1000000000", code: 'invalid_request' });

  const dup = await add(app, 'BOB@example.com', 'bounce');
  t.same([dup.status, dup.body], [409, { error: 'Suppression already exists', code: 'conflict' }]);

  t.same((await app.request('DELETE', `/suppressions/${encodeURIComponent('BOB@example.com')}`)).body, { success: true }, 'by any spelling');
  const again = await app.request<Err>('DELETE', '/suppressions/bob%40example.com');
  t.same([again.status, again.body], [404, { error: 'Suppression not found', code: 'not_found' }]);
  const bad = await app.request<Err>('DELETE', '/suppressions/not-an-address');
  t.same([bad.status, bad.body.error], [400, 'email: must be a valid email address']);
  t.equal((await list(app)).body.meta.total, 4);
});

t.test('400 answers name the field', async (t) => {
  const app = await startTestApp(t);
  for (const [body, error] of [
    [{ reason: 'manual' }, 'Request body is missing required fields: email'],
    [{ email: 'a@x.test' }, 'Request body is missing required fields: reason'],
    [{ email: 'nope', reason: 'manual' }, 'email: must be a valid email address'],
    [{ email: 'a@x.test', reason: 'unsubscribe' }, 'reason: must be one of bounce, complaint, manual'],
  ] as Array<[unknown, string]>) {
    const res = await app.request<Err>('POST', '/suppressions', { body });
    t.same([res.status, res.body], [400, { error, code: 'invalid_request' }], JSON.stringify(body));
  }
});

t.test('CSV import: reasons, default, quotes, BOM, CRLF, bad rows by line, skipped, one transaction', async (t) => {
  const app = await startTestApp(t);
  await add(app, 'known@x.test', 'complaint');
  const csv =
    '\uFEFFEmail,Reason,Details,source\r\n' +
    'a@x.test,bounce,"550 5.1.1 no such user, sorry",crm\r\n' +
    'not-an-address,manual,,crm\r\n' + // line 3
    '"b@x.test",,"a note spanning\r\ntwo lines",crm\r\n' + // lines 4-5: default reason
    'c@x.test,spam,,crm\r\n' + // line 6
    'KNOWN@x.test,manual,,crm\r\n' + // line 7: on the list already
    'A@X.test,manual,,crm\r\n' + // line 8: repeats line 2
    '\r\n' + // line 9: empty, skipped
    ',manual,,crm\r\n'; // line 10
  const res = await importCsv(app, { csv, reason: 'manual' });
  t.equal(res.status, 200);
  t.same(res.body, {
    success: true,
    created: 2,
    skipped: 1,
    failed: 4,
    errors: [
      { line: 3, email: 'not-an-address', error: 'email: must be a valid email address' },
      { line: 6, email: 'c@x.test', error: 'reason: must be one of bounce, complaint, manual' },
      { line: 8, email: 'A@X.test', error: 'repeats the address of line 2' },
      { line: 10, email: null, error: 'email: is empty' },
    ],
    ignored_columns: ['source'],
  });
  const all = (await list(app)).body.data;
  t.same(
    all.map((s) => [s.email, s.reason, s.details]).sort(),
    [
      ['a@x.test', 'bounce', '550 5.1.1 no such user, sorry'],
      ['b@x.test', 'manual', 'a note spanning\r\ntwo lines'],
      ['known@x.test', 'complaint', null],
    ],
    'the known address keeps its first reason',
  );

  const noReason = await importCsv(app, { csv: 'email\nz@x.test\n' });
  t.same([noReason.status, noReason.body.error], [400, 'csv: the header row has no reason column; give one, or a default `reason` (bounce, complaint or manual)']);
  const emptyCell = await importCsv(app, { csv: 'email,reason\nz@x.test,\n' });
  t.same(emptyCell.body.errors, [{ line: 2, email: 'z@x.test', error: 'reason: is empty and no default reason was given' }]);
  for (const [body, error] of [
    [{ csv: 'reason\nmanual\n' }, 'csv: the header row must have an email column'],
    [{ csv: 'email,reason,email\na@x.test,manual,b\n' }, "csv: the header names 'email' twice"],
    [{ csv: 'email,reason\n"a@x.test,manual\n' }, 'csv: a quoted field opened on line 2 is never closed'],
    [{ csv: '' }, 'csv: must not be empty'],
    [{ csv: 'email', reason: 'later' }, 'reason: must be one of bounce, complaint, manual'],
  ] as Array<[Record<string, unknown>, string]>) {
    const r = await importCsv(app, body);
    t.same([r.status, r.body.error], [400, error], JSON.stringify(body));
  }

  const big = 'email,reason\n' + Array.from({ length: 10_001 }, (_, i) => `big${i}@x.test,manual`).join('\n');
  const tooBig = await importCsv(app, { csv: big });
  t.same([tooBig.status, tooBig.body.error], [400, 'csv: at most 10,000 addresses per import (found 10,001 rows)']);
  t.equal((await list(app)).body.meta.total, 3, 'a refused file changes nothing');
  const full = await importCsv(app, { csv: big.split('\n').slice(0, 10_001).join('\n') });
  t.same([full.status, full.body.created], [200, 10_000], '10,000 rows are fine');
});

t.test('CSV export: header, every entry oldest first, quoting; an export imports back', async (t) => {
  const app = await startTestApp(t);
  await importCsv(app, { csv: 'email,reason,details\na@x.test,bounce,"550 ""quoted"", with comma"\nb@x.test,complaint,\n' });
  app.clock.advance(MINUTE);
  await add(app, 'c@x.test', 'manual');
  const res = await fetch(`${app.url}/suppressions/export`, { headers: { authorization: `Bearer ${app.apiKey}` } });
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'text/csv; charset=utf-8');
  t.equal(res.headers.get('content-disposition'), 'attachment; filename="suppressions.csv"');
  const text = await res.text();
  t.equal(
    text,
    'email,reason,details,email_id,created_at\n' +
      'a@x.test,bounce,"550 ""quoted"", with comma",,2026-03-01T10:00:00.000Z\n' +
      'b@x.test,complaint,,,2026-03-01T10:00:00.000Z\n' +
      'c@x.test,manual,,,2026-03-01T10:01:00.000Z\n',
  );
  const other = await createOtherTeam(app);
  const back = await app.request<ImportResult>('POST', '/suppressions/import', { body: { csv: text }, key: other.apiKey });
  t.same([back.body.created, back.body.failed, back.body.ignored_columns], [3, 0, []], 'the export’s own columns are read back');
  const theirs = await fetch(`${app.url}/suppressions/export`, { headers: { authorization: `Bearer ${other.apiKey}` } });
  t.equal((await theirs.text()).split('\n')[1], 'a@x.test,bounce,"550 ""quoted"", with comma",,2026-03-01T10:01:00.000Z');

  // Past one page of the export (1,000 entries) the stream goes on.
  await importCsv(app, { csv: 'email\n' + Array.from({ length: 2_500 }, (_, i) => `n${i}@x.test`).join('\n'), reason: 'manual' });
  const long = await (await fetch(`${app.url}/suppressions/export`, { headers: { authorization: `Bearer ${app.apiKey}` } })).text();
  const lines = long.trimEnd().split('\n');
  t.equal(lines.length, 1 + 3 + 2_500);
  t.equal(new Set(lines).size, lines.length, 'no entry twice across pages');
});

t.test('a hard bounce puts the address on the list with its email and time; the send path then skips it', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink();
  t.teardown(() => sink.close());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port } });
  await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  sink.recipients.set('gone@dest.example', { code: 550, text: '5.1.1 <gone@dest.example>: user unknown' });

  const sent = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'a@acme.example', to: 'gone@dest.example', subject: 'hi', text: 'x' } });
  app.clock.advance(MINUTE);
  await app.appliance.ctx.jobs.drain();
  const entry = (await list(app)).body.data[0];
  t.same(entry, { email: 'gone@dest.example', reason: 'bounce', details: '5.1.1 550 5.1.1 <gone@dest.example>: user unknown', email_id: sent.body.id, created_at: '2026-03-01T10:01:00.000Z' });

  await add(app, 'manual@dest.example', 'manual');
  const skipped = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'a@acme.example', to: 'manual@dest.example', subject: 'hi', text: 'x' } });
  t.equal(skipped.status, 202);
  const detail = await app.request<{ status: string; recipients: Array<{ status: string }> }>('GET', `/emails/${skipped.body.id}`);
  t.same([detail.body.status, detail.body.recipients[0]?.status], ['failed', 'suppressed'], 'a manual entry is honoured');
  await app.request('DELETE', '/suppressions/manual@dest.example');
  const after = await app.request<{ id: string }>('POST', '/emails', { body: { from: 'a@acme.example', to: 'manual@dest.example', subject: 'hi', text: 'x' } });
  await app.appliance.ctx.jobs.drain();
  t.equal((await app.request<{ status: string }>('GET', `/emails/${after.body.id}`)).body.status, 'delivered', 'lifted: it goes out again');
});

t.test('tenant isolation: another team’s suppression is 404, and is not in my list or export', async (t) => {
  const app = await startTestApp(t);
  const other = await createOtherTeam(app);
  t.equal((await add(app, 'theirs@x.test', 'manual', other.apiKey)).status, 201);
  t.same((await list(app)).body.meta.total, 0);
  const del = await app.request<Err>('DELETE', '/suppressions/theirs@x.test');
  t.same([del.status, del.body.error], [404, 'Suppression not found']);
  t.equal((await add(app, 'theirs@x.test', 'manual')).status, 201, 'the same address is mine to suppress too');
  t.equal((await list(app, '')).body.meta.total, 1);
  t.equal((await app.request('DELETE', '/suppressions/theirs@x.test', { key: other.apiKey })).status, 200);
  t.equal((await list(app)).body.meta.total, 1, 'their removal leaves mine');
});
