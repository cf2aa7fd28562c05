// The SQLite client keeps prepared statements per connection (src/db/sqlite-client.ts): the same text runs
// the same statement again, with fresh bindings; failures are not kept; schema changes are seen; the number
// kept is bounded; connections with kept statements still close.
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { createRequire } from 'node:module';
import { CHECKPOINT_EVERY_MS, DB_FILE, openDatabase, queryRows, readsOf, WRITER_CHECKPOINT_PAGES, type Db } from '../../src/db/index.js';
import { KEPT_BINDING_BYTES, keptStatements, STATEMENT_CACHE_SIZE } from '../../src/db/sqlite-client.js';
import { openScratchDb } from '../helpers/db.js';

async function open(t: Test): Promise<Db> {
  const db = await openScratchDb(t, 'sqlite-client');
  await db.schema.createTable('things', (tb) => {
    tb.increments('id');
    tb.string('name').notNullable().unique();
    tb.integer('n').notNullable();
  });
  return db;
}

/** The writer's one connection, as knex holds it (to count what it keeps). */
async function writerConnection(db: Db): Promise<object> {
  const conn = (await db.client.acquireConnection()) as object;
  db.client.releaseConnection(conn);
  return conn;
}

t.test('one text, one statement: each run binds its own values', async (t) => {
  const db = await open(t);
  const conn = await writerConnection(db);
  const ids: number[] = [];
  for (let i = 0; i < 20; i++) ids.push(...(await db('things').insert({ name: `t${i}`, n: i })));
  t.same(ids, Array.from({ length: 20 }, (_, i) => i + 1), 'lastID of every insert');
  const before = keptStatements(conn);
  for (let i = 0; i < 20; i++) {
    const row = await db('things').where({ name: `t${i}` }).first('n');
    t.equal(row?.n, i, `select ${i}`);
  }
  t.equal(keptStatements(conn), before + 1, 'twenty selects of one text keep one statement');
  t.equal(await db('things').where('n', '<', 5).update({ n: 100 }), 5, 'changes of an update');
  t.equal(await db('things').where('n', '<', 5).update({ n: 100 }), 0, 'the same update again changes nothing');
  t.equal(await db('things').where({ n: 100 }).del(), 5, 'changes of a delete');
  const counted = await db('things').count({ c: '*' }).first();
  t.equal(Number(counted?.c), 15);
});

t.test('failures: a text that does not prepare is not kept; a kept statement that fails runs again', async (t) => {
  const db = await open(t);
  const conn = await writerConnection(db);
  const before = keptStatements(conn);
  await t.rejects(db.raw('SELEC 1'), /syntax error/, 'syntax error');
  await t.rejects(db('no_such_table').select('*'), /no such table/, 'unknown table');
  t.equal(keptStatements(conn), before, 'neither is kept');
  await db('things').insert({ name: 'a', n: 1 });
  await t.rejects(db('things').insert({ name: 'a', n: 2 }), /UNIQUE constraint failed/, 'constraint failure');
  t.same(await db('things').insert({ name: 'b', n: 2 }), [2], 'the same statement runs again');
  t.same(await db('things').orderBy('id').select('name', 'n'), [{ name: 'a', n: 1 }, { name: 'b', n: 2 }]);
});

t.test('a text that fails to prepare fails every caller waiting on it', async (t) => {
  const db = await open(t);
  await db.transaction(async (trx) => {
    // Two runs queued on one statement while it is being prepared.
    const [a, b] = await Promise.allSettled([trx.raw('SELECT nope FROM things'), trx.raw('SELECT nope FROM things')]);
    t.equal(a.status, 'rejected');
    t.equal(b.status, 'rejected');
  });
});

t.test(`statements holding more than ${KEPT_BINDING_BYTES} bytes of bound values together are not kept`, async (t) => {
  const db = await open(t);
  const conn = await writerConnection(db);
  await db.schema.createTable('blobs', (tb) => {
    tb.increments('id');
    tb.binary('raw').notNullable();
  });
  const big = Buffer.alloc(KEPT_BINDING_BYTES / 2 + 1, 7);
  const before = keptStatements(conn);
  await db('blobs').insert({ raw: Buffer.from('small') });
  t.equal(keptStatements(conn), before + 1, 'a small insert is kept');
  await db('blobs').insert({ raw: big });
  t.equal(keptStatements(conn), before + 1, 'the same text with a big value: still kept (within the budget)');
  await db('blobs').insert([{ raw: big }, { raw: big }]);
  t.equal(keptStatements(conn), before + 1, 'a text whose values alone pass the budget is not kept');
  await db('blobs').insert({ raw: big });
  await db.raw('SELECT ? AS v', [big]);
  t.equal(keptStatements(conn), before + 1, 'nor one that would take the kept total past it');
  const rows = (await db('blobs').orderBy('id').select('raw')) as Array<{ raw: Buffer }>;
  t.same(
    rows.map((r) => r.raw.length),
    [5, big.length, big.length, big.length, big.length],
    'every value stored whole',
  );
  t.ok(rows.slice(1).every((r) => r.raw.equals(big)));
});

t.test('a kept statement sees a later schema change', async (t) => {
  const db = await open(t);
  await db('things').insert({ name: 'a', n: 1 });
  const select = () => db.raw('SELECT * FROM things') as Promise<Array<Record<string, unknown>>>;
  t.same(Object.keys((await select())[0]!), ['id', 'name', 'n']);
  await db.schema.alterTable('things', (tb) => tb.string('note').nullable());
  t.same(Object.keys((await select())[0]!), ['id', 'name', 'n', 'note'], 'the new column is there');
});

t.test('transactions: committed, rolled back, and many of them', async (t) => {
  const db = await open(t);
  for (let i = 0; i < 50; i++) await db.transaction(async (trx) => void (await trx('things').insert({ name: `c${i}`, n: i })));
  await t.rejects(
    db.transaction(async (trx) => {
      await trx('things').insert({ name: 'gone', n: 0 });
      await trx('things').insert({ name: 'c0', n: 0 });
    }),
    /UNIQUE/,
  );
  t.equal(await db('things').where({ name: 'gone' }).first(), undefined, 'rolled back');
  t.equal(Number((await db('things').count({ c: '*' }).first())?.c), 50);
  t.equal(Number((await readsOf(db)('things').count({ c: '*' }).first())?.c), 50, 'the read-only connections see the commits');
});

t.test('a COMMIT that fails (a deferred foreign key left broken) rolls back: nothing is kept and the connection starts new transactions', async (t) => {
  const db = await open(t);
  await db.schema.createTable('parts', (tb) => {
    tb.increments('id');
    tb.integer('thing_id').notNullable().references('things.id');
  });
  await t.rejects(
    db.transaction(async (trx) => {
      await trx.raw('PRAGMA defer_foreign_keys = ON');
      await trx('things').insert({ name: 'kept?', n: 1 });
      await trx('parts').insert({ thing_id: 9999 });
    }),
    /FOREIGN KEY constraint failed/,
  );
  t.equal(await db('things').where({ name: 'kept?' }).first(), undefined, 'the transaction was rolled back');
  await db.transaction(async (trx) => void (await trx('things').insert({ name: 'next', n: 2 })));
  t.same(await db('things').select('name'), [{ name: 'next' }], 'the next transaction begins and commits');
});

interface RawDb {
  exec(sql: string, cb: (err: Error | null) => void): void;
  close(cb: (err: Error | null) => void): void;
}

/** A connection of "another process" to the same file (the admin CLI's, say): it can hold the write lock. */
async function otherConnection(t: Test, db: Db): Promise<{ exec(sql: string): Promise<void> }> {
  const sqlite3 = createRequire(import.meta.url)('sqlite3') as { Database: new (file: string, cb: (err: Error | null) => void) => RawDb };
  const file = (db.client.config.connection as { filename: string }).filename;
  const conn = await new Promise<RawDb>((resolve, reject) => {
    const c = new sqlite3.Database(file, (err) => (err ? reject(err) : resolve(c)));
  });
  t.teardown(() => new Promise<void>((resolve) => conn.close(() => resolve())));
  return { exec: (sql) => new Promise<void>((resolve, reject) => conn.exec(sql, (err) => (err ? reject(err) : resolve()))) };
}

t.test('a BEGIN that fails fails its transaction: its writes do not run, and the connection goes on', async (t) => {
  const db = await open(t);
  await db.raw('PRAGMA busy_timeout = 50'); // the writer's one connection
  t.teardown(() => db.raw('PRAGMA busy_timeout = 5000'));
  const other = await otherConnection(t, db);
  await other.exec('BEGIN IMMEDIATE');
  let wrote = false;
  await t.rejects(
    db.transaction(async (trx) => {
      t.same(await queryRows(trx, 'SELECT count(*) AS n FROM things'), [{ n: 0 }], 'the read is answered');
      await trx('things').insert({ name: 'b', n: 2 });
      wrote = true;
    }),
    /SQLITE_BUSY/,
  );
  t.notOk(wrote, 'the write was refused');
  await other.exec('COMMIT');
  t.same(await db('things').pluck('name'), [], 'nothing was written outside the transaction');
  await db.transaction(async (trx) => void (await trx('things').insert({ name: 'next', n: 3 })));
  await db('things').insert({ name: 'alone', n: 4 });
  t.same(await db('things').orderBy('id').pluck('name'), ['next', 'alone'], 'later transactions and writes run');
});

t.test(`at most ${STATEMENT_CACHE_SIZE} statements kept per connection; the evicted ones prepare again`, async (t) => {
  const db = await open(t);
  const conn = await writerConnection(db);
  for (let i = 0; i < STATEMENT_CACHE_SIZE + 40; i++) {
    const rows = (await db.raw(`SELECT ${i} AS v`)) as Array<{ v: number }>;
    if (rows[0]?.v !== i) t.fail(`text ${i}`);
  }
  t.equal(keptStatements(conn), STATEMENT_CACHE_SIZE);
  t.same(await db.raw('SELECT 0 AS v'), [{ v: 0 }], 'an evicted text runs again');
  t.equal(keptStatements(conn), STATEMENT_CACHE_SIZE);
});

t.test('connections with kept statements close', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mail-sqlite-client-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db = await openDatabase(dir);
  await readsOf(db)('jobs').count({ c: '*' });
  await db('jobs').count({ c: '*' });
  t.ok(existsSync(path.join(dir, `${DB_FILE}-wal`)), 'open: the WAL file exists');
  await db.destroy();
  // SQLite removes the WAL file when the last connection to the file closes; one left open keeps it.
  t.notOk(existsSync(path.join(dir, `${DB_FILE}-wal`)), 'every connection closed');
});

t.test('a kept statement that has run holds no read snapshot: later writes are seen and a checkpoint empties the WAL', async (t) => {
  const db = await open(t);
  const reads = readsOf(db);
  await db('things').insert({ name: 'first', n: 1 });
  const count = async () => Number((await reads('things').count({ c: '*' }).first())?.c);
  t.equal(await count(), 1);
  for (let i = 0; i < 20; i++) await db('things').insert({ name: `later${i}`, n: i });
  t.equal(await count(), 21, 'the same kept select on a read-only connection sees the later commits');
  // A reader still inside a read transaction would keep TRUNCATE from resetting the log (busy = 1).
  const [result] = (await db.raw('PRAGMA wal_checkpoint(TRUNCATE)')) as Array<{ busy: number; log: number; checkpointed: number }>;
  t.same(result, { busy: 0, log: 0, checkpointed: 0 }, 'nothing holds the log: it was checkpointed and truncated');
});

t.test('WAL checkpoints run beside the writer: committed pages reach the database file without the writer checkpointing', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mail-sqlite-client-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db = await openDatabase(dir);
  t.teardown(() => db.destroy());
  t.same(await db.raw('PRAGMA wal_autocheckpoint'), [{ wal_autocheckpoint: WRITER_CHECKPOINT_PAGES }], "the writer's own checkpoint is a backstop far off");
  await db.schema.createTable('blobs', (tb) => {
    tb.increments('id');
    tb.binary('data');
  });
  const dbFile = path.join(dir, DB_FILE);
  const before = statSync(dbFile).size;
  // ~4 MB in four transactions: about a thousand pages, a tenth of the writer's threshold.
  for (let i = 0; i < 4; i++) await db('blobs').insert(Array.from({ length: 10 }, () => ({ data: Buffer.alloc(100_000, i + 1) })));
  let size = statSync(dbFile).size;
  for (let i = 0; i < 50 && size < before + 4_000_000; i++) {
    await new Promise((r) => setTimeout(r, CHECKPOINT_EVERY_MS));
    size = statSync(dbFile).size;
  }
  t.ok(size >= before + 4_000_000, `the pages were copied into the database file (${before} → ${size} bytes)`);
  t.equal(Number((await readsOf(db)('blobs').count({ c: '*' }).first())?.c), 40, 'and read back');
});
