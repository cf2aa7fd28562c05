// The MX's recipient directory (services/inbound/directory.ts) caches routes and filter rules between
// messages; every change made through the API must still take effect on the very next message.
import t from 'tap';
import { addVerifiedDomain } from '../helpers/domains.js';
import { InboundDirectory } from '../../src/services/inbound/directory.js';
import { buildMessage, smtpSend, startInbound } from './support.js';

t.test('a value loaded while a change was announced is returned but not kept', async (t) => {
  const dir = new InboundDirectory();
  let loads = 0;
  const load = async (value: string) => {
    loads++;
    return value;
  };
  t.equal(await dir.route('a@x.example', () => load('old')), 'old');
  t.equal(await dir.route('a@x.example', () => load('new')), 'old', 'kept');
  t.equal(loads, 1);

  dir.clear();
  let release!: () => void;
  const pending = dir.route('a@x.example', async () => {
    await new Promise<void>((resolve) => (release = resolve));
    return load('read before the change');
  });
  dir.clear(); // the change is announced while the read is under way
  release();
  t.equal(await pending, 'read before the change', 'the caller gets what was read');
  t.equal(await dir.route('a@x.example', () => load('after')), 'after', 'but it was not kept');
  t.equal(await dir.route('a@x.example', () => load('later')), 'after');
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

  // A deleted alias stops receiving at once.
  const aliases = await app.request<{ data: Array<{ id: number; address: string }> }>('GET', '/mailboxes/aliases');
  const alias = aliases.body.data.find((a) => a.address === 'nobody@dir.example');
  t.ok(alias, 'the alias is listed');
  t.equal((await app.request('DELETE', `/mailboxes/aliases/${alias!.id}`)).status, 200);
  t.equal((await send('nobody@dir.example')).code, 550, 'alias deleted: 550');

  // A deleted mailbox stops receiving at once.
  t.same((await app.request('DELETE', `/mailboxes/${carol}`)).body, { success: true });
  t.equal((await send('carol@dir.example')).code, 550, 'deleted: 550');
});

t.test('domains added and removed take effect on the next message', async (t) => {
  const { app, dns, mxPort } = await startInbound(t);
  const send = (to: string) => smtpSend(mxPort, { from: 'a@nodmarc.example', to: [to] }, buildMessage({ from: 'a@nodmarc.example', to, subject: 'Hi' }), { plain: true });

  const before = await send('dave@later.example');
  t.equal(before.code, 550, `not ours yet: ${before.response}`);
  const domain = await addVerifiedDomain(app, dns, 'later.example');
  const dave = await app.request<{ id: number }>('POST', '/mailboxes', { body: { address: 'dave@later.example', password: 'correct horse battery' } });
  t.equal(dave.status, 201);
  t.equal((await send('dave@later.example')).code, 250, 'the new domain and mailbox receive at once');

  // Not while it has a live mailbox (its mail would go with it, at once): 409 naming what to do.
  const refused = await app.request<{ error: string; code: string }>('DELETE', `/domains/${domain.id}`);
  t.equal(refused.status, 409);
  t.same(refused.body, { error: "Domain 'later.example' still has 1 mailbox: delete it first (DELETE /mailboxes/{id})", code: 'conflict' });
  t.equal((await send('dave@later.example')).code, 250, 'the domain and its mailbox are untouched');
  t.equal((await app.request('DELETE', `/mailboxes/${dave.body.id}`)).status, 200);
  t.equal((await app.request('DELETE', `/domains/${domain.id}`)).status, 200);
  const after = await send('dave@later.example');
  t.equal(after.code, 550, `the deleted domain refuses at once: ${after.response}`);
});
