// One mailbox per string, as the send path takes them (`to`, `from`, `reply_to`), and the stored form it
// reads back at delivery.
import t from 'tap';
import { normaliseAddress, parseMailbox } from '../../src/core/address.js';
import { displayNameFolds, MAX_LINE } from '../../src/core/header-lines.js';
import { composeMessage, type ComposeInput } from '../../src/mta/compose.js';
import { isBase64 } from '../../src/http/schemas/sending/emails.js';
import { formatMailbox } from '../../src/services/sending/emails.js';

t.test('parseMailbox: one mailbox, its name a phrase', async (t) => {
  t.same(parseMailbox('a@x.example'), { address: 'a@x.example' });
  t.same(parseMailbox('Acme <hello@X.Example>'), { name: 'Acme', address: 'hello@x.example' });
  t.same(parseMailbox('"Smith, John" <j@x.example>'), { name: 'Smith, John', address: 'j@x.example' }, 'a comma inside quotes');
  t.same(parseMailbox('"A <b@c>; d" <j@x.example>'), { name: 'A <b@c>; d', address: 'j@x.example' }, 'specials inside quotes');
  t.same(parseMailbox('John "Johnny" Smith <j@x.example>'), { name: 'John "Johnny" Smith', address: 'j@x.example' }, 'atoms and a quoted word');
  t.same(parseMailbox('"say \\"hi\\"" <j@x.example>'), { name: 'say "hi"', address: 'j@x.example' });
  t.same(parseMailbox('j@x.example <j@x.example>'), { name: 'j@x.example', address: 'j@x.example' }, 'the address as its own name, as some clients write it');
  // More than one mailbox, however written: the parser used to keep the last and call the rest its name.
  for (const s of [
    'A <a@x.example>, B <b@x.example>',
    'a@x.example, B <b@x.example>',
    'A <a@x.example>; B <b@x.example>',
    'Smith, John <j@x.example>',
    '<a@x.example> <b@x.example>',
    '"unclosed <j@x.example>',
    'a@x.example, b@x.example',
  ]) {
    t.equal(parseMailbox(s), null, s);
  }
});

t.test('normaliseAddress: a UTF-8 local part (RFC 6531) keeps the dot-atom rule', async (t) => {
  t.equal(normaliseAddress('josé.núñez@X.Example'), 'josé.núñez@x.example');
  t.equal(normaliseAddress('用户@例子.广告'), '用户@xn--fsqu00a.xn--4rr70v');
  // The UTF-8 form used to take any run without specials: dots first, last or two together included.
  for (const s of ['ann..lee@x.example', '.ann@x.example', 'ann.@x.example', 'jo..sé@x.example', '.josé@x.example']) t.equal(normaliseAddress(s), null, s);
});

t.test('formatMailbox: the stored form reads back as it was given', async (t) => {
  for (const name of ['Acme', 'Smith, John', 'say "hi" \\ bye', 'tab\there', 'Jörg Müller', 'A <b@c>; d']) {
    const stored = formatMailbox({ name, address: 'j@x.example' });
    t.same(parseMailbox(stored), { name, address: 'j@x.example' }, stored);
  }
  t.equal(formatMailbox({ address: 'j@x.example' }), 'j@x.example');
});

t.test('isBase64: whole bytes, padding only where it completes a quantum', async (t) => {
  for (const ok of ['', 'YQ==', 'YQ', 'YWI=', 'YWI', 'YWJj', 'YWJj\r\nZA==', ' YWJj ']) t.ok(isBase64(ok), JSON.stringify(ok));
  for (const bad of ['Y', 'YWJj=', 'YWJjZ', 'YWJjZA=', 'YQ===', 'Y=Q=', 'not*base64', '====']) t.notOk(isBase64(bad), JSON.stringify(bad));
});

t.test('a display name that passes displayNameFolds goes out in lines of at most 998 characters', async (t) => {
  const base: ComposeInput = {
    from: { address: 'news@sender.test' },
    to: [],
    cc: [],
    replyTo: [],
    subject: 'Hello',
    html: undefined,
    text: 'x',
    headers: {},
    attachments: [],
    messageId: '<1@box.test>',
    date: new Date('2026-11-22T10:00:00Z'),
  };
  // The longest run a name may have, in every address header, and names of many words.
  const longest = 'N'.repeat(MAX_LINE - 'Reply-To: '.length - 3);
  t.ok(displayNameFolds(longest));
  t.notOk(displayNameFolds(`${longest}N`));
  t.notOk(displayNameFolds('"'.repeat(500)), 'quotes are escaped on the wire: they count twice');
  const words = 'word '.repeat(1000).trim();
  const raw = await composeMessage({
    ...base,
    from: { name: longest, address: 'news@sender.test' },
    to: [{ name: words, address: 'a@remote.test' }, { name: longest, address: 'b@remote.test' }],
    cc: [{ name: `${words}, ${longest}`, address: 'c@remote.test' }],
    replyTo: [{ name: longest, address: 'r@sender.test' }],
  });
  const head = raw.toString('latin1').split('\r\n\r\n')[0]!;
  const widest = Math.max(...head.split('\r\n').map((l) => l.length));
  t.ok(widest <= MAX_LINE, `widest header line ${widest}`);
});
