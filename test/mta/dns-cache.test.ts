// The MTA's shared look-ups: concurrent queries for a name become one; answers are kept only when asked,
// for as long as asked; failures are never kept.
import t from 'tap';
import { DnsLookupError, type DnsResolver } from '../../src/dns/resolver.js';
import { sharedLookups } from '../../src/mta/dns-cache.js';

function countingResolver() {
  const calls: string[] = [];
  let failNext = false;
  const dns: DnsResolver = {
    txt: async () => [],
    raw: async () => [],
    mx: async (name) => {
      calls.push(`MX ${name}`);
      await Promise.resolve();
      if (failNext) {
        failNext = false;
        throw new DnsLookupError('MX', name, 'ESERVFAIL');
      }
      return [{ exchange: `mx.${name}`, priority: 10 }];
    },
    a: async (name) => {
      calls.push(`A ${name}`);
      return ['192.0.2.1'];
    },
    aaaa: async (name) => {
      calls.push(`AAAA ${name}`);
      return [];
    },
  };
  return { dns, calls, failNext: () => (failNext = true) };
}

t.test('concurrent look-ups of one name share one query; nothing is kept by default', async (t) => {
  const { dns, calls } = countingResolver();
  const shared = sharedLookups(dns, 0, () => 0);
  const answers = await Promise.all([shared.mx('example.com'), shared.mx('EXAMPLE.com'), shared.mx('other.com'), shared.a('example.com')]);
  t.same(answers[0], [{ exchange: 'mx.example.com', priority: 10 }]);
  t.same(calls, ['MX example.com', 'MX other.com', 'A example.com']);
  await shared.mx('example.com');
  t.equal(calls.filter((c) => c === 'MX example.com').length, 2, 'asked again once the first look-up finished');
});

t.test('with a TTL, answers are reused until they expire; failures are not kept', async (t) => {
  const { dns, calls, failNext } = countingResolver();
  let now = 1_000;
  const shared = sharedLookups(dns, 5_000, () => now);
  failNext();
  await t.rejects(shared.mx('example.com'), DnsLookupError);
  await shared.mx('example.com');
  await shared.mx('example.com');
  t.equal(calls.length, 2, 'the failure was not kept, the answer was');
  now += 4_999;
  await shared.mx('example.com');
  t.equal(calls.length, 2);
  now += 1;
  await shared.mx('example.com');
  t.equal(calls.length, 3, 'expired');
});
