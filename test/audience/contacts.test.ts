// Contacts and contact properties over the real API: create/get/patch/delete, normalised addresses, the
// 400/404/409 answers with their messages, typed properties, list filters and paging, events, tenant isolation.
import t from 'tap';
import { createOtherTeam, startTestApp, type TestApp } from '../helpers/app.js';

interface Contact {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  unsubscribed: boolean;
  properties: Record<string, unknown>;
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

async function defineProperty(app: TestApp, name: string, type: string): Promise<string> {
  const res = await app.request<{ property: { id: string } }>('POST', '/contact-properties', { body: { name, type } });
  if (res.status !== 201) throw new Error(`property ${name}: ${res.status} ${res.text}`);
  return res.body.property.id;
}

async function create(app: TestApp, body: Record<string, unknown>, key?: string): Promise<Contact> {
  const res = await app.request<{ contact: Contact }>('POST', '/contacts', { body, ...(key ? { key } : {}) });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
  return res.body.contact;
}

t.test('create, get (by id and by address), patch, delete', async (t) => {
  const app = await startTestApp(t);
  await defineProperty(app, 'plan', 'string');
  await defineProperty(app, 'seats', 'number');

  const res = await app.request<{ contact: Contact }>('POST', '/contacts', {
    body: { email: 'Ann.Smith@Bücher.Example', first_name: 'Ann', last_name: 'Smith', properties: { plan: 'pro', seats: 3 } },
  });
  t.equal(res.status, 201);
  const c = res.body.contact;
  t.match(c.id, /^ct_[A-Za-z0-9]{24}$/);
  t.equal(c.email, 'Ann.Smith@xn--bcher-kva.example', 'the domain lower-cased and in ASCII, the local part as written');
  t.same(c.properties, { plan: 'pro', seats: 3 });
  t.equal(c.unsubscribed, false);
  t.equal(c.created_at, '2026-03-01T10:00:00.000Z');

  const dup = await app.request<Err>('POST', '/contacts', { body: { email: 'ann.smith@BÜCHER.example' } });
  t.equal(dup.status, 409);
  t.same(dup.body, { error: 'Contact already exists', code: 'conflict' }, 'one person is one contact, whatever the case');

  t.same((await app.request<{ contact: Contact }>('GET', `/contacts/${c.id}`)).body.contact, c);
  t.same((await app.request<{ contact: Contact }>('GET', `/contacts/${encodeURIComponent('ann.smith@bücher.example')}`)).body.contact, c, 'by address');

  const patch = await app.request('PATCH', `/contacts/${c.id}`, { body: { first_name: 'Anne', properties: { seats: 5, plan: null } } });
  t.equal(patch.status, 200);
  t.same(patch.body, { success: true });
  const after = (await app.request<{ contact: Contact }>('GET', `/contacts/${c.id}`)).body.contact;
  t.equal(after.first_name, 'Anne');
  t.equal(after.last_name, 'Smith', 'untouched fields stay');
  t.same(after.properties, { seats: 5 }, 'merged; null removes the key');

  t.equal((await app.request('DELETE', `/contacts/${c.id}`)).status, 200);
  const gone = await app.request<Err>('GET', `/contacts/${c.id}`);
  t.equal(gone.status, 404);
  t.same(gone.body, { error: 'Contact not found', code: 'not_found' });
  t.equal((await app.request('PATCH', `/contacts/${c.id}`, { body: { first_name: 'x' } })).status, 404);
  t.equal((await app.request('DELETE', `/contacts/${c.id}`)).status, 404);
});

t.test('bad input answers 400 with the field named', async (t) => {
  const app = await startTestApp(t);
  await defineProperty(app, 'seats', 'number');
  await defineProperty(app, 'renewal', 'date');
  await defineProperty(app, 'vip', 'boolean');
  const cases: Array<[unknown, string]> = [
    [{}, 'Request body is missing required fields: email'],
    [{ email: 'not-an-address' }, 'email: must be a valid email address'],
    [{ email: 'a@x.test', unsubscribed: 'yes' }, 'unsubscribed: must be a boolean'],
    [{ email: 'a@x.test', properties: { nope: 1 } }, 'properties.nope: is not a defined contact property (create it with POST /contact-properties)'],
    [{ email: 'a@x.test', properties: { seats: 'three' } }, 'properties.seats: must be a number'],
    [{ email: 'a@x.test', properties: { renewal: '2026-02-30' } }, 'properties.renewal: must be a date (ISO 8601: 2026-05-01 or 2026-05-01T09:30:00Z)'],
    [{ email: 'a@x.test', properties: { vip: 1 } }, 'properties.vip: must be true or false'],
    [{ email: 'a@x.test', properties: [] }, 'properties: must be an object'],
  ];
  for (const [body, error] of cases) {
    const res = await app.request<Err>('POST', '/contacts', { body });
    t.equal(res.status, 400, JSON.stringify(body));
    t.same(res.body, { error, code: 'invalid_request' });
  }
  const c = await create(app, { email: 'a@x.test', properties: { renewal: '2026-05-01', vip: true } });
  t.same(c.properties, { renewal: '2026-05-01T00:00:00.000Z', vip: true }, 'a date is kept as a UTC date-time');
  const empty = await app.request<Err>('PATCH', `/contacts/${c.id}`, { body: {} });
  t.equal(empty.status, 400);
  t.match(empty.body.error, /at least one of/);
  t.equal((await app.request<Err>('GET', '/contacts?unsubscribed=maybe')).body.error, "Invalid query parameter 'unsubscribed': must be true or false");
  t.equal((await app.request<Err>('GET', '/contacts?per_page=101')).status, 400);
});

t.test('contact properties: A-Z, conflicts, rename follows, delete removes the key, type change guarded', async (t) => {
  const app = await startTestApp(t);
  const zId = await defineProperty(app, 'zone', 'string');
  await defineProperty(app, 'age', 'number');
  const list = await app.request<{ properties: Array<{ name: string; type: string }> }>('GET', '/contact-properties');
  t.same(list.body.properties.map((p) => p.name), ['age', 'zone']);
  const dup = await app.request<Err>('POST', '/contact-properties', { body: { name: 'Zone', type: 'number' } });
  t.equal(dup.status, 409);
  t.equal(dup.body.error, "Contact property 'Zone' already exists");
  t.equal((await app.request<Err>('POST', '/contact-properties', { body: { name: 'email', type: 'string' } })).body.error, "name: 'email' is a contact field, not a custom property");
  t.equal((await app.request<Err>('POST', '/contact-properties', { body: { name: '1x', type: 'string' } })).status, 400);
  t.equal((await app.request<Err>('POST', '/contact-properties', { body: { name: 'x', type: 'uuid' } })).body.error, 'type: must be one of string, number, date, boolean');

  const c = await create(app, { email: 'z@x.test', properties: { zone: 'eu' } });
  const seg = await app.request<{ segment: { id: string } }>('POST', '/segments', {
    body: { name: 'EU', rules: { match: 'all', conditions: [{ field: 'properties.zone', operator: 'equals', value: 'EU' }] } },
  });
  t.equal(seg.status, 201);

  const retype = await app.request<Err>('PATCH', `/contact-properties/${zId}`, { body: { type: 'number' } });
  t.equal(retype.status, 422, 'a property with values keeps its type');
  const renamed = await app.request<{ property: { name: string } }>('PATCH', `/contact-properties/${zId}`, { body: { name: 'region' } });
  t.equal(renamed.body.property.name, 'region');
  t.same((await app.request<{ contact: Contact }>('GET', `/contacts/${c.id}`)).body.contact.properties, { region: 'eu' }, 'the contact follows the rename');
  const members = await app.request<Page<Contact>>('GET', `/segments/${seg.body.segment.id}/members`);
  t.same(members.body.data.map((m) => m.id), [c.id], 'so does the rule');

  const vipId = await defineProperty(app, 'vip', 'boolean');
  const ageId = (list.body.properties as Array<{ name: string; id?: string }>).find((p) => p.name === 'age')?.id;
  await app.request('PATCH', `/contacts/${c.id}`, { body: { properties: { vip: true, age: 41 } } });
  await app.request('PATCH', `/contact-properties/${vipId}`, { body: { name: 'is_vip' } });
  await app.request('PATCH', `/contact-properties/${ageId}`, { body: { name: 'years' } });
  t.same((await app.request<{ contact: Contact }>('GET', `/contacts/${c.id}`)).body.contact.properties, { region: 'eu', is_vip: true, years: 41 }, 'a renamed value keeps its JSON type');

  t.equal((await app.request('DELETE', `/contact-properties/${zId}`)).status, 200);
  t.same((await app.request<{ contact: Contact }>('GET', `/contacts/${c.id}`)).body.contact.properties, { is_vip: true, years: 41 }, 'deleting the definition removes the key');
  t.equal((await app.request('DELETE', `/contact-properties/${zId}`)).status, 404);
});

t.test('list: newest first, search, unsubscribed, engagement, paging', async (t) => {
  const app = await startTestApp(t);
  const made: Contact[] = [];
  for (let i = 0; i < 25; i++) {
    made.push(await create(app, { email: `user${i}@list.test`, first_name: i === 7 ? 'Grace' : `N${i}`, last_name: i === 7 ? 'Hopper' : null, unsubscribed: i % 5 === 0 }));
    app.clock.advance(1000);
  }
  const first = await app.request<Page<Contact>>('GET', '/contacts');
  t.equal(first.body.data.length, 20);
  t.same(first.body.meta, { page: 1, perPage: 20, total: 25, totalPages: 2 });
  t.equal(first.body.data[0]!.id, made[24]!.id, 'newest first');
  const second = await app.request<Page<Contact>>('GET', '/contacts?page=2');
  t.same(second.body.data.map((c) => c.id), made.slice(0, 5).reverse().map((c) => c.id));
  t.same((await app.request<Page<Contact>>('GET', '/contacts?page=9')).body, { data: [], meta: { page: 9, perPage: 20, total: 25, totalPages: 2 } });

  t.same((await app.request<Page<Contact>>('GET', '/contacts?search=HOPP')).body.data.map((c) => c.id), [made[7]!.id], 'a name, any case');
  t.same((await app.request<Page<Contact>>('GET', '/contacts?search=grace%20hopper')).body.data.map((c) => c.id), [made[7]!.id], 'first and last name together');
  t.equal((await app.request<Page<Contact>>('GET', '/contacts?search=user1')).body.meta.total, 11, 'a substring of the address');
  t.equal((await app.request<Page<Contact>>('GET', '/contacts?unsubscribed=true')).body.meta.total, 5);
  t.equal((await app.request<Page<Contact>>('GET', '/contacts?unsubscribed=false&search=user2')).body.meta.total, 5);
  const engaged = await app.request<Page<Contact>>('GET', '/contacts?engagement_segment=active_30d');
  t.equal(engaged.status, 200);
  t.equal(engaged.body.meta.total, 0, 'no email was tracked yet: nobody is engaged');
  t.equal((await app.request<Err>('GET', '/contacts?engagement_segment=hot')).status, 400);
});

t.test('events: contact.created, updated, unsubscribed, deleted in the change’s transaction', async (t) => {
  const app = await startTestApp(t);
  const c = await create(app, { email: 'ev@x.test', first_name: 'Eve' });
  await app.request('PATCH', `/contacts/${c.id}`, { body: { unsubscribed: true } });
  await app.request('DELETE', `/contacts/${c.id}`);
  const events = await app.request<Page<{ type: string; data: Record<string, unknown> }>>('GET', '/events?type=contact.created,contact.updated,contact.unsubscribed,contact.deleted');
  const byType = Object.fromEntries(events.body.data.map((e) => [e.type, e.data]));
  t.same(Object.keys(byType).sort(), ['contact.created', 'contact.deleted', 'contact.unsubscribed', 'contact.updated']);
  t.match(byType['contact.created'], { contact_id: c.id, email: 'ev@x.test', first_name: 'Eve', unsubscribed: false });
  t.match(byType['contact.updated'], { contact_id: c.id, unsubscribed: true });
  t.same(byType['contact.unsubscribed'], { contact_id: c.id, email: 'ev@x.test', topic_id: null, email_id: null });
  t.same(byType['contact.deleted'], { contact_id: c.id, email: 'ev@x.test' });
});

t.test("another team's contacts, properties and segments are 404", async (t) => {
  const app = await startTestApp(t);
  const other = await createOtherTeam(app);
  const mine = await create(app, { email: 'me@x.test' });
  const theirs = await create(app, { email: 'me@x.test' }, other.apiKey);
  t.not(mine.id, theirs.id, 'the same address is a contact of each team');
  t.equal((await app.request('GET', `/contacts/${theirs.id}`)).status, 404);
  t.equal((await app.request('PATCH', `/contacts/${theirs.id}`, { body: { first_name: 'x' } })).status, 404);
  t.equal((await app.request('DELETE', `/contacts/${theirs.id}`)).status, 404);
  t.equal((await app.request<Page<Contact>>('GET', '/contacts')).body.meta.total, 1);
  const theirProp = await app.request<{ property: { id: string } }>('POST', '/contact-properties', { body: { name: 'p', type: 'string' }, key: other.apiKey });
  t.equal((await app.request('DELETE', `/contact-properties/${theirProp.body.property.id}`)).status, 404);
  const theirSeg = await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 's' }, key: other.apiKey });
  t.equal((await app.request('GET', `/segments/${theirSeg.body.segment.id}/members`)).status, 404);
  t.equal((await app.request('POST', `/segments/${theirSeg.body.segment.id}/contacts`, { body: { contact_ids: [mine.id] } })).status, 404);
  const mySeg = await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'mine' } });
  const cross = await app.request<Err>('POST', `/segments/${mySeg.body.segment.id}/contacts`, { body: { contact_ids: [theirs.id] } });
  t.equal(cross.status, 422, "another team's contact cannot join my segment");
  t.equal((await app.request('GET', '/contacts?segment_id=' + theirSeg.body.segment.id)).status, 404);
});

t.test('a sending_access key cannot reach the audience', async (t) => {
  const app = await startTestApp(t);
  const key = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'send', permission: 'sending_access' } });
  const res = await app.request<Err>('GET', '/contacts', { key: key.body.token });
  t.equal(res.status, 403);
  t.same(res.body, { error: 'API key does not have permission', code: 'forbidden' });
});
