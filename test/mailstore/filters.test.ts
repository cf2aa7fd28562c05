// planDelivery: pure, table-driven.
import t from 'tap';
import { decodeWords, planDelivery } from '../../src/mailstore/filters.js';
import type { FilterRule } from '../../src/mailstore/types.js';

const headers = [
  'From: "The Boss" <Boss@Corp.test>',
  'To: me@example.com',
  'Cc: team@example.com',
  'Subject: =?UTF-8?Q?Quarterly_R=C3=A9sultats?= are in',
  'List-Id: <dev.lists.example.com>',
  'X-Spam-Flag: YES',
  '',
  '',
].join('\r\n');
const base = { mailboxId: 7 };
const msg = { headers, size: 5000 };

const cases: Array<[string, FilterRule['conditions'][number], boolean]> = [
  ['from contains (any case)', { field: 'from', op: 'contains', value: 'boss@corp' }, true],
  ['from equals the address', { field: 'from', op: 'equals', value: 'boss@corp.test' }, true],
  ['from equals a part is not enough', { field: 'from', op: 'equals', value: 'boss' }, false],
  ['from matches a glob', { field: 'from', op: 'matches', value: '*@corp.test' }, true],
  ['to covers Cc', { field: 'to', op: 'equals', value: 'team@example.com' }, true],
  ['to misses', { field: 'to', op: 'contains', value: 'other@' }, false],
  ['subject is decoded', { field: 'subject', op: 'contains', value: 'résultats' }, true],
  ['subject matches with ?', { field: 'subject', op: 'matches', value: 'quarterly r?sultats*' }, true],
  ['subject equals whole', { field: 'subject', op: 'equals', value: 'Quarterly Résultats are in' }, true],
  ['header exists', { field: 'header', name: 'list-id', op: 'exists' }, true],
  ['header missing', { field: 'header', name: 'X-Nope', op: 'exists' }, false],
  ['header equals', { field: 'header', name: 'X-Spam-Flag', op: 'equals', value: 'yes' }, true],
  ['size gt', { field: 'size', op: 'gt', value: 4999 }, true],
  ['size lt', { field: 'size', op: 'lt', value: 5000 }, false],
  ['glob is not a regex', { field: 'subject', op: 'matches', value: '.*' }, false],
];

for (const [name, condition, expected] of cases) {
  t.test(name, async (t) => {
    const plan = planDelivery([{ conditions: [condition], actions: [{ type: 'flag' }] }], msg, base);
    t.same(plan.targets[0]!.flags ?? [], expected ? ['\\Flagged'] : []);
  });
}

t.test('actions: move (last wins), mark_read, flag, forward, stop, discard', async (t) => {
  const rules: FilterRule[] = [
    { conditions: [{ field: 'header', name: 'list-id', op: 'exists' }], actions: [{ type: 'move', folder: 'Lists' }, { type: 'mark_read' }] },
    { conditions: [{ field: 'from', op: 'contains', value: 'boss' }], actions: [{ type: 'move', folder: 'Boss' }, { type: 'forward', to: 'assistant@example.com' }], stop: true },
    { conditions: [], actions: [{ type: 'discard' }] },
  ];
  t.same(planDelivery(rules, msg, base), {
    targets: [{ mailboxId: 7, folder: 'Boss', flags: ['\\Seen'] }],
    forwards: ['assistant@example.com'],
  });
  const noStop = rules.map((r) => ({ ...r, stop: false }));
  t.same(planDelivery(noStop, msg, base), { targets: [], forwards: ['assistant@example.com'] }, 'discard stores nothing; forwards still go');
  t.same(planDelivery([], msg, { mailboxId: 1, folder: 'Junk', flags: ['$Junk'] }), { targets: [{ mailboxId: 1, folder: 'Junk', flags: ['$Junk'] }], forwards: [] }, 'no rules: the base target');
  t.same(planDelivery([{ conditions: [], actions: [{ type: 'flag' }, { type: 'flag' }] }], { headers: new Map(), size: 1 }, base).targets[0]!.flags, ['\\Flagged'], 'a header map works; flags not repeated');
  t.same(
    planDelivery([{ conditions: [{ field: 'subject', op: 'equals', value: 'hi' }], actions: [{ type: 'discard' }] }], { headers: { Subject: 'Hi' }, size: 1 }, base).targets,
    [],
    'a plain object of headers works',
  );
});

t.test('decodeWords', async (t) => {
  t.equal(decodeWords('=?UTF-8?B?SGVsbG8gV8O2cmxk?='), 'Hello Wörld');
  t.equal(decodeWords('=?ISO-8859-1?Q?caf=E9?= =?ISO-8859-1?Q?_au_lait?='), 'café au lait', 'adjacent words join');
  t.equal(decodeWords('=?x-unknown?Q?abc?='), '=?x-unknown?Q?abc?=', 'unknown charset left alone');
  t.equal(decodeWords('plain'), 'plain');
});
