// JSON reads (src/db/json-reads.ts): the reads asked for in one turn on the same connection or transaction go
// to SQLite as one statement, and a row read as JSON is the row SELECT * answers. Over a real SQLite file.
import t from 'tap';
import { queryRows, type Db } from '../../src/db/index.js';
import { jsonObjectOf, loadTableColumns, queryJson } from '../../src/db/json-reads.js';
import { openScratchDb } from '../helpers/db.js';

async function open(t: Parameters<typeof openScratchDb>[0]): Promise<Db> {
  const db = await openScratchDb(t, 'json-reads');
  await db.raw('CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, flag boolean, "odd ""name""" TEXT)');
  await db.raw('CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB)');
  await loadTableColumns(db);
  return db;
}

/** Statements sent to SQLite, on the writer's connection and on the readers'. */
function watch(...dbs: Db[]): string[] {
  const sent: string[] = [];
  for (const db of dbs) db.on('query', (q: { sql: string }) => sent.push(q.sql));
  return sent;
}

t.test('a row read as JSON is the row SELECT * answers, value by value', async (t) => {
  const db = await open(t);
  const rows = [
    { id: 1, name: 'plain', n: 0, flag: 1, 'odd "name"': null },
    { id: 2, name: "quotes ' and \" and \\ and ?", n: -1, flag: 0, 'odd "name"': 'x' },
    { id: 3, name: 'NUL \0 inside, tab \t, newline \n, CR \r, control \u0001', n: 2 ** 53 - 1, flag: null, 'odd "name"': '' },
    { id: 4, name: 'ünïcödé, emoji 📨, CJK 郵便, RTL עברית', n: -(2 ** 40), flag: 1, 'odd "name"': '{"looks":"like json"}' },
    { id: 5, name: null, n: null, flag: null, 'odd "name"': '[1,2]' },
  ];
  await db('things').insert(rows);
  const viaRows = await queryRows<Record<string, unknown>>(db, 'SELECT * FROM things ORDER BY id');
  const viaJson = await queryJson<Array<Record<string, unknown>>>(db, `SELECT json_group_array(${jsonObjectOf('things', 't')} ORDER BY t.id) FROM things AS t`);
  t.same(viaJson, viaRows);
  t.equal(viaJson?.[2]?.name, rows[2]!.name, 'a NUL inside text comes back');
  t.equal(viaJson?.[3]?.['odd "name"'], '{"looks":"like json"}', 'text that looks like JSON stays text');
});

t.test('the reads of one turn go as one statement, each answered its own value', async (t) => {
  const db = await open(t);
  await db('things').insert([
    { id: 1, name: 'a', n: 1 },
    { id: 2, name: 'b', n: 2 },
  ]);
  const sent = watch(db);
  const [names, count, one, none] = await Promise.all([
    queryJson<string[]>(db, 'SELECT json_group_array(name ORDER BY id) FROM things WHERE n >= ?', [1]),
    queryJson<number>(db, 'SELECT json(count(*)) FROM things WHERE name = ?', ['b']),
    queryJson<Record<string, unknown>>(db, `SELECT ${jsonObjectOf('things', 't')} FROM things AS t WHERE t.id = ?`, [2]),
    queryJson<Record<string, unknown>>(db, `SELECT ${jsonObjectOf('things', 't')} FROM things AS t WHERE t.id = ?`, [99]),
  ]);
  t.same(names, ['a', 'b']);
  t.equal(count, 1);
  t.same(one, { id: 2, name: 'b', n: 2, flag: null, 'odd "name"': null });
  t.equal(none, null, 'no row: null');
  t.equal(sent.length, 1, 'one statement');
  t.match(sent[0], /^SELECT \(SELECT json_group_array.*\) AS j0, \(SELECT json\(count.*\) AS j1, .* AS j3$/s);

  // A later turn is a statement of its own.
  t.same(await queryJson(db, 'SELECT json_array(?, ?)', ['x', 7]), ['x', 7]);
  t.equal(sent.length, 2);
});

t.test('in a transaction, the round is the transaction’s and sees its writes', async (t) => {
  const db = await open(t);
  const sent = watch(db);
  await db.transaction(async (trx) => {
    await trx('things').insert({ id: 7, name: 'inside' });
    const [a, b] = await Promise.all([
      queryJson<string[]>(trx, 'SELECT json_group_array(name) FROM things'),
      queryJson<number>(trx, 'SELECT json(max(id)) FROM things'),
    ]);
    t.same(a, ['inside']);
    t.equal(b, 7);
  });
  t.equal(sent.filter((s) => s.startsWith('SELECT (')).length, 1, 'the two reads as one statement');
});

t.test('a read that fails fails alone: the others of its round are answered', async (t) => {
  const db = await open(t);
  await db('things').insert({ id: 1, name: 'a' });
  const results = await Promise.allSettled([
    queryJson<string[]>(db, 'SELECT json_group_array(name) FROM things'),
    queryJson(db, 'SELECT json_group_array(x) FROM no_such_table'),
    queryJson(db, 'SELECT 42'),
    queryJson(db, "SELECT 'not json'"),
  ]);
  t.same(results[0], { status: 'fulfilled', value: ['a'] });
  t.equal(results[1].status, 'rejected');
  t.match((results[1] as PromiseRejectedResult).reason, { message: /no such table: no_such_table/ });
  t.match((results[2] as PromiseRejectedResult).reason, { message: /answered number, not JSON text/ }, 'a value that is not JSON text is refused');
  t.match((results[3] as PromiseRejectedResult).reason, SyntaxError, 'text that is not JSON is refused');
});

t.test('a table is read as JSON only when its columns are known and can be', async (t) => {
  await open(t);
  t.throws(() => jsonObjectOf('nowhere', 'x'), /No JSON row for table nowhere/);
  t.throws(() => jsonObjectOf('blobs', 'b'), /BLOB column/);
  t.match(jsonObjectOf('things', 't'), /^json_object\('id', "t"\."id", 'name', "t"\."name", .*'odd "name"', "t"\."odd ""name"""\)$/);
  t.ok(jsonObjectOf('emails', 'e').includes(`'public_id', "e"."public_id"`), 'the migrated schema is loaded when the store opens');
});
