// Write scripts (src/db/script.ts): a shared transaction's writes go to SQLite as one sqlite3_exec with the
// values written as literals, and COMMIT with them. Over a real SQLite file: what a literal stores is what
// binding the value stores, the writes keep their order, large values are bound in their place, a failure
// fails its own work only, and the connection is left clean.
import t, { type Test } from 'tap';
import { insertRows, SharedWriter, updateFromValues } from '../../src/db/batcher.js';
import { execScript, execute, queryRows, type Db } from '../../src/db/index.js';
import { commitScript, inlineBindings, LITERAL_VALUE_LIMIT, openScript, sqlLiteral, write } from '../../src/db/script.js';
import { openScratchDb } from '../helpers/db.js';

async function open(t: Test): Promise<Db> {
  const db = await openScratchDb(t, 'script');
  await db.raw('CREATE TABLE vals (id INTEGER PRIMARY KEY, v)');
  await db.raw('CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)');
  await db.raw('CREATE TABLE parts (id INTEGER PRIMARY KEY AUTOINCREMENT, thing_id INTEGER NOT NULL REFERENCES things (id), body BLOB)');
  return db;
}

const names = async (db: Db) => (await db('things').orderBy('id').select('name')).map((r: { name: string }) => r.name);

/** Statements the writer connection was sent, by their first word. */
function watch(db: Db): { sent: string[] } {
  const sent: string[] = [];
  db.on('query', (q: { sql: string }) => sent.push(q.sql));
  return { sent };
}

t.test('a literal stores exactly what binding the value stores: type and content', async (t) => {
  const db = await open(t);
  const values: unknown[] = [
    null,
    undefined,
    0,
    -1,
    42,
    2 ** 53 - 1,
    -(2 ** 40),
    1.5,
    -0.25,
    1e-7,
    1e300,
    Number.NaN,
    true,
    false,
    '',
    'plain',
    "it's 'quoted' ''twice''",
    'a ? mark, "double" and `back` quotes; -- not a comment /* nor this */',
    'line\nbreak\r\ntab\t',
    'NUL \0 inside\0',
    'ünïcödé ✉ 📨 𝔘',
    'lone \ud800 surrogate',
    'x'.repeat(5000),
    Buffer.from([0, 1, 2, 255, 39, 0]),
    Buffer.alloc(0),
    new Uint8Array([9, 8, 7]),
    new Date(Date.UTC(2026, 10, 27, 12, 0, 0)),
  ];
  // Bound (the usual way) under ids 1.., literal (a script's way) under ids 1001..
  for (const [i, v] of values.entries()) await execute(db, 'INSERT INTO vals (id, v) VALUES (?, ?)', [i + 1, v ?? null]);
  await execScript(db, values.map((v, i) => `INSERT INTO vals (id, v) VALUES (${i + 1001}, ${sqlLiteral(v)})`).join(';\n'));
  const rows = await queryRows<{ id: number; t: string; h: string | null }>(db, 'SELECT id, typeof(v) AS t, hex(v) AS h FROM vals ORDER BY id');
  const bound = rows.filter((r) => r.id < 1000);
  const literal = rows.filter((r) => r.id > 1000).map((r) => ({ ...r, id: r.id - 1000 }));
  t.equal(literal.length, values.length);
  for (const [i, v] of values.entries()) t.same(literal[i], bound[i], `${typeof v} ${JSON.stringify(v instanceof Uint8Array ? [...v] : v)?.slice(0, 40)}`);
});

t.test('inlineBindings: placeholders outside quotes take the values in order; a count that does not match throws', async (t) => {
  t.equal(inlineBindings('INSERT INTO t (a, b) VALUES (?, ?)', ["o'k", 3]), "INSERT INTO t (a, b) VALUES ('o''k', 3)");
  t.equal(inlineBindings(`UPDATE "t?" SET a = '?', b = ? WHERE [c?] = ? AND \`d?\` = 1`, [1, 2]), `UPDATE "t?" SET a = '?', b = 1 WHERE [c?] = 2 AND \`d?\` = 1`);
  t.equal(inlineBindings("SELECT 'it''s ?', ?", [null]), "SELECT 'it''s ?', NULL");
  t.equal(inlineBindings('SELECT ?, ?', ["a ? and $& and $1 and '", 'b']), "SELECT 'a ? and $& and $1 and ''', 'b'", "a value's ? and $ patterns are text, not placeholders");
  t.equal(inlineBindings("SELECT ?, 'open ?", [1]), "SELECT 1, 'open ?", 'an unclosed quote runs to the end');
  t.equal(inlineBindings('SELECT [a""?], "b[?", ?', [2]), 'SELECT [a""?], "b[?", 2', 'quotes inside other quotes are text');
  t.throws(() => inlineBindings('SELECT ?, ?', [1]), /More placeholders than bindings/);
  t.throws(() => inlineBindings('SELECT ?', [1, 2]), /2 bindings for 1 placeholders/);
  t.throws(() => sqlLiteral({ an: 'object' }), /No SQL literal/);
  t.equal(sqlLiteral(1e21), '1e+21');
  t.equal(sqlLiteral(2 ** 31), '2147483648.0', 'beyond 32 bits a REAL, as node-sqlite3 binds it');
  t.equal(sqlLiteral(2 ** 31 - 1), '2147483647');
  t.equal(sqlLiteral(Infinity), '9e999');
});

t.test('in a shared transaction the writes wait for every work, then go with COMMIT in one call, in order', async (t) => {
  const db = await open(t);
  const writer = new SharedWriter(db);
  const { sent } = watch(db);
  let seenInside: string[] = [];
  await Promise.all([
    writer.run(async (trx) => {
      // A child before its parent: the script defers foreign keys to COMMIT.
      await insertRows(trx, 'parts', [{ thing_id: 1, body: null }]);
      await insertRows(trx, 'things', [{ id: 1, name: 'one' }, { id: 2, name: 'two' }]);
      seenInside = (await trx('things').select('name')).map((r: { name: string }) => r.name);
    }),
    writer.run(async (trx) => {
      await write(trx, 'INSERT INTO things (id, name) VALUES (?, ?)', [3, 'three']);
      await updateFromValues(trx, 'things', ['id'], { name: 'v.name' }, [{ id: 3, name: "three's" }]);
    }),
  ]);
  t.same(seenInside, [], 'a work does not see its held writes');
  t.same(await names(db), ['one', 'two', "three's"], 'the update ran after the insert it follows');
  t.same(await db('parts').select('thing_id'), [{ thing_id: 1 }]);
  const script = sent.filter((s) => s.startsWith('PRAGMA defer_foreign_keys'));
  t.equal(script.length, 1, 'one script');
  t.match(script[0]!, /INSERT INTO parts[\s\S]*INSERT INTO things[\s\S]*COMMIT$/, 'writes in the order made, COMMIT last');
  t.notOk(sent.some((s) => /^COMMIT/i.test(s)), 'no COMMIT of its own');
  t.ok(sent.some((s) => s.startsWith('INSERT INTO things')), "each held write is announced on the query stream (the webhook dispatcher's wake-up)");
  // The connection is out of the transaction: a later one begins.
  await writer.run((trx) => write(trx, 'INSERT INTO things (id, name) VALUES (4, ?)', ['four']));
  t.same(await names(db), ['one', 'two', "three's", 'four']);
});

t.test('a large value is bound in its place: the literal parts before and after it keep their order', async (t) => {
  const db = await open(t);
  const writer = new SharedWriter(db);
  const { sent } = watch(db);
  const big = Buffer.alloc(LITERAL_VALUE_LIMIT + 1, 7);
  await writer.run(async (trx) => {
    await insertRows(trx, 'things', [{ id: 10, name: 'ten' }]);
    await insertRows(trx, 'parts', [{ thing_id: 10, body: big }]);
    await updateFromValues(trx, 'things', ['id'], { name: 'v.name' }, [{ id: 10, name: 'TEN' }]);
  });
  const [row] = await queryRows<{ n: number; thing_id: number }>(db, 'SELECT length(body) AS n, thing_id FROM parts');
  t.same(row, { n: big.length, thing_id: 10 });
  t.same(await names(db), ['TEN']);
  const order = sent.filter((s) => /^(PRAGMA|INSERT INTO parts|UPDATE things)/.test(s)).map((s) => s.split(/\s/).slice(0, 3).join(' '));
  t.same(order.slice(-3), ['PRAGMA defer_foreign_keys =', 'INSERT INTO parts', 'UPDATE things SET'], 'literal part, the bound insert, the last part with COMMIT');
});

t.test('a failing held write fails its own work only; a dangling child fails at COMMIT, alone; the connection stays clean', async (t) => {
  const db = await open(t);
  const writer = new SharedWriter(db);
  const outcomes = await Promise.allSettled([
    writer.run((trx) => write(trx, 'INSERT INTO things (id, name) VALUES (?, ?)', [1, 'a'])),
    writer.run((trx) => write(trx, 'INSERT INTO things (id, name) VALUES (?, ?)', [2, 'a'])), // the name is taken
    writer.run((trx) => insertRows(trx, 'parts', [{ thing_id: 999, body: null }])), // no such thing
    writer.run((trx) => write(trx, 'INSERT INTO things (id, name) VALUES (?, ?)', [3, 'c'])),
  ]);
  t.same(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
  );
  t.match(String((outcomes[1] as PromiseRejectedResult).reason), /UNIQUE constraint failed/);
  t.match(String((outcomes[2] as PromiseRejectedResult).reason), /FOREIGN KEY constraint failed/);
  t.same(await names(db), ['a', 'c']);
  t.same(await db('parts').select('*'), []);
  t.same(await db.raw('SELECT 1 AS one'), [{ one: 1 }], 'no transaction left open');
  // Outside a scripted transaction a write runs at once.
  await write(db, 'INSERT INTO things (id, name) VALUES (?, ?)', [5, 'e']);
  await db.transaction((trx) => write(trx, 'INSERT INTO things (id, name) VALUES (?, ?)', [6, 'f']));
  t.same(await names(db), ['a', 'c', 'e', 'f']);
});

t.test("'in-order' shared writers keep running writes at once: a work reads back what it wrote", async (t) => {
  const db = await open(t);
  const writer = new SharedWriter(db, 'in-order');
  const seen = await writer.run(async (trx) => {
    await insertRows(trx, 'things', [{ id: 1, name: 'x' }]);
    return (await trx('things').select('name')).map((r: { name: string }) => r.name);
  });
  t.same(seen, ['x']);
});

t.test('a script commits once: a write after it throws; a script without writes leaves the COMMIT to the transaction', async (t) => {
  const db = await open(t);
  const { sent } = watch(db);
  await db.transaction(async (trx) => {
    openScript(trx);
    await write(trx, 'INSERT INTO things (id, name) VALUES (?, ?)', [1, 'one']);
    await commitScript(trx);
    await t.rejects(write(trx, 'INSERT INTO things (id, name) VALUES (?, ?)', [2, 'two']), /whose writes have been sent/);
  });
  t.same(await names(db), ['one'], 'committed by the script; the late write neither ran nor broke the commit');
  t.notOk(sent.some((s) => /^COMMIT/i.test(s)));

  sent.length = 0;
  await db.transaction(async (trx) => {
    openScript(trx);
    await trx('things').insert({ id: 3, name: 'three' }); // not a held write: runs at once
    await commitScript(trx);
  });
  t.same(await names(db), ['one', 'three']);
  t.equal(sent.filter((s) => /^COMMIT/i.test(s)).length, 1, 'the transaction sent its own COMMIT');
  t.notOk(sent.some((s) => s.startsWith('PRAGMA defer_foreign_keys')), 'no script was sent');
});
