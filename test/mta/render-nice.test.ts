// MAIL_RENDER_THREAD_NICE: the render threads lower their own CPU priority (Linux keeps a nice value per
// thread), and only theirs: the main thread, which answers the API and the listeners, keeps its own.
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { createLogger } from '../../src/core/logger.js';
import { RenderPool } from '../../src/mta/render-pool.js';

/** Nice value of each thread of this process, by thread id (/proc/self/task/<tid>/stat, field 19). */
function threadNice(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from 3 (state) on
    out.set(Number(tid), Number(fields[19 - 3]));
  }
  return out;
}

t.test('render threads run at the configured nice value; the main thread keeps its own', { skip: process.platform !== 'linux' && 'per-thread nice values are Linux' }, async (t) => {
  const mainBefore = threadNice().get(process.pid);
  const before = new Set(threadNice().keys());
  const pool = new RenderPool(2, createLogger('silent'), undefined, 7);
  t.teardown(() => pool.close());
  // A request to each thread: both have started (and set their priority) once they answered.
  const texts = await Promise.all([pool.htmlToText('<p>one</p>'), pool.htmlToText('<p>two</p>')]);
  t.same(texts.map((s) => s.trim()), ['one', 'two']);
  // Each thread sets its priority as it starts; wait until both have.
  let after = threadNice();
  const niced = () => [...after].filter(([tid, nice]) => !before.has(tid) && nice === 7);
  for (let i = 0; i < 50 && niced().length < 2; i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = threadNice();
  }
  t.equal(niced().length, 2, 'two new threads at nice 7');
  t.equal(after.get(process.pid), mainBefore, 'the main thread is unchanged');
  t.notOk([...after].some(([tid, nice]) => before.has(tid) && nice === 7), 'no thread that was there before was touched');
});

t.test('nice 0 leaves the threads as the process is', { skip: process.platform !== 'linux' && 'per-thread nice values are Linux' }, async (t) => {
  const before = new Set(threadNice().keys());
  const pool = new RenderPool(1, createLogger('silent'), undefined, 0);
  t.teardown(() => pool.close());
  t.equal((await pool.htmlToText('<p>x</p>')).trim(), 'x');
  const after = threadNice();
  const main = after.get(process.pid);
  t.same([...after].filter(([tid]) => !before.has(tid)).filter(([, nice]) => nice !== main), [], "every new thread at the process's own value");
});

t.test('render threads are named mail-render-<n> (top -H, ps -L, perf); the main thread keeps its name', { skip: process.platform !== 'linux' && 'thread names are read from /proc' }, async (t) => {
  const names = () => new Map(readdirSync('/proc/self/task').map((tid) => [Number(tid), readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim()]));
  const mainName = names().get(process.pid);
  const pool = new RenderPool(2, createLogger('silent'), undefined, 0);
  t.teardown(() => pool.close());
  await Promise.all([pool.htmlToText('<p>one</p>'), pool.htmlToText('<p>two</p>')]);
  let named: string[] = [];
  for (let i = 0; i < 50 && named.length < 2; i++) {
    named = [...names().values()].filter((n) => n.startsWith('mail-render-')).sort();
    if (named.length < 2) await new Promise((r) => setTimeout(r, 100));
  }
  t.same(named, ['mail-render-0', 'mail-render-1']);
  t.equal(names().get(process.pid), mainName);
});
