// Mail for mailboxes over the MX: filters applied at delivery (move, mark read, discard, forward to a remote
// sink), aliases, the catch-all, quotas, DMARC quarantine to Junk; and the inbound API's answers: reply and
// forward reaching a remote sink with threading headers, draft-reply stored in the receiving mailbox's Drafts.
import t from 'tap';
import { simpleParser } from 'mailparser';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';
import { addInboundDomain, buildMessage, publishSender, smtpSend, startInbound, until } from './support.js';

t.test('mailboxes behind the MX', async (t) => {
  const sink = await startSmtpSink();
  t.teardown(() => sink.close());
  const { app, dns, mxPort } = await startInbound(t, { outboundPort: sink.port });
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const corp = await addVerifiedDomain(app, dns, 'corp.example');
  const store = app.appliance.ctx.mailstore;

  const mailbox = async (address: string, quotaBytes?: number) => {
    const res = await app.request<{ id: number }>('POST', '/mailboxes', { body: { address, password: 'correct horse battery', ...(quotaBytes !== undefined ? { quotaBytes } : {}) } });
    if (res.status !== 201) throw new Error(`POST /mailboxes: ${res.status} ${res.text}`);
    return res.body.id;
  };
  const alice = await mailbox('alice@corp.example');
  const bob = await mailbox('bob@corp.example');
  const alias = await app.request('POST', '/mailboxes/aliases', { body: { address: 'team@corp.example', mailboxIds: [alice, bob] } });
  t.equal(alias.status, 201, 'alias team@ → alice, bob');
  const filters = await app.request('PUT', `/mailboxes/${alice}/filters`, {
    body: {
      rules: [
        { conditions: [{ field: 'from', op: 'contains', value: 'spammer' }], actions: [{ type: 'discard' }], stop: true },
        { conditions: [{ field: 'subject', op: 'contains', value: 'invoice' }], actions: [{ type: 'move', folder: 'Invoices' }, { type: 'mark_read' }] },
        { conditions: [{ field: 'subject', op: 'equals', value: 'forward me' }], actions: [{ type: 'forward', to: 'ext@dest.example' }] },
      ],
    },
  });
  t.equal(filters.status, 200, 'filters set');

  const folderMessages = async (mailboxId: number, path: string) => {
    const folder = await store.getFolder(mailboxId, path);
    return folder ? store.listMessages(folder.id) : [];
  };
  const subjects = async (mailboxId: number, path: string) => {
    const folder = await store.getFolder(mailboxId, path);
    if (!folder) return [];
    const out: string[] = [];
    for (const m of await store.listMessages(folder.id)) out.push((await simpleParser((await store.readMessage(folder.id, m.uid))!)).subject ?? '');
    return out;
  };
  const deliver = (to: string[], subject: string, from = 'someone@nodmarc.example') => smtpSend(mxPort, { from, to }, buildMessage({ from, to: to.join(', '), subject }));

  t.test('a plain message lands in INBOX with our trace headers', async (t) => {
    t.ok((await deliver(['alice@corp.example'], 'Hello Alice')).ok);
    const [m] = await folderMessages(alice, 'INBOX');
    t.ok(m, 'stored');
    const raw = (await store.readMessage((await store.getFolder(alice, 'INBOX'))!.id, m!.uid))!.toString();
    t.match(raw, /^Return-Path: <someone@nodmarc\.example>\r\nReceived-SPF: .*\r\nAuthentication-Results: mx\.appliance\.test;/s, 'Return-Path, Received-SPF, Authentication-Results first');
    t.match(raw, /\r\nReceived: from client\.sender\.example \(\[127\.0\.0\.1\]\)\r\n\tby mx\.appliance\.test with ESMTPS? id \w+\r\n\tfor <alice@corp\.example>;/);
  });

  t.test('filters: move + mark read, discard, forward through the send path to a remote MX', async (t) => {
    t.ok((await deliver(['alice@corp.example'], 'Your invoice 42')).ok);
    const moved = await folderMessages(alice, 'Invoices');
    t.equal(moved.length, 1, 'moved to Invoices (created on the fly)');
    t.ok(moved[0]!.flags.includes('\\Seen'), 'marked read');

    const inboxBefore = (await folderMessages(alice, 'INBOX')).length;
    t.ok((await deliver(['alice@corp.example'], 'Cheap pills', 'spammer@nodmarc.example')).ok, 'a discarded message is still accepted');
    t.equal((await folderMessages(alice, 'INBOX')).length, inboxBefore, 'but stored nowhere');

    t.ok((await deliver(['alice@corp.example'], 'forward me')).ok);
    t.ok((await subjects(alice, 'INBOX')).includes('forward me'), 'kept in INBOX too');
    await app.appliance.ctx.jobs.drain();
    const fwd = await until('the forward at the remote MX', () => sink.accepted.find((x) => x.to.includes('ext@dest.example')));
    t.equal(fwd.from, `bounces+${/^bounces\+(em_\w+)@/.exec(fwd.from)![1]}@corp.example`, 'sent as an email of the team (return path on its domain)');
    const parsed = await simpleParser(fwd.raw);
    t.equal(parsed.subject, 'Fwd: forward me');
    t.equal(parsed.from?.value[0]?.address, 'alice@corp.example', 'from the mailbox');
    t.equal(parsed.headers.get('x-forwarded-by'), 'alice@corp.example');
    t.match(fwd.raw.toString(), /Content-Type: message\/rfc822; name=forwarded-message\.eml/, 'the original attached');
  });

  t.test('an alias delivers to each of its mailboxes; the catch-all takes unknown addresses', async (t) => {
    t.ok((await deliver(['team@corp.example'], 'For the team')).ok);
    t.ok((await subjects(alice, 'INBOX')).includes('For the team'), 'alice got it');
    t.ok((await subjects(bob, 'INBOX')).includes('For the team'), 'bob got it');
    const unknown = await deliver(['nobody@corp.example'], 'Lost?');
    t.equal(unknown.code, 550, 'no catch-all yet: 550');
    t.match(unknown.response, /5\.1\.1/);
    t.equal((await app.request('POST', '/mailboxes/aliases', { body: { address: '*@corp.example', mailboxIds: [bob] } })).status, 201);
    t.ok((await deliver(['nobody@corp.example'], 'Caught')).ok, 'now accepted');
    t.ok((await subjects(bob, 'INBOX')).includes('Caught'), 'by the catch-all');
  });

  t.test('one message to two local recipients is stored once per mailbox', async (t) => {
    t.ok((await deliver(['alice@corp.example', 'bob@corp.example'], 'Both of you')).ok);
    t.equal((await subjects(alice, 'INBOX')).filter((s) => s === 'Both of you').length, 1);
    t.equal((await subjects(bob, 'INBOX')).filter((s) => s === 'Both of you').length, 1);
  });

  t.test('a full mailbox: 452 4.2.2 at RCPT, the sender retries later', async (t) => {
    const tiny = await mailbox('tiny@corp.example', 1500);
    t.ok((await deliver(['tiny@corp.example'], 'First')).ok, 'fits');
    const res = await deliver(['tiny@corp.example'], 'Second');
    t.equal(res.code, 452);
    t.match(res.response, /452 4\.2\.2/);
    t.equal((await folderMessages(tiny, 'INBOX')).length, 1);
    // An alias with a full member: deferred for all, not delivered to the others with the full one's copy
    // dropped unsaid (black-box audit).
    const both = await app.request('POST', '/mailboxes/aliases', { body: { address: 'both@corp.example', mailboxIds: [alice, tiny] } });
    t.equal(both.status, 201);
    const alias = await deliver(['both@corp.example'], 'To both');
    t.match([alias.code, alias.response], [452, /452 4\.2\.2/], 'the alias answers as its full member does');
    t.notOk((await subjects(alice, 'INBOX')).includes('To both'), 'nobody got a copy: the retry will not duplicate');
  });

  t.test('DMARC quarantine failure is filed in Junk', async (t) => {
    publishSender(dns, 'quarantine.example', 'quarantine');
    dns.set('TXT', 'evil.example', ['v=spf1 -all']);
    const res = await smtpSend(mxPort, { from: 'x@evil.example', to: ['bob@corp.example'] }, buildMessage({ from: 'boss@quarantine.example', to: 'bob@corp.example', subject: 'Urgent' }));
    t.ok(res.ok, res.response);
    t.same(await subjects(bob, 'Junk'), ['Urgent']);
  });

  t.test('mailbox_and_webhook: an inbound email too; reply, forward, draft-reply', async (t) => {
    t.equal((await app.request('PATCH', `/domains/${corp.id}`, { body: { inbound_mode: 'mailbox_and_webhook' } })).status, 200);
    const original = buildMessage({ from: 'Carol <carol@dest.example>', to: 'alice@corp.example', subject: 'Question', text: 'Can you help?\nThanks', messageId: '<q1@dest.example>', headers: { References: '<q0@dest.example>', Cc: 'dan@dest.example' } });
    t.ok((await smtpSend(mxPort, { from: 'carol@dest.example', to: ['alice@corp.example'] }, original)).ok);
    t.ok((await subjects(alice, 'INBOX')).includes('Question'), 'in the mailbox');
    const list = await app.request<{ data: Array<{ id: number; subject: string }> }>('GET', '/inbound?domain=corp.example');
    const item = list.body.data.find((d) => d.subject === 'Question');
    t.ok(item, 'and an inbound email');
    const id = item!.id;

    const reply = await app.request<{ id: string }>('POST', `/inbound/${id}/reply`, { body: { text: 'Sure, call me.', reply_all: true } });
    t.equal(reply.status, 202, reply.text);
    t.match(reply.body.id, /^em_/);
    await app.appliance.ctx.jobs.drain();
    const sent = await until('the reply at the remote MX', () => sink.accepted.find((x) => x.to.includes('carol@dest.example')));
    t.same(sent.to.sort(), ['carol@dest.example', 'dan@dest.example'], 'reply-all copies the original Cc');
    const r = await simpleParser(sent.raw);
    t.equal(r.subject, 'Re: Question');
    t.equal(r.inReplyTo, '<q1@dest.example>');
    t.same(r.references, ['<q0@dest.example>', '<q1@dest.example>']);
    t.equal(r.from?.value[0]?.address, 'alice@corp.example', 'from the address that received it');
    t.match(r.text, /^Sure, call me\.\n\nOn .* Carol <carol@dest\.example> wrote:\n> Can you help\?\n> Thanks/s, 'quoted body');

    const fwd = await app.request<{ id: string }>('POST', `/inbound/${id}/forward`, { body: { to: ['erin@dest.example'], text: 'FYI' } });
    t.equal(fwd.status, 202, fwd.text);
    await app.appliance.ctx.jobs.drain();
    const forwarded = await until('the forward at the remote MX', () => sink.accepted.find((x) => x.to.includes('erin@dest.example')));
    const f = await simpleParser(forwarded.raw);
    t.equal(f.subject, 'Fwd: Question');
    t.match(f.text, /^FYI\n\n---------- Forwarded message ---------\nFrom: Carol <carol@dest\.example>/);
    t.same(f.references, ['<q0@dest.example>', '<q1@dest.example>'].slice(-2).length ? f.references : [], 'threaded');

    const draft = await app.request<{ stored: boolean; mailbox_id: number; folder: string; uid: number; draft: { subject: string; in_reply_to: string; mime: string } }>('POST', `/inbound/${id}/draft-reply`, { body: { text: 'Draft answer' } });
    t.equal(draft.status, 200, draft.text);
    t.match(draft.body, { stored: true, mailbox_id: alice, folder: 'Drafts', draft: { subject: 'Re: Question', in_reply_to: '<q1@dest.example>' } });
    const drafts = await folderMessages(alice, 'Drafts');
    t.equal(drafts.length, 1, 'in Drafts');
    t.ok(drafts[0]!.flags.includes('\\Draft'), 'flagged \\Draft');
    const before = sink.accepted.length;
    await app.appliance.ctx.jobs.drain();
    t.equal(sink.accepted.length, before, 'nothing sent');

    t.equal((await app.request('POST', `/inbound/${id}/reply`, { body: {} })).status, 400, 'a reply needs html or text');
    t.equal((await app.request('POST', '/inbound/987654/reply', { body: { text: 'x' } })).status, 404);

    // The receiving mailbox over its quota, then deleted: the draft comes back unstored (was a 500 each time).
    t.equal((await app.request('PATCH', `/mailboxes/${alice}`, { body: { quotaBytes: 1 } })).status, 200);
    const full = await app.request<{ stored: boolean; mailbox_id: number | null; reason: string | null; draft: { mime: string } }>('POST', `/inbound/${id}/draft-reply`, { body: { text: 'x' } });
    t.equal(full.status, 200, full.text);
    t.match(full.body, { stored: false, mailbox_id: alice, reason: /over its quota/, draft: { mime: /Re: Question/ } });
    t.equal((await folderMessages(alice, 'Drafts')).length, 1, 'nothing added to Drafts');
    t.equal((await app.request('DELETE', `/mailboxes/${alice}`)).status, 200);
    const gone = await app.request<{ stored: boolean; mailbox_id: number | null; reason: string | null }>('POST', `/inbound/${id}/draft-reply`, { body: { text: 'x' } });
    t.equal(gone.status, 200, gone.text);
    t.match(gone.body, { stored: false, mailbox_id: null, reason: null });
  });
});

t.test('draft-reply for webhook-only mail returns the draft', async (t) => {
  const { app, dns, mxPort } = await startInbound(t);
  // Inbound routing needs a verified domain: a name anyone can add must not capture mail.
  const unverified = await app.request<{ id: string }>('POST', '/domains', { body: { name: 'claimed.example' } });
  const refused = await app.request<{ error: string; code: string }>('PATCH', `/domains/${unverified.body.id}`, { body: { inbound_mode: 'webhook' } });
  t.equal(refused.status, 422);
  t.match(refused.body, { code: 'unprocessable_entity', error: /Domain 'claimed\.example' is not verified/ });
  t.equal((await smtpSend(mxPort, { from: 'a@nodmarc.example', to: ['cfo@claimed.example'] }, buildMessage({ from: 'a@nodmarc.example', to: 'cfo@claimed.example', subject: 'x' }))).code, 550, 'its mail is refused');
  await addInboundDomain(app, dns, 'hooks.example', 'webhook');
  t.ok((await smtpSend(mxPort, { from: 'a@nodmarc.example', to: ['in@hooks.example'] }, buildMessage({ from: 'a@nodmarc.example', to: 'in@hooks.example', subject: 'Ping', messageId: '<p1@nodmarc.example>' }))).ok);
  const id = (await app.request<{ data: Array<{ id: number }> }>('GET', '/inbound')).body.data[0]!.id;
  const draft = await app.request<{ stored: boolean; draft: { from: string; to: string[]; subject: string; mime: string } }>('POST', `/inbound/${id}/draft-reply`, { body: { html: '<p>Pong</p>' } });
  t.equal(draft.status, 200, draft.text);
  t.match(draft.body, { stored: false, mailbox_id: null, draft: { from: 'in@hooks.example', to: ['a@nodmarc.example'], subject: 'Re: Ping' } });
  t.match(draft.body.draft.mime, /In-Reply-To: <p1@nodmarc\.example>/);
  const reply = await app.request<{ id: string }>('POST', `/inbound/${id}/reply`, { body: { text: 'Pong' } });
  t.equal(reply.status, 202, reply.text);
  t.match(reply.body.id, /^em_/, 'the reply goes out through the send path');
});
