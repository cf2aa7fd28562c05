// Form A pagination (spec: Common pagination), table-driven against src/core/paging.ts.
import t from 'tap';
import { AppError } from '../../src/core/errors.js';
import { MAX_PAGE, MAX_PER_PAGE, parsePaging, toPage, type PageRequest } from '../../src/core/paging.js';

type Query = Record<string, string | string[] | undefined>;

t.test('constants follow the spec', async (t) => {
  t.equal(MAX_PER_PAGE, 100);
  t.ok(MAX_PAGE >= 1_000_000, 'pages far past the end are allowed (they are simply empty)');
});

t.test('valid queries', async (t) => {
  const cases: Array<[string, Query, Omit<PageRequest, never>]> = [
    ['nothing: page 1, default 20', {}, { page: 1, perPage: 20, offset: 0, formB: false }],
    ['page only', { page: '3' }, { page: 3, perPage: 20, offset: 40, formB: false }],
    ['per_page only', { per_page: '5' }, { page: 1, perPage: 5, offset: 0, formB: false }],
    ['page and per_page', { page: '4', per_page: '7' }, { page: 4, perPage: 7, offset: 21, formB: false }],
    ['per_page lower bound', { per_page: '1' }, { page: 1, perPage: 1, offset: 0, formB: false }],
    ['per_page upper bound', { per_page: '100' }, { page: 1, perPage: 100, offset: 0, formB: false }],
    ['leading zeros are still integers', { page: '02', per_page: '010' }, { page: 2, perPage: 10, offset: 10, formB: false }],
    ['surrounding spaces are trimmed', { page: ' 2 ', per_page: ' 3' }, { page: 2, perPage: 3, offset: 3, formB: false }],
    ['limit is the Form B synonym', { limit: '10' }, { page: 1, perPage: 10, offset: 0, formB: true }],
    ['limit with a page', { page: '2', limit: '10' }, { page: 2, perPage: 10, offset: 10, formB: true }],
    ['per_page wins over limit (and the answer stays Form A)', { per_page: '5', limit: '10' }, { page: 1, perPage: 5, offset: 0, formB: false }],
    ['cursor is ignored', { cursor: 'abc', page: '2' }, { page: 2, perPage: 20, offset: 20, formB: false }],
    ['a garbage cursor is ignored too', { cursor: ['x', 'y'] }, { page: 1, perPage: 20, offset: 0, formB: false }],
    ['unknown parameters are ignored', { perPage: '99', sort: 'x' }, { page: 1, perPage: 20, offset: 0, formB: false }],
    ['huge page is fine (empty past the end)', { page: String(MAX_PAGE), per_page: '100' }, { page: MAX_PAGE, perPage: 100, offset: (MAX_PAGE - 1) * 100, formB: false }],
  ];
  for (const [name, query, want] of cases) {
    t.same(parsePaging(query), want, name);
  }
  t.same(parsePaging({}, 50), { page: 1, perPage: 50, offset: 0, formB: false }, 'the default page size can be changed per list');
  t.same(parsePaging({ per_page: '7' }, 50).perPage, 7, 'an explicit per_page beats the list default');
  const big = parsePaging({ page: String(MAX_PAGE), per_page: '100' });
  t.ok(Number.isSafeInteger(big.offset), 'offset arithmetic stays exact');
});

t.test('invalid queries: 400 invalid_request naming the parameter, no clamping', async (t) => {
  const cases: Array<[Query, string]> = [
    [{ per_page: '0' }, 'per_page'],
    [{ per_page: '101' }, 'per_page'],
    [{ per_page: '1000' }, 'per_page'],
    [{ per_page: '-1' }, 'per_page'],
    [{ per_page: '1.5' }, 'per_page'],
    [{ per_page: 'abc' }, 'per_page'],
    [{ per_page: '' }, 'per_page'],
    [{ per_page: '1e2' }, 'per_page'],
    [{ per_page: '0x10' }, 'per_page'],
    [{ per_page: '+5' }, 'per_page'],
    [{ per_page: ['5', '6'] }, 'per_page'],
    [{ page: '0' }, 'page'],
    [{ page: '-1' }, 'page'],
    [{ page: 'abc' }, 'page'],
    [{ page: '1.0' }, 'page'],
    [{ page: '' }, 'page'],
    [{ page: 'Infinity' }, 'page'],
    [{ page: 'NaN' }, 'page'],
    [{ page: String(MAX_PAGE + 1) }, 'page'],
    [{ page: '99999999999999999999' }, 'page'],
    [{ page: ['1', '2'] }, 'page'],
    [{ limit: '0' }, 'limit'],
    [{ limit: '101' }, 'limit'],
    [{ limit: 'abc' }, 'limit'],
    [{ page: '2', per_page: '5', limit: 'x' }, 'limit'],
    [{ page: 'x', per_page: 'y' }, 'page'],
  ];
  for (const [query, param] of cases) {
    const label = JSON.stringify(query);
    try {
      parsePaging(query);
      t.fail(`${label} should be refused`);
    } catch (err) {
      t.ok(err instanceof AppError, `${label}: AppError`);
      const e = err as AppError;
      t.equal(e.status, 400, `${label}: 400`);
      t.equal(e.code, 'invalid_request', `${label}: invalid_request`);
      t.match(e.message, new RegExp(`'${param}'`), `${label}: names ${param}`);
    }
  }
  t.throws(() => parsePaging({ per_page: '101' }), { message: "Invalid query parameter 'per_page': must be an integer between 1 and 100" });
});

t.test('toPage builds Form A meta (camelCase) and Form B pagination only for limit', async (t) => {
  const req = (q: Query) => parsePaging(q);
  const cases: Array<[string, number, Query, { page: number; perPage: number; total: number; totalPages: number }]> = [
    ['nothing matches: totalPages 0', 0, {}, { page: 1, perPage: 20, total: 0, totalPages: 0 }],
    ['nothing matches, page 3', 0, { page: '3' }, { page: 3, perPage: 20, total: 0, totalPages: 0 }],
    ['one item', 1, {}, { page: 1, perPage: 20, total: 1, totalPages: 1 }],
    ['exact multiple', 40, {}, { page: 1, perPage: 20, total: 40, totalPages: 2 }],
    ['one over', 41, {}, { page: 1, perPage: 20, total: 41, totalPages: 3 }],
    ['per_page 1', 7, { per_page: '1' }, { page: 1, perPage: 1, total: 7, totalPages: 7 }],
    ['past the end keeps the real total', 25, { page: '9' }, { page: 9, perPage: 20, total: 25, totalPages: 2 }],
    ['per_page 100', 250, { per_page: '100', page: '3' }, { page: 3, perPage: 100, total: 250, totalPages: 3 }],
  ];
  for (const [name, total, query, meta] of cases) {
    const page = toPage(['x'], total, req(query));
    t.same(page.meta, meta, name);
    t.same(Object.keys(page.meta).sort(), ['page', 'perPage', 'total', 'totalPages'], `${name}: camelCase keys`);
    t.notOk('pagination' in page, `${name}: no Form B block`);
    t.same(page.data, ['x'], `${name}: data passed through`);
  }
  const b = toPage([], 30, req({ limit: '7', page: '2' }));
  t.same(b.meta, { page: 2, perPage: 7, total: 30, totalPages: 5 });
  t.same(b.pagination, { page: 2, limit: 7, total: 30, totalPages: 5 }, 'limit: Form B pagination too');
  const mixed = toPage([], 30, req({ limit: '7', per_page: '10' }));
  t.notOk('pagination' in mixed, 'per_page present: Form A only');
});
