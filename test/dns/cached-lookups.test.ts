// The answer cache in front of mailauth's look-ups, over a resolver that answers from a table (the outside
// internet faked): failures are marked for mailauth's SPF, and every caller gets its own error object.
import t from 'tap';
import { cachedLookups } from '../../src/dns/cached-lookups.js';
import type { DnsResolver } from '../../src/dns/resolver.js';

function resolver(codes: Record<string, string>): DnsResolver & { calls: number } {
  const r = {
    calls: 0,
    txt: async () => [],
    mx: async () => [],
    a: async () => [],
    aaaa: async () => [],
    raw: async (name: string) => {
      r.calls++;
      await new Promise((res) => setTimeout(res, 10));
      throw Object.assign(new Error(`query${codes[name]} ${name}`), { code: codes[name] });
    },
  };
  return r;
}

type Marked = Error & { code?: string; spfResult?: { error: string; text?: string; rr?: string } };

t.test('an unanswered look-up is marked temperror for mailauth; "no such name" is kept, and not marked', async (t) => {
  const dns = resolver({ 'down.example': 'ESERVFAIL', 'none.example': 'ENOTFOUND' });
  const lookup = cachedLookups(dns, () => 0);
  const down = (await lookup('down.example', 'TXT').catch((e: unknown) => e)) as Marked;
  t.match(down, { code: 'ESERVFAIL', spfResult: { error: 'temperror' } });
  const none = (await lookup('none.example', 'TXT').catch((e: unknown) => e)) as Marked;
  t.equal(none.code, 'ENOTFOUND');
  t.notOk(none.spfResult);
  await lookup('none.example', 'TXT').catch(() => undefined);
  await lookup('down.example', 'TXT').catch(() => undefined);
  t.equal(dns.calls, 3, 'the negative answer came from the cache; the failure was asked again');
});

// Found by review: mailauth writes onto the error it is given; a shared one carried one message's verdict into another's.
t.test('concurrent and cached callers each get their own error object', async (t) => {
  const dns = resolver({ 'none.example': 'ENOTFOUND', 'down.example': 'ESERVFAIL' });
  const lookup = cachedLookups(dns, () => 0);
  for (const name of ['none.example', 'down.example']) {
    const [a, b] = (await Promise.all([lookup(name, 'TXT').catch((e: unknown) => e), lookup(name, 'TXT').catch((e: unknown) => e)])) as Marked[];
    t.not(a, b, `${name}: two objects for two concurrent callers`);
    a!.spfResult = { error: 'fail', rr: 'v=spf1 -all (message 1)' };
    const c = (await lookup(name, 'TXT').catch((e: unknown) => e)) as Marked;
    t.not(c, a, `${name}: a later caller gets its own too`);
    t.notMatch(JSON.stringify(b!.spfResult ?? {}), /message 1/, `${name}: untouched by another caller's verdict`);
    t.notMatch(JSON.stringify(c.spfResult ?? {}), /message 1/);
    t.equal(c.code, a!.code, 'same code');
    t.match(c.message, new RegExp(name.replace('.', '\\.')), 'same message');
  }
});
