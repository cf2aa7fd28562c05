// Segments over the real API: manual membership (all-or-nothing adds, removes), members oldest first, dynamic
// rules on fields and typed properties with every operator, previews, rule errors, and 404s.
import t from 'tap';
import { startTestApp, type TestApp } from '../helpers/app.js';

interface Contact {
  id: string;
  email: string;
}
interface Page<T> {
  data: T[];
  meta: { page: number; perPage: number; total: number; totalPages: number };
}
interface Err {
  error: string;
  code: string;
}
type Rules = { match: 'all' | 'any'; conditions: unknown[] };

async function contact(app: TestApp, email: string, extra: Record<string, unknown> = {}): Promise<Contact> {
  const res = await app.request<{ contact: Contact }>('POST', '/contacts', { body: { email, ...extra } });
  if (res.status !== 201) throw new Error(res.text);
  app.clock.advance(1000);
  return res.body.contact;
}

const emails = (page: { data: Contact[] }) => page.data.map((c) => c.email);

t.test('manual segments: add (all or nothing), members oldest first, remove, delete', async (t) => {
  const app = await startTestApp(t);
  const a = await contact(app, 'a@m.test');
  const b = await contact(app, 'b@m.test');
  const c = await contact(app, 'c@m.test');
  const created = await app.request<{ success: true; segment: { id: string; name: string; type: string; rules: null } }>('POST', '/segments', { body: { name: 'VIP' } });
  t.equal(created.status, 201);
  t.match(created.body, { success: true, segment: { name: 'VIP', type: 'manual', rules: null } });
  const id = created.body.segment.id;
  t.match(id, /^seg_/);

  const unknown = await app.request<Err>('POST', `/segments/${id}/contacts`, { body: { contact_ids: [c.id, 'ct_missing1', 'ct_missing2'] } });
  t.equal(unknown.status, 422);
  t.same(unknown.body, { error: 'Contacts not found: ct_missing1, ct_missing2', code: 'unprocessable_entity' });
  t.equal((await app.request<Page<Contact>>('GET', `/segments/${id}/members`)).body.meta.total, 0, 'nothing was added');

  const added = await app.request<{ added: number }>('POST', `/segments/${id}/contacts`, { body: { contact_ids: [c.id, a.id, a.id] } });
  t.same(added.body, { success: true, added: 2 });
  t.same((await app.request<{ added: number }>('POST', `/segments/${id}/contacts`, { body: { contact_ids: [a.id, b.id] } })).body, { success: true, added: 1 }, 'those already in it stay');

  const members = await app.request<Page<Contact>>('GET', `/segments/${id}/members?per_page=2`);
  t.same(emails(members.body), ['a@m.test', 'b@m.test'], 'oldest first');
  t.same(members.body.meta, { page: 1, perPage: 2, total: 3, totalPages: 2 });
  t.same(emails((await app.request<Page<Contact>>('GET', `/contacts?segment_id=${id}`)).body), ['a@m.test', 'b@m.test', 'c@m.test'], 'the contacts list by segment agrees');

  t.same((await app.request('DELETE', `/segments/${id}/contacts/${b.id}`)).body, { success: true, removed: 1 });
  t.same((await app.request('DELETE', `/segments/${id}/contacts`, { body: { contact_ids: [a.id, b.id] } })).body, { success: true, removed: 1 });
  t.same(emails((await app.request<Page<Contact>>('GET', `/segments/${id}/members`)).body), ['c@m.test']);
  t.equal((await app.request<{ segment: { contact_count: number } }>('GET', `/segments/${id}`)).body.segment.contact_count, 1);

  await app.request('DELETE', `/contacts/${c.id}`);
  t.equal((await app.request<Page<Contact>>('GET', `/segments/${id}/members`)).body.meta.total, 0, 'a deleted contact leaves its segments');

  const second = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'Second' } })).body.segment.id;
  const list = await app.request<{ segments: Array<{ id: string }> }>('GET', '/segments');
  t.same(list.body.segments.map((s) => s.id), [id, second], 'oldest first');
  t.same((await app.request('GET', `/segments/${id}/broadcasts`)).body, { broadcasts: [] });
  t.same((await app.request('PATCH', `/segments/${id}`, { body: { name: 'Renamed' } })).body, { success: true });
  const refused = await app.request<Err>('PATCH', `/segments/${id}`, { body: { rules: { match: 'all', conditions: [{ field: 'email', operator: 'is_set' }] } } });
  t.equal(refused.status, 422);
  t.equal(refused.body.error, 'Segment is manual: add and remove its contacts instead of giving it rules');
  t.equal((await app.request('DELETE', `/segments/${id}`)).status, 200);
  for (const [method, path] of [['GET', `/segments/${id}`], ['GET', `/segments/${id}/members`], ['GET', `/segments/${id}/broadcasts`], ['DELETE', `/segments/${id}`], ['POST', `/segments/${id}/contacts`]] as const) {
    const res = await app.request<Err>(method, path, method === 'POST' ? { body: { contact_ids: [a.id] } } : {});
    t.same([res.status, res.body], [404, { error: 'Segment not found', code: 'not_found' }], `${method} ${path}`);
  }
  t.equal((await app.request<Err>('POST', '/segments', { body: {} })).body.error, 'Request body is missing required fields: name');
});

t.test('dynamic segments match fields and typed properties, and stay current', async (t) => {
  const app = await startTestApp(t);
  for (const [name, type] of [['plan', 'string'], ['seats', 'number'], ['renewal', 'date'], ['vip', 'boolean']]) await app.request('POST', '/contact-properties', { body: { name, type } });
  await contact(app, 'ann@corp.test', { first_name: 'Ann', properties: { plan: 'Pro', seats: 10, renewal: '2026-06-01', vip: true } });
  await contact(app, 'bob@corp.test', { first_name: 'Bob', properties: { plan: 'free', seats: 1, renewal: '2026-01-15' } });
  await contact(app, 'cid@home.test', { unsubscribed: true, properties: { plan: 'pro', seats: 3, vip: false } });
  await contact(app, 'dee@home.test', { first_name: 'Dee' });

  const matches = async (rules: Rules): Promise<string[]> => {
    const res = await app.request<{ count: number; contacts: Contact[] }>('POST', '/segments/preview', { body: { rules } });
    t.equal(res.status, 200, JSON.stringify(rules) + res.text);
    t.equal(res.body.count, res.body.contacts.length);
    return res.body.contacts.map((c) => c.email.split('@')[0]!);
  };
  const one = (field: string, operator: string, value?: unknown): Rules => ({ match: 'all', conditions: [{ field, operator, ...(value === undefined ? {} : { value }) }] });

  t.same(await matches(one('properties.plan', 'equals', 'PRO')), ['ann', 'cid'], 'equals ignores case');
  t.same(await matches(one('properties.plan', 'not_equals', 'pro')), ['bob', 'dee'], 'not_equals includes the unset');
  t.same(await matches(one('email', 'ends_with', '@CORP.test')), ['ann', 'bob']);
  t.same(await matches(one('email', 'starts_with', 'd')), ['dee']);
  t.same(await matches(one('first_name', 'contains', 'n')), ['ann']);
  t.same(await matches(one('first_name', 'not_contains', 'n')), ['bob', 'cid', 'dee']);
  t.same(await matches(one('first_name', 'is_not_set')), ['cid']);
  t.same(await matches(one('properties.seats', 'greater_than', 3)), ['ann']);
  t.same(await matches(one('properties.seats', 'less_than', 4)), ['bob', 'cid']);
  t.same(await matches(one('properties.seats', 'is_set')), ['ann', 'bob', 'cid']);
  t.same(await matches(one('properties.renewal', 'after', '2026-03-01')), ['ann']);
  t.same(await matches(one('properties.renewal', 'before', '2026-03-01T00:00:00+01:00')), ['bob']);
  t.same(await matches(one('properties.vip', 'equals', false)), ['cid']);
  t.same(await matches(one('unsubscribed', 'equals', true)), ['cid']);
  t.same(await matches(one('created_at', 'after', '2026-03-01T10:00:01.500Z')), ['cid', 'dee']);
  t.same(await matches({ match: 'any', conditions: [{ field: 'properties.vip', operator: 'equals', value: true }, { match: 'all', conditions: [{ field: 'email', operator: 'contains', value: 'home' }, { field: 'unsubscribed', operator: 'equals', value: false }] }] }), ['ann', 'dee'], 'nested groups');

  const seg = await app.request<{ segment: { id: string; type: string } }>('POST', '/segments', { body: { name: 'Pro', rules: one('properties.plan', 'equals', 'pro') } });
  t.equal(seg.body.segment.type, 'dynamic');
  const id = seg.body.segment.id;
  t.same(emails((await app.request<Page<Contact>>('GET', `/segments/${id}/members`)).body), ['ann@corp.test', 'cid@home.test']);
  const bob = (await app.request<Page<Contact>>('GET', '/contacts?search=bob')).body.data[0]!;
  await app.request('PATCH', `/contacts/${bob.id}`, { body: { properties: { plan: 'pro' } } });
  t.same(emails((await app.request<Page<Contact>>('GET', `/segments/${id}/members`)).body), ['ann@corp.test', 'bob@corp.test', 'cid@home.test'], 'membership follows the contacts');
  t.same(emails((await app.request<Page<Contact>>('GET', `/contacts?segment_id=${id}&unsubscribed=false`)).body), ['ann@corp.test', 'bob@corp.test'], 'filters combine');
  const add = await app.request<Err>('POST', `/segments/${id}/contacts`, { body: { contact_ids: [bob.id] } });
  t.equal(add.status, 422);
  t.equal(add.body.error, 'Segment is dynamic: its members are the contacts its rules match');
  t.equal((await app.request('PATCH', `/segments/${id}`, { body: { rules: one('properties.seats', 'greater_than', 5) } })).status, 200);
  t.same(emails((await app.request<Page<Contact>>('GET', `/segments/${id}/members`)).body), ['ann@corp.test']);
});

t.test('bad rules answer 400 naming the place', async (t) => {
  const app = await startTestApp(t);
  await app.request('POST', '/contact-properties', { body: { name: 'seats', type: 'number' } });
  const cases: Array<[unknown, string]> = [
    [{ match: 'some', conditions: [] }, 'rules.match: must be all or any'],
    [{ match: 'all', conditions: [] }, 'rules.conditions: must hold at least one condition'],
    [{ match: 'all', conditions: [{ field: 'properties.nope', operator: 'equals', value: 1 }] }, "rules.conditions.0.field: 'nope' is not a defined contact property"],
    [{ match: 'all', conditions: [{ field: 'phone', operator: 'equals', value: '1' }] }, 'rules.conditions.0.field: must be one of email, first_name, last_name, unsubscribed, created_at, properties.<name>, topic, engagement'],
    [{ match: 'all', conditions: [{ field: 'properties.seats', operator: 'contains', value: 1 }] }, 'rules.conditions.0.operator: a number field takes equals, not_equals, greater_than, less_than, is_set, is_not_set'],
    [{ match: 'all', conditions: [{ field: 'properties.seats', operator: 'greater_than', value: 'ten' }] }, 'rules.conditions.0.value: must be a number'],
    [{ match: 'all', conditions: [{ field: 'created_at', operator: 'after', value: 'yesterday' }] }, 'rules.conditions.0.value: must be a date (ISO 8601)'],
    [{ match: 'all', conditions: [{ field: 'topic', operator: 'subscribed', value: 'top_x' }] }, "rules.conditions.0.value: must be the id of one of the team's subscription topics"],
    [{ match: 'all', conditions: [{ field: 'engagement', operator: 'equals', value: 'hot' }] }, 'rules.conditions.0.value: must be one of active_30d, inactive_90d, never_opened'],
    [{ match: 'all', conditions: [{ match: 'any', conditions: [{ match: 'all', conditions: [{ match: 'any', conditions: [{ field: 'email', operator: 'is_set' }] }] }] }] }, 'rules.conditions.0.conditions.0.conditions.0: groups nest at most 3 deep'],
    [{ match: 'all', conditions: Array.from({ length: 51 }, () => ({ field: 'email', operator: 'is_set' })) }, 'rules.conditions: must have at most 50 entries'],
  ];
  for (const [rules, error] of cases) {
    const res = await app.request<Err>('POST', '/segments/preview', { body: { rules } });
    t.same([res.status, res.body], [400, { error, code: 'invalid_request' }], error);
  }
  t.equal((await app.request<Err>('POST', '/segments', { body: { name: 'x', rules: cases[2]![0] } })).status, 400, 'a segment is not saved with bad rules');
  t.same((await app.request<{ segments: unknown[] }>('GET', '/segments')).body.segments, []);
});
