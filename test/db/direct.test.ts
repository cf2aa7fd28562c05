// The direct path for the send path's hot statements (db.queryRows, db.execute, batcher.insertRows): the
// same connections, transactions and prepared statements as knex's own queries, without its builder and
// runner, over a real SQLite file.
import t, { type Test } from 'tap';
import { insertRows, updateFromValues } from '../../src/db/batcher.js';
import { execute, queryRows, readsOf, type Db } from '../../src/db/index.js';
import { openScratchDb } from '../helpers/db.js';

async function open(t: Test): Promise<Db> {
  const db = await openScratchDb(t, 'direct');
  await db.schema.createTable('things', (tb) => {
    tb.increments('id');
    tb.string('name').notNullable().unique();
    tb.string('note');
    tb.integer('n').notNullable().defaultTo(0);
  });
  return db;
}

t.test('queryRows and execute: on the pool, on the read connections and inside a transaction', async (t) => {
  const db = await open(t);
  t.equal(await execute(db, 'INSERT INTO things (name) VALUES (?), (?)', ['a', 'b']), 2, 'answers the rows it changed');
  t.same(await queryRows(db, 'SELECT name, note FROM things ORDER BY id'), [{ name: 'a', note: null }, { name: 'b', note: null }]);
  t.same(await queryRows(readsOf(db), 'SELECT count(*) AS n FROM things'), [{ n: 2 }], 'a read connection sees what was committed');
  t.same(await queryRows(db, 'UPDATE things SET n = n + 1 WHERE name = ? RETURNING name, n', ['a']), [{ name: 'a', n: 1 }], 'a write with RETURNING answers its rows');

  // Inside a transaction: its own connection (the other writer waits), undone by a rollback.
  const err = await db
    .transaction(async (trx) => {
      await execute(trx, 'UPDATE things SET note = ? WHERE name = ?', ['inside', 'a']);
      t.same(await queryRows(trx, 'SELECT note FROM things WHERE name = ?', ['a']), [{ note: 'inside' }], 'the transaction sees its own write');
      await trx('things').insert({ name: 'c' }); // knex's own statements share the transaction
      throw new Error('roll back');
    })
    .catch((e: unknown) => e);
  t.match(String(err), /roll back/);
  t.same(await queryRows(db, 'SELECT name, note FROM things ORDER BY id'), [{ name: 'a', note: null }, { name: 'b', note: null }], 'nothing of the rolled-back transaction is left');

  // A statement that fails rejects, and the connection goes on serving.
  await t.rejects(execute(db, 'INSERT INTO things (name) VALUES (?)', ['a']), /UNIQUE constraint failed/);
  await t.rejects(queryRows(db, 'SELECT nope FROM things'), /no such column/);
  t.same(await queryRows(db, 'SELECT 1 AS one'), [{ one: 1 }]);

  // A finished transaction refuses further statements, as knex does.
  let kept: Parameters<Parameters<Db['transaction']>[0]>[0] | undefined;
  await db.transaction(async (trx) => {
    kept = trx;
  });
  await t.rejects(execute(kept!, 'UPDATE things SET n = 0'), /already complete/);
});

t.test("knex's query events are emitted for direct statements (the webhook dispatcher listens)", async (t) => {
  const db = await open(t);
  const seen: string[] = [];
  const answered: string[] = [];
  const failed: string[] = [];
  db.on('query', (q: { sql: string }) => seen.push(q.sql));
  db.on('query-response', (_r: unknown, q: { sql: string }) => answered.push(q.sql));
  db.on('query-error', (_e: unknown, q: { sql: string }) => failed.push(q.sql));
  await db.transaction((trx) => insertRows(trx, 'things', [{ name: 'x' }]));
  await execute(db, 'UPDATE things SET n = 2');
  await execute(db, 'INSERT INTO things (name) VALUES (?)', ['x']).catch(() => undefined);
  t.ok(seen.includes('INSERT INTO things ("name") VALUES (?)'), 'a direct insert inside a transaction');
  t.ok(seen.includes('UPDATE things SET n = 2') && answered.includes('UPDATE things SET n = 2'), 'a direct statement on the pool, and its answer');
  t.same(failed, ['INSERT INTO things (name) VALUES (?)'], 'a failed one');
});

t.test('insertRows: columns from the first row, missing values NULL, chunks in order, an ON CONFLICT tail', async (t) => {
  const db = await open(t);
  const rows = Array.from({ length: 1203 }, (_, i) => ({ name: `n${i}`, note: i % 2 ? `odd ${i}` : undefined, n: i }));
  await db.transaction((trx) => insertRows(trx, 'things', rows));
  const back = await queryRows<{ id: number; name: string; note: string | null; n: number }>(db, 'SELECT * FROM things ORDER BY id');
  t.equal(back.length, 1203, 'every row, in chunks of at most 500');
  t.ok(
    back.every((r, i) => r.name === `n${i}` && r.n === i),
    'ids follow the rows: chunks are written one after another',
  );
  t.same([back[0]!.note, back[1]!.note], [null, 'odd 1'], 'an undefined value is NULL');

  await insertRows(db, 'things', [{ name: 'n0', note: 'again' }, { name: 'new', note: 'new' }], ' ON CONFLICT (name) DO NOTHING');
  t.same(await queryRows(db, "SELECT name, note FROM things WHERE name IN ('n0', 'new') ORDER BY id"), [{ name: 'n0', note: null }, { name: 'new', note: 'new' }], 'a conflicting row is skipped, the others written');
  await insertRows(db, 'things', [{ name: 'n0', note: 'merged' }], ' ON CONFLICT (name) DO UPDATE SET note = excluded.note');
  t.same(await queryRows(db, "SELECT note FROM things WHERE name = 'n0'"), [{ note: 'merged' }], 'an upsert');
  await insertRows(db, 'things', []);
  t.equal((await queryRows<{ n: number }>(db, 'SELECT count(*) AS n FROM things'))[0]!.n, 1204, 'no rows: no statement');
});

t.test('updateFromValues: many rows to different values in one statement, matched by key, missing values NULL', async (t) => {
  const db = await open(t);
  await insertRows(db, 'things', [{ name: 'a', note: 'x' }, { name: 'b', note: 'y' }, { name: 'c', note: 'z' }]);
  const seen: string[] = [];
  db.on('query', (q: { sql: string }) => seen.push(q.sql));
  await updateFromValues(db, 'things', ['name'], { n: 'v.n', note: 'COALESCE(v.note, things.note)' }, [
    { name: 'a', n: 5, note: 'new' },
    { name: 'c', n: 7 },
  ]);
  t.equal(seen.length, 1, 'one statement');
  t.same(await queryRows(db, 'SELECT name, note, n FROM things ORDER BY id'), [
    { name: 'a', note: 'new', n: 5 },
    { name: 'b', note: 'y', n: 0 },
    { name: 'c', note: 'z', n: 7 },
  ]);
  const before = seen.length;
  await updateFromValues(db, 'things', ['name'], { n: 'v.n' }, []);
  t.equal(seen.length, before, 'no rows: no statement');
});
