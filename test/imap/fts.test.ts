// Issue 35 §3: SEARCH BODY/TEXT through the full-text index (migration 028, src/mailstore/search-text.ts).
// RFC 3501 §6.4.4: a case-insensitive substring of the decoded text, not a word match; the index must give the
// answers the scan of the sources gave (checked against the scan over a varied corpus), stay in step with the
// messages (copy, move, expunge, folder and account deletion), and index a store written before it.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knex from 'knex';
import t from 'tap';
import { FakeClock } from '../../src/core/clock.js';
import { DB_FILE, openDatabase, queryRows, type Db } from '../../src/db/index.js';
import { migrationSource, migrations } from '../../src/db/migrations/index.js';
import { createLogger } from '../../src/core/logger.js';
import { JobQueue } from '../../src/jobs/queue.js';
import { createMailStore } from '../../src/mailstore/index.js';
import { INDEX_DELAY_MS, INDEX_JOB } from '../../src/mailstore/text-index.js';
import { parseMessage } from '../../src/mailstore/mime/parse.js';
import { bodyText, headerText, partHeaderText } from '../../src/mailstore/mime/text.js';
import { type RawClient, session, setupImap } from './setup.js';

const CRLF = '\r\n';
const head = (subject: string, extra: string[] = []) => [`From: Sender <sender@remote.test>`, `To: box@example.com`, `Subject: ${subject}`, `Date: Fri, 01 May 2026 10:00:00 +0000`, 'MIME-Version: 1.0', ...extra];
const msg = (lines: string[]) => Buffer.from(lines.join(CRLF) + CRLF);
const b64 = (s: string | Buffer) => (Buffer.isBuffer(s) ? s : Buffer.from(s, 'utf8')).toString('base64').replace(/.{76}/g, '$&\r\n');

/** The corpus: plain, non-ASCII in several scripts, quoted-printable and base64 bodies, other charsets, encoded words, attachments, an embedded message, a bounce. */
function corpus(): Buffer[] {
  const out: Buffer[] = [
    msg([...head('Plain ASCII'), 'Content-Type: text/plain; charset=us-ascii', '', 'Hello World, the QUICK brown fox jumps over the lazy dog.', 'Second line: invoice #4711 (due 2026-06-01).']),
    msg([...head('Grüße aus Köln'), 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit', '', 'Straße, GRÜSSE und Ärger. Ελληνικά: ΣΟΦΟΣ σοφός. 日本語のテキストです。 Emoji 🎉 party.']),
    msg([...head('=?UTF-8?B?' + Buffer.from('Prüfbericht über Maße').toString('base64') + '?='), 'Content-Type: text/plain; charset=iso-8859-1', 'Content-Transfer-Encoding: quoted-printable', '', 'Gr=FC=DFe von M=FCller, Caf=E9 cr=E8me.=', 'Soft=20break joined here.']),
    msg([...head('Base64 body'), 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: base64', '', b64('Encoded secret: PaSsPhRaSe-zebra. Ünïcödé inside base64.')]),
    msg([...head('Windows-1252'), 'Content-Type: text/plain; charset=windows-1252', 'Content-Transfer-Encoding: quoted-printable', '', '=93Smart quotes=94 and =80 euro sign.']),
    msg([
      ...head('Multipart with attachment'),
      'Content-Type: multipart/mixed; boundary="b1"',
      '',
      '--b1',
      'Content-Type: multipart/alternative; boundary="b2"',
      '',
      '--b2',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Alternative plain text: meeting at noon.',
      '--b2',
      'Content-Type: text/html; charset=utf-8',
      '',
      '<p>Alternative <b>HTML</b> text: meeting at noon.</p>',
      '--b2--',
      '--b1',
      'Content-Type: application/pdf; name="quarterly-report.pdf"',
      "Content-Disposition: attachment; filename*=UTF-8''Bericht%20f%C3%BCr%20Q3.pdf",
      'Content-Description: A PDF file',
      'Content-Transfer-Encoding: base64',
      '',
      b64('binary needle-in-attachment %PDF'),
      '--b1--',
    ]),
    msg([
      ...head('Forwarded'),
      'Content-Type: multipart/mixed; boundary="f1"',
      '',
      '--f1',
      'Content-Type: text/plain',
      '',
      'See the forwarded message below.',
      '--f1',
      'Content-Type: message/rfc822',
      '',
      'From: Inner <inner@remote.test>',
      'Subject: =?ISO-8859-1?Q?Inner_=FCber_subject?=',
      '',
      'Inner body with the word xylophone.',
      '--f1--',
    ]),
    msg([
      ...head('Undelivered Mail Returned to Sender'),
      'Content-Type: multipart/report; report-type=delivery-status; boundary="r1"',
      '',
      '--r1',
      'Content-Type: text/plain',
      '',
      'Your message could not be delivered.',
      '--r1',
      'Content-Type: message/delivery-status',
      '',
      'Reporting-MTA: dns; mx.remote.test',
      '',
      'Final-Recipient: rfc822; gone@example.com',
      'Action: failed',
      '--r1--',
    ]),
    msg([...head('Quotes and syntax'), 'Content-Type: text/plain', '', 'He said "hi" (AND OR NOT) col:umn * star - minus ^caret {brace} \\back']),
    msg([...head('Short'), 'Content-Type: text/plain', '', 'ab']),
    msg([...head('Empty body'), 'Content-Type: text/plain', '', '']),
  ];
  // And generated ones: words of several scripts in a seeded order, some base64, some quoted-printable.
  const words = ['alpha', 'Beta', 'GAMMA', 'délta', 'ЭПСИЛОН', 'zeta', 'ηta', 'θήτα', '東京', 'straße', 'İstanbul', 'naïve', 'ﬁle', 'x-ray', 'o\'neil', 'a.b@c.d'];
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
  for (let i = 0; i < 30; i++) {
    const text = Array.from({ length: 8 + rnd(20) }, () => words[rnd(words.length)]).join(rnd(3) ? ' ' : '');
    const encoding = ['8bit', 'base64', 'quoted-printable'][i % 3]!;
    const body = encoding === 'base64' ? b64(text) : encoding === 'quoted-printable' ? qp(text) : text;
    out.push(msg([...head(`Generated ${i} ${words[rnd(words.length)]}`), 'Content-Type: text/plain; charset=utf-8', `Content-Transfer-Encoding: ${encoding}`, '', body]));
  }
  return out;
}

function qp(s: string): string {
  return [...Buffer.from(s, 'utf8')].map((b) => (b > 126 || b === 61 ? `=${b.toString(16).toUpperCase().padStart(2, '0')}` : String.fromCharCode(b))).join('');
}

/** What SEARCH answered before the index: the scan of each source (src/imap/commands/search.ts `contains`). */
function scan(sources: Map<number, Buffer>, op: 'BODY' | 'TEXT', needle: string): number[] {
  const has = (hay: string) => hay.toLowerCase().includes(needle.toLowerCase());
  const out: number[] = [];
  for (const [uid, raw] of sources) {
    const tree = parseMessage(raw);
    const found = op === 'BODY' ? has(bodyText(raw, tree)) : has(headerText(tree)) || has(partHeaderText(tree)) || has(bodyText(raw, tree));
    if (found) out.push(uid);
  }
  return out.sort((a, b) => a - b);
}

/** UID SEARCH [CHARSET UTF-8] op "needle" (as a LITERAL+ literal: any bytes), answered UIDs. */
async function search(c: RawClient, op: string, needle: string, tag = 'q'): Promise<number[]> {
  const bytes = Buffer.from(needle, 'utf8');
  const r = await c.command(tag, `UID SEARCH CHARSET UTF-8 ${op} {${bytes.length}+}\r\n${needle}`);
  const m = /^\* SEARCH([^\r\n]*)\r\n/m.exec(r);
  if (!m || !/^q OK|OK/m.test(r)) throw new Error(`SEARCH failed: ${r}`);
  return m[1]!.trim() ? m[1]!.trim().split(' ').map(Number) : [];
}

t.test('SEARCH BODY/TEXT through the full-text index', async (t) => {
  const f = await setupImap(t);
  const db = f.app.appliance.ctx.db;
  const user = await f.account('fts');
  const messages = corpus();
  for (const raw of messages) await f.store.deliver(raw, [{ mailboxId: user.id }]);
  const inbox = (await f.store.listFolders(user.id)).find((x) => x.path === 'INBOX')!;
  const sources = new Map<number, Buffer>();
  for (const m of await f.store.listMessages(inbox.id)) sources.set(m.uid, (await f.store.readMessage(inbox.id, m.uid))!);
  const c = await session(f, user.address);
  await c.command('s', 'SELECT INBOX');

  await t.test('a substring, case-insensitive, not a word', async (t) => {
    t.same(await search(c, 'BODY', 'ELLO WOR'), [1], 'across a space, inside words');
    t.same(await search(c, 'BODY', 'quick BROWN'), [1], 'any case');
    t.same(await search(c, 'BODY', 'nvoice #47'), [1], 'punctuation is text');
    t.same(await search(c, 'BODY', 'ab'), [10], 'two characters: shorter than a trigram, looked for in the stored text');
    t.same(await search(c, 'BODY', 'Q'), (await search(c, 'BODY', 'q')).filter(() => true), 'one character');
    t.ok((await search(c, 'BODY', 'q')).includes(1), 'one character finds');
    t.same(await search(c, 'BODY', ''), [...sources.keys()], 'the empty string is in every message');
    t.same(await search(c, 'BODY', 'he said "hi" (and or not) col:umn * star - minus ^caret {brace} \\back'), [9], 'quotes and FTS5 syntax are plain text');
    t.same(await search(c, 'BODY', 'Plain ASCII'), [], 'BODY is not the header');
    t.same(await search(c, 'TEXT', 'Plain ASCII'), [1], 'TEXT is');
    t.same(await search(c, 'TEXT', 'ascii\nhello'), [], 'a match never spans the header and the body');
  });

  await t.test('non-ASCII and encoded bodies are searched decoded', async (t) => {
    t.same(await search(c, 'BODY', 'grüsse'), [2], 'UTF-8, lower-cased');
    t.same(await search(c, 'BODY', 'σοφοσ'), [], 'a final sigma is lower-cased as JavaScript does (ς), as the scan did');
    t.same(await search(c, 'BODY', 'ΣΟΦΟΣ'), [2]);
    t.same(await search(c, 'BODY', '日本語'), [2], 'CJK');
    t.same(await search(c, 'BODY', '🎉 par'), [2], 'astral characters');
    t.same(await search(c, 'BODY', 'müller, café crème'), [3], 'quoted-printable ISO-8859-1');
    t.same(await search(c, 'BODY', 'soft break joined'), [3]);
    t.same(await search(c, 'TEXT', 'prüfbericht über'), [3], 'an encoded word in the subject (TEXT)');
    t.same(await search(c, 'BODY', 'passphrase-zebra'), [4], 'base64');
    t.same(await search(c, 'BODY', '“smart quotes” and € euro'), [5], 'windows-1252');
    t.same(await search(c, 'BODY', 'meeting at noon'), [6], 'both alternatives, one message');
    t.same(await search(c, 'BODY', 'needle-in-attachment'), [], 'a binary attachment is not text');
    t.same(await search(c, 'TEXT', 'bericht für q3'), [6], 'an attachment by its RFC 2231 file name (TEXT)');
    t.same(await search(c, 'BODY', 'xylophone'), [7], 'an embedded message');
    t.same(await search(c, 'BODY', 'inner über subject'), [7], "and its header, decoded");
    t.same(await search(c, 'BODY', 'gone@example.com'), [8], 'a delivery status');
    t.same(await search(c, 'BODY', 'GONE@example.com NOT'), [], 'a miss');
    t.same(await search(c, 'UNSEEN BODY', 'xylophone'), [7], 'beside other keys');
    t.same(await search(c, 'NOT BODY', 'xylophone'), [...sources.keys()].filter((u) => u !== 7), 'under NOT');
    t.same(await search(c, 'OR BODY xylophone BODY', 'grüsse'), [2, 7], 'under OR');
    t.same(await search(c, 'SUBJECT Forwarded BODY', 'xylophone'), [7], 'with a header key (the source read for it)');
  });

  await t.test('the index answers what the scan of the sources answers (differential)', async (t) => {
    // Needles cut from each message's texts (any case), across the texts' joins, and made up.
    let seed = 11;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
    const needles = new Set<string>(['e', 'ß', 'ss', 'İ', 'i̇', 'ﬁ', 'fi', 'ς', 'σ', 'Σ', '\n', ': ', 'subject: gen', 'zz9', '@', 'Content-Type', 'multipart']);
    for (const raw of sources.values()) {
      const tree = parseMessage(raw);
      for (const text of [headerText(tree), partHeaderText(tree), bodyText(raw, tree)]) {
        const chars = [...text];
        for (let k = 0; k < 3 && chars.length; k++) {
          const at = rnd(chars.length);
          const piece = chars.slice(at, at + 1 + rnd(12)).join('');
          needles.add(rnd(2) ? piece.toUpperCase() : piece);
        }
      }
    }
    let compared = 0;
    let found = 0;
    for (const needle of needles) {
      if (/[\r\n]/.test(needle) && needle.length > 1) continue; // a literal may hold them, but keep the command line simple
      for (const op of ['BODY', 'TEXT'] as const) {
        const expected = scan(sources, op, needle);
        const got = await search(c, op, needle);
        if (JSON.stringify(got) !== JSON.stringify(expected)) t.same(got, expected, `${op} ${JSON.stringify(needle)}`);
        compared++;
        if (expected.length) found++;
      }
    }
    t.ok(compared > 150, `${compared} searches compared`);
    t.ok(found > compared / 2, `${found} of them find something`);
  });

  await t.test('the index follows the messages: copy, move, expunge, folder and account deletion', async (t) => {
    const count = async () => {
      const [row] = await queryRows<{ fts: number; docs: number; blobs: number }>(
        db,
        'SELECT (SELECT count(*) FROM mail_fts) AS fts, (SELECT count(*) FROM mail_fts_docs) AS docs, (SELECT count(*) FROM mail_blobs) AS blobs',
      );
      return row!;
    };
    f.app.clock.advance(INDEX_DELAY_MS); // the index job indexes every source (text-index.ts)
    await f.app.appliance.ctx.jobs.drain();
    const start = await count();
    t.equal(start.fts, start.blobs, 'one index row per source');
    t.equal(start.docs, start.blobs);

    await c.command('c1', 'CREATE Archive');
    t.match(await c.command('c2', 'UID COPY 7 Archive'), /^c2 OK/m);
    t.same(await count(), start, 'a copy shares its source and its index row');
    t.match(await c.command('c3', 'UID STORE 7 +FLAGS.SILENT (\\Deleted)'), /^c3 OK/m);
    t.match(await c.command('c4', 'EXPUNGE'), /^\* 7 EXPUNGE/m);
    t.same(await search(c, 'BODY', 'xylophone'), [], 'expunged from INBOX');
    t.same(await count(), start, 'the source and its row stay while the copy does');
    await c.command('c5', 'SELECT Archive');
    t.same(await search(c, 'BODY', 'xylophone'), [1], 'the copy is found in its folder');
    await c.command('c6', 'SELECT INBOX');
    t.match(await c.command('c7', 'UID MOVE 2 Archive'), /^c7 OK/m);
    t.same(await search(c, 'BODY', 'grüsse'), [], 'moved away');
    await c.command('c8', 'SELECT Archive');
    t.same(await search(c, 'BODY', 'grüsse'), [2], 'moved here');
    t.same(await count(), start, 'a move keeps the source');

    await c.command('c9', 'SELECT INBOX');
    t.match(await c.command('c10', 'UID STORE 8 +FLAGS.SILENT (\\Deleted)'), /^c10 OK/m);
    t.match(await c.command('c11', 'EXPUNGE'), /EXPUNGE/);
    const afterExpunge = await count();
    t.same(afterExpunge, { fts: start.fts - 1, docs: start.docs - 1, blobs: start.blobs - 1 }, "the last copy's expunge removes its index row");
    t.same(await search(c, 'BODY', 'gone@example.com'), []);

    await c.command('c12', 'UNSELECT');
    t.match(await c.command('c13', 'DELETE Archive'), /^c13 OK/m);
    t.same(await count(), { fts: start.fts - 3, docs: start.docs - 3, blobs: start.blobs - 3 }, 'a folder deletion removes the rows of its last copies');

    // A message delivered to two accounts: one source; deleting one account keeps the row for the other.
    const other = await f.account('fts-other');
    await f.store.deliver(msg([...head('Shared'), '', 'Shared body with the word quokka.']), [{ mailboxId: user.id }, { mailboxId: other.id }]);
    f.app.clock.advance(INDEX_DELAY_MS);
    await f.app.appliance.ctx.jobs.drain();
    const shared = await count();
    t.equal(shared.fts, start.fts - 2, 'one new row for two copies');
    await f.store.deleteAccount(other.id);
    await f.store.purgeDeletedAccounts(new Date(Date.now() + 86_400_000));
    t.same(await count(), shared, 'the other copy keeps the row');
    await c.command('c14', 'SELECT INBOX');
    t.same(await search(c, 'BODY', 'QUOKKA'), [Math.max(...sources.keys()) + 1]);
    await c.command('c15', 'UNSELECT');
    await f.store.deleteAccount(user.id);
    await f.store.purgeDeletedAccounts(new Date(Date.now() + 86_400_000));
    t.same(await count(), { fts: 0, docs: 0, blobs: 0 }, "an account's purge removes the rows of its sources");
  });
  c.destroy();
});

t.test('migration 028 indexes a store written before it, a batch at a time', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mail-fts-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const before = migrations.slice(0, migrations.findIndex((m) => m.name === '028-mail-fts'));
  const old = knex({ client: 'sqlite3', connection: { filename: path.join(dir, DB_FILE) }, useNullAsDefault: true });
  await old.migrate.latest({ migrationSource: migrationSource(before) });
  const now = new Date().toISOString();
  await old('teams').insert({ id: 'team_1', name: 'T', plan: 'pro', owner_email: 'o@x.test', created_at: now });
  await old('domains').insert({ id: 'dom_1', team_id: 'team_1', name: 'x.test', status: 'verified', region: 'eu-west-1', open_tracking: false, click_tracking: false, tls_mode: 'opportunistic', created_at: now, updated_at: now });
  const [mailboxId] = (await old('mailboxes').insert({ team_id: 'team_1', domain_id: 'dom_1', address: 'a@x.test', password_hash: 'x', created_at: now, updated_at: now })) as number[];
  const [folderId] = (await old('mail_folders').insert({ mailbox_id: mailboxId, path: 'INBOX', uid_validity: 1, uid_next: 451, created_at: now })) as number[];
  // 450 sources: more than two of the migration's batches.
  for (let i = 1; i <= 450; i += 50) {
    const blobs = [];
    const rows = [];
    for (let uid = i; uid < i + 50; uid++) {
      const raw = msg([...head(`Old ${uid}`), 'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: base64', '', b64(`Old body number ${uid} — ünïcode ${uid % 7 === 0 ? 'sevenfold' : 'plain'}`)]);
      const sha = `${uid}`.padStart(64, '0');
      blobs.push({ sha256: sha, size: raw.length, refcount: 0, created_at: now, raw });
      rows.push({ folder_id: folderId, uid, modseq: 1, flags: '', internal_date: now, size: raw.length, blob_id: sha, summary: '{}' });
    }
    await old('mail_blobs').insert(blobs);
    await old('mail_messages').insert(rows);
  }
  await old.destroy();

  const db: Db = await openDatabase(dir);
  t.teardown(() => db.destroy());
  const [n] = await queryRows<{ n: number }>(db, 'SELECT count(*) AS n FROM mail_fts');
  t.equal(n!.n, 450, 'every existing source indexed');
  const store = createMailStore({ db, clock: new FakeClock(new Date()) });
  const sevens = Array.from({ length: 450 }, (_, i) => i + 1).filter((u) => u % 7 === 0);
  t.same(await store.searchText(folderId!, 'body', 'SEVENFOLD'), sevens, 'decoded (base64), case-insensitive');
  t.same(await store.searchText(folderId!, 'body', 'number 449 — ü'), [449]);
  t.same(await store.searchText(folderId!, 'text', 'subject: old 45'), [45, 450], 'TEXT looks in the header');
  t.same(await store.searchText(folderId!, 'body', 'subject: old 45'), [], 'BODY does not');
  await db('mail_messages').where({ folder_id: folderId, uid: 7 }).delete();
  t.same((await store.searchText(folderId!, 'body', 'sevenfold')).slice(0, 1), [14], 'a source deleted with its last message leaves the index');
  const [left] = await queryRows<{ n: number }>(db, 'SELECT count(*) AS n FROM mail_fts');
  t.equal(left!.n, 449);
});

t.test('new sources: marked with the message, found by SEARCH before and after the index job indexes them (migration 031)', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mail-fts-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const db: Db = await openDatabase(dir);
  t.teardown(() => db.destroy());
  const clock = new FakeClock(new Date());
  const jobs = new JobQueue(db, clock, createLogger('error'));
  const store = createMailStore({ db, clock, jobs });
  const now = clock.now().toISOString();
  await db('teams').insert({ id: 'team_1', name: 'T', plan: 'pro', owner_email: 'o@x.test', created_at: now });
  await db('domains').insert({ id: 'dom_1', team_id: 'team_1', name: 'x.test', status: 'verified', region: 'eu-west-1', open_tracking: false, click_tracking: false, tls_mode: 'opportunistic', created_at: now, updated_at: now });
  const box = await store.createAccount({ teamId: 'team_1', domainId: 'dom_1', address: 'a@x.test', password: 'secret-password-1' });
  const inbox = (await store.listFolders(box.id)).find((x) => x.path === 'INBOX')!;
  const state = async () => {
    const [row] = await queryRows<{ pending: number; docs: number; blobs: number; jobs: number }>(
      db,
      'SELECT (SELECT count(*) FROM mail_fts_pending) AS pending, (SELECT count(*) FROM mail_fts_docs) AS docs, (SELECT count(*) FROM mail_blobs) AS blobs, (SELECT count(*) FROM jobs WHERE kind = ?) AS jobs',
      [INDEX_JOB],
    );
    return row!;
  };
  const bodies = ['Quarterly numbers: the walrus budget.', 'Nothing to see.', 'Lunch? The WALRUS café at noon.', 'ab', 'zzz walrus zzz'];
  for (const [i, body] of bodies.entries()) await store.deliver(msg([...head(`New ${i}`), 'Content-Type: text/plain; charset=utf-8', '', body]), [{ mailboxId: box.id }]);
  t.same(await state(), { pending: 5, docs: 0, blobs: 5, jobs: 1 }, 'each new source marked, in the transaction that stored it; one index job for all');

  const expect = { walrus: [1, 3, 5], 'café': [3], ab: [4], 'subject: new 2': [3], 'the walrus': [1, 3] };
  for (const [needle, uids] of Object.entries(expect)) {
    t.same(await store.searchText(inbox.id, needle.startsWith('subject') ? 'text' : 'body', needle.toUpperCase()), uids, `before indexing: ${needle} (the unindexed sources scanned)`);
  }
  t.same(await store.searchText(inbox.id, 'body', 'subject: new 2'), [], 'BODY is not the header, unindexed too');

  await jobs.drain();
  t.same(await state(), { pending: 5, docs: 0, blobs: 5, jobs: 1 }, 'the job waits INDEX_DELAY_MS for more sources to gather');
  clock.advance(INDEX_DELAY_MS);
  await jobs.drain();
  t.same(await state(), { pending: 0, docs: 5, blobs: 5, jobs: 0 }, 'then indexes them all in one batch and deletes itself');
  for (const [needle, uids] of Object.entries(expect)) {
    t.same(await store.searchText(inbox.id, needle.startsWith('subject') ? 'text' : 'body', needle.toUpperCase()), uids, `after indexing: ${needle}`);
  }

  // Half indexed: the answer joins the index's and the scan's.
  await store.deliver(msg([...head('Late'), '', 'A late walrus.']), [{ mailboxId: box.id }]);
  await store.deliver(msg([...head('Gone'), '', 'A walrus that goes.']), [{ mailboxId: box.id }]);
  t.same(await state(), { pending: 2, docs: 5, blobs: 7, jobs: 1 }, 'a new job once the last one finished');
  t.same(await store.searchText(inbox.id, 'body', 'walrus'), [1, 3, 5, 6, 7], 'indexed and unindexed together');
  await store.setFlags(inbox.id, [7], 'add', ['\\Deleted']);
  await store.expunge(inbox.id);
  t.same(await state(), { pending: 1, docs: 5, blobs: 6, jobs: 1 }, "an unindexed source's mark goes with it");
  // The same source again (a second copy): marked once, indexed once.
  await store.deliver(msg([...head('Late'), '', 'A late walrus.']), [{ mailboxId: box.id }]);
  t.equal(await store.indexText() > 0, true, 'indexText indexes what is pending');
  t.same(await state(), { pending: 0, docs: 6, blobs: 6, jobs: 1 }, 'one row for the shared source');
  t.same(await store.searchText(inbox.id, 'body', 'late walrus'), [6, 8]);
  clock.advance(INDEX_DELAY_MS);
  await jobs.drain();
  t.same(await state(), { pending: 0, docs: 6, blobs: 6, jobs: 0 }, 'a job finding nothing to do deletes itself');
});
