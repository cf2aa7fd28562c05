// Form A pagination over real HTTP (spec: Common pagination), on GET /events: every domain created
// records a domain.created event, so N domains make N events, newest first.
import t from 'tap';
import { createOtherTeam, startTestApp } from '../helpers/app.js';

interface EventItem {
  id: number;
  type: string;
  created_at: string;
  data: { name?: string };
}
interface EventPage {
  data: EventItem[];
  meta: { page: number; perPage: number; total: number; totalPages: number };
  pagination?: { page: number; limit: number; total: number; totalPages: number };
}

const DOMAINS = 25;

t.test('paging GET /events', async (t) => {
  const app = await startTestApp(t);
  for (let i = 1; i <= DOMAINS; i++) {
    app.clock.advance(1000);
    const res = await app.request('POST', '/domains', { body: { name: `d${i}.example.com` } });
    t.equal(res.status, 201, `d${i}.example.com created`);
  }
  // POST /api-keys records no event: the total must not move.
  t.equal((await app.request('POST', '/api-keys', { body: { name: 'x', permission: 'sending_access' } })).status, 201);

  const get = (query = '') => app.request<EventPage>('GET', `/events${query}`);
  const names = (page: EventPage) => page.data.map((e) => e.data.name);
  const expected = (from: number, to: number) => {
    const out: string[] = [];
    for (let i = from; i >= to; i--) out.push(`d${i}.example.com`);
    return out;
  };

  t.test('default: page 1, per_page 20, newest first, camelCase meta', async (t) => {
    const res = await get();
    t.equal(res.status, 200);
    t.same(Object.keys(res.body).sort(), ['data', 'meta'], 'Form A only: no pagination block');
    t.same(res.body.meta, { page: 1, perPage: 20, total: DOMAINS, totalPages: 2 });
    t.equal(res.body.data.length, 20);
    t.same(names(res.body), expected(25, 6), 'newest first');
    t.ok(res.body.data.every((e) => e.type === 'domain.created'));
    const times = res.body.data.map((e) => Date.parse(e.created_at));
    t.same([...times].sort((a, b) => b - a), times, 'created_at descending');
    t.notOk(/per_page|total_pages/.test(JSON.stringify(res.body.meta)), 'no snake_case in the answer');
  });

  t.test('page 2 holds the rest', async (t) => {
    const res = await get('?page=2');
    t.equal(res.status, 200);
    t.same(res.body.meta, { page: 2, perPage: 20, total: DOMAINS, totalPages: 2 });
    t.same(names(res.body), expected(5, 1));
  });

  t.test('walking every page with per_page 7 sees each event once', async (t) => {
    const seen: number[] = [];
    for (let page = 1; page <= 4; page++) {
      const res = await get(`?page=${page}&per_page=7`);
      t.equal(res.status, 200);
      t.same(res.body.meta, { page, perPage: 7, total: DOMAINS, totalPages: 4 });
      t.equal(res.body.data.length, page < 4 ? 7 : 4);
      seen.push(...res.body.data.map((e) => e.id));
    }
    t.equal(new Set(seen).size, DOMAINS);
    t.same(seen, [...seen].sort((a, b) => b - a), 'ids strictly descending across pages');
  });

  t.test('bounds: per_page 1 and 100', async (t) => {
    const one = await get('?per_page=1');
    t.same(one.body.meta, { page: 1, perPage: 1, total: DOMAINS, totalPages: DOMAINS });
    t.same(names(one.body), ['d25.example.com']);
    const last = await get(`?per_page=1&page=${DOMAINS}`);
    t.same(names(last.body), ['d1.example.com']);
    const hundred = await get('?per_page=100');
    t.same(hundred.body.meta, { page: 1, perPage: 100, total: DOMAINS, totalPages: 1 });
    t.equal(hundred.body.data.length, DOMAINS);
  });

  t.test('a page past the end: 200, empty data, the real total', async (t) => {
    for (const q of ['?page=3', '?page=4&per_page=10', '?page=1000000', `?page=${DOMAINS + 1}&per_page=1`]) {
      const res = await get(q);
      t.equal(res.status, 200, q);
      t.same(res.body.data, [], `${q}: empty`);
      t.equal(res.body.meta.total, DOMAINS, `${q}: real total`);
    }
    const res = await get('?page=3');
    t.same(res.body.meta, { page: 3, perPage: 20, total: DOMAINS, totalPages: 2 });
  });

  t.test('bad values: 400 invalid_request naming the parameter, no clamping', async (t) => {
    const cases: Array<[string, string]> = [
      ['per_page=0', 'per_page'],
      ['per_page=101', 'per_page'],
      ['per_page=-1', 'per_page'],
      ['per_page=1.5', 'per_page'],
      ['per_page=abc', 'per_page'],
      ['per_page=', 'per_page'],
      ['per_page=1e2', 'per_page'],
      ['per_page=5&per_page=6', 'per_page'],
      ['page=0', 'page'],
      ['page=abc', 'page'],
      ['page=-2', 'page'],
      ['page=1.5', 'page'],
      ['page=99999999999999', 'page'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
    ];
    for (const [q, param] of cases) {
      const res = await app.request<{ error: string; code: string }>('GET', `/events?${q}`);
      t.equal(res.status, 400, q);
      t.equal(res.body.code, 'invalid_request', `${q}: code`);
      t.match(res.body.error, new RegExp(`'${param}'`), `${q}: names ${param}`);
      t.same(Object.keys(res.body).sort(), ['code', 'error'], `${q}: error body only`);
    }
    const exact = await app.request('GET', '/events?per_page=101');
    t.same(exact.body, { error: "Invalid query parameter 'per_page': must be an integer between 1 and 100", code: 'invalid_request' });
  });

  t.test('cursor is ignored', async (t) => {
    const plain = await get('?per_page=5&page=2');
    for (const cursor of ['abc', '12', '', 'x&cursor=y']) {
      const res = await get(`?per_page=5&page=2&cursor=${cursor}`);
      t.equal(res.status, 200, `cursor=${cursor}`);
      t.same(res.body, plain.body, `cursor=${cursor}: same answer`);
    }
    const alone = await get('?cursor=d3.example.com');
    t.same(alone.body.meta, { page: 1, perPage: 20, total: DOMAINS, totalPages: 2 });
  });

  t.test('limit is the Form B synonym of per_page and adds a pagination block', async (t) => {
    const res = await get('?limit=10&page=2');
    t.equal(res.status, 200);
    t.same(res.body.meta, { page: 2, perPage: 10, total: DOMAINS, totalPages: 3 });
    t.same(res.body.pagination, { page: 2, limit: 10, total: DOMAINS, totalPages: 3 });
    t.same(names(res.body), expected(15, 6));
    const both = await get('?limit=10&per_page=5');
    t.equal(both.body.meta.perPage, 5, 'per_page wins when both are given');
    t.notOk('pagination' in both.body, 'and the answer is Form A');
  });

  t.test('a filter changes the total', async (t) => {
    const res = await get('?type=domain.deleted');
    t.equal(res.status, 200);
    t.same(res.body, { data: [], meta: { page: 1, perPage: 20, total: 0, totalPages: 0 } });
    const bad = await app.request('GET', '/events?type=nope');
    t.equal(bad.status, 400);
    t.equal(bad.body.code, 'invalid_request');
    t.match(bad.body.error, /'type'/);
  });

  t.test('offsets are computed at request time: a new event shifts page 2', async (t) => {
    const before = await get('?per_page=5&page=2');
    app.clock.advance(1000);
    t.equal((await app.request('POST', '/domains', { body: { name: 'late.example.com' } })).status, 201);
    const after = await get('?per_page=5&page=2');
    t.equal(after.body.meta.total, DOMAINS + 1);
    t.same(after.body.data.slice(1).map((e) => e.id), before.body.data.slice(0, 4).map((e) => e.id), 'items moved down by one');
    const first = await get('?per_page=1');
    t.same(names(first.body), ['late.example.com']);
  });

  t.test('nothing to list: total 0, totalPages 0; and another team sees none of ours', async (t) => {
    const other = await createOtherTeam(app);
    const res = await app.request<EventPage>('GET', '/events', { key: other.apiKey });
    t.equal(res.status, 200);
    t.same(res.body, { data: [], meta: { page: 1, perPage: 20, total: 0, totalPages: 0 } });
    const past = await app.request<EventPage>('GET', '/events?page=5&limit=3', { key: other.apiKey });
    t.same(past.body, {
      data: [],
      meta: { page: 5, perPage: 3, total: 0, totalPages: 0 },
      pagination: { page: 5, limit: 3, total: 0, totalPages: 0 },
    });
  });

  t.test('several types: comma-separated or the parameter repeated', async (t) => {
    const [domain] = (await app.request<{ domains: Array<{ id: string }> }>('GET', '/domains')).body.domains;
    t.equal((await app.request('PATCH', `/domains/${domain!.id}`, { body: { open_tracking: true } })).status, 200);
    const one = (await get('?type=domain.created&per_page=100')).body.meta.total;
    const two = (await get('?type=domain.updated&per_page=100')).body.meta.total;
    t.ok(one > 0 && two > 0, 'both types occur');
    t.equal((await get('?type=domain.created,domain.updated&per_page=100')).body.meta.total, one + two, 'comma-separated');
    t.equal((await get('?type=domain.created&type=domain.updated&per_page=100')).body.meta.total, one + two, 'repeated');
    const bad = await app.request<{ error: string }>('GET', '/events?type=domain.created&type=nope');
    t.equal(bad.status, 400);
    t.equal(bad.body.error, "Invalid query parameter 'type': must be a known event type ('nope' is not)");
  });
});
