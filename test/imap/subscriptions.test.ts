// Subscriptions kept apart from the folders (issue 35): RFC 3501 §6.3.6 ("A server MUST NOT unilaterally remove
// an existing mailbox name from the subscription list even if a mailbox by that name no longer exists"; RFC 9051
// §6.3.7 the same) and RFC 5258 §5 example 2 (a subscribed name that no longer exists, `\NonExistent`). Over a
// raw socket, with imapflow and Python's imaplib; and migration 032 carrying the old subscriptions over.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import knex from 'knex';
import t from 'tap';
import { DB_FILE, openDatabase, queryRows } from '../../src/db/index.js';
import { migrationSource, migrations } from '../../src/db/migrations/index.js';
import { PASSWORD, session, setupImap } from './setup.js';

/** The LIST (or LSUB) responses of a command's output, by name: their attributes. */
function listed(out: string, kind = 'LIST'): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const [, attrs, name] of out.matchAll(new RegExp(`^\\* ${kind} \\(([^)]*)\\) "/" "([^"]*)"(?: .*)?\\r$`, 'gm'))) m.set(name!, attrs ? attrs.split(' ') : []);
  return m;
}

t.test('subscriptions are names (RFC 3501 §6.3.6, RFC 5258 §5)', async (t) => {
  const f = await setupImap(t);
  const user = await f.account('subs');
  const c = await session(f, user.address);

  await t.test('DELETE keeps the subscription: LSUB and LIST (SUBSCRIBED) show it, LIST does not', async (t) => {
    // RFC 5258 §5's Fruit/Peach: subscribed, then its mailbox deleted.
    for (const [tag, cmd] of [['a1', 'CREATE Fruit/Peach'], ['a2', 'CREATE Fruit/Banana'], ['a3', 'SUBSCRIBE Fruit/Peach'], ['a4', 'SUBSCRIBE Fruit/Banana'], ['a5', 'DELETE Fruit/Peach']] as const) {
      t.match(await c.command(tag, cmd), new RegExp(`^${tag} OK`, 'm'), cmd);
    }
    t.same(listed(await c.command('b1', 'LSUB "" "Fruit/*"'), 'LSUB').get('Fruit/Peach'), ['\\Noselect'], 'LSUB lists it, not selectable');
    const ext = listed(await c.command('b2', 'LIST (SUBSCRIBED) "" "*"'));
    t.same(ext.get('Fruit/Peach'), ['\\NonExistent', '\\Subscribed'], 'RFC 5258 §5 example 2: (\\Subscribed \\NonExistent)');
    t.same(ext.get('Fruit/Banana'), ['\\HasNoChildren', '\\Subscribed']);
    t.notOk(listed(await c.command('b3', 'LIST "" "*"')).has('Fruit/Peach'), 'LIST lists mailboxes only');
    t.notOk(listed(await c.command('b4', 'LIST "" "*" RETURN (SUBSCRIBED)')).has('Fruit/Peach'), 'RETURN (SUBSCRIBED) selects nothing');
    t.same(listed(await c.command('b5', 'LIST "" "Fruit" RETURN (CHILDREN)')).get('Fruit'), ['\\HasChildren'], 'Banana makes Fruit a parent');
    t.match(await c.command('b6', 'CREATE Fruit/Peach'), /^b6 OK/m);
    t.same(listed(await c.command('b7', 'LIST "" "Fruit/Peach" RETURN (SUBSCRIBED)')).get('Fruit/Peach'), ['\\HasNoChildren', '\\Subscribed'], 'made again: still subscribed');
    t.match(await c.command('b8', 'DELETE Fruit/Peach'), /^b8 OK/m);
  });

  await t.test('SUBSCRIBE takes a name that is no mailbox; LSUB "%" and RECURSIVEMATCH reach it', async (t) => {
    t.match(await c.command('c1', 'SUBSCRIBE Later/Box'), /^c1 OK/m);
    t.notOk(listed(await c.command('c2', 'LIST "" "*"')).has('Later'), 'no mailbox, no parent of one');
    t.same(listed(await c.command('c3', 'LSUB "" "%"'), 'LSUB').get('Later'), ['\\Noselect'], '§6.3.9: the parent of a subscribed name, \\Noselect');
    t.same(listed(await c.command('c4', 'LSUB "" "Later/%"'), 'LSUB').get('Later/Box'), ['\\Noselect']);
    const rm = await c.command('c5', 'LIST (SUBSCRIBED RECURSIVEMATCH) "" "%"');
    t.match(rm, /^\* LIST \(\\NonExistent\) "\/" "Later" \("CHILDINFO" \("SUBSCRIBED"\)\)\r$/m, 'CHILDINFO for a name that exists in the subscriptions only');
    t.match(rm, /^\* LIST \(\\HasChildren\) "\/" "Fruit" \("CHILDINFO" \("SUBSCRIBED"\)\)\r$/m);
    t.match(await c.command('c6', 'UNSUBSCRIBE Later/Box'), /^c6 OK/m);
    t.notMatch(await c.command('c7', 'LSUB "" "*"'), /Later/, 'gone with its subscription');
    t.match(await c.command('c8', 'UNSUBSCRIBE Later/Box'), /^c8 OK/m, 'unsubscribing a name not subscribed is no error');
    t.match(await c.command('c9', 'SUBSCRIBE "bad//name"'), /^c9 NO/m, 'a name the store cannot hold');
  });

  await t.test('RENAME moves no subscription (RFC 3501 is silent; as Dovecot: subscriptions are names)', async (t) => {
    for (const [tag, cmd] of [['d1', 'CREATE Work/Q1'], ['d2', 'SUBSCRIBE Work'], ['d3', 'SUBSCRIBE Work/Q1'], ['d4', 'RENAME Work Job']] as const) {
      t.match(await c.command(tag, cmd), new RegExp(`^${tag} OK`, 'm'), cmd);
    }
    const lsub = listed(await c.command('d5', 'LSUB "" "*"'), 'LSUB');
    t.same(lsub.get('Work'), ['\\Noselect'], 'the old name stays subscribed');
    t.same(lsub.get('Work/Q1'), ['\\Noselect']);
    t.notOk(lsub.has('Job') || lsub.has('Job/Q1'), 'the new names are not subscribed');
    const ext = listed(await c.command('d6', 'LIST (SUBSCRIBED) "" "*"'));
    t.same(ext.get('Work'), ['\\NonExistent', '\\Subscribed']);
    t.match(await c.command('d7', 'RENAME Job Work'), /^d7 OK/m);
    t.same(listed(await c.command('d8', 'LIST "" "Work*" RETURN (SUBSCRIBED)')).get('Work/Q1'), ['\\HasNoChildren', '\\Subscribed'], 'renamed back: subscribed again');
  });

  await t.test('CREATE subscribes nothing; the special-use folders of a new account are subscribed', async (t) => {
    t.match(await c.command('e1', 'CREATE Plain'), /^e1 OK/m);
    const lsub = listed(await c.command('e2', 'LSUB "" "*"'), 'LSUB');
    t.notOk(lsub.has('Plain'));
    for (const name of ['INBOX', 'Sent', 'Drafts', 'Trash', 'Junk', 'Archive']) t.same(lsub.get(name), [], `${name} subscribed`);
  });

  await t.test('IMAP4rev2 (RFC 9051 §6.3.7): LIST (SUBSCRIBED) shows the subscribed name that is gone', async (t) => {
    const r = await session(f, user.address);
    t.match(await r.command('f1', 'ENABLE IMAP4rev2'), /^f1 OK/m);
    t.same(listed(await r.command('f2', 'LIST (SUBSCRIBED) "" "Fruit/*"')).get('Fruit/Peach'), ['\\NonExistent', '\\Subscribed']);
    r.destroy();
  });

  await t.test('imapflow: a subscription outlives DELETE and comes back with CREATE', async (t) => {
    const client = await f.client(user.address);
    await client.mailboxCreate('Flow');
    await client.mailboxSubscribe('Flow');
    await client.mailboxDelete('Flow');
    t.notOk((await client.list()).some((m) => m.path === 'Flow'), 'not listed while it does not exist');
    await client.mailboxCreate('Flow');
    t.equal((await client.list()).find((m) => m.path === 'Flow')?.subscribed, true, 'subscribed again without SUBSCRIBE');
    await client.mailboxUnsubscribe('Flow');
    t.notOk((await client.list()).find((m) => m.path === 'Flow')?.subscribed);
    await client.logout();
  });

  await t.test("Python's imaplib: subscribe, delete, lsub", async (t) => {
    const script = fileURLToPath(new URL('./fixtures/imaplib_subscriptions.py', import.meta.url));
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile('python3', [script, '127.0.0.1', String(f.imapPort), user.address, PASSWORD], { timeout: 60_000 }, (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out))),
    );
    const r = JSON.parse(stdout) as Record<string, string | [string, string[]]>;
    t.same([r.create, r.subscribe, r.delete, r.subscribe_never, r.unsubscribe], ['OK', 'OK', 'OK', 'OK', 'OK']);
    t.same(r.lsub_after_delete, ['OK', ['(\\Noselect) "/" "Py/Box"']]);
    t.same(r.list_after_delete, ['OK', []]);
    t.same(r.lsub_both, ['OK', ['(\\Noselect) "/" "Py/Box"', '(\\Noselect) "/" "Py/Never"']]);
    t.same(r.lsub_after_unsubscribe, ['OK', ['(\\Noselect) "/" "Py/Never"']]);
  });
  c.destroy();
});

t.test('migration 032 carries the subscribed folders over', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'subscriptions-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const before = migrations.slice(0, migrations.findIndex((m) => m.name === '032-mail-subscriptions'));
  const old = knex({ client: 'sqlite3', connection: { filename: path.join(dir, DB_FILE) }, useNullAsDefault: true });
  await old.migrate.latest({ migrationSource: migrationSource(before) });
  const now = new Date().toISOString();
  await old('mailboxes').insert({ id: 7, team_id: 't', domain_id: 'd', address: 'a@x.test', password_hash: 'x', created_at: now, updated_at: now });
  const folder = (id: number, p: string, subscribed: boolean) => ({ id, mailbox_id: 7, path: p, subscribed, uid_validity: id, created_at: now });
  await old('mail_folders').insert([folder(1, 'INBOX', true), folder(2, 'Old', false), folder(3, 'Kept/Sub', true)]);
  await old.destroy();

  const db = await openDatabase(dir);
  t.teardown(() => db.destroy());
  t.same(await queryRows(db, 'SELECT mailbox_id, path FROM mail_subscriptions ORDER BY path'), [
    { mailbox_id: 7, path: 'INBOX' },
    { mailbox_id: 7, path: 'Kept/Sub' },
  ]);
});
