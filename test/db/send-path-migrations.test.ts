// Migrations of the send path's tables since 011. 012: a store written before it (bodies in the emails row) opens
// with every email's html and text moved to email_bodies, the columns gone from emails, and a body deleted with its
// email. 013: the unused index on recipients' addresses is dropped.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knex from 'knex';
import t from 'tap';
import { DB_FILE, openDatabase, queryRows } from '../../src/db/index.js';
import { migrationSource, migrations } from '../../src/db/migrations/index.js';
import { openScratchDb } from '../helpers/db.js';

t.test('bodies move out of the emails row, and go with their email', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mail-bodies-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  // The store as the release before 012 left it.
  const before = migrations.slice(0, migrations.findIndex((m) => m.name === '012-email-bodies'));
  const old = knex({ client: 'sqlite3', connection: { filename: path.join(dir, DB_FILE) }, useNullAsDefault: true });
  await old.migrate.latest({ migrationSource: migrationSource(before) });
  const now = new Date().toISOString();
  await old('teams').insert({ id: 'team_1', name: 'T', plan: 'pro', owner_email: 'o@x.test', created_at: now });
  const email = (id: number, html: string | null, text: string | null) => ({
    id,
    public_id: `em_${id}`,
    team_id: 'team_1',
    mode: 'live',
    from_header: 'a@x.test',
    from_address: 'a@x.test',
    from_domain: 'x.test',
    to_addrs: '[]',
    cc_addrs: '[]',
    bcc_addrs: '[]',
    reply_to: '[]',
    subject: `s${id}`,
    html,
    text,
    headers: '{}',
    tags: '[]',
    status: 'delivered',
    message_id: `<em_${id}@x.test>`,
    created_at: now,
    updated_at: now,
  });
  await old('emails').insert([email(1, '<p>one</p>', 'one'), email(2, null, 'two only'), email(3, null, null)]);
  await old.destroy();

  const db = await openDatabase(dir);
  t.teardown(() => db.destroy());
  t.same(
    await queryRows(db, 'SELECT email_id, html, text FROM email_bodies ORDER BY email_id'),
    [
      { email_id: 1, html: '<p>one</p>', text: 'one' },
      { email_id: 2, html: null, text: 'two only' },
    ],
    'each email with a body has its row; one without (a raw send) has none',
  );
  const columns = (await queryRows<{ name: string }>(db, 'SELECT name FROM pragma_table_info(?)', ['emails'])).map((c) => c.name);
  t.notOk(columns.includes('html') || columns.includes('text'), 'the emails row holds no body');
  t.ok(columns.includes('subject') && columns.includes('status'), 'and keeps the rest');

  await db('emails').where({ id: 1 }).delete();
  t.same(await queryRows(db, 'SELECT email_id FROM email_bodies'), [{ email_id: 2 }], 'a body is deleted with its email (retention)');
});

t.test("migration 013: email_recipients' unused index on the address is gone; the outcome update finds recipients by email_id", async (t) => {
  const db = await openScratchDb(t, '013');
  const indexes = (await queryRows<{ name: string }>(db, "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'email_recipients'")).map((r) => r.name);
  t.notOk(indexes.includes('email_recipients_address_index'), 'no address index');
  // The shape of delivery.ts's outcome write (batcher.updateFromValues keyed by email_id and address).
  const plan = await queryRows<{ detail: string }>(
    db,
    `EXPLAIN QUERY PLAN UPDATE email_recipients SET status = v.status
     FROM (SELECT column1 AS email_id, column2 AS address, column3 AS status FROM (VALUES (?, ?, ?))) AS v
     WHERE email_recipients.email_id = v.email_id AND email_recipients.address = v.address`,
    [1, 'a@x.test', 'delivered'],
  );
  t.ok(
    plan.some((p) => p.detail.includes('USING INDEX email_recipients_email_id_index')),
    `searched by email_id (${plan.map((p) => p.detail).join('; ')})`,
  );
});
