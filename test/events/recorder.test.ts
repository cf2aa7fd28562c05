// recordEvent in a transaction: the rows are written together just before the commit, in recording order;
// a rollback (of the transaction or of a savepoint) writes none of its events.
import t, { type Test } from 'tap';
import { rmSync } from 'node:fs';
import { createContext, type AppContext } from '../../src/context.js';
import { FakeClock } from '../../src/core/clock.js';
import { recordEvent } from '../../src/events/recorder.js';
import { EVENTS_INSERT } from '../../src/events/webhook-dispatcher.js';
import { bootstrapIfEmpty } from '../../src/services/housekeeping/bootstrap.js';
import { testConfig } from '../helpers/app.js';

async function setup(t: Test) {
  const clock = new FakeClock('2026-05-01T00:00:00.000Z');
  const config = testConfig();
  const ctx: AppContext = await createContext(config, { clock });
  t.teardown(async () => {
    await ctx.db.destroy();
    rmSync(config.dataDir, { recursive: true, force: true });
  });
  const teamId = (await bootstrapIfEmpty(ctx))!.team.id;
  return { ctx, teamId };
}

const events = (ctx: AppContext) => ctx.db('events').orderBy('id').select('id', 'type', 'data');
const at = new Date('2026-05-01T00:00:00.000Z');

t.test('events of a transaction are written once it ends, in order, with one statement', async (t) => {
  const { ctx, teamId } = await setup(t);
  const inserts: string[] = [];
  const listener = (q: { sql: string }) => {
    if (EVENTS_INSERT.test(q.sql)) inserts.push(q.sql); // what the dispatcher wakes on
  };
  ctx.db.on('query', listener);
  t.teardown(() => void ctx.db.off('query', listener));
  await ctx.db.transaction(async (trx) => {
    for (let i = 0; i < 5; i++) await recordEvent(trx, at, teamId, 'domain.updated', { seq: i });
    t.equal(inserts.length, 0, 'nothing written before the commit');
  });
  t.equal(inserts.length, 1, 'one insert for the transaction');
  const rows = await events(ctx);
  t.same(rows.map((r) => JSON.parse(r.data as string).seq), [0, 1, 2, 3, 4]);
  t.ok(rows.every((r, i) => i === 0 || r.id > rows[i - 1]!.id), 'ids ascend in recording order');
});

t.test('a rolled-back transaction writes none of its events', async (t) => {
  const { ctx, teamId } = await setup(t);
  await t.rejects(
    ctx.db.transaction(async (trx) => {
      await recordEvent(trx, at, teamId, 'domain.updated', { seq: 1 });
      throw new Error('change refused');
    }),
    /change refused/,
  );
  t.same(await events(ctx), []);
});

t.test('a savepoint rolled back drops its events; the outer transaction keeps its own', async (t) => {
  const { ctx, teamId } = await setup(t);
  await ctx.db.transaction(async (trx) => {
    await recordEvent(trx, at, teamId, 'domain.updated', { seq: 1 });
    await trx
      .transaction(async (inner) => {
        await recordEvent(inner, at, teamId, 'domain.updated', { seq: 2 });
        throw new Error('inner refused');
      })
      .catch(() => undefined);
    await trx.transaction(async (inner) => {
      await recordEvent(inner, at, teamId, 'domain.updated', { seq: 3 });
    });
    await recordEvent(trx, at, teamId, 'domain.updated', { seq: 4 });
  });
  t.same((await events(ctx)).map((r) => JSON.parse(r.data as string).seq), [3, 1, 4], 'the released savepoint wrote at its release');
});

t.test('an event that cannot be written rolls its transaction back', async (t) => {
  const { ctx, teamId } = await setup(t);
  await t.rejects(
    ctx.db.transaction(async (trx) => {
      await trx('teams').where({ id: teamId }).update({ name: 'renamed' });
      await recordEvent(trx, at, 'no-such-team', 'domain.updated', { seq: 1 });
    }),
    /FOREIGN KEY/,
  );
  t.equal(((await ctx.db('teams').where({ id: teamId }).first('name')) as { name: string }).name, 'Default team', 'the change is rolled back too');
  t.same(await events(ctx), []);
});

t.test('outside a transaction an event is written at once', async (t) => {
  const { ctx, teamId } = await setup(t);
  await recordEvent(ctx.db, at, teamId, 'domain.updated', { seq: 1 });
  t.equal((await events(ctx)).length, 1);
});

t.test('a transaction that records more events than one statement can hold', async (t) => {
  const { ctx, teamId } = await setup(t);
  await ctx.db.transaction(async (trx) => {
    for (let i = 0; i < 1201; i++) await recordEvent(trx, at, teamId, 'domain.updated', { seq: i });
  });
  const rows = await events(ctx);
  t.equal(rows.length, 1201, 'every event written (chunks of at most 500 rows: SQLite compound SELECT limit)');
  t.equal(JSON.parse(rows[1200]!.data as string).seq, 1200);
});
