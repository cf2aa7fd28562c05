// The MX's mailauth checks on worker threads (src/services/inbound/auth.ts): the same verdict as on the main
// thread, DNS answers kept on the caller's clock, and every message answered when the threads go away.
import t, { type Test } from 'tap';
import { createLogger } from '../../src/core/logger.js';
import { cachedLookups } from '../../src/dns/cached-lookups.js';
import { createResolver } from '../../src/dns/resolver.js';
import { checkMessage, InboundAuthPool, type AuthInput, type AuthVerdict } from '../../src/services/inbound/auth.js';
import { startDns, type TestDns } from '../helpers/dns-server.js';
import { buildMessage, publishSender } from './support.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const log = createLogger('silent');

async function setup(t: Test): Promise<{ dns: TestDns; signed: Buffer; pool: (size: number) => InboundAuthPool; inline: (input: AuthInput) => Promise<AuthVerdict> }> {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sender = publishSender(dns, 'sender.example', 'reject');
  const signed = Buffer.from(await sender.sign(buildMessage({ from: 'News <news@sender.example>', to: 'user@box.test', messageId: '<m1@sender.example>' })));
  const lookup = cachedLookups(createResolver([dns.server], 1000), () => T0);
  const inline = (input: AuthInput) => checkMessage(input, lookup);
  const pool = (size: number) => {
    const p = new InboundAuthPool(size, { dnsServers: [dns.server], dnsTimeoutMs: 1000 }, inline, log);
    t.teardown(() => p.close());
    return p;
  };
  return { dns, signed, pool, inline };
}

const input = (raw: Buffer, ip = '127.0.0.1'): AuthInput => ({ raw, ip, helo: 'client.sender.example', sender: 'news@sender.example', mta: 'mx.box.test' });

t.test('a thread gives the verdict the main thread gives', async (t) => {
  const { signed, pool, inline } = await setup(t);
  const threads = pool(1);
  const passing = await threads.check(input(signed), new Date(T0));
  t.same(passing, await inline(input(signed)), 'signed, from an allowed address');
  t.equal(passing.spf, 'pass');
  t.same(passing.dkim, ['pass']);
  t.same(passing.dmarc, { result: 'pass', policy: 'reject', domain: 'sender.example' });
  for (const check of ['spf=pass', 'dkim=pass', 'dmarc=pass']) t.match(passing.headers, check, `Authentication-Results has ${check}`);
  t.match(passing.headers, /^Authentication-Results: mx\.box\.test;/m);

  const tampered = Buffer.from(signed.toString('latin1').replace('Hello there.', 'Hello there!'), 'latin1');
  const failing = await threads.check(input(tampered, '192.0.2.1'), new Date(T0));
  t.same(failing, await inline(input(tampered, '192.0.2.1')), 'body changed, from an address SPF does not allow');
  t.equal(failing.spf, 'fail');
  t.equal(failing.dkim.length, 1);
  t.not(failing.dkim[0], 'pass', `dkim ${failing.dkim[0]}`);
  t.equal(failing.dmarc?.result, 'fail');
});

t.test('checks asked for together (posted to the thread as one batch) each get their own verdict', async (t) => {
  const { signed, pool } = await setup(t);
  const threads = pool(2);
  const ips = Array.from({ length: 12 }, (_, i) => (i % 3 === 0 ? '192.0.2.1' : '127.0.0.1'));
  const verdicts = await Promise.all(ips.map((ip) => threads.check(input(signed, ip), new Date(T0))));
  t.same(
    verdicts.map((v) => v.spf),
    ips.map((ip) => (ip === '127.0.0.1' ? 'pass' : 'fail')),
  );
});

t.test("a thread keeps DNS answers on the caller's clock", async (t) => {
  const { dns, signed, pool } = await setup(t);
  const threads = pool(1);
  t.equal((await threads.check(input(signed), new Date(T0))).spf, 'pass');
  dns.set('TXT', 'sender.example', ['v=spf1 -all']);
  t.equal((await threads.check(input(signed), new Date(T0 + 1_000))).spf, 'pass', 'the answer kept 1 s later');
  t.equal((await threads.check(input(signed), new Date(T0 + 31_000))).spf, 'fail', 'asked again 31 s later');
});

t.test('messages held by threads that stop are checked on the main thread; so are later ones', async (t) => {
  const { signed, pool } = await setup(t);
  const threads = pool(2);
  const held = Array.from({ length: 6 }, () => threads.check(input(signed), new Date(T0)));
  await threads.close();
  for (const v of await Promise.all(held)) t.equal(v.dmarc?.result, 'pass');
  t.equal((await threads.check(input(signed), new Date(T0))).dmarc?.result, 'pass', 'after close');
  t.equal((await pool(0).check(input(signed), new Date(T0))).dmarc?.result, 'pass', 'no threads');
});
