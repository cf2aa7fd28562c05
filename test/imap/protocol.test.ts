// The pure IMAP codecs, table-driven: framing (literals of both kinds, split input, limits), tokens,
// command grammar, sequence sets, SEARCH keys, FETCH attributes, mailbox name encoding, response writer.
import t from 'tap';
import { CommandReader, type RawCommand, type ReaderHandlers } from '../../src/imap/protocol/reader.js';
import { CommandError, parseCommand, parseDateTime, parseZonedDateTime, type Command } from '../../src/imap/protocol/commands.js';
import { formatSet, parseSequenceSet, resolveSeqNumbers, resolveUids, seqOutOfRange } from '../../src/imap/protocol/sequence.js';
import { parseSearchKeys, parseSearchDate, needsContent } from '../../src/imap/protocol/search.js';
import { tokenize } from '../../src/imap/protocol/tokens.js';
import { decodeMailboxName, encodeMailboxName, isModifiedUtf7 } from '../../src/imap/protocol/mutf7.js';
import { formatString, formatValue, formatInternalDate, Literal, encodeValues } from '../../src/imap/protocol/writer.js';
import { MAX_APPEND_LITERAL_BYTES, MAX_LINE_BYTES, MAX_OTHER_LITERAL_BYTES } from '../../src/imap/protocol/limits.js';
import { patternToRegExp } from '../../src/imap/commands/mailboxes.js';

function frame(chunks: Array<string | Buffer>) {
  const commands: RawCommand[] = [];
  const events: string[] = [];
  const r = new CommandReader({
    command: (c) => commands.push(c),
    continueLiteral: () => events.push('+'),
    reject: (tag, reason) => events.push(`BAD ${tag} ${reason}`),
    fatal: (reason) => events.push(`FATAL ${reason}`),
  });
  for (const c of chunks) r.push(typeof c === 'string' ? Buffer.from(c, 'latin1') : c);
  return { commands, events, reader: r };
}

const parse = (line: string): Command => parseCommand({ parts: [{ kind: 'text', text: line }] }).command;

t.test('reader: lines, synchronizing and non-synchronizing literals, split anywhere', async (t) => {
  const input = 'a1 NOOP\r\na2 LOGIN {3}\r\nbob {4+}\r\npass\r\na3 CAPABILITY\n';
  // Every split point gives the same commands.
  for (let i = 0; i <= input.length; i++) {
    const { commands, events } = frame([input.slice(0, i), input.slice(i)]);
    t.equal(commands.length, 3, `split at ${i}`);
    t.same(events, ['+'], 'one continuation, for the synchronizing literal only');
    const login = parseCommand(commands[1]!).command;
    t.same(login, { name: 'LOGIN', user: 'bob', password: 'pass' });
  }
  const bytewise = frame(input.split(''));
  t.equal(bytewise.commands.length, 3, 'one byte at a time');
});

t.test('reader: limits', async (t) => {
  const long = frame(['x1 NOOP ' + 'a'.repeat(MAX_LINE_BYTES + 10) + '\r\nx2 NOOP\r\n']);
  t.same(long.events, ['BAD x1 Line too long']);
  t.equal(long.commands.length, 1, 'the reader resynchronizes at the next line');
  const big = frame([`x3 LOGIN {${MAX_OTHER_LITERAL_BYTES + 1}}\r\nx4 NOOP\r\n`]);
  t.same(big.events, ['BAD x3 Literal too large'], 'a synchronizing literal over the limit is refused before it is sent');
  t.equal(big.commands.length, 1);
  const nonsync = frame([`x5 LOGIN {${MAX_OTHER_LITERAL_BYTES + 1}+}\r\n`]);
  t.same(nonsync.events, ['FATAL Literal too large'], 'a non-synchronizing one cannot be refused: the connection ends');
  const append = frame(['x6 APPEND INBOX {100000}\r\n']);
  t.same(append.events, ['+'], 'APPEND literals may be large');
  const zero = frame(['x7 LOGIN {0}\r\n {0}\r\n\r\n']);
  t.equal(zero.commands.length, 1);
  t.same(parseCommand(zero.commands[0]!).command, { name: 'LOGIN', user: '', password: '' });
});

t.test('reader: literals put to admit before they are read (refused, dropped, decided later)', async (t) => {
  const run = (chunks: string[], admit: ReaderHandlers['admit']) => {
    const commands: RawCommand[] = [];
    const events: string[] = [];
    const released: number[] = [];
    const r = new CommandReader({
      command: (c) => commands.push(c),
      continueLiteral: () => events.push('+'),
      reject: (tag, reason) => events.push(`BAD ${tag} ${reason}`),
      refuse: (tag, refusal) => events.push(`NO ${tag} [${refusal.code}]`),
      fatal: (reason) => events.push(`FATAL ${reason}`),
      hold: (on) => events.push(on ? 'hold' : 'read'),
      release: (n) => released.push(n),
      admit,
    });
    for (const c of chunks) r.push(Buffer.from(c, 'latin1'));
    return { commands, events, released, reader: r };
  };
  const no = { refused: { code: 'OVERQUOTA', text: 'over' } };
  const sync = run(['a1 APPEND INBOX {5}\r\na2 NOOP\r\n'], () => no);
  t.same(sync.events, ['NO a1 [OVERQUOTA]'], 'synchronizing: NO instead of `+`');
  t.equal(sync.commands.length, 1, 'the next line is a command of its own');
  const nonsync = run(['b1 APPEND INBOX {5+}\r\nhello\r\nb2 NOOP\r\n'], () => no);
  t.same(nonsync.events, []);
  t.same(nonsync.commands[0]!.refused, no.refused, 'non-synchronizing: its bytes dropped, the command carries the refusal');
  t.same(nonsync.commands[0]!.parts, [{ kind: 'text', text: 'b1 APPEND INBOX ' }, { kind: 'literal', data: Buffer.alloc(0) }, { kind: 'text', text: '' }]);
  t.equal(nonsync.commands.length, 2);
  const reserved = run(['c1 APPEND INBOX {5}\r\n', 'hello\r\n'], () => ({ reserved: 5 }));
  t.equal(reserved.commands[0]!.reserved, 5, 'a reservation is handed over with its command');
  const dropped = run(['d1 APPEND INBOX {5}\r\n', 'he'], () => ({ reserved: 5 }));
  dropped.reader.close();
  t.same(dropped.released, [5], 'and given back when the command is dropped half-way');
  let decide!: (a: { reserved: number }) => void;
  const later = run(['e1 APPEND INBOX {5+}\r\nhel', 'lo\r\ne2 NOOP\r\n'], () => new Promise((resolve) => (decide = resolve)));
  t.same(later.events, ['hold'], 'an answer that takes its time: the connection stops reading');
  t.equal(later.commands.length, 0, 'what came meanwhile is held');
  decide({ reserved: 0 });
  await new Promise((r) => setImmediate(r));
  t.same(later.events, ['hold', 'read']);
  t.same(later.commands.map((c) => c.parts.map((p) => (p.kind === 'text' ? p.text : p.data.toString()))), [['e1 APPEND INBOX ', 'hello', ''], ['e2 NOOP']]);
  const toobig = frame([`f1 APPEND INBOX {${MAX_APPEND_LITERAL_BYTES + 1}}\r\n`]);
  t.same(toobig.events, ['BAD f1 Literal too large'], 'without a refuse handler, over the limit is BAD as before');
  const toobig2 = run([`f2 APPEND INBOX {${MAX_APPEND_LITERAL_BYTES + 1}}\r\n`], undefined);
  t.same(toobig2.events, ['NO f2 [TOOBIG]'], 'an APPEND over APPENDLIMIT: NO [TOOBIG] (RFC 7889)');
});

t.test("reader: an APPEND's size is judged once admit has answered (the commands ahead of it may have logged in)", async (t) => {
  const big = MAX_OTHER_LITERAL_BYTES + 1;
  const huge = MAX_APPEND_LITERAL_BYTES + 1;
  const cases: Array<{ line: string; loggedIn: boolean; admission: { reserved: number }; events: string[] }> = [
    { line: `a1 APPEND INBOX {${big}}`, loggedIn: true, admission: { reserved: big }, events: ['hold', '+', 'read'] },
    { line: `a2 APPEND INBOX {${big}+}`, loggedIn: true, admission: { reserved: big }, events: ['hold', 'read', 'COMMAND a2', 'COMMAND z1'] },
    { line: `a3 APPEND INBOX {${big}}`, loggedIn: false, admission: { reserved: 0 }, events: ['hold', 'BAD a3 Literal too large', 'read'] },
    { line: `a4 APPEND INBOX {${big}+}`, loggedIn: false, admission: { reserved: 0 }, events: ['hold', 'FATAL Literal too large', 'read'] },
    { line: `a5 APPEND INBOX {${huge}}`, loggedIn: true, admission: { reserved: 7 }, events: ['hold', 'release 7', 'NO a5 [TOOBIG]', 'read'] },
  ];
  for (const c of cases) {
    const events: string[] = [];
    let loggedIn = false;
    let decide!: (a: { reserved: number }) => void;
    const r = new CommandReader({
      command: (cmd) => events.push(`COMMAND ${(cmd.parts[0] as { text: string }).text.split(' ')[0]}`),
      continueLiteral: () => events.push('+'),
      reject: (tag, reason) => events.push(`BAD ${tag} ${reason}`),
      refuse: (tag, refusal) => events.push(`NO ${tag} [${refusal.code}]`),
      fatal: (reason) => events.push(`FATAL ${reason}`),
      hold: (on) => events.push(on ? 'hold' : 'read'),
      release: (n) => events.push(`release ${n}`),
      appendAllowed: () => loggedIn,
      admit: () => new Promise((resolve) => (decide = resolve)),
    });
    r.push(Buffer.from(`${c.line}\r\n`));
    t.same(events, ['hold'], `${c.line}: nothing decided before admit answers`);
    loggedIn = c.loggedIn; // what the commands ahead did meanwhile
    decide(c.admission);
    await new Promise((resolve) => setImmediate(resolve));
    // A non-synchronizing literal comes all the same: read when admitted; after a BYE it is never read as commands.
    if (c.line.endsWith('+}')) r.push(Buffer.concat([Buffer.alloc(big, 0x61), Buffer.from('\r\nz1 NOOP\r\n')]));
    t.same(events, c.events, c.line);
  }
});

t.test('tokens: atoms, quoted strings with escapes, nested lists, bracketed fetch attributes', async (t) => {
  t.same(tokenize([{ kind: 'text', text: 'A "q \\"x\\" \\\\" (B (C)) BODY.PEEK[HEADER.FIELDS (A B)]<0.10> NIL' }]), [
    { type: 'atom', value: 'A' },
    { type: 'string', value: 'q "x" \\' },
    { type: 'list', items: [{ type: 'atom', value: 'B' }, { type: 'list', items: [{ type: 'atom', value: 'C' }] }] },
    { type: 'atom', value: 'BODY.PEEK[HEADER.FIELDS (A B)]<0.10>' },
    { type: 'atom', value: 'NIL' },
  ]);
  for (const bad of ['(A', 'A)', '"open', '"bad \\q"', 'BODY[HEADER']) {
    t.throws(() => tokenize([{ kind: 'text', text: bad }]), bad);
  }
});

t.test('command grammar: every command', async (t) => {
  const table: Array<[string, Command]> = [
    ['a CAPABILITY', { name: 'CAPABILITY' }],
    ['a noop', { name: 'NOOP' }],
    ['a LOGOUT', { name: 'LOGOUT' }],
    ['a STARTTLS', { name: 'STARTTLS' }],
    ['a AUTHENTICATE PLAIN', { name: 'AUTHENTICATE', mechanism: 'PLAIN', initial: null }],
    ['a AUTHENTICATE plain AGJvYgBwdw==', { name: 'AUTHENTICATE', mechanism: 'PLAIN', initial: 'AGJvYgBwdw==' }],
    ['a LOGIN bob "p w"', { name: 'LOGIN', user: 'bob', password: 'p w' }],
    ['a SELECT inbox', { name: 'SELECT', mailbox: 'INBOX', condstore: false }],
    ['a EXAMINE "Inbox/Sub" (CONDSTORE)', { name: 'EXAMINE', mailbox: 'INBOX/Sub', condstore: true }],
    ['a CREATE "B&APw-cher"', { name: 'CREATE', mailbox: 'Bücher' }],
    ['a DELETE Old', { name: 'DELETE', mailbox: 'Old' }],
    ['a RENAME INBOX Saved', { name: 'RENAME', from: 'INBOX', to: 'Saved' }],
    ['a SUBSCRIBE x', { name: 'SUBSCRIBE', mailbox: 'x' }],
    ['a UNSUBSCRIBE x', { name: 'UNSUBSCRIBE', mailbox: 'x' }],
    ['a LIST "" *', { name: 'LIST', reference: '', patterns: ['*'], select: { subscribed: false, remote: false, recursiveMatch: false, specialUse: false }, return: { subscribed: false, children: false, specialUse: false, status: null }, extended: false }],
    ['a LIST (SUBSCRIBED) "" ("INBOX" %) RETURN (SPECIAL-USE)', { name: 'LIST', reference: '', patterns: ['INBOX', '%'], select: { subscribed: true, remote: false, recursiveMatch: false, specialUse: false }, return: { subscribed: true, children: false, specialUse: true, status: null }, extended: true }],
    ['a LIST "" % RETURN (SUBSCRIBED STATUS (MESSAGES SIZE))', { name: 'LIST', reference: '', patterns: ['%'], select: { subscribed: false, remote: false, recursiveMatch: false, specialUse: false }, return: { subscribed: true, children: false, specialUse: false, status: ['MESSAGES', 'SIZE'] }, extended: true }],
    ['a LSUB "" %', { name: 'LSUB', reference: '', patterns: ['%'] }],
    ['a STATUS INBOX (MESSAGES UNSEEN highestmodseq)', { name: 'STATUS', mailbox: 'INBOX', items: ['MESSAGES', 'UNSEEN', 'HIGHESTMODSEQ'] }],
    ['a CHECK', { name: 'CHECK' }],
    ['a CLOSE', { name: 'CLOSE' }],
    ['a UNSELECT', { name: 'UNSELECT' }],
    ['a EXPUNGE', { name: 'EXPUNGE', uids: null }],
    ['a UID EXPUNGE 3:5', { name: 'EXPUNGE', uids: [{ from: 3, to: 5 }] }],
    ['a IDLE', { name: 'IDLE' }],
    ['a NAMESPACE', { name: 'NAMESPACE' }],
    ['a ID NIL', { name: 'ID', params: null }],
    ['a ID ("name" "x" "version" NIL)', { name: 'ID', params: { name: 'x', version: null } }],
    ['a ENABLE CONDSTORE', { name: 'ENABLE', capabilities: ['CONDSTORE'] }],
    ['a GETQUOTA ""', { name: 'GETQUOTA', root: '' }],
    ['a GETQUOTAROOT INBOX', { name: 'GETQUOTAROOT', mailbox: 'INBOX' }],
    ['a SETQUOTA "" (STORAGE 10)', { name: 'SETQUOTA', root: '' }],
    ['a COPY 1:3 Trash', { name: 'COPY', uid: false, set: [{ from: 1, to: 3 }], mailbox: 'Trash' }],
    ['a UID MOVE 4,6 Archive', { name: 'MOVE', uid: true, set: [{ from: 4, to: 4 }, { from: 6, to: 6 }], mailbox: 'Archive' }],
    ['a STORE 1 +FLAGS.SILENT (\\seen $Label)', { name: 'STORE', uid: false, set: [{ from: 1, to: 1 }], mode: 'add', silent: true, flags: ['\\Seen', '$Label'], unchangedSince: null }],
    ['a UID STORE 1:* (UNCHANGEDSINCE 12) FLAGS \\Deleted', { name: 'STORE', uid: true, set: [{ from: 1, to: Infinity }], mode: 'set', silent: false, flags: ['\\Deleted'], unchangedSince: 12 }],
  ];
  for (const [line, expected] of table) t.same(parse(line), expected, line);

  const fetch = parse('a UID FETCH 1:* (FLAGS BODY.PEEK[1.2.HEADER.FIELDS (Subject)]<5.10> BODY[]) (CHANGEDSINCE 7)');
  t.match(fetch, { name: 'FETCH', uid: true, changedSince: 7 });
  if (fetch.name === 'FETCH') {
    t.same(fetch.items[1], { kind: 'section', peek: true, section: { path: [1, 2], specifier: 'HEADER.FIELDS', fields: ['Subject'] }, partial: { start: 5, length: 10 }, label: '1.2.HEADER.FIELDS (SUBJECT)' });
    t.same(fetch.items[2], { kind: 'section', peek: false, section: { path: [], specifier: null, fields: [] }, partial: null, label: '' });
  }
  const all = parse('a FETCH 2 ALL');
  t.same(all.name === 'FETCH' && all.items.map((i) => (i.kind === 'simple' ? i.name : '')), ['FLAGS', 'INTERNALDATE', 'RFC822.SIZE', 'ENVELOPE']);

  const append = parseCommand({ parts: [{ kind: 'text', text: 'a APPEND Drafts (\\Draft) " 7-Feb-2026 10:00:00 +0100" ' }, { kind: 'literal', data: Buffer.from('Subject: x\r\n\r\nhi') }, { kind: 'text', text: '' }] }).command;
  t.match(append, { name: 'APPEND', mailbox: 'Drafts', messages: [{ flags: ['\\Draft'], binary: false }] });
  t.equal(append.name === 'APPEND' && append.messages[0]!.date?.toISOString(), '2026-02-07T09:00:00.000Z');
  t.equal(append.name === 'APPEND' && append.messages[0]!.message.toString(), 'Subject: x\r\n\r\nhi');
});

t.test('command grammar: malformed commands carry their tag', async (t) => {
  const bad: Array<[string, string]> = [
    ['a FROB', 'a'],
    ['b SELECT', 'b'],
    ['c FETCH 0 FLAGS', 'c'],
    ['d FETCH 1:x FLAGS', 'd'],
    ['e FETCH 1 (FLAGS', 'e'],
    ['f STORE 1 FLAGS (\\Recent)', 'f'],
    ['g UID NOOP', 'g'],
    ['h LOGIN onlyuser', 'h'],
    ['i SEARCH FROB', 'i'],
    ['j FETCH 1 BODY[1.0]', 'j'],
    ['k STATUS INBOX (FOO)', 'k'],
    ['l APPEND INBOX "not a literal"', 'l'],
    ['m CAPABILITY extra', 'm'],
    ['', '*'],
    ['+tag NOOP', '*'],
    ['* NOOP', '*'],
    ['a%b NOOP', '*'],
    ['a*b NOOP', '*'],
  ];
  for (const [line, tag] of bad) {
    let caught: unknown = null;
    try {
      parse(line);
    } catch (err) {
      caught = err;
    }
    t.ok(caught instanceof CommandError && caught.tag === tag, `${line || '(empty)'} → BAD with tag ${tag}`);
  }
  t.throws(() => parseDateTime('31-Foo-2026 10:00:00 +0000'));
  // APPEND's date-time: a day the month does not have, or an hour past 23, is refused (it was rolled over: 31-Feb → 3-Mar).
  t.throws(() => parseDateTime('31-Feb-2026 09:38:18 +0000'));
  t.throws(() => parseDateTime('29-Feb-2026 09:38:18 +0000'));
  t.throws(() => parseDateTime('25-Nov-2026 24:00:00 +0000'));
  t.throws(() => parseDateTime('25-Nov-2026 09:60:00 +0000'));
  t.equal(parseDateTime('29-Feb-2028 09:38:18 +0000').toISOString(), '2028-02-29T09:38:18.000Z', 'a leap day');
  t.equal(parseDateTime(' 5-Nov-2026 09:38:18 -0500').toISOString(), '2026-11-05T14:38:18.000Z', "c-client's space-padded day");
  t.same(parseZonedDateTime('14-Jul-2026 02:44:25 -0700'), { date: new Date('2026-07-14T09:44:25.000Z'), zone: -420 }, 'the zone is kept');
  t.equal(parseZonedDateTime('14-Jul-2026 02:44:25 +9999').zone, 0, 'a zone no clock shows: the instant, kept as UTC');
  t.equal(formatInternalDate(new Date('2026-07-14T09:44:25.000Z'), -420), '"14-Jul-2026 02:44:25 -0700"');
  t.equal(formatInternalDate(new Date('2026-01-05T18:00:00.000Z'), 330), '"05-Jan-2026 23:30:00 +0530"');
  t.equal(parseCommand({ parts: [{ kind: 'text', text: 'A]1 NOOP' }] }).tag, 'A]1', '"]" is an ASTRING-CHAR: a valid tag');
});

t.test('fuzz: random command lines either parse or fail with a tagged CommandError', async (t) => {
  const pieces = ['a1', 'UID', 'FETCH', 'STORE', 'SEARCH', 'SELECT', 'LIST', 'APPEND', 'LOGIN', 'STATUS', 'ID', '(', ')', '"', '\\', '[', ']', '<', '>', '{3}', '1:*', '*', '0', '4294967296', 'BODY[', 'BODY.PEEK[1.2.HEADER.FIELDS (A)]<0.5>', 'NIL', 'OR', 'NOT', 'HEADER', 'CHARSET', '&Jjo-', '&', '%', 'MODSEQ', 'CHANGEDSINCE', 'UNCHANGEDSINCE', '+FLAGS', '\\Seen', 'é', '\x00', ' '];
  let seed = 42;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  let parsed = 0;
  for (let i = 0; i < 5000; i++) {
    const words: string[] = [];
    const len = 1 + rand(8);
    for (let j = 0; j < len; j++) words.push(pieces[rand(pieces.length)]!);
    const line = words.join(rand(3) ? ' ' : '');
    try {
      parse(line);
      parsed++;
    } catch (err) {
      if (!(err instanceof CommandError)) t.fail(`${JSON.stringify(line)} threw ${String(err)}`);
    }
  }
  t.pass(`5000 random lines, ${parsed} parsed, the rest refused with BAD`);
});

t.test('sequence sets', async (t) => {
  t.same(parseSequenceSet('1,3:5,*,7:*,*:2'), [
    { from: 1, to: 1 },
    { from: 3, to: 5 },
    { from: Infinity, to: Infinity },
    { from: 7, to: Infinity },
    { from: Infinity, to: 2 },
  ]);
  for (const bad of ['', '0', '1:', ':2', '1::2', 'a', '1,,2', '4294967296']) t.throws(() => parseSequenceSet(bad), bad);
  t.same(resolveSeqNumbers(parseSequenceSet('5:3'), 10), [2, 3, 4], 'ranges in either order');
  t.same(resolveSeqNumbers(parseSequenceSet('*:8,1'), 10), [0, 7, 8, 9]);
  t.same(resolveSeqNumbers(parseSequenceSet('1:*'), 0), []);
  t.ok(seqOutOfRange(parseSequenceSet('11'), 10));
  t.notOk(seqOutOfRange(parseSequenceSet('1:*'), 10));
  const uids = [3, 7, 9, 20];
  t.same(resolveUids(parseSequenceSet('4:9'), uids), [1, 2]);
  t.same(resolveUids(parseSequenceSet('100:*'), uids), [3], 'n:* includes the highest UID even when n is above it');
  t.same(resolveUids(parseSequenceSet('*'), uids), [3]);
  t.equal(formatSet([1, 2, 3, 5, 7, 8]), '1:3,5,7:8');
});

t.test('SEARCH keys: nesting, OR/NOT, dates, charset-free strings, MODSEQ', async (t) => {
  const k = (s: string) => parseSearchKeys(tokenize([{ kind: 'text', text: s }]));
  t.same(k('ALL'), { op: 'all' });
  t.same(k('UNSEEN FROM "bob"'), { op: 'and', keys: [{ op: 'flag', flag: '\\Seen', present: false }, { op: 'header', field: 'from', value: 'bob' }] });
  t.same(k('OR (SEEN FLAGGED) NOT (DELETED)'), {
    op: 'or',
    a: { op: 'and', keys: [{ op: 'flag', flag: '\\Seen', present: true }, { op: 'flag', flag: '\\Flagged', present: true }] },
    b: { op: 'not', key: { op: 'flag', flag: '\\Deleted', present: true } },
  });
  t.same(k('1:3,*'), { op: 'seq', set: [{ from: 1, to: 3 }, { from: Infinity, to: Infinity }] });
  t.same(k('UID 5:*'), { op: 'uid', set: [{ from: 5, to: Infinity }] });
  t.same(k('SINCE 1-Feb-2026'), { op: 'internaldate', cmp: 'since', day: parseSearchDate('1-Feb-2026') });
  t.same(k('SENTBEFORE "01-Feb-2026"'), { op: 'sentdate', cmp: 'before', day: Date.UTC(2026, 1, 1) / 86400000 });
  t.same(k('HEADER X-Spam "yes" LARGER 100 SMALLER 900'), { op: 'and', keys: [{ op: 'header', field: 'x-spam', value: 'yes' }, { op: 'larger', size: 100 }, { op: 'smaller', size: 900 }] });
  t.same(k('KEYWORD $Work UNKEYWORD $Junk'), { op: 'and', keys: [{ op: 'flag', flag: '$Work', present: true }, { op: 'flag', flag: '$Junk', present: false }] });
  t.same(k('MODSEQ "/flags/\\\\draft" all 620162338'), { op: 'modseq', modseq: 620162338 });
  t.same(k('MODSEQ 5'), { op: 'modseq', modseq: 5 });
  t.ok(needsContent(k('NOT BODY x')));
  t.notOk(needsContent(k('OR SEEN UID 1')));
  for (const bad of ['', 'FROM', 'OR SEEN', 'SINCE 31-Feb-2026', 'SINCE yesterday', '()', 'LARGER x', 'NOT']) {
    t.throws(() => k(bad), bad || '(empty)');
  }
});

t.test('modified UTF-7 mailbox names', async (t) => {
  const table: Array<[string, string]> = [
    ['INBOX', 'INBOX'],
    ['Bücher', 'B&APw-cher'],
    ['A & B', 'A &- B'],
    ['日本語', '&ZeVnLIqe-'],
    ['~peter/mail/台北/日本語', '~peter/mail/&U,BTFw-/&ZeVnLIqe-'],
  ];
  for (const [plain, encoded] of table) {
    t.equal(encodeMailboxName(plain), encoded, plain);
    t.equal(decodeMailboxName(encoded), plain, encoded);
    t.ok(isModifiedUtf7(encoded), `valid: ${encoded}`);
  }
  // What CREATE and RENAME refuse: names that would be listed under another spelling (RFC 3501 §5.1.3).
  const invalid = ['Bücher', 'tab\there', 'a&b', '&AGE-', '&AOs', '&AO-', '&-&', '&A!E-', '&AOs-&AOs-', '&2D3eAA'];
  for (const raw of invalid) t.notOk(isModifiedUtf7(raw), `invalid: ${JSON.stringify(raw)}`);
  t.ok(isModifiedUtf7('&2D3eAA-'), 'a surrogate pair (U+1F600)');
});

t.test('LIST patterns', async (t) => {
  t.ok(patternToRegExp('', '*').test('a/b/c'));
  t.ok(patternToRegExp('', '%').test('a'));
  t.notOk(patternToRegExp('', '%').test('a/b'));
  t.ok(patternToRegExp('Projects/', '%').test('Projects/2026'));
  t.ok(patternToRegExp('', 'inbox').test('INBOX'));
  t.notOk(patternToRegExp('', 'a.b').test('axb'), 'regex characters are literal');
});

t.test('writer: strings, literals, lists, dates', async (t) => {
  t.equal(formatString('plain'), '"plain"');
  t.equal(formatString('say "hi" \\o/'), '"say \\"hi\\" \\\\o/"');
  t.equal(formatString('two\r\nlines'), '{10}\r\ntwo\r\nlines');
  t.equal(formatString('Grüße'), '{7}\r\nGrüße', 'non-ASCII goes as a literal, counted in bytes');
  t.equal(formatValue([null, 1, 'x', [null]]), '(NIL 1 "x" (NIL))');
  const out: Buffer[] = [];
  encodeValues(['a', new Literal(Buffer.from([0xff, 0x00, 0x41]))], out);
  t.same(Buffer.concat(out), Buffer.concat([Buffer.from('"a" {3}\r\n'), Buffer.from([0xff, 0x00, 0x41])]), 'literal bytes are sent as they are');
  t.equal(formatInternalDate(new Date('2026-03-01T09:05:07Z')), '"01-Mar-2026 09:05:07 +0000"');
});
