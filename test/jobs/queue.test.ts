// The durable job queue over a real SQLite file, driven by a fake clock.
import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { createContext, type AppContext } from '../../src/context.js';
import { FakeClock, MINUTE, SECOND } from '../../src/core/clock.js';
import { errorBackoffMs, FINISHED, JobQueue, type Job } from '../../src/jobs/queue.js';
import { testConfig } from '../helpers/app.js';

async function setup(t: Test, opts: ConstructorParameters<typeof JobQueue>[3] = {}) {
  const clock = new FakeClock('2026-05-01T00:00:00.000Z');
  const config = testConfig();
  const ctx: AppContext = await createContext(config, { clock, jobs: opts });
  t.teardown(async () => {
    await ctx.jobs.stop();
    await ctx.db.destroy();
    rmSync(config.dataDir, { recursive: true, force: true });
  });
  return { ctx, clock, queue: ctx.jobs };
}

const rows = (ctx: AppContext) => ctx.db('jobs').select('*').orderBy('id');

t.test('a due job runs once with its payload and is then deleted', async (t) => {
  const { ctx, queue } = await setup(t);
  const seen: Job[] = [];
  queue.register('greet', async (job) => void seen.push(job));
  const id = await queue.enqueue(ctx.db, 'greet', { to: 'world' });
  t.type(id, 'number');
  t.equal(await queue.drain(), 1);
  t.equal(seen.length, 1);
  t.same(seen[0]!.payload, { to: 'world' });
  t.equal(seen[0]!.attempts, 1);
  t.same(await rows(ctx), []);
  t.equal(await queue.drain(), 0, 'nothing runs twice');
});

t.test('a job waits for its time on the clock', async (t) => {
  const { ctx, clock, queue } = await setup(t);
  let ran = 0;
  queue.register('later', async () => void ran++);
  await queue.enqueue(ctx.db, 'later', {}, { runAt: new Date(clock.now().getTime() + 10 * MINUTE) });
  t.equal(await queue.drain(), 0);
  clock.advance(10 * MINUTE - 1);
  t.equal(await queue.drain(), 0);
  clock.advance(1);
  t.equal(await queue.drain(), 1);
  t.equal(ran, 1);
});

t.test('due jobs run in run_at order', async (t) => {
  const { ctx, clock, queue } = await setup(t, { concurrency: 1 });
  const order: string[] = [];
  queue.register('k', async (job) => void order.push((job.payload as { n: string }).n));
  const at = (s: number) => new Date(clock.now().getTime() + s * SECOND);
  await queue.enqueue(ctx.db, 'k', { n: 'c' }, { runAt: at(3) });
  await queue.enqueue(ctx.db, 'k', { n: 'a' }, { runAt: at(1) });
  await queue.enqueue(ctx.db, 'k', { n: 'b' }, { runAt: at(2) });
  clock.advance(5 * SECOND);
  await queue.drain();
  t.same(order, ['a', 'b', 'c']);
});

t.test('a handler can ask to run again later', async (t) => {
  const { ctx, clock, queue } = await setup(t);
  const attempts: number[] = [];
  queue.register('retry', async (job) => {
    attempts.push(job.attempts);
    if (job.attempts < 3) return { retryAt: new Date(clock.now().getTime() + MINUTE), error: `try ${job.attempts}` };
  });
  await queue.enqueue(ctx.db, 'retry', {});
  await queue.drain();
  const [row] = await rows(ctx);
  t.equal(row.last_error, 'try 1');
  t.equal(row.lease_until, null);
  clock.advance(MINUTE);
  await queue.drain();
  clock.advance(MINUTE);
  await queue.drain();
  t.same(attempts, [1, 2, 3]);
  t.same(await rows(ctx), []);
});

t.test('a throwing handler backs off and is buried after maxAttempts', async (t) => {
  const { ctx, clock, queue } = await setup(t, { maxAttempts: 3 });
  let calls = 0;
  queue.register('boom', async () => {
    calls++;
    throw new Error('kaput');
  });
  await queue.enqueue(ctx.db, 'boom', {});
  await queue.drain();
  let [row] = await rows(ctx);
  t.equal(row.state, 'ready');
  t.equal(Number(row.run_at), clock.now().getTime() + errorBackoffMs(1));
  t.equal(row.last_error, 'kaput');
  clock.advance(errorBackoffMs(1));
  await queue.drain();
  clock.advance(errorBackoffMs(2));
  await queue.drain();
  [row] = await rows(ctx);
  t.equal(row.state, 'dead');
  t.equal(calls, 3);
  clock.advance(errorBackoffMs(10));
  t.equal(await queue.drain(), 0, 'a dead job never runs');
  t.same(await queue.stats(), { ready: 0, dead: 1, due: 0 });
});

t.test('an unknown kind is buried at once', async (t) => {
  const { ctx, queue } = await setup(t);
  await queue.enqueue(ctx.db, 'nobody-handles-this', {});
  await queue.drain();
  const [row] = await rows(ctx);
  t.equal(row.state, 'dead');
  t.match(row.last_error, /no handler/);
});

t.test('enqueue joins the caller’s transaction', async (t) => {
  const { ctx, queue } = await setup(t);
  queue.register('tx', async () => undefined);
  await t.rejects(
    ctx.db.transaction(async (trx) => {
      await queue.enqueue(trx, 'tx', {});
      throw new Error('roll back');
    }),
  );
  t.same(await rows(ctx), [], 'rolled back with the transaction');
  await ctx.db.transaction(async (trx) => {
    await queue.enqueue(trx, 'tx', {});
  });
  t.equal((await rows(ctx)).length, 1);
});

t.test('a dedupe key allows one live job', async (t) => {
  const { ctx, queue } = await setup(t);
  queue.register('d', async () => undefined);
  t.type(await queue.enqueue(ctx.db, 'd', {}, { dedupeKey: 'x' }), 'number');
  t.equal(await queue.enqueue(ctx.db, 'd', {}, { dedupeKey: 'x' }), null);
  await queue.drain();
  t.type(await queue.enqueue(ctx.db, 'd', {}, { dedupeKey: 'x' }), 'number', 'free again once done');
});

t.test('reschedule and cancel touch only waiting jobs', async (t) => {
  const { ctx, clock, queue } = await setup(t);
  let ran = 0;
  queue.register('s', async () => void ran++);
  const id = (await queue.enqueue(ctx.db, 's', {}, { runAt: new Date(clock.now().getTime() + MINUTE) }))!;
  t.ok(await queue.reschedule(ctx.db, id, new Date(clock.now().getTime() + 2 * MINUTE)));
  clock.advance(MINUTE);
  t.equal(await queue.drain(), 0, 'moved later');
  t.ok(await queue.cancel(ctx.db, id));
  clock.advance(MINUTE);
  t.equal(await queue.drain(), 0, 'cancelled');
  t.notOk(await queue.cancel(ctx.db, id), 'already gone');
  t.equal(ran, 0);
});

t.test('a lease held by a dead worker expires; start() releases leases left by a previous process', async (t) => {
  const { ctx, clock, queue } = await setup(t, { leaseMs: 5 * MINUTE });
  let ran = 0;
  queue.register('crash', async () => void ran++);
  const id = await queue.enqueue(ctx.db, 'crash', {});
  // As if a worker had leased it and died.
  await ctx.db('jobs').where({ id }).update({ lease_until: clock.now().getTime() + 5 * MINUTE, attempts: 1 });
  t.equal(await queue.drain(), 0, 'held by the lease');
  clock.advance(5 * MINUTE);
  t.equal(await queue.drain(), 1, 'taken again when the lease expires');
  t.equal(ran, 1);

  const id2 = await queue.enqueue(ctx.db, 'crash', {});
  await ctx.db('jobs').where({ id: id2 }).update({ lease_until: clock.now().getTime() + 5 * MINUTE });
  await queue.start();
  await queue.drain();
  t.equal(ran, 2, 'released at start');
});

t.test('a started worker picks up a committed job without being drained', async (t) => {
  const { ctx, queue } = await setup(t, { pollMs: 60_000 });
  const done = new Promise<unknown>((resolve) => queue.register('wake', async (job) => resolve(job.payload)));
  await queue.start();
  await ctx.db.transaction(async (trx) => {
    await queue.enqueue(trx, 'wake', { n: 1 });
  });
  t.same(await done, { n: 1 }, 'woken by the commit, not by the (minute-long) poll');
});

t.test('a started worker leases again after a finish only while due jobs may be waiting', async (t) => {
  const { ctx, queue } = await setup(t, { concurrency: 2, batch: 10, pollMs: 60_000 });
  let leases = 0;
  ctx.db.on('query', (q: { sql: string }) => {
    if (q.sql.startsWith('UPDATE jobs SET lease_until')) leases++;
  });
  const ran: number[] = [];
  const settled: Array<() => void> = [];
  const next = () => new Promise<void>((resolve) => settled.push(resolve));
  queue.register('n', async (job) => {
    ran.push((job.payload as { n: number }).n);
    const done = settled.shift();
    done?.();
  });
  // Five due jobs, two slots: the leases that were cut short by the limit mean more may wait, so each finish
  // leases again until one finds fewer than it asked for.
  for (let n = 1; n <= 5; n++) await queue.enqueue(ctx.db, 'n', { n });
  const five = Array.from({ length: 5 }, next);
  await queue.start();
  await Promise.all(five);
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.same([...ran].sort(), [1, 2, 3, 4, 5], 'every job ran');
  const afterBacklog = leases;

  // Nothing is due now: single jobs, each woken by its commit, finish without another lease each time.
  for (let n = 6; n <= 9; n++) {
    const one = next();
    await queue.enqueue(ctx.db, 'n', { n });
    await one;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.same(ran.slice(5), [6, 7, 8, 9], 'each picked up at once (the poll is a minute away)');
  t.equal(leases - afterBacklog, 4, 'one lease per enqueue, none after a finish that left nothing due');
});

t.test('jobs enqueued together while the worker has room run without a lease statement, once committed', async (t) => {
  const { ctx, queue } = await setup(t, { concurrency: 2, pollMs: 60_000 });
  const leases: string[] = [];
  ctx.db.on('query', (q: { sql: string }) => {
    if (q.sql.startsWith('UPDATE jobs SET lease_until')) leases.push(q.sql);
  });
  const seen: Array<{ n: number; attempts: number; leased: boolean }> = [];
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const arrived: Array<() => void> = [];
  queue.register('h', async (job) => {
    const row = await ctx.db('jobs').where({ id: job.id }).first('lease_until');
    seen.push({ n: (job.payload as { n: number }).n, attempts: job.attempts, leased: row?.lease_until != null });
    arrived.shift()?.();
    await gate;
  });
  const next = () => new Promise<void>((resolve) => arrived.push(resolve));
  await queue.start();
  await new Promise((resolve) => setTimeout(resolve, 20)); // start()'s own look finds nothing
  const before = leases.length;

  // Rolled back: nothing runs, and the slots it was promised are free again.
  await ctx.db
    .transaction(async (trx) => {
      await queue.enqueueMany(trx, [{ kind: 'h', payload: { n: 0 } }]);
      throw new Error('no');
    })
    .catch(() => undefined);

  const two = [next(), next()];
  let committed = false;
  await ctx.db.transaction(async (trx) => {
    await queue.enqueueMany(trx, [
      { kind: 'h', payload: { n: 1 } },
      { kind: 'h', payload: { n: 2 } },
    ]);
    await new Promise((resolve) => setTimeout(resolve, 20));
    t.equal(seen.length, 0, 'nothing runs before the commit');
    committed = true;
  });
  await Promise.all(two);
  t.ok(committed);
  t.same(
    seen.sort((a, b) => a.n - b.n),
    [
      { n: 1, attempts: 1, leased: true },
      { n: 2, attempts: 1, leased: true },
    ],
    'both run at once, written with their lease and first attempt',
  );
  t.equal(leases.length, before, 'no lease statement was needed');

  // Both slots are taken: a third job is written unleased and waits for a slot, found by a lease.
  const third = next();
  const [thirdId] = await queue.enqueueMany(ctx.db, [{ kind: 'h', payload: { n: 3 } }]);
  t.same(await ctx.db('jobs').where({ id: thirdId }).first('lease_until', 'attempts'), { lease_until: null, attempts: 0 }, 'the third waits unleased');
  release();
  await third;
  t.equal(seen.length, 3);
  t.ok(leases.length > before, 'the third was found by a lease');
  await queue.stop();
  t.same(await rows(ctx), [], 'every job done and deleted');
});

t.test('no more than `concurrency` handlers run at once', async (t) => {
  const { ctx, queue } = await setup(t, { concurrency: 3, batch: 10 });
  let now = 0;
  let peak = 0;
  queue.register('c', async () => {
    peak = Math.max(peak, ++now);
    await new Promise((r) => setImmediate(r));
    now--;
  });
  for (let i = 0; i < 20; i++) await queue.enqueue(ctx.db, 'c', { i });
  await queue.start();
  await queue.drain();
  await queue.stop();
  t.equal(await ctx.db('jobs').count({ n: '*' }).first().then((r) => Number(r?.n)), 0);
  t.ok(peak <= 3, `peak ${peak} within the limit`);
  t.ok(peak >= 2, `peak ${peak}: handlers do overlap`);
});

t.test('a handler that ends its job in its own transaction answers FINISHED: the job is gone with its work, and not run again', async (t) => {
  const { ctx, queue } = await setup(t);
  await ctx.db.schema.createTable('work_done', (tb) => tb.integer('job_id'));
  let ran = 0;
  queue.register('record', async (job) => {
    ran++;
    await ctx.db.transaction(async (trx) => {
      await trx('work_done').insert({ job_id: job.id });
      await queue.finishIn(trx, [job.id]);
    });
    return FINISHED;
  });
  const ids = [await queue.enqueue(ctx.db, 'record', {}), await queue.enqueue(ctx.db, 'record', {})];
  t.equal(await queue.drain(), 2);
  t.equal(ran, 2);
  t.same(await rows(ctx), [], 'both jobs deleted by their handlers');
  t.same((await ctx.db('work_done').orderBy('job_id')).map((r: { job_id: number }) => r.job_id), ids);
  t.equal(await queue.drain(), 0);

  // When the handler's transaction rolls back, its job stays: it is run again like any job that failed.
  let fail = true;
  queue.register('flaky', async (job) => {
    await ctx.db.transaction(async (trx) => {
      await queue.finishIn(trx, [job.id]);
      if (fail) throw new Error('the work could not be recorded');
    });
    return FINISHED;
  });
  await queue.enqueue(ctx.db, 'flaky', {});
  await queue.drain();
  const [left] = await rows(ctx);
  t.equal(left?.kind, 'flaky', 'the job is still there');
  t.match(left?.last_error, /could not be recorded/);
});

// ── Lanes ──────────────────────────────────────────────────────────────────────────────────────────────

/** A handler whose jobs in lane 'to:slow' (and 'to:slow2') wait until released; it logs every start. */
function gated(queue: JobQueue) {
  const started: string[] = [];
  const waiting: Array<{ lane: string; release: () => void }> = [];
  let running = 0;
  let peak = 0;
  queue.register('d', async (job: Job) => {
    const { name } = job.payload as { name: string };
    started.push(name);
    if (!job.lane?.startsWith('to:slow')) return;
    if (job.lane === 'to:slow') peak = Math.max(peak, ++running);
    await new Promise<void>((release) => waiting.push({ lane: job.lane!, release }));
    if (job.lane === 'to:slow') running--;
  });
  const of = (lane: string) => waiting.filter((w) => w.lane === lane);
  const releaseAll = (lane = 'to:slow') => {
    for (const w of of(lane)) waiting.splice(waiting.indexOf(w), 1)[0]!.release();
  };
  return {
    started,
    /** Most jobs of lane 'to:slow' running at once. */
    get peak() {
      return peak;
    },
    releaseAll,
    /** Lets `n` jobs of lane 'to:slow' finish, each once it is the one running. */
    async releaseOneByOne(n: number) {
      for (let i = 0; i < n; i++) {
        await until('the next', () => of('to:slow').length === 1);
        releaseAll();
      }
    },
    waiting: (lane = 'to:slow') => of(lane).length,
  };
}

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!ok()) throw new Error(`timed out waiting for ${what}`);
}

t.test('a lane runs at most laneConcurrency jobs; its backlog waits without a slot while other work runs', async (t) => {
  const { ctx, queue } = await setup(t, { concurrency: 4, laneConcurrency: 2, batch: 10 });
  const h = gated(queue);
  for (let i = 0; i < 10; i++) await queue.enqueue(ctx.db, 'd', { name: `slow${i}` }, { lane: 'to:slow' });
  await queue.enqueueMany(ctx.db, [
    { kind: 'd', payload: { name: 'fast' }, lane: 'to:fast' },
    { kind: 'd', payload: { name: 'plain' } },
  ]);
  await queue.start();
  await until('the other lanes to run', () => h.started.includes('fast') && h.started.includes('plain'));
  t.equal(h.waiting(), 2, 'two of the slow lane run; the other eight wait for them, not for slots');
  t.same(h.started.filter((n) => n.startsWith('slow')), ['slow0', 'slow1'], 'oldest first');

  // Work enqueued later, in another lane, still gets a slot at once.
  await queue.enqueue(ctx.db, 'd', { name: 'later' }, { lane: 'to:other' });
  await until('the later job', () => h.started.includes('later'));

  for (let round = 0; round < 5; round++) {
    await until('the lane to fill', () => h.waiting() === 2);
    h.releaseAll();
  }
  await queue.drain();
  t.equal(h.peak, 2, 'never more than two of the lane at once');
  t.same(h.started.filter((n) => n.startsWith('slow')), Array.from({ length: 10 }, (_, i) => `slow${i}`), 'each once, in order');
  t.equal(Number((await ctx.db('jobs').count({ n: '*' }).first())?.n), 0, 'all done');
});

t.test('parked jobs keep their leases while they wait: a later lease does not run them twice', async (t) => {
  const { ctx, clock, queue } = await setup(t, { concurrency: 4, laneConcurrency: 1, batch: 10, leaseMs: 3000 });
  const h = gated(queue);
  for (let i = 0; i < 4; i++) await queue.enqueue(ctx.db, 'd', { name: `slow${i}` }, { lane: 'to:slow' });
  await queue.start();
  await until('the first to run', () => h.waiting() === 1);
  // The renewal runs every second (a third of the lease, at least 1 s): the parked jobs' leases move on.
  const before = (await ctx.db('jobs').whereNot('id', 1).max({ m: 'lease_until' }).first())?.m as number;
  clock.advance(2 * SECOND);
  await new Promise((r) => setTimeout(r, 1300));
  const after = (await ctx.db('jobs').whereNot('id', 1).min({ m: 'lease_until' }).first())?.m as number;
  t.ok(after > before, 'renewed');
  // Past every lease: a lease takes them all again, and none runs a second time.
  clock.advance(10 * SECOND);
  queue.wake();
  await new Promise((r) => setTimeout(r, 100));
  t.same(h.started, ['slow0']);
  await h.releaseOneByOne(4);
  await queue.drain();
  t.same(h.started, ['slow0', 'slow1', 'slow2', 'slow3'], 'each exactly once');
});

t.test('at most maxParked jobs wait for their lane: past it nothing more is leased', async (t) => {
  const { ctx, queue } = await setup(t, { concurrency: 4, laneConcurrency: 1, batch: 10, maxParked: 3 });
  const h = gated(queue);
  for (let i = 0; i < 10; i++) await queue.enqueue(ctx.db, 'd', { name: `slow${i}` }, { lane: 'to:slow' });
  await queue.start();
  await until('the first to run', () => h.waiting() === 1);
  await new Promise((r) => setTimeout(r, 100));
  const leased = Number((await ctx.db('jobs').whereNotNull('lease_until').count({ n: '*' }).first())?.n);
  t.equal(leased, 4, 'one running and three parked are leased; the other six wait in the table');
  await h.releaseOneByOne(10);
  await queue.drain();
  t.equal(h.started.length, 10);
});

t.test('past maxParked, jobs of other lanes (and of none) still run at once, behind a backlog older than them', async (t) => {
  const { ctx, queue } = await setup(t, { concurrency: 4, laneConcurrency: 1, batch: 10, maxParked: 3 });
  const h = gated(queue);
  for (let i = 0; i < 10; i++) await queue.enqueue(ctx.db, 'd', { name: `slow${i}` }, { lane: 'to:slow' });
  await queue.start();
  await until('the first to run', () => h.waiting() === 1);
  await queue.enqueue(ctx.db, 'd', { name: 'fast' }, { lane: 'to:fast' });
  await queue.enqueue(ctx.db, 'd', { name: 'plain' });
  await until('the later jobs to run', () => h.started.includes('fast') && h.started.includes('plain'));
  t.same(h.started.filter((n) => n.startsWith('slow')), ['slow0'], 'only the first of the backlog has started');
  await new Promise((r) => setTimeout(r, 50));
  const leased = Number((await ctx.db('jobs').whereNotNull('lease_until').count({ n: '*' }).first())?.n);
  t.equal(leased, 4, 'one of the backlog running and three parked; the other six wait in the table');
  await h.releaseOneByOne(10);
  await queue.drain();
  t.equal(h.peak, 1, 'the slow lane one at a time');
  t.same(h.started.filter((n) => n.startsWith('slow')), Array.from({ length: 10 }, (_, i) => `slow${i}`), 'the backlog each once, in order');
});

t.test('past maxParked, a lane that was skipped as full is leased again from its oldest job once it has room', async (t) => {
  const { ctx, clock, queue } = await setup(t, { concurrency: 4, laneConcurrency: 1, batch: 10, maxParked: 3 });
  const h = gated(queue);
  for (let i = 0; i < 10; i++) await queue.enqueue(ctx.db, 'd', { name: `slow${i}` }, { lane: 'to:slow' });
  await queue.start();
  await until('the first to run', () => h.waiting() === 1);
  // Three of the second lane are leased past the full first one (one runs, two park); the lane is then full too,
  // and the next lease, skipping both, finds nothing more: its cursor is past the second lane's other three
  // (due a minute ago, so that they are behind it, not in the last seconds it looks at again).
  const earlier = new Date(clock.now().getTime() - MINUTE);
  await queue.enqueueMany(ctx.db, Array.from({ length: 6 }, (_, i) => ({ kind: 'd', payload: { name: `other${i}` }, lane: 'to:slow2', runAt: earlier })));
  for (let i = 0; i < 6; i++) {
    await until(`other${i}`, () => h.started.includes(`other${i}`) && h.waiting('to:slow2') === 1);
    h.releaseAll('to:slow2');
  }
  t.same(h.started.filter((n) => n.startsWith('slow')), ['slow0'], 'the first lane still on its first job');
  await h.releaseOneByOne(10);
  await queue.drain();
  t.equal(h.started.length, 16);
});

t.test('past maxParked, a job a handler retries at a time already past is leased again at once', async (t) => {
  const { ctx, clock, queue } = await setup(t, { concurrency: 4, laneConcurrency: 1, batch: 10, maxParked: 3 });
  const h = gated(queue);
  let runs = 0;
  queue.register('r', async () => (++runs === 1 ? { retryAt: new Date(clock.now().getTime() - MINUTE) } : undefined));
  for (let i = 0; i < 10; i++) await queue.enqueue(ctx.db, 'd', { name: `slow${i}` }, { lane: 'to:slow' });
  await queue.start();
  await until('the first to run', () => h.waiting() === 1);
  await queue.enqueue(ctx.db, 'r', {});
  await until('the retry', () => runs === 2);
  t.equal(runs, 2);
  await h.releaseOneByOne(10);
  await queue.drain();
});

t.test('a graceful stop releases the leases of parked jobs (they never ran)', async (t) => {
  const { ctx, queue } = await setup(t, { concurrency: 4, laneConcurrency: 1, batch: 10 });
  const h = gated(queue);
  for (let i = 0; i < 3; i++) await queue.enqueue(ctx.db, 'd', { name: `slow${i}` }, { lane: 'to:slow' });
  await queue.start();
  await until('the first to run', () => h.waiting() === 1);
  await new Promise((r) => setTimeout(r, 50));
  const stopping = queue.stop();
  h.releaseAll();
  await stopping;
  const left = await ctx.db('jobs').select('payload', 'lease_until', 'attempts').orderBy('id');
  t.same(
    left.map((r: { payload: string; lease_until: number | null; attempts: number }) => [JSON.parse(r.payload).name, r.lease_until, r.attempts]),
    [
      ['slow1', null, 0],
      ['slow2', null, 0],
    ],
    'the two parked ones wait unleased, no attempt counted; the running one finished',
  );
});

t.test('a parked job has not started: it can be cancelled or rescheduled, and a rolled-back cancel puts it back', async (t) => {
  const { ctx, clock, queue } = await setup(t, { concurrency: 4, laneConcurrency: 1, batch: 10 });
  const h = gated(queue);
  const ids: number[] = [];
  for (let i = 0; i < 4; i++) ids.push((await queue.enqueue(ctx.db, 'd', { name: `slow${i}` }, { lane: 'to:slow' }))!);
  await queue.start();
  await until('the first to run', () => h.waiting() === 1);
  await new Promise((r) => setTimeout(r, 50));
  t.equal(await queue.cancel(ctx.db, ids[0]!), false, 'the running one cannot be cancelled');
  t.equal(await queue.cancel(ctx.db, ids[1]!), true, 'a parked one can');
  t.equal(await queue.reschedule(ctx.db, ids[2]!, new Date(clock.now().getTime() + MINUTE)), true, 'and rescheduled');
  await ctx.db.transaction(async (trx) => {
    t.equal(await queue.cancel(trx, ids[3]!), true);
    throw new Error('rolled back');
  }).catch(() => undefined);
  const row = await ctx.db('jobs').where({ id: ids[2] }).first();
  t.match(row, { lease_until: null, attempts: 0 }, 'the rescheduled one waits in the table, unleased');
  await h.releaseOneByOne(2);
  await queue.drain();
  t.same(h.started, ['slow0', 'slow3'], 'the cancelled one never ran, the rolled-back cancel did not stick');
  clock.advance(MINUTE);
  const drained = queue.drain();
  await until('the rescheduled one', () => h.waiting() === 1);
  h.releaseAll();
  await drained;
  t.same(h.started, ['slow0', 'slow3', 'slow2']);
});

// Found by review: the renewal's list is taken when its timer fires, and its UPDATE waits for the write
// connection; a job unparked meanwhile (here rescheduled) got a lease back and could not be cancelled.
t.test('the parked-lease renewal leaves a job alone that was unparked while it waited', async (t) => {
  const { ctx, clock, queue } = await setup(t, { concurrency: 4, laneConcurrency: 1, batch: 10, leaseMs: 3000 });
  const h = gated(queue);
  const ids: number[] = [];
  for (let i = 0; i < 2; i++) ids.push((await queue.enqueue(ctx.db, 'd', { name: `slow${i}` }, { lane: 'to:slow' }))!);
  await queue.start();
  await until('the first to run', () => h.waiting() === 1);
  await new Promise((r) => setTimeout(r, 50));
  await ctx.db.transaction(async (trx) => {
    await trx('jobs').where({ id: -1 }).update({ attempts: 0 }); // takes the write connection
    await new Promise((r) => setTimeout(r, 1300)); // a renewal comes round; its UPDATE waits
    t.equal(await queue.reschedule(trx, ids[1]!, new Date(clock.now().getTime() + SECOND)), true, 'rescheduled');
  });
  await new Promise((r) => setTimeout(r, 100));
  t.match(await ctx.db('jobs').where({ id: ids[1] }).first(), { lease_until: null }, 'it waits in the table, unleased');
  t.equal(await queue.cancel(ctx.db, ids[1]!), true, 'and can be cancelled');
  h.releaseAll();
  await queue.drain();
});

// Found by review: a lease that finds a job this worker holds (its lease ran out on the fake clock) counted an
// attempt, so a throwing job was buried early.
t.test('a held job taken again by a lease is not charged an attempt', async (t) => {
  const { ctx, clock, queue } = await setup(t, { concurrency: 4, laneConcurrency: 1, batch: 10, leaseMs: 3000, maxAttempts: 3 });
  const seen: number[] = [];
  let open: (() => void) | undefined;
  queue.register('g', async () => void (await new Promise<void>((r) => (open = r))));
  queue.register('f', async (job) => {
    seen.push(job.attempts);
    throw new Error('boom');
  });
  await queue.enqueue(ctx.db, 'g', {}, { lane: 'to:x' });
  const id = (await queue.enqueue(ctx.db, 'f', {}, { lane: 'to:x' }))!;
  await queue.start();
  await until('the first job', () => open !== undefined);
  await new Promise((r) => setTimeout(r, 50));
  clock.advance(10 * SECOND); // past the parked job's lease: the next lease takes it again
  queue.wake();
  await new Promise((r) => setTimeout(r, 100));
  open!();
  await until('the first failure', () => seen.length === 1);
  await new Promise((r) => setTimeout(r, 100));
  clock.advance(60 * SECOND);
  queue.wake();
  await until('the second failure', () => seen.length === 2);
  await new Promise((r) => setTimeout(r, 100));
  t.same(seen, [1, 2], 'attempts as the handler saw them');
  t.match(await ctx.db('jobs').where({ id }).first(), { state: 'ready', attempts: 2 }, 'two failures of three allowed: still alive');
});
