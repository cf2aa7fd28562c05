// The answer cache in front of mailauth's look-ups, over a resolver that answers from a table (the outside
// internet faked): "no such name" is kept, failures are not, and every caller gets its own error object. Then the
// box's resolver itself, over a dns2 server: an unanswered look-up is marked temperror for mailauth's SPF.
import t from 'tap';
import { cachedLookups } from '../../src/dns/cached-lookups.js';
import { createResolver, type DnsResolver } from '../../src/dns/resolver.js';
import { startDns } from '../helpers/dns-server.js';

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

t.test('"no such name" is kept; a failure to answer is asked again', async (t) => {
  const dns = resolver({ 'down.example': 'ESERVFAIL', 'none.example': 'ENOTFOUND' });
  const lookup = cachedLookups(dns, () => 0);
  const down = (await lookup('down.example', 'TXT').catch((e: unknown) => e)) as Marked;
  t.equal(down.code, 'ESERVFAIL');
  const none = (await lookup('none.example', 'TXT').catch((e: unknown) => e)) as Marked;
  t.equal(none.code, 'ENOTFOUND');
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

t.test('the resolver marks an unanswered look-up temperror for mailauth, and not "no such name"', async (t) => {
  const server = await startDns();
  t.teardown(() => server.stop());
  server.fail('down.example');
  const dns = createResolver([server.server], 1000);
  const down = (await dns.raw('down.example', 'TXT').catch((e: unknown) => e)) as Marked;
  t.match(down, { code: 'ESERVFAIL', spfResult: { error: 'temperror' } });
  const none = (await dns.raw('none.example', 'TXT').catch((e: unknown) => e)) as Marked;
  t.equal(none.code, 'ENOTFOUND');
  t.notOk(none.spfResult);
});
