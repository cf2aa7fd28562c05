// Python's imaplib (standard library) as a second client, over STARTTLS and implicit TLS.
import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { message, PASSWORD, setupImap } from './setup.js';

const script = fileURLToPath(new URL('./fixtures/imaplib_client.py', import.meta.url));

t.test('imaplib', async (t) => {
  const f = await setupImap(t);
  const bob = await f.account('bob', { quotaBytes: 1024 * 1024 });
  await f.store.deliver(message({ subject: 'first', body: 'one' }), [{ mailboxId: bob.id }]);
  await f.store.deliver(message({ subject: 'second', body: 'two' }), [{ mailboxId: bob.id }]);
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile('python3', [script, '127.0.0.1', String(f.imapPort), String(f.imapsPort), bob.address, PASSWORD], { timeout: 60_000 }, (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out))),
  );
  const r = JSON.parse(stdout) as Record<string, unknown>;
  t.ok((r.pre_caps as string[]).includes('STARTTLS'));
  t.equal(r.login, 'OK');
  t.ok((r.caps as string[]).includes('UIDPLUS'));
  t.same(r.namespace, ['OK', ['(("" "/")) NIL (("Shared/" "/"))']]);
  t.ok((r.list as string[]).some((l) => l === '(\\HasNoChildren \\Trash) "/" "Trash"'));
  t.match(r.select, ['OK', ['2']]);
  t.same(r.search_all, ['1 2']);
  t.same(r.search_subject, ['2']);
  t.match((r.fetch_meta as string[])[0], /^1 \(FLAGS \(\\Recent\) RFC822.SIZE \d+ ENVELOPE \(.*"first".*\) BODYSTRUCTURE \("TEXT" "PLAIN"/);
  t.match(r.fetch_rfc822, /Subject: first\r\n[^]*\r\n\r\none\r\n$/);
  t.equal(r.fetch_header, 'Subject: second\r\n\r\n');
  t.match(r.store, ['2 (FLAGS (\\Flagged \\Recent))']);
  t.match(r.uid_fetch, ['1 (UID 1 FLAGS (\\Seen \\Recent))', '2 (UID 2 FLAGS (\\Flagged \\Recent))']);
  t.equal(r.create, 'OK');
  t.match(r.copy, ['OK', [/\[COPYUID \d+ 1 1\]/]]);
  t.equal((r.uid_move as string[])[0], 'OK');
  t.match(r.append, ['OK', [/\[APPENDUID \d+ 3\]/]]);
  t.match(r.status, ['"PyFolder" (MESSAGES 3 UIDNEXT 4 UNSEEN 1)']);
  t.equal(r.rename, 'OK');
  t.match(r.quota, [['"INBOX" ""'], [/"" \(STORAGE \d+ 1024\)/]]);
  t.same(r.expunge, ['2', '1'], "imaplib gathers the MOVE's EXPUNGE and this one");
  t.equal(r.close, 'OK');
  t.equal(r.delete, 'OK');
  t.equal(r.logout, 'BYE');
  t.match(r.ssl_status, ['"INBOX" (MESSAGES 0)']);
});
