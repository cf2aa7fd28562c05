// Subscription topics over the real API: create/list/get/patch/delete with their 400/404/409/422 answers,
// subscribers (defaults, choices, global unsubscribe, order, paging, the 50 default), a contact's
// subscriptions (set, clear, events), segment rules that name a topic, tenant isolation.
import t from 'tap';
import { MINUTE } from '../../src/core/clock.js';
import { createOtherTeam, startTestApp, type TestApp } from '../helpers/app.js';

interface Topic {
  id: string;
  name: string;
  description: string | null;
  default_subscription: 'opt_in' | 'opt_out';
  visibility: 'public' | 'private';
  created_at: string;
  updated_at: string;
}
interface Subscriber {
  contact_id: string;
  email: string;
  subscribed: boolean;
  by_default: boolean;
  changed_at: string;
}
interface Page<T> {
  data: T[];
  meta: { page: number; perPage: number; total: number; totalPages: number };
}
interface Subscriptions {
  contact_id: string;
  unsubscribed: boolean;
  subscriptions: Array<{ topic_id: string; topic_name: string; subscribed: boolean; by_default: boolean; updated_at: string }>;
}
interface Err {
  error: string;
  code: string;
}
interface EventPage {
  data: Array<{ type: string; data: Record<string, unknown> }>;
}

async function topic(app: TestApp, body: Record<string, unknown>, key?: string): Promise<Topic> {
  const res = await app.request<{ topic: Topic }>('POST', '/subscription-topics', { body, ...(key ? { key } : {}) });
  if (res.status !== 201) throw new Error(`topic: ${res.status} ${res.text}`);
  return res.body.topic;
}

async function contact(app: TestApp, email: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await app.request<{ contact: { id: string } }>('POST', '/contacts', { body: { email, ...extra } });
  if (res.status !== 201) throw new Error(`contact: ${res.status} ${res.text}`);
  return res.body.contact.id;
}

const subscribers = (app: TestApp, id: string, query = '') => app.request<Page<Subscriber>>('GET', `/subscription-topics/${id}/subscribers${query}`);

t.test('create, list newest first, get, patch, delete', async (t) => {
  const app = await startTestApp(t);
  const news = await topic(app, { name: 'Newsletter', description: 'Once a month', default_subscription: 'opt_in' });
  t.match(news.id, /^top_[A-Za-z0-9]{24}$/);
  t.same({ ...news, id: '' }, { id: '', name: 'Newsletter', description: 'Once a month', default_subscription: 'opt_in', visibility: 'public', created_at: '2026-03-01T10:00:00.000Z', updated_at: '2026-03-01T10:00:00.000Z' });
  app.clock.advance(MINUTE);
  const beta = await topic(app, { name: 'Beta programme', default_subscription: 'opt_out', visibility: 'private' });
  t.equal(beta.description, null);

  const list = await app.request<{ topics: Topic[] }>('GET', '/subscription-topics');
  t.same(list.body.topics.map((x) => x.name), ['Beta programme', 'Newsletter'], 'newest first');
  t.same((await app.request<{ topic: Topic }>('GET', `/subscription-topics/${news.id}`)).body.topic, news);

  app.clock.advance(MINUTE);
  const patched = await app.request<{ success: true; topic: Topic }>('PATCH', `/subscription-topics/${news.id}`, { body: { description: null, visibility: 'private' } });
  t.equal(patched.status, 200);
  t.same({ ...patched.body.topic }, { ...news, description: null, visibility: 'private', updated_at: '2026-03-01T10:02:00.000Z' }, 'only what was given changes');

  t.same((await app.request('DELETE', `/subscription-topics/${beta.id}`)).body, { success: true });
  const gone = await app.request<Err>('GET', `/subscription-topics/${beta.id}`);
  t.same([gone.status, gone.body], [404, { error: 'Topic not found', code: 'not_found' }]);
  t.equal((await app.request<Err>('PATCH', `/subscription-topics/${beta.id}`, { body: { name: 'x' } })).status, 404);
  t.equal((await app.request<Err>('DELETE', `/subscription-topics/${beta.id}`)).status, 404);
  t.equal((await app.request<Err>('GET', `/subscription-topics/${beta.id}/subscribers`)).status, 404);
});

t.test('bad input: 400 naming the field, 409 for a name taken in any case', async (t) => {
  const app = await startTestApp(t);
  const cases: Array<[unknown, string]> = [
    [{ default_subscription: 'opt_in' }, 'Request body is missing required fields: name'],
    [{ name: 'News' }, 'Request body is missing required fields: default_subscription'],
    [{ name: '  ', default_subscription: 'opt_in' }, 'name: must not be empty'],
    [{ name: 'x'.repeat(101), default_subscription: 'opt_in' }, 'name: must be at most 100 characters'],
    [{ name: 'News', default_subscription: 'always' }, 'default_subscription: must be one of opt_in, opt_out'],
    [{ name: 'News', default_subscription: 'opt_in', visibility: 'hidden' }, 'visibility: must be one of public, private'],
    [{ name: 'News', default_subscription: 'opt_in', description: 'd'.repeat(501) }, 'description: must be at most 500 characters'],
  ];
  for (const [body, error] of cases) {
    const res = await app.request<Err>('POST', '/subscription-topics', { body });
    t.same([res.status, res.body], [400, { error, code: 'invalid_request' }], JSON.stringify(body).slice(0, 80));
  }
  const news = await topic(app, { name: 'News', default_subscription: 'opt_in' });
  const other = await topic(app, { name: 'Offers', default_subscription: 'opt_out' });
  const dup = await app.request<Err>('POST', '/subscription-topics', { body: { name: 'NEWS', default_subscription: 'opt_out' } });
  t.same([dup.status, dup.body], [409, { error: 'Topic already exists', code: 'conflict' }]);
  const rename = await app.request<Err>('PATCH', `/subscription-topics/${other.id}`, { body: { name: 'news' } });
  t.same([rename.status, rename.body], [409, { error: 'Topic already exists', code: 'conflict' }]);
  t.equal((await app.request('PATCH', `/subscription-topics/${news.id}`, { body: { name: 'news' } })).status, 200, 'a topic may change the case of its own name');
  const empty = await app.request<Err>('PATCH', `/subscription-topics/${news.id}`, { body: {} });
  t.same([empty.status, empty.body.error], [400, 'Request body must contain at least one of: name, description, default_subscription, visibility']);
  t.equal((await app.request<Err>('GET', `/subscription-topics/${news.id}/subscribers?subscribed=yes`)).body.error, "Invalid query parameter 'subscribed': must be true or false");
  t.equal((await app.request<Err>('GET', `/subscription-topics/${news.id}/subscribers?per_page=101`)).body.error, "Invalid query parameter 'per_page': must be an integer between 1 and 100");
});

t.test('subscribers: defaults, choices, global unsubscribe, most recently changed first, paging', async (t) => {
  const app = await startTestApp(t);
  const optIn = await topic(app, { name: 'News', default_subscription: 'opt_in' });
  const optOut = await topic(app, { name: 'Beta', default_subscription: 'opt_out' });
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) {
    ids.push(await contact(app, `p${i}@sub.test`, i === 3 ? { unsubscribed: true } : {}));
    app.clock.advance(MINUTE);
  }
  const [a, b, c, gone] = ids as [string, string, string, string];

  let page = await subscribers(app, optIn.id);
  t.same(page.body.data.map((s) => s.contact_id), [c, b, a], 'opt_in: everyone without a choice, newest contact first; a globally unsubscribed contact is none');
  t.same(page.body.meta, { page: 1, perPage: 50, total: 3, totalPages: 1 }, 'Form A, 50 per page by default');
  t.same(page.body.data[0], { contact_id: c, email: 'p2@sub.test', first_name: null, last_name: null, subscribed: true, by_default: true, changed_at: '2026-03-01T10:02:00.000Z' });
  t.same((await subscribers(app, optOut.id)).body.data, [], 'opt_out: nobody until they opt in');
  t.same((await subscribers(app, optOut.id, '?subscribed=false')).body.data.map((s) => s.contact_id), [gone, c, b, a]);

  // a opts out of News; b opts in to Beta; later, a opts back in.
  app.clock.advance(MINUTE);
  const set = await app.request<Subscriptions & { success: true }>('POST', `/subscription-topics/contacts/${a}/subscriptions`, { body: { subscriptions: [{ topic_id: optIn.id, subscribed: false }] } });
  t.equal(set.status, 200);
  t.same(set.body.subscriptions.find((s) => s.topic_id === optIn.id), { topic_id: optIn.id, topic_name: 'News', subscribed: false, by_default: false, updated_at: '2026-03-01T10:05:00.000Z' });
  app.clock.advance(MINUTE);
  await app.request('POST', `/subscription-topics/contacts/p1@sub.test/subscriptions`, { body: { subscriptions: [{ topic_id: optOut.id, subscribed: true }] } });

  page = await subscribers(app, optIn.id);
  t.same(page.body.data.map((s) => s.contact_id), [c, b]);
  const out = await subscribers(app, optIn.id, '?subscribed=false');
  t.same(out.body.data.map((s) => [s.contact_id, s.by_default, s.changed_at]), [[a, false, '2026-03-01T10:05:00.000Z'], [gone, true, '2026-03-01T10:03:00.000Z']], 'most recently changed first');
  t.same((await subscribers(app, optOut.id)).body.data.map((s) => [s.contact_id, s.by_default]), [[b, false]]);

  app.clock.advance(MINUTE);
  await app.request('POST', `/subscription-topics/contacts/${a}/subscriptions`, { body: { subscriptions: [{ topic_id: optIn.id, subscribed: true }] } });
  page = await subscribers(app, optIn.id, '?per_page=2');
  t.same(page.body.data.map((s) => s.contact_id), [a, c], 'the newest choice first');
  t.same(page.body.meta, { page: 1, perPage: 2, total: 3, totalPages: 2 });
  const second = await subscribers(app, optIn.id, '?per_page=2&page=2');
  t.same(second.body.data.map((s) => s.contact_id), [b]);
  const past = await subscribers(app, optIn.id, '?per_page=2&page=5');
  t.same([past.body.data, past.body.meta.total], [[], 3], 'a page past the end is empty with the real total');

  // A global unsubscribe hides a choice without erasing it.
  await app.request('PATCH', `/contacts/${b}`, { body: { unsubscribed: true } });
  t.same((await subscribers(app, optOut.id)).body.data, [], 'globally unsubscribed: no topic’s subscriber');
  const subs = await app.request<Subscriptions>('GET', `/subscription-topics/contacts/${b}/subscriptions`);
  t.equal(subs.body.unsubscribed, true);
  t.equal(subs.body.subscriptions.find((s) => s.topic_id === optOut.id)?.subscribed, true, 'the choice is kept for when they come back');
  await app.request('PATCH', `/contacts/${b}`, { body: { unsubscribed: false } });
  t.same((await subscribers(app, optOut.id)).body.data.map((s) => s.contact_id), [b]);

  // A new default moves those without a choice.
  await app.request('PATCH', `/subscription-topics/${optOut.id}`, { body: { default_subscription: 'opt_in' } });
  t.same((await subscribers(app, optOut.id)).body.data.map((s) => s.contact_id).sort(), [a, b, c].sort());
});

t.test('a contact’s subscriptions: list, set all or nothing, clear, events', async (t) => {
  const app = await startTestApp(t);
  const news = await topic(app, { name: 'News', default_subscription: 'opt_in' });
  app.clock.advance(MINUTE);
  const offers = await topic(app, { name: 'Offers', default_subscription: 'opt_out', visibility: 'private' });
  const id = await contact(app, 'ann@subs.test');

  const initial = await app.request<Subscriptions>('GET', `/subscription-topics/contacts/${id}/subscriptions`);
  t.same(initial.body, {
    contact_id: id,
    unsubscribed: false,
    subscriptions: [
      { topic_id: offers.id, topic_name: 'Offers', subscribed: false, by_default: true, updated_at: '2026-03-01T10:01:00.000Z' },
      { topic_id: news.id, topic_name: 'News', subscribed: true, by_default: true, updated_at: '2026-03-01T10:01:00.000Z' },
    ],
  });
  t.same((await app.request<Subscriptions>('GET', `/subscription-topics/contacts/ann@subs.test/subscriptions`)).body, initial.body, 'by address too');

  const unknown = await app.request<Err>('POST', `/subscription-topics/contacts/${id}/subscriptions`, {
    body: { subscriptions: [{ topic_id: news.id, subscribed: false }, { topic_id: 'top_nope', subscribed: true }] },
  });
  t.same([unknown.status, unknown.body], [422, { error: 'Topics not found: top_nope', code: 'unprocessable_entity' }]);
  t.same((await app.request<Subscriptions>('GET', `/subscription-topics/contacts/${id}/subscriptions`)).body, initial.body, 'nothing changed');
  const twice = await app.request<Err>('POST', `/subscription-topics/contacts/${id}/subscriptions`, {
    body: { subscriptions: [{ topic_id: news.id, subscribed: false }, { topic_id: news.id, subscribed: true }] },
  });
  t.same([twice.status, twice.body.error], [400, `subscriptions.1.topic_id: names topic '${news.id}' a second time`]);
  for (const [body, error] of [
    [{}, 'Request body is missing required fields: subscriptions'],
    [{ subscriptions: [] }, 'subscriptions: must hold at least one choice'],
    [{ subscriptions: [{ topic_id: news.id, subscribed: 'no' }] }, 'subscriptions.0.subscribed: must be a boolean'],
  ] as Array<[unknown, string]>) {
    const res = await app.request<Err>('POST', `/subscription-topics/contacts/${id}/subscriptions`, { body });
    t.same([res.status, res.body.error], [400, error]);
  }
  t.equal((await app.request<Err>('POST', '/subscription-topics/contacts/ct_nope/subscriptions', { body: { subscriptions: [{ topic_id: news.id, subscribed: true }] } })).body.error, 'Contact not found');
  t.equal((await app.request<Err>('GET', '/subscription-topics/contacts/ct_nope/subscriptions')).status, 404);

  app.clock.advance(MINUTE);
  const set = await app.request<Subscriptions>('POST', `/subscription-topics/contacts/${id}/subscriptions`, {
    body: { subscriptions: [{ topic_id: news.id, subscribed: false }, { topic_id: offers.id, subscribed: true }] },
  });
  t.same(set.body.subscriptions.map((s) => [s.topic_name, s.subscribed, s.by_default]), [['Offers', true, false], ['News', false, false]]);

  const events = (await app.request<EventPage>('GET', '/events?per_page=100')).body.data.filter((e) => e.type === 'contact.unsubscribed');
  t.same(events.map((e) => e.data), [{ contact_id: id, email: 'ann@subs.test', topic_id: news.id, email_id: null }], 'leaving a topic is a contact.unsubscribed with the topic; joining one is not');

  const cleared = await app.request<Subscriptions>('DELETE', `/subscription-topics/contacts/${id}/subscriptions/${offers.id}`);
  t.equal(cleared.status, 200);
  t.same(cleared.body.subscriptions.find((s) => s.topic_id === offers.id), { topic_id: offers.id, topic_name: 'Offers', subscribed: false, by_default: true, updated_at: '2026-03-01T10:01:00.000Z' }, 'the default applies again');
  t.equal((await app.request<EventPage>('GET', '/events?per_page=100')).body.data.filter((e) => e.type === 'contact.unsubscribed').length, 2, 'falling back to an opt_out default leaves the topic');
  const again = await app.request<Subscriptions>('DELETE', `/subscription-topics/contacts/${id}/subscriptions/${offers.id}`);
  t.equal(again.status, 200, 'clearing a default is a no-op');
  t.equal((await app.request<Err>('DELETE', `/subscription-topics/contacts/${id}/subscriptions/top_nope`)).body.error, 'Topic not found');
  t.equal((await app.request<Err>('DELETE', `/subscription-topics/contacts/ct_nope/subscriptions/${news.id}`)).body.error, 'Contact not found');

  // Deleting a topic forgets its choices; a deleted contact leaves its choices.
  t.equal((await app.request('DELETE', `/subscription-topics/${news.id}`)).status, 200);
  t.same((await app.request<Subscriptions>('GET', `/subscription-topics/contacts/${id}/subscriptions`)).body.subscriptions.map((s) => s.topic_name), ['Offers']);
});

t.test('a topic named by segment rules: the rule works, and the topic cannot be deleted under it', async (t) => {
  const app = await startTestApp(t);
  const news = await topic(app, { name: 'News', default_subscription: 'opt_out' });
  const a = await contact(app, 'a@rule.test');
  await contact(app, 'b@rule.test');
  await app.request('POST', `/subscription-topics/contacts/${a}/subscriptions`, { body: { subscriptions: [{ topic_id: news.id, subscribed: true }] } });
  const seg = await app.request<{ segment: { id: string } }>('POST', '/segments', {
    body: { name: 'Readers', rules: { match: 'any', conditions: [{ match: 'all', conditions: [{ field: 'topic', operator: 'subscribed', value: news.id }] }] } },
  });
  t.equal(seg.status, 201);
  t.same((await app.request<Page<{ id: string }>>('GET', `/segments/${seg.body.segment.id}/members`)).body.data.map((c) => c.id), [a]);
  await app.request('PATCH', `/contacts/${a}`, { body: { unsubscribed: true } });
  t.same((await app.request<Page<{ id: string }>>('GET', `/segments/${seg.body.segment.id}/members`)).body.data, [], 'a contact unsubscribed from everything is no topic’s subscriber, in rules too');
  const refused = await app.request<Err>('DELETE', `/subscription-topics/${news.id}`);
  t.same([refused.status, refused.body], [409, { error: `Topic is used by the rules of segment 'Readers' (${seg.body.segment.id}); change them first`, code: 'conflict' }]);
  await app.request('DELETE', `/segments/${seg.body.segment.id}`);
  t.equal((await app.request('DELETE', `/subscription-topics/${news.id}`)).status, 200);
});

t.test('tenant isolation: another team’s topic is 404 everywhere', async (t) => {
  const app = await startTestApp(t);
  const other = await createOtherTeam(app);
  const theirs = await topic(app, { name: 'Theirs', default_subscription: 'opt_in' }, other.apiKey);
  const mine = await contact(app, 'me@iso.test');
  t.same((await app.request<{ topics: Topic[] }>('GET', '/subscription-topics')).body.topics, []);
  for (const [method, path, body] of [
    ['GET', `/subscription-topics/${theirs.id}`, undefined],
    ['PATCH', `/subscription-topics/${theirs.id}`, { name: 'Mine' }],
    ['DELETE', `/subscription-topics/${theirs.id}`, undefined],
    ['GET', `/subscription-topics/${theirs.id}/subscribers`, undefined],
    ['DELETE', `/subscription-topics/contacts/${mine}/subscriptions/${theirs.id}`, undefined],
  ] as Array<[string, string, unknown]>) {
    const res = await app.request<Err>(method, path, body === undefined ? {} : { body });
    t.same([res.status, res.body], [404, { error: 'Topic not found', code: 'not_found' }], `${method} ${path}`);
  }
  const set = await app.request<Err>('POST', `/subscription-topics/contacts/${mine}/subscriptions`, { body: { subscriptions: [{ topic_id: theirs.id, subscribed: false }] } });
  t.same([set.status, set.body.error], [422, `Topics not found: ${theirs.id}`]);
  const theirContact = await app.request<Err>('GET', `/subscription-topics/contacts/${mine}/subscriptions`, { key: other.apiKey });
  t.same([theirContact.status, theirContact.body.error], [404, 'Contact not found'], 'nor is my contact theirs');
  t.equal((await app.request<{ topics: Topic[] }>('GET', '/subscription-topics', { key: other.apiKey })).body.topics.length, 1);
});
