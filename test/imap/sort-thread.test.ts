// SORT, SORT=DISPLAY and THREAD (RFC 5256, RFC 5957): the base subject table and the thread list grammar as
// pure units; then one appliance: each sort key over a raw socket (ties, REVERSE, UID, search criteria, charsets,
// CONDSTORE), the REFERENCES and ORDEREDSUBJECT algorithms on a mailbox shaped like the RFC's example, keys kept
// by COPY, and Python's imaplib sort() and thread(); last, migration 029's backfill of a store written before it.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import knex from 'knex';
import t from 'tap';
import { DB_FILE, openDatabase, queryRows } from '../../src/db/index.js';
import { migrationSource, migrations } from '../../src/db/migrations/index.js';
import { formatThread } from '../../src/imap/protocol/sort.js';
import { baseSubject, sortKeysOf } from '../../src/mailstore/index.js';
import { parseSentDate } from '../../src/mailstore/sort-keys.js';
import { PASSWORD, session, setupImap } from './setup.js';

t.test('base subject (RFC 5256 §2.1)', async (t) => {
  const table: Array<[string | null, string, boolean]> = [
    ['Hello', 'Hello', false],
    ['Re: Hello', 'Hello', true],
    ['RE: re: Fwd: FW: Hello', 'Hello', true],
    ['Re[2]: lunch', 'lunch', true],
    ['Re : spaced colon', 'spaced colon', true],
    ['[list] Hello', 'Hello', false],
    ['[list] Re: Hello', 'Hello', true],
    ['Re: [list] Re: [other] Hello', 'Hello', true],
    ['[list]', '[list]', false],
    ['[a] [b]', '[b]', false],
    ['Hello (fwd)', 'Hello', true],
    ['Hello (FWD) (fwd)  ', 'Hello', true],
    ['[Fwd: Hello]', 'Hello', true],
    ['Re: [fwd: Re: Hi there]', 'Hi there', true],
    ['[fwd: [list] x (fwd)]', 'x', true],
    ['  Hello \t  world  ', 'Hello world', false],
    ['=?UTF-8?Q?Re=3A_Caf=C3=A9?= time', 'Café time', true],
    ['=?ISO-8859-1?Q?Fwd:_=E9t=E9?=', 'été', true],
    ['Reply to all', 'Reply to all', false],
    ['Fwdx: not a prefix', 'Fwdx: not a prefix', false],
    ['', '', false],
    [null, '', false],
  ];
  for (const [subject, base, replyOrForward] of table) t.same(baseSubject(subject), { base, replyOrForward }, JSON.stringify(subject));
});

t.test('sent date, message ids and the thread grammar', async (t) => {
  t.equal(parseSentDate('Tue, 1 Jul 2003 10:52:37 +0200'), Date.UTC(2003, 6, 1, 8, 52, 37), 'in UTC');
  t.equal(parseSentDate('1 Jul 03 10:52 PDT (Pacific)'), Date.UTC(2003, 6, 1, 17, 52), 'obsolete year, zone and comment');
  t.equal(parseSentDate('not a date'), null);
  const keys = sortKeysOf(
    Buffer.from(
      'From: =?UTF-8?Q?Zo=C3=AB?= <zoe@x.test>\r\nTo: undisclosed:;, Ann <ann@y.test>\r\nSubject: Re: hi\r\nReferences: <a@x> bad <b@x>\r\nIn-Reply-To: <c@x>\r\nMessage-ID: <me@x>\r\n\r\nbody',
    ),
  );
  t.match(keys, { d: null, s: 'HI', r: 1, f: 'ZOE', t: 'ANN', c: '', m: 'me@x', x: ['a@x', 'b@x'] }, 'References over In-Reply-To; a group skipped');
  t.equal(keys.df, 'ZOË'.normalize('NFKD'), 'the display name decoded and folded');
  t.same(sortKeysOf(Buffer.from('In-Reply-To: <c@x> <d@x>\r\nMessage-ID: nonsense\r\n\r\n')).x, ['c@x'], 'else the first of In-Reply-To');
  t.equal(sortKeysOf(Buffer.from('Message-ID: nonsense\r\n\r\n')).m, null);
  const leaf = (id: number) => ({ id, children: [] });
  t.equal(formatThread(leaf(2)), '(2)');
  t.equal(
    formatThread({ id: 3, children: [{ id: 6, children: [{ id: 4, children: [leaf(23)] }, { id: 44, children: [{ id: 7, children: [leaf(96)] }] }] }] }),
    '(3 6 (4 23)(44 7 96))',
    'the RFC 5256 §4 example',
  );
  t.equal(formatThread({ id: null, children: [leaf(3), leaf(5)] }), '((3)(5))', 'a dummy parent');
});

const date = (hour: number, day = 1) => `${['Fri', 'Sat', 'Sun'][day - 1]}, 0${day} May 2026 ${String(hour).padStart(2, '0')}:00:00 +0000`;

function mail(headers: Record<string, string | undefined>, body = 'x'): Buffer {
  const lines = Object.entries(headers)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}: ${v}`);
  return Buffer.from([...lines, 'MIME-Version: 1.0', 'Content-Type: text/plain; charset=utf-8', '', body, ''].join('\r\n'));
}

t.test('over the wire', async (t) => {
  const f = await setupImap(t);
  const user = await f.account('sorter');
  const id = user.id;
  // INBOX: a throwaway first message, expunged, so that UIDs are sequence numbers + 1.
  await f.store.append(id, 'INBOX', mail({ Subject: 'gone' }));
  await f.store.expunge((await f.store.getFolder(id, 'INBOX'))!.id, [1]);
  const inbox: Array<[Record<string, string | undefined>, string, number]> = [
    [{ From: '"Zed Zulu" <zed@a.test>', To: 'carol@b.test', Cc: 'mike@b.test', Subject: 'Re: beta', Date: date(10, 3) }, '2026-05-10T00:00:00Z', 10],
    [{ From: 'alice@a.test', To: '=?UTF-8?Q?=C3=89mile?= <emile@b.test>', Subject: 'alpha', Date: 'Fri, 01 May 2026 12:00:00 +0200' }, '2026-05-09T00:00:00Z', 5000],
    [{ From: 'Bob <yann@a.test>', To: 'dave@b.test', Cc: 'abe@b.test', Subject: '[list] Beta (fwd)', Date: date(10) }, '2026-05-08T00:00:00Z', 500],
    [{ From: 'carl@a.test', To: 'Ann <zoe@b.test>', Cc: 'zack@b.test', Subject: 'Fwd: ALPHA' }, '2026-04-30T00:00:00Z', 2000],
  ];
  for (const [headers, at, bytes] of inbox) await f.store.append(id, 'INBOX', mail(headers, 'b'.repeat(bytes)), [], new Date(at));

  // Threads: the shape of RFC 5256 §4's example, a dummy parent, and threads joined by subject.
  await f.store.createFolder(id, 'Threads');
  await f.store.append(id, 'Threads', mail({ Subject: 'gone' }));
  await f.store.expunge((await f.store.getFolder(id, 'Threads'))!.id, [1]);
  const threads: Array<Record<string, string | undefined>> = [
    { 'Message-ID': '<t1@x>', Subject: 'lonely', Date: date(11) },
    { 'Message-ID': '<t3@x>', Subject: 'topic', Date: date(12) },
    { 'Message-ID': '<t6@x>', References: '<t3@x>', Subject: 'Re: topic', Date: date(13) },
    { 'Message-ID': '<t4@x>', References: '<t3@x> <t6@x>', Subject: 'Re: topic', Date: date(14) },
    { 'Message-ID': '<t23@x>', References: '<t3@x> <t6@x> <t4@x>', Subject: 'Re: topic', Date: date(15) },
    { 'Message-ID': '<t44@x>', 'In-Reply-To': '<t6@x>', Subject: 'Re: topic', Date: date(16) },
    { 'Message-ID': '<t7@x>', References: '<t3@x> <t6@x> <t44@x>', Subject: 'Re: topic', Date: date(17) },
    { 'Message-ID': '<t96@x>', References: '<t7@x>', Subject: 'Re: topic', Date: date(18) },
    { 'Message-ID': '<t90@x>', References: '<gone@x>', Subject: 'Re: missing parent', Date: date(19) },
    { 'Message-ID': '<t91@x>', References: '<gone@x>', Subject: 'Re: missing parent', Date: date(20) },
    { 'Message-ID': '<t92@x>', Subject: 'Re: lonely', Date: date(21) },
    { 'Message-ID': '<t93@x>', Subject: 'Re: Missing Parent', Date: date(9) },
  ];
  for (const headers of threads) await f.store.append(id, 'Threads', mail(headers));

  const c = await session(f, user.address);
  t.match(await c.command('c1', 'CAPABILITY'), /^\* CAPABILITY .* SORT SORT=DISPLAY THREAD=ORDEREDSUBJECT THREAD=REFERENCES/m, 'announced');
  t.match(await c.command('s0', 'SELECT INBOX'), /\* 4 EXISTS/);
  const sort = async (args: string) => {
    const r = await c.command('s', args);
    t.match(r, /^s OK /m, args);
    return /^\* SORT(.*)\r\n/m.exec(r)?.[1] ?? null;
  };

  await t.test('each sort key (RFC 5256 §3, RFC 5957 §3)', async (t) => {
    t.equal(await sort('SORT (ARRIVAL) UTF-8 ALL'), ' 4 3 2 1', 'ARRIVAL: the internal date');
    t.equal(await sort('SORT (DATE) UTF-8 ALL'), ' 4 2 3 1', 'DATE: in UTC (12:00 +0200 ties 10:00 +0000: by sequence number); no Date header: the internal date');
    t.equal(await sort('SORT (REVERSE DATE) UTF-8 ALL'), ' 1 2 3 4', 'REVERSE turns the key, ties stay in sequence order');
    t.equal(await sort('SORT (SUBJECT) UTF-8 ALL'), ' 2 4 1 3', 'SUBJECT: the base subject, case-folded');
    t.equal(await sort('SORT (SUBJECT DATE) UTF-8 ALL'), ' 4 2 3 1', 'a second key orders within the first');
    t.equal(await sort('SORT (SUBJECT REVERSE DATE) UTF-8 ALL'), ' 2 4 1 3');
    t.equal(await sort('SORT (FROM) UTF-8 ALL'), ' 2 4 3 1', 'FROM: the first address\'s mailbox (local part)');
    t.equal(await sort('SORT (DISPLAYFROM) UTF-8 ALL'), ' 2 3 4 1', 'DISPLAYFROM: the display name, else the address');
    t.equal(await sort('SORT (TO) UTF-8 ALL'), ' 1 3 2 4');
    t.equal(await sort('SORT (DISPLAYTO) UTF-8 ALL'), ' 4 1 3 2', 'DISPLAYTO: the encoded-word name decoded (É sorts with E)');
    t.equal(await sort('SORT (CC) UTF-8 ALL'), ' 2 3 1 4', 'CC: none sorts first');
    t.equal(await sort('SORT (SIZE) UTF-8 ALL'), ' 1 3 4 2');
    t.equal(await sort('SORT (REVERSE SIZE) US-ASCII ALL'), ' 2 4 3 1');
    t.equal(await sort('UID SORT (ARRIVAL) UTF-8 ALL'), ' 5 4 3 2', 'UID SORT answers UIDs');
  });

  await t.test('search criteria, charsets and errors', async (t) => {
    t.equal(await sort('SORT (DATE) UTF-8 SUBJECT beta'), ' 3 1', 'only the messages the criteria match');
    t.equal(await sort('SORT (ARRIVAL) UTF-8 SINCE 1-May-2026 NOT FROM zed'), ' 3 2');
    t.equal(await sort('SORT (SUBJECT) US-ASCII TEXT "not in mailbox"'), '', 'nothing matched: an empty SORT response');
    t.equal(await sort('UID SORT (SIZE) UTF-8 UID 3:4'), ' 4 3');
    const modseq = await sort('SORT (DATE) UTF-8 MODSEQ 1');
    t.match(modseq, /^ 4 2 3 1 \(MODSEQ \d+\)$/, 'CONDSTORE: MODSEQ criteria add the highest MODSEQ (RFC 7162 §3.1.5)');
    t.match(await c.command('b1', 'SORT (DATE) ISO-8859-1 ALL'), /^b1 NO \[BADCHARSET \(UTF-8 US-ASCII\)\]/m);
    t.match(await c.command('b2', 'SORT (COLOR) UTF-8 ALL'), /^b2 BAD /m, 'unknown key');
    t.match(await c.command('b3', 'SORT DATE UTF-8 ALL'), /^b3 BAD /m, 'criteria not a list');
    t.match(await c.command('b4', 'SORT (REVERSE) UTF-8 ALL'), /^b4 BAD /m, 'REVERSE without a key');
    t.match(await c.command('b5', 'SORT (DATE) UTF-8'), /^b5 BAD /m, 'no search criteria');
    t.match(await c.command('b6', 'SORT () UTF-8 ALL'), /^b6 BAD /m, 'empty criteria');
    t.match(await c.command('b7', 'THREAD LINKS UTF-8 ALL'), /^b7 BAD /m, 'unknown algorithm');
    t.match(await c.command('b8', 'THREAD REFERENCES KOI8-R ALL'), /^b8 NO \[BADCHARSET \(UTF-8 US-ASCII\)\]/m);
  });

  await t.test('COPY keeps the keys', async (t) => {
    t.match(await c.command('k1', 'CREATE Copied'), /^k1 OK/m);
    t.match(await c.command('k2', 'COPY 1:* Copied'), /^k2 OK/m);
    t.match(await c.command('k3', 'EXAMINE Copied'), /^k3 OK/m);
    t.equal(await sort('SORT (DISPLAYTO) UTF-8 ALL'), ' 4 1 3 2');
    t.equal(await sort('SORT (DATE) UTF-8 ALL'), ' 4 2 3 1', 'the internal dates too');
  });

  await t.test('THREAD (RFC 5256 §3)', async (t) => {
    t.match(await c.command('h0', 'EXAMINE Threads'), /\* 12 EXISTS/);
    const thread = async (args: string) => {
      const r = await c.command('h', args);
      t.match(r, /^h OK /m, args);
      return /^\* THREAD(.*)\r\n/m.exec(r)?.[1] ?? null;
    };
    t.equal(
      await thread('THREAD REFERENCES UTF-8 ALL'),
      ' ((12)(9)(10))(1 11)(2 3 (4 5)(6 7 8))',
      'References and In-Reply-To linked as the RFC example; a dummy for the missing parent, joined by subject by a reply without references; a reply joined to its subject; threads by sent date',
    );
    t.equal(await thread('UID THREAD REFERENCES UTF-8 ALL'), ' ((13)(10)(11))(2 12)(3 4 (5 6)(7 8 9))', 'UID THREAD answers UIDs');
    t.equal(await thread('THREAD REFERENCES UTF-8 7:8'), ' (7 8)', 'messages not chosen are dummies, pruned');
    t.equal(await thread('THREAD REFERENCES US-ASCII SUBJECT lonely'), ' (1 11)');
    t.equal(await thread('THREAD ORDEREDSUBJECT UTF-8 ALL'), ' (12 (9)(10))(1 11)(2 (3)(4)(5)(6)(7)(8))', 'ORDEREDSUBJECT: by base subject, the first message the parent of the rest');
    t.equal(await thread('THREAD ORDEREDSUBJECT UTF-8 TEXT "gewp"'), '', 'nothing matched: an empty THREAD response');
  });

  await t.test("Python's imaplib sort() and thread()", async (t) => {
    const script = fileURLToPath(new URL('./fixtures/imaplib_sort.py', import.meta.url));
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile('python3', [script, '127.0.0.1', String(f.imapPort), user.address, PASSWORD], { timeout: 60_000 }, (err, out, errOut) =>
        err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out),
      ),
    );
    const r = JSON.parse(stdout) as Record<string, unknown>;
    t.ok((r.caps as string[]).includes('THREAD=REFERENCES'));
    t.same(r.sort_date, ['OK', ['4 2 3 1']]);
    t.same(r.sort_reverse_subject, ['OK', ['3 1 4 2']]);
    t.same(r.uid_sort, ['OK', ['5 4 3 2']]);
    t.same(r.sort_badcharset, ['NO', ['[BADCHARSET (UTF-8 US-ASCII)] Unsupported charset KOI8-R']]);
    t.same(r.thread_references, ['OK', ['((12)(9)(10))(1 11)(2 3 (4 5)(6 7 8))']]);
    t.same(r.thread_orderedsubject, ['OK', ['(12 (9)(10))(1 11)(2 (3)(4)(5)(6)(7)(8))']]);
    t.same(r.uid_thread, ['OK', ['((13)(10)(11))(2 12)(3 4 (5 6)(7 8 9))']]);
  });
});

t.test('migration 029 fills the keys of messages stored before it', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sort-keys-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const before = migrations.slice(0, migrations.findIndex((m) => m.name === '029-imap-sort-keys'));
  const old = knex({ client: 'sqlite3', connection: { filename: path.join(dir, DB_FILE) }, useNullAsDefault: true });
  await old.migrate.latest({ migrationSource: migrationSource(before) });
  // 1,201 rows in two folders (more than two pages of the backfill), two sources shared between them.
  const sources = [mail({ Subject: 'Re: first', 'Message-ID': '<one@x>', From: 'Ann <ann@x.test>' }), mail({ Subject: 'second', References: '<one@x>' })];
  const now = new Date().toISOString();
  for (const [i, raw] of sources.entries()) {
    await old('mail_blobs').insert({ sha256: `sha${i}`, size: raw.length, refcount: 0, created_at: now, raw });
  }
  const rows = Array.from({ length: 1201 }, (_, i) => ({
    folder_id: i < 700 ? 1 : 2,
    uid: i + 1,
    modseq: 1,
    flags: '',
    internal_date: now,
    size: 1,
    blob_id: `sha${i % 2}`,
    summary: JSON.stringify({ headerSize: sources[i % 2]!.indexOf('\r\n\r\n') + 4 }),
  }));
  for (let i = 0; i < rows.length; i += 100) await old('mail_messages').insert(rows.slice(i, i + 100));
  await old.destroy();

  const db = await openDatabase(dir);
  t.teardown(() => db.destroy());
  const filled = await queryRows<{ uid: number; sort_keys: string | null }>(db, 'SELECT uid, sort_keys FROM mail_messages ORDER BY folder_id, uid');
  t.equal(filled.length, 1201);
  t.equal(filled.filter((r) => r.sort_keys === null).length, 0, 'every row has its keys');
  const first = JSON.parse(filled[0]!.sort_keys!) as { x: string[] };
  t.match(first, { s: 'FIRST', r: 1, df: 'ANN', m: 'one@x' });
  t.same(first.x, []);
  t.match(JSON.parse(filled[1200]!.sort_keys!), { s: 'FIRST', r: 1, m: 'one@x' });
  t.match(JSON.parse(filled[1]!.sort_keys!), { s: 'SECOND', r: 0, m: null, x: ['one@x'] }, 'from the header block of each row\'s own source');
});
