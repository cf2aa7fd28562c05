// CSV in and out over the real API: quoting, embedded commas and newlines, a BOM, CRLF, bad rows reported by
// line and left out, the 10,000-row bound, segment joins, an import that fails changing nothing, and an export
// read back by a CSV parser (and by the import).
import t from 'tap';
import { parse } from 'csv-parse/sync';
import { startTestApp, type TestApp } from '../helpers/app.js';

interface Contact {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  unsubscribed: boolean;
  properties: Record<string, unknown>;
}
interface Page<T> {
  data: T[];
  meta: { total: number };
}
interface ImportResult {
  success: true;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  errors: Array<{ line: number; email: string | null; error: string }>;
  ignored_columns: string[];
}

async function all(app: TestApp, query = ''): Promise<Contact[]> {
  const out: Contact[] = [];
  for (let page = 1; ; page++) {
    const res = await app.request<Page<Contact>>('GET', `/contacts?per_page=100&page=${page}${query}`);
    out.push(...res.body.data);
    if (res.body.data.length < 100) return out;
  }
}

async function importCsv(app: TestApp, csv: string, extra: Record<string, unknown> = {}) {
  return app.request<ImportResult & { error?: string; code?: string }>('POST', '/contacts/import', { body: { csv, ...extra } });
}

t.test('an import creates, updates, skips and reports bad rows by line', async (t) => {
  const app = await startTestApp(t);
  for (const [name, type] of [['plan', 'string'], ['seats', 'number'], ['vip', 'boolean'], ['renewal', 'date']]) {
    t.equal((await app.request('POST', '/contact-properties', { body: { name, type } })).status, 201);
  }
  await app.request('POST', '/contacts', { body: { email: 'known@x.test', first_name: 'Known', properties: { plan: 'free' } } });
  await app.request('POST', '/contacts', { body: { email: 'same@x.test', first_name: 'Same' } });

  const csv = [
    '\uFEFFEmail,First_Name,last_name,unsubscribed,Plan,seats,vip,renewal,favourite colour',
    'ann@x.test,Ann,"Smith, Jr.",false,pro,3,yes,2026-05-01,blue',
    'bob@x.test,"Bob ""The Builder""",,,,,,,',
    'bad-address,X,,,,,,,',
    'known@x.test,,,true,pro,,,,',
    'cat@x.test,"Cat',
    'Line two",,,,nope,,,',
    'same@x.test,Same,,,,,,,',
    'ANN@X.TEST,Again,,,,,,,',
    '',
    'dan@x.test,Dan,,maybe,,,,,',
    'eve@x.test,Eve,,,,,,2026-02-30,',
  ].join('\r\n');
  const res = await importCsv(app, csv);
  t.equal(res.status, 200, res.text);
  t.same(
    { created: res.body.created, updated: res.body.updated, skipped: res.body.skipped, failed: res.body.failed },
    { created: 2, updated: 1, skipped: 1, failed: 5 },
    'ann and bob created; known updated; same unchanged',
  );
  t.same(res.body.errors, [
    { line: 4, email: 'bad-address', error: 'email: must be a valid email address' },
    { line: 6, email: 'cat@x.test', error: 'seats: must be a number' },
    { line: 9, email: 'ANN@x.test', error: 'repeats the address of line 2' },
    { line: 11, email: 'dan@x.test', error: 'unsubscribed: must be true or false' },
    { line: 12, email: 'eve@x.test', error: 'renewal: must be a date (ISO 8601: 2026-05-01 or 2026-05-01T09:30:00Z)' },
  ], 'the line a row starts on, counting the quoted newline and the blank line');
  t.same(res.body.ignored_columns, ['favourite colour']);

  const contacts = new Map((await all(app)).map((c) => [c.email, c]));
  t.same(contacts.get('ann@x.test'), {
    ...contacts.get('ann@x.test'),
    first_name: 'Ann',
    last_name: 'Smith, Jr.',
    unsubscribed: false,
    properties: { plan: 'pro', seats: 3, vip: true, renewal: '2026-05-01T00:00:00.000Z' },
  });
  t.equal(contacts.get('bob@x.test')!.first_name, 'Bob "The Builder"');
  t.equal(contacts.get('bob@x.test')!.last_name, null, 'an empty cell sets nothing');
  t.match(contacts.get('known@x.test'), { first_name: 'Known', unsubscribed: true, properties: { plan: 'pro' } }, 'updated, empty cells leave fields be');
  t.notOk(contacts.has('cat@x.test'));
  t.equal(contacts.size, 4);

  const events = await app.request<Page<{ type: string; data: { email: string } }>>('GET', '/events?type=contact.created,contact.updated,contact.unsubscribed&per_page=100');
  t.same(events.body.data.map((e) => `${e.type} ${e.data.email}`).sort(), [
    'contact.created ann@x.test',
    'contact.created bob@x.test',
    'contact.created known@x.test',
    'contact.created same@x.test',
    'contact.unsubscribed known@x.test',
    'contact.updated known@x.test',
  ]);
});

t.test('what fails the whole file changes nothing', async (t) => {
  const app = await startTestApp(t);
  const before = (await all(app)).length;
  const cases: Array<[string, Record<string, unknown>, number, string]> = [
    ['first_name\nAnn', {}, 400, 'csv: the header row must have an email column'],
    ['email,Email\na@x.test,b@x.test', {}, 400, "csv: the header names 'Email' twice"],
    ['email\n"a@x.test\nb@x.test', {}, 400, 'csv: a quoted field opened on line 2 is never closed'],
    ['email\na@x.test', { segment_id: 'seg_nope' }, 404, 'Segment not found'],
  ];
  for (const [csv, extra, status, error] of cases) {
    const res = await importCsv(app, csv, extra);
    t.equal(res.status, status, csv);
    t.match(res.body.error, error);
  }
  const big = ['email', ...Array.from({ length: 10_001 }, (_, i) => `u${i}@big.test`)].join('\n');
  const tooMany = await importCsv(app, big);
  t.equal(tooMany.status, 400);
  t.same(tooMany.body, { error: 'csv: at most 10,000 contacts per import (found 10,001 rows)', code: 'invalid_request' });
  t.equal((await importCsv(app, '')).status, 400, 'an empty csv');
  t.equal((await all(app)).length, before, 'nothing was imported');

  const exactly = await importCsv(app, big.split('\n').slice(0, 10_001).join('\n'));
  t.equal(exactly.status, 200);
  t.equal(exactly.body.created, 10_000, '10,000 rows are allowed');
});

t.test('an import can put everyone into a manual segment; a dynamic one refuses', async (t) => {
  const app = await startTestApp(t);
  const seg = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'Imported' } })).body.segment.id;
  await app.request('POST', '/contacts', { body: { email: 'old@x.test' } });
  const res = await importCsv(app, 'email\nold@x.test\nnew@x.test\nbad', { segment_id: seg });
  t.equal(res.status, 200);
  const members = await app.request<Page<Contact>>('GET', `/segments/${seg}/members`);
  t.same(members.body.data.map((c) => c.email), ['old@x.test', 'new@x.test'], 'created and unchanged rows both join; oldest first');
  const dyn = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'D', rules: { match: 'all', conditions: [{ field: 'email', operator: 'contains', value: 'x' }] } } })).body.segment.id;
  const refused = await importCsv(app, 'email\nz@x.test', { segment_id: dyn });
  t.equal(refused.status, 422);
  t.equal(refused.body.error, 'Segment is dynamic: its members are the contacts its rules match');
});

t.test('the export is CSV with every contact and property, and reads back in', async (t) => {
  const app = await startTestApp(t);
  await app.request('POST', '/contact-properties', { body: { name: 'zeta', type: 'string' } });
  await app.request('POST', '/contact-properties', { body: { name: 'alpha', type: 'number' } });
  await app.request('POST', '/contact-properties', { body: { name: 'flag', type: 'boolean' } });
  await app.request('POST', '/contact-properties', { body: { name: 'since', type: 'date' } });
  const rows = ['email,first_name,last_name,zeta,alpha,flag,since'];
  for (let i = 0; i < 2_500; i++) rows.push(`p${i}@exp.test,"Name, ${i}",${i % 2 ? 'L' : ''},"multi\nline ""${i}""",${i / 2},${i % 3 === 0},${i % 5 ? '' : '2026-04-01'}`);
  t.equal((await importCsv(app, rows.join('\n'))).body.created, 2_500);

  const res = await fetch(`${app.url}/contacts/export`, { headers: { authorization: `Bearer ${app.apiKey}` } });
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'text/csv; charset=utf-8');
  t.match(res.headers.get('content-disposition'), /attachment; filename="contacts\.csv"/);
  const text = await res.text();
  const records = parse(text, { columns: true }) as Array<Record<string, string>>;
  t.equal(records.length, 2_500, 'every contact, past the first page of the export');
  t.same(Object.keys(records[0]!), ['id', 'email', 'first_name', 'last_name', 'unsubscribed', 'created_at', 'alpha', 'flag', 'since', 'zeta'], 'properties A-Z after the fields');
  t.same(records[7], { ...records[7], email: 'p7@exp.test', first_name: 'Name, 7', last_name: 'L', unsubscribed: 'false', alpha: '3.5', flag: 'false', since: '', zeta: 'multi\nline "7"' });
  t.same(records[0], { ...records[0], last_name: '', alpha: '0', flag: 'true', since: '2026-04-01T00:00:00.000Z' });
  t.equal(records[0]!.email, 'p0@exp.test', 'oldest first');

  // The export is an import: re-reading it changes nothing.
  const again = await importCsv(app, text);
  t.same({ created: again.body.created, updated: again.body.updated, skipped: again.body.skipped, failed: again.body.failed, ignored: again.body.ignored_columns }, { created: 0, updated: 0, skipped: 2_500, failed: 0, ignored: [] });
});
