// The MX's recipient directory (services/inbound-directory.ts) caches routes and filter rules between
// messages; every change made through the API must still take effect on the very next message.
import t from 'tap';
import { addVerifiedDomain } from '../helpers/domains.js';
import { affectsDirectory } from '../../src/services/inbound-directory.js';
import { buildMessage, smtpSend, startInbound } from './support.js';

t.test('which write statements empty the directory', async (t) => {
  const yes = [
    'update `mailboxes` set `deleted_at` = ?, `updated_at` = ? where `id` = ? and `deleted_at` is null',
    'update `mailboxes` set `quota_bytes` = ?, `updated_at` = ? where `id` = ?',
    'insert into `mailboxes` (`address`) values (?)',
    'insert into `mail_aliases` (`address`) values (?)',
    'delete from `mail_alias_targets` where `alias_id` = ?',
    'delete from `mailbox_filters` where `mailbox_id` = ?',
    'update `domains` set `inbound_mode` = ? where `id` = ?',
    'delete from `teams` where `id` = ?',
    'DROP TABLE mailboxes',
  ];
  const no = [
    'select * from `mailboxes` where `id` = ?',
    'BEGIN IMMEDIATE;',
    'COMMIT;',
    'UPDATE "mailboxes" SET "used_bytes" = CASE id WHEN ? THEN ? END, "highest_modseq" = CASE id WHEN ? THEN ? END, "last_uid_validity" = CASE id WHEN ? THEN ? END, "updated_at" = CASE id WHEN ? THEN ? END WHERE id IN (?)',
    'insert into `mail_messages` (`blob_id`) values (?)',
    'insert into `mail_blobs` (`raw`) select ? as `raw` union all select ? as `raw`',
    'UPDATE jobs SET lease_until = ? WHERE id IN (SELECT id FROM jobs)',
  ];
  for (const sql of yes) t.ok(affectsDirectory(sql), sql);
  for (const sql of no) t.notOk(affectsDirectory(sql), sql);
});

t.test('changes take effect on the next message', async (t) => {
  const { app, dns, mxPort } = await startInbound(t);
  const domain = await addVerifiedDomain(app, dns, 'dir.example');
  const store = app.appliance.ctx.mailstore;
  const send = (to: string, subject = 'Hi') => smtpSend(mxPort, { from: 'a@nodmarc.example', to: [to] }, buildMessage({ from: 'a@nodmarc.example', to, subject }), { plain: true });
  const inbox = async (id: number, path = 'INBOX') => (await store.getFolder(id, path))?.messages ?? 0;

  const created = await app.request<{ id: number }>('POST', '/mailboxes', { body: { address: 'carol@dir.example', password: 'correct horse battery' } });
  t.equal(created.status, 201);
  const carol = created.body.id;
  t.equal((await send('carol@dir.example')).code, 250, 'delivered (route now cached)');
  t.equal((await send('carol@dir.example')).code, 250, 'delivered again from the cache');
  t.equal((await send('nobody@dir.example')).code, 550, 'unknown address: 550');

  // A new alias for an address that was unknown a moment ago.
  t.equal((await app.request('POST', '/mailboxes/aliases', { body: { address: 'nobody@dir.example', mailboxIds: [carol] } })).status, 201);
  t.equal((await send('nobody@dir.example')).code, 250, 'the new alias receives at once');
  t.equal(await inbox(carol), 3);

  // New filters apply to the next message.
  t.equal((await app.request('PUT', `/mailboxes/${carol}/filters`, { body: { rules: [{ conditions: [], actions: [{ type: 'move', folder: 'Filed' }] }] } })).status, 200);
  t.equal((await send('carol@dir.example')).code, 250);
  t.equal(await inbox(carol, 'Filed'), 1, 'the new rule moved it');

  // A quota set after the route was cached: the RCPT check reads fresh usage.
  t.equal((await app.request('PATCH', `/mailboxes/${carol}`, { body: { quotaBytes: 10 } })).status, 200);
  const full = await send('carol@dir.example');
  t.equal(full.code, 452, `over quota at once: ${full.response}`);
  t.equal((await app.request('PATCH', `/mailboxes/${carol}`, { body: { quotaBytes: 0 } })).status, 200);
  t.equal((await send('carol@dir.example')).code, 250, 'unlimited again');

  // The domain's routing setting.
  t.equal((await app.request('PATCH', `/domains/${domain.id}`, { body: { inbound_mode: 'webhook' } })).status, 200);
  t.equal((await send('carol@dir.example', 'to the webhook')).code, 250);
  t.equal(await inbox(carol, 'Filed'), 2, 'the mailbox got nothing more');
  const listed = await app.request<{ data: Array<{ subject: string }> }>('GET', '/inbound');
  t.same(
    listed.body.data.map((d) => d.subject),
    ['to the webhook'],
    'routed to the webhook at once',
  );
  t.equal((await app.request('PATCH', `/domains/${domain.id}`, { body: { inbound_mode: 'none' } })).status, 200);

  // A deleted mailbox stops receiving at once.
  t.same((await app.request('DELETE', `/mailboxes/${carol}`)).body, { success: true });
  t.equal((await send('carol@dir.example')).code, 550, 'deleted: 550');
});
