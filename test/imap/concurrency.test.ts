// Two sessions on one mailbox (RFC 3501 §5.2, §7.4.1): flag changes reach the other session at the next
// command, EXISTS may come with FETCH/SEARCH but EXPUNGE waits for a command that allows it; IDLE pushes
// new mail (also mail received by the MX listener) and expunges without the client asking (RFC 2177).
import t from 'tap';
import { message, setupImap, type ImapFixture, type RawClient } from './setup.js';
import { startDns } from '../helpers/dns-server.js';
import { buildMessage, smtpSend } from '../inbound/support.js';
import { DAY } from '../../src/core/clock.js';

async function session(f: ImapFixture, user: string): Promise<RawClient> {
  const c = await f.raw({ implicit: true });
  await c.login(user);
  return c;
}

t.test('two sessions see each other at the moments RFC 3501 allows', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  for (let i = 1; i <= 4; i++) await f.store.deliver(message({ subject: `m${i}` }), [{ mailboxId: bob.id }]);
  const a = await session(f, bob.address);
  const b = await session(f, bob.address);
  await a.command('a1', 'SELECT INBOX');
  await b.command('b1', 'SELECT INBOX');

  await b.command('b2', 'STORE 1 +FLAGS (\\Flagged)');
  t.match(await a.command('a2', 'NOOP'), /\* 1 FETCH \(FLAGS \(\\Flagged \\Recent\) UID 1\)\r\na2 OK/, 'flag change reported on NOOP');
  t.notMatch(await a.command('a3', 'NOOP'), /FETCH/, 'and only once');

  await b.command('b3', 'STORE 2 +FLAGS.SILENT (\\Deleted)');
  t.match(await b.command('b4', 'EXPUNGE'), /\* 2 EXPUNGE/);
  const during = await a.command('a4', 'FETCH 1:* (UID)');
  t.notMatch(during, /EXPUNGE/, 'no EXPUNGE while FETCH runs');
  t.match(during, /\* 2 FETCH \(UID 2\)/, 'the expunged message keeps its number until announced');
  const flags = await a.command('a4b', 'FETCH 1:3 (FLAGS)');
  t.match(flags, /\* 1 FETCH \(FLAGS \(\\Flagged \\Recent\)\)\r\n\* 3 FETCH \(FLAGS \(\\Recent\)\)\r\na4b NO \[EXPUNGEISSUED\] /, 'its flags are gone: the others answered, then NO [EXPUNGEISSUED] (RFC 2180 §4.1.2)');
  t.notMatch(await a.command('a5', 'STORE 1 -FLAGS.SILENT (\\Flagged)'), /EXPUNGE/, 'nor during STORE');
  t.notMatch(await a.command('a6', 'UID SEARCH ALL'), /EXPUNGE/, 'nor during SEARCH');
  t.match(await a.command('a7', 'NOOP'), /\* 2 EXPUNGE\r\n/, 'announced at NOOP');
  t.match(await a.command('a8', 'FETCH 1:* UID'), /\* 1 FETCH \(UID 1\)\r\n\* 2 FETCH \(UID 3\)\r\n\* 3 FETCH \(UID 4\)\r\n/);

  await f.store.deliver(message({ subject: 'new' }), [{ mailboxId: bob.id }]);
  const search = await a.command('a9', 'SEARCH SUBJECT new');
  t.match(search, /\* 4 EXISTS\r\n\* \d+ RECENT\r\n\* SEARCH 4\r\n/, 'EXISTS may come with SEARCH, before the result that counts the new message');
  t.notMatch(await a.command('a10', 'SEARCH SUBJECT new'), /EXISTS/, 'announced once');
  t.match(await b.command('b5', 'NOOP'), /\* 4 EXISTS/);
});

t.test('IDLE pushes deliveries, flag changes and expunges', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  await f.store.deliver(message(), [{ mailboxId: bob.id }]);
  const a = await session(f, bob.address);
  const b = await session(f, bob.address);
  await a.command('a1', 'SELECT INBOX');
  await b.command('b1', 'SELECT INBOX');
  a.send('a2 IDLE\r\n');
  await a.waitFor(/^\+ idling\r\n/m);
  await f.store.deliver(message({ subject: 'pushed' }), [{ mailboxId: bob.id }]);
  t.match(await a.waitFor(/\* 2 EXISTS\r\n/), /\* 2 EXISTS/, 'new mail pushed with no command from the client');
  await b.command('b2', 'STORE 1 +FLAGS (\\Seen)');
  t.match(await a.waitFor(/\* 1 FETCH [^\n]*\n/), /\* 1 FETCH \(FLAGS \(\\Seen \\Recent\) UID 1\)/);
  await b.command('b3', 'STORE 1 +FLAGS.SILENT (\\Deleted)');
  await b.command('b4', 'EXPUNGE');
  t.match(await a.waitFor(/\* 1 EXPUNGE\r\n/), /EXPUNGE/);
  a.send('DONE\r\n');
  t.match(await a.waitFor(/^a2 [^\n]*\n/m), /a2 OK/);
  t.match(await a.command('a3', 'FETCH 1:* UID'), /\* 1 FETCH \(UID 2\)\r\na3 OK/);
  a.send('a4 IDLE\r\n');
  await a.waitFor(/^\+ idling\r\n/m);
  a.send('NOTDONE\r\n');
  t.match(await a.waitFor(/^a4 [^\n]*\n/m), /a4 BAD/, 'anything but DONE ends IDLE with BAD');
  a.send('a5 IDLE\r\nDONE\r\n');
  t.match(await a.waitFor(/^a5 [^\n]*\n/m), /a5 OK/, 'IDLE and DONE pipelined in one packet');
});

t.test('IDLE hears mail delivered by the MX listener', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const f = await setupImap(t, { config: { dnsServers: [dns.server] } });
  const bob = await f.account('bob');
  const a = await session(f, bob.address);
  await a.command('a1', 'SELECT INBOX');
  a.send('a2 IDLE\r\n');
  await a.waitFor(/^\+ idling\r\n/m);
  const sent = await smtpSend(f.app.appliance.ports.mx.port, { from: 'carol@remote.test', to: [bob.address] }, buildMessage({ from: 'carol@remote.test', to: bob.address, subject: 'over SMTP' }));
  t.ok(sent.ok, sent.response);
  t.match(await a.waitFor(/\* 1 EXISTS\r\n/), /\* 1 EXISTS/, 'pushed to the idling client');
  a.send('DONE\r\n');
  await a.waitFor(/^a2 OK[^\n]*\n/m);
  t.match(await a.command('a3', 'FETCH 1 (BODY.PEEK[HEADER.FIELDS (SUBJECT)])'), /Subject: over SMTP/);
});

t.test('a session whose cursor is older than the pruned change feed resynchronises from the messages', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob');
  for (let i = 1; i <= 4; i++) await f.store.deliver(message({ subject: `m${i}` }), [{ mailboxId: bob.id }]);
  const a = await session(f, bob.address);
  const b = await session(f, bob.address);
  await a.command('a1', 'ENABLE CONDSTORE');
  await a.command('a2', 'SELECT INBOX');
  await b.command('b1', 'SELECT INBOX');
  await b.command('b2', 'STORE 1 +FLAGS.SILENT (\\Flagged)');
  await b.command('b3', 'STORE 2 +FLAGS.SILENT (\\Deleted)');
  await b.command('b4', 'EXPUNGE');
  await f.store.deliver(message({ subject: 'new' }), [{ mailboxId: bob.id }]);
  // Everything a has not seen yet falls out of the feed's window.
  f.app.clock.advance(8 * DAY);
  let pruned = 0;
  for (let n; (n = await f.store.pruneChanges(new Date(f.app.clock.now().getTime() - 7 * DAY))) > 0; ) pruned += n;
  t.ok(pruned > 0);
  const noop = await a.command('a3', 'NOOP');
  t.match(noop, /\* 1 FETCH \(FLAGS \(\\Flagged \\Recent\) UID 1 MODSEQ \(\d+\)\)\r\n/, 'the flag change, from the message rows');
  t.match(noop, /\* 2 EXPUNGE\r\n/, 'the expunge, by comparing UIDs');
  t.match(noop, /\* 4 EXISTS\r\n/, 'the new message');
  t.notMatch(await a.command('a4', 'NOOP'), /FETCH|EXPUNGE|EXISTS/, 'once');
  t.match(await a.command('a5', 'UID FETCH 1:* (FLAGS) (CHANGEDSINCE 1)'), /\* 1 FETCH \(UID 1 FLAGS \(\\Flagged \\Recent\) MODSEQ/, 'CHANGEDSINCE reads the messages\' MODSEQ');
  await b.command('b5', 'STORE 1 -FLAGS.SILENT (\\Flagged)');
  t.match(await a.command('a6', 'NOOP'), /\* 1 FETCH \(FLAGS \(\\Recent\) UID 1 MODSEQ/, 'and the feed is followed again afterwards');
});

t.test('deleting a mailbox ends its open sessions with BYE', async (t) => {
  const f = await setupImap(t);
  const carol = await f.account('carol');
  const dave = await f.account('dave');
  const gone = await session(f, carol.address);
  const stays = await session(f, dave.address);
  await gone.command('c1', 'SELECT INBOX');
  await f.store.deleteAccount(carol.id);
  t.match(await gone.waitClose(), /\* BYE Mailbox deleted\r\n/, 'told why, then closed');
  t.match(await stays.command('d1', 'NOOP'), /d1 OK/, "another mailbox's session goes on");
});
