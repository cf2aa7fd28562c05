// Statements of one transaction run at once (settleAll), the send path's writers share one write
// transaction (SharedWriter), and a Batcher can wait a little for more items (gatherMs): over a real SQLite file.
import t, { type Test } from 'tap';
import { Batcher, SharedWriter } from '../../src/db/batcher.js';
import { execute, nextIds, settleAll, type Db } from '../../src/db/index.js';
import { openScratchDb } from '../helpers/db.js';

async function open(t: Test): Promise<Db> {
  const db = await openScratchDb(t, 'shared-writer');
  await db.schema.createTable('things', (tb) => {
    tb.increments('id');
    tb.string('name').notNullable().unique();
  });
  await db.schema.createTable('parts', (tb) => {
    tb.increments('id');
    tb.integer('thing_id').notNullable().references('things.id');
  });
  return db;
}

const names = async (db: Db) => (await db('things').orderBy('name').select('name')).map((r: { name: string }) => r.name);

/** A work that inserts `name` and holds its transaction open until `release()`, once it has begun. */
async function holdWriter(writer: SharedWriter, name: string): Promise<{ held: Promise<void>; release(): void }> {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const held = writer.run(async (trx) => {
    await trx('things').insert({ name });
    await gate;
  });
  await new Promise((r) => setTimeout(r, 20));
  return { held, release };
}

t.test('settleAll: every statement runs, answers in order; a failure waits for the others and rolls all back', async (t) => {
  const db = await open(t);
  const [a, b, count] = await db.transaction((trx) =>
    settleAll([trx('things').insert({ name: 'a' }), trx('things').insert({ name: 'b' }), trx('things').count({ n: '*' }).first()]),
  );
  t.equal(typeof a[0], 'number');
  t.equal(typeof b[0], 'number');
  t.ok([0, 1, 2].includes(Number((count as { n: number }).n)), 'a read beside writes sees some of them');
  t.same(await names(db), ['a', 'b']);

  // A duplicate fails one statement; the ten others are still queued when it fails. None may outlive the
  // ROLLBACK as an autocommit of its own.
  const err = await db
    .transaction((trx) => settleAll([trx('things').insert({ name: 'a' }), ...Array.from({ length: 10 }, (_, i) => trx('things').insert({ name: `n${i}` }))]))
    .catch((e: unknown) => e);
  t.match(String(err), /UNIQUE constraint failed/);
  t.same(await names(db), ['a', 'b'], 'nothing of the failed transaction is left');
  t.same(await db.raw('SELECT 1 AS one'), [{ one: 1 }], 'the connection is usable (no transaction left open)');
  await db.transaction((trx) => trx('things').insert({ name: 'c' }));
  t.same(await names(db), ['a', 'b', 'c']);
});

t.test('nextIds: the next id of each AUTOINCREMENT table, 1 for a table never written', async (t) => {
  const db = await open(t);
  await db.raw('CREATE TABLE auto_things (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)');
  await db.raw('CREATE TABLE auto_other (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)');
  await db('auto_things').insert([{ v: 'x' }, { v: 'y' }]);
  const ids = await db.transaction((trx) => nextIds(trx, ['auto_things', 'auto_other']));
  t.same(ids, { auto_things: 3, auto_other: 1 });
});

t.test('SharedWriter: works handed in together share one transaction; a failing work fails only its caller', async (t) => {
  const db = await open(t);
  const writer = new SharedWriter(db);
  const commits: number[] = [];
  db.on('query', (q: { sql: string }) => {
    if (/^COMMIT/i.test(q.sql)) commits.push(Date.now());
  });
  const results = await Promise.all(['p', 'q', 'r'].map((name) => writer.run(async (trx) => (await trx('things').insert({ name }))[0])));
  t.equal(results.length, 3);
  t.same(await names(db), ['p', 'q', 'r']);
  t.equal(commits.length, 1, 'three works, one COMMIT');

  // One work breaks a foreign key: the shared transaction fails, each work then runs alone.
  const outcomes = await Promise.allSettled([
    writer.run((trx) => trx('things').insert({ name: 's' })),
    writer.run((trx) => trx('parts').insert({ thing_id: 9999 })),
    writer.run((trx) => trx('things').insert({ name: 't' })),
  ]);
  t.same(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.match(String((outcomes[1] as PromiseRejectedResult).reason), /FOREIGN KEY constraint failed/);
  t.same(await names(db), ['p', 'q', 'r', 's', 't']);
  t.same(await db('parts').select('*'), []);

  // A work handed in while a transaction runs goes into the next one.
  const first = await holdWriter(writer, 'u');
  const later = [writer.run((trx) => trx('things').insert({ name: 'v' })), writer.run((trx) => trx('things').insert({ name: 'w' }))];
  commits.length = 0;
  first.release();
  await Promise.all([first.held, ...later]);
  t.equal(commits.length, 2, 'the two later works shared the transaction after the first');
  t.same(await names(db), ['p', 'q', 'r', 's', 't', 'u', 'v', 'w']);
});

t.test('Batcher gatherMs: items handed in within the wait share one run; without it a lone item runs at once', async (t) => {
  const runs: number[][] = [];
  const run = async (items: number[]) => {
    runs.push(items);
    return items.map((i) => i * 2);
  };
  const gathering = new Batcher(run, 200, 40);
  const first = gathering.submit(1);
  await new Promise((r) => setTimeout(r, 10));
  const later = [gathering.submit(2), gathering.submit(3)];
  t.same(await Promise.all([first, ...later]), [2, 4, 6]);
  t.same(runs, [[1, 2, 3]], 'one run for items 10 ms apart');

  runs.length = 0;
  const eager = new Batcher(run);
  const a = eager.submit(1);
  await new Promise((r) => setTimeout(r, 10));
  const b = eager.submit(2);
  t.same(await Promise.all([a, b]), [2, 4]);
  t.same(runs, [[1], [2]], 'no wait: each ran on its own');

  // A full batch does not wait.
  runs.length = 0;
  const small = new Batcher(run, 2, 10_000);
  const started = Date.now();
  t.same(await Promise.all([small.submit(1), small.submit(2)]), [2, 4]);
  t.ok(Date.now() - started < 5_000, 'maxBatch items ran without the wait');
});

t.test("SharedWriter 'in-order': the works of one transaction run one after another and see each other's writes", async (t) => {
  const db = await open(t);
  const writer = new SharedWriter(db, 'in-order');
  const counts = await Promise.all(
    ['x', 'y', 'z'].map((name) =>
      writer.run(async (trx) => {
        await trx('things').insert({ name });
        return Number(((await trx('things').count({ n: '*' }).first()) as { n: number }).n);
      }),
    ),
  );
  t.same(counts, [1, 2, 3], 'each saw the ones before it');
  t.same(await names(db), ['x', 'y', 'z']);
});

t.test('a work that defers foreign keys (as the send path does) writes a child beside its parent; a dangling child fails at COMMIT, alone', async (t) => {
  const db = await open(t);
  const writer = new SharedWriter(db);
  const deferring = (thing: number, parent: number | null) =>
    writer.run(async (trx) => {
      await execute(trx, 'PRAGMA defer_foreign_keys = ON');
      // The child goes first, in the same round as its parent: checked at COMMIT, not statement by statement.
      await settleAll([trx('parts').insert({ thing_id: thing }), parent === null ? Promise.resolve() : trx('things').insert({ id: parent, name: `thing${parent}` })]);
    });
  const outcomes = await Promise.allSettled([deferring(100, 100), deferring(555, null), deferring(101, 101)]);
  t.same(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.match(String((outcomes[1] as PromiseRejectedResult).reason), /FOREIGN KEY constraint failed/);
  t.same((await db('parts').orderBy('thing_id').select('thing_id')).map((r: { thing_id: number }) => r.thing_id), [100, 101]);
  // The pragma ends with its transaction: a later work checks statement by statement again.
  await t.rejects(writer.run((trx) => trx('parts').insert({ thing_id: 777 })), /FOREIGN KEY constraint failed/);
});

t.test('SharedWriter.batch: the items handed in while a transaction runs share one work of the next; a bad item fails alone', async (t) => {
  const db = await open(t);
  const writer = new SharedWriter(db);
  const calls: string[][] = [];
  const insert = writer.batch(async (trx, names: string[]) => {
    calls.push([...names]);
    await trx('things').insert(names.map((name) => ({ name })));
    return names.map((n) => n.toUpperCase());
  });
  // Another writer's transaction is running (held open by a gate) while three items arrive.
  const holding = await holdWriter(writer, 'held');
  const first = insert('a');
  await new Promise((r) => setTimeout(r, 20));
  const later = [insert('b'), insert('c')];
  holding.release();
  t.same(await Promise.all([first, ...later]), ['A', 'B', 'C'], 'each caller gets its own result');
  await holding.held;
  t.same(calls, [['a', 'b', 'c']], 'one work for the three, in the transaction after the one that held the writer');

  // A duplicate name fails its own item only: the work fails, then each item is written alone.
  calls.length = 0;
  const outcomes = await Promise.allSettled([insert('d'), insert('a'), insert('e')]);
  t.same(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.match(String((outcomes[1] as PromiseRejectedResult).reason), /UNIQUE constraint failed/);
  t.same(await names(db), ['a', 'b', 'c', 'd', 'e', 'held']);
  t.same(calls[0], ['d', 'a', 'e'], 'tried together first');

  // More than maxBatch items: the rest go in a following work.
  calls.length = 0;
  const small = writer.batch(async (trx, names: string[]) => {
    calls.push([...names]);
    await trx('things').insert(names.map((name) => ({ name })));
    return names.map(() => true);
  }, 2);
  await Promise.all(['x1', 'x2', 'x3'].map((n) => small(n)));
  t.same(calls, [['x1', 'x2'], ['x3']]);
});
