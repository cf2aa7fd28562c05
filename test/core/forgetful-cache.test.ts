// core/forgetful-cache.ts: one load per key at a time, nothing kept that was read before a change, failures
// and unkept values not remembered, entries expire.
import t from 'tap';
import { ForgetfulCache } from '../../src/core/forgetful-cache.js';

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

t.test('callers asking while a key loads share the load; the value is then remembered', async (t) => {
  const cache = new ForgetfulCache<string, number>(60_000, 100);
  let loads = 0;
  const gate = deferred<number>();
  const load = () => (loads++, gate.promise);
  const waiting = [cache.get('k', load), cache.get('k', load), cache.get('k', load)];
  gate.resolve(7);
  t.same(await Promise.all(waiting), [7, 7, 7]);
  t.equal(await cache.get('k', load), 7);
  t.equal(loads, 1, 'one load for four callers');
});

t.test('a change during a load: its callers get the value, nothing is kept, later callers load afresh', async (t) => {
  const cache = new ForgetfulCache<string, string>(60_000, 100);
  const stale = deferred<string>();
  const first = cache.get('k', () => stale.promise);
  cache.clear();
  const fresh = cache.get('k', async () => 'new');
  stale.resolve('old');
  t.equal(await first, 'old');
  t.equal(await fresh, 'new', 'a caller after the change did not join the stale load');
  t.equal(await cache.get('k', async () => 'reloaded'), 'new', "the stale load's end did not drop the fresh value");
});

t.test('failed loads and values keep() refuses are not remembered', async (t) => {
  const cache = new ForgetfulCache<string, number | undefined>(60_000, 100);
  await t.rejects(cache.get('k', async () => Promise.reject(new Error('down'))), /down/);
  t.equal(await cache.get('k', async () => 1), 1, 'loaded again after a failure');
  const notFound = (v: number | undefined) => v !== undefined;
  t.equal(await cache.get('m', async () => undefined, notFound), undefined);
  t.equal(await cache.get('m', async () => 2, notFound), 2, 'an unkept value is read again');
});

t.test('entries expire after the time limit', async (t) => {
  const cache = new ForgetfulCache<string, number>(20, 100);
  t.equal(await cache.get('k', async () => 1), 1);
  t.equal(await cache.get('k', async () => 2), 1);
  await new Promise((resolve) => setTimeout(resolve, 40));
  t.equal(await cache.get('k', async () => 3), 3);
});
