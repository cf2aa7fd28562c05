// compose.ts's synchronous serialiser against nodemailer's own stream-based MimeNode.build(): the same tree
// must give the same bytes, for every shape of message the send path makes (html only, text and html,
// non-ASCII headers and bodies, long lines, trailing whitespace, attachments binary and textual, inline
// images, custom headers), and the cases it must leave to build() are left to it.
import t from 'tap';
import MailComposer from 'nodemailer/lib/mail-composer';
import { PassThrough } from 'node:stream';
import { simpleParser } from 'mailparser';
import { buildSync, composeMessage, htmlToText, type ComposeInput } from '../../src/mta/compose.js';

const base: ComposeInput = {
  from: { name: 'Bench', address: 'news@sender.test' },
  to: [{ address: 'user@remote.test' }],
  cc: [],
  replyTo: [],
  subject: 'Hello',
  html: '<p>Hello</p>',
  text: undefined,
  headers: {},
  attachments: [],
  messageId: '<1@box.test>',
  date: new Date('2026-11-22T10:00:00Z'),
};

/** The tree composeMessage builds, for both serialisers. */
function tree(input: ComposeInput) {
  return new MailComposer({
    from: input.from,
    to: input.to,
    cc: input.cc.length ? input.cc : undefined,
    replyTo: input.replyTo.length ? input.replyTo : undefined,
    subject: input.subject,
    html: input.html,
    text: input.text ?? (input.html !== undefined ? htmlToText(input.html) : undefined),
    headers: input.headers,
    attachments: input.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content })),
    messageId: input.messageId,
    date: input.date,
  }).compile();
}

const longLine = 'word '.repeat(60) + 'end';
const bytes = Buffer.alloc(3000);
for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 37) % 256;
const cases: Record<string, Partial<ComposeInput>> = {
  htmlOnly: { html: '<!doctype html><html><body><h1>Your order</h1>' + '<p>Item: a product, quantity 3, price 9.99 EUR.</p>'.repeat(40) + '</body></html>' },
  textAndHtml: { text: 'Plain\nsecond line\n', html: '<p>Rich</p>' },
  textOnly: { html: undefined, text: 'Just text' },
  empty: { html: undefined, text: '' },
  nonAscii: { from: { name: 'Jörg Müller', address: 'j@sender.test' }, subject: 'Grüße aus Köln — ünïcödé ✓', text: 'Grüße\r\naus Köln ✓', html: '<p>Grüße ✓</p>' },
  longLines: { text: `${longLine}\n${longLine}   \n`, html: `<p>${longLine}</p>` },
  trailingSpace: { text: 'ends with spaces   \nand tab\t\nlast   ', html: '<p>x</p>   ' },
  longSubject: { subject: 'A subject that goes on and on '.repeat(8).trimEnd(), headers: { 'X-Campaign': 'spring-2026', 'List-Unsubscribe': '<mailto:u@sender.test>' } },
  addresses: { to: [{ address: 'a@remote.test', name: 'A, B' }, { address: 'c@remote.test' }], cc: [{ address: 'd@remote.test', name: 'Dé' }], replyTo: [{ address: 'r@sender.test' }] },
  attachments: {
    text: 'see attached',
    attachments: [
      { filename: 'data.bin', contentType: 'application/octet-stream', content: bytes },
      { filename: 'notes.txt', contentType: 'text/plain', content: Buffer.from('line one\r\nline two\nlone LF and Grüße\r\n') },
      { filename: 'ascii.txt', contentType: 'text/plain', content: Buffer.from('plain ascii\r\n') },
      { filename: 'report 2026 ü.pdf', contentType: 'application/pdf', content: Buffer.from('%PDF-1.4 fake') },
    ],
  },
  bigBase64: { attachments: [{ filename: 'big.bin', contentType: 'application/octet-stream', content: Buffer.alloc(200_000, 7) }] },
};

for (const [name, overrides] of Object.entries(cases)) {
  t.test(`${name}: buildSync gives build()'s bytes`, async (t) => {
    const input = { ...base, ...overrides };
    // One tree, so that both see the same boundaries.
    const root = tree(input);
    const sync = buildSync(root);
    t.ok(sync, 'the synchronous path applies');
    const streamed = await root.build();
    t.equal(sync!.toString('latin1'), streamed.toString('latin1'));
    // And what composeMessage returns parses back to the input.
    const parsed = await simpleParser(await composeMessage(input));
    t.equal(parsed.subject, input.subject);
    t.equal(parsed.messageId, input.messageId);
    if (input.text) t.equal(parsed.text?.replace(/\r\n/g, '\n').trimEnd(), input.text.replace(/\r\n/g, '\n').trimEnd());
    t.equal(parsed.attachments.length, input.attachments.length);
    input.attachments.forEach((a, i) => t.ok(parsed.attachments[i]!.content.equals(a.content), `attachment ${a.filename} round-trips`));
  });
}

t.test('content it cannot write synchronously is left to build()', async (t) => {
  const large = tree({ ...base, html: `<p>${'x'.repeat(70 * 1024)}</p>`, text: 'é'.repeat(40 * 1024) });
  t.equal(buildSync(large), undefined, 'quoted-printable text above 64 KB');
  const stream = new MailComposer({ from: 'a@sender.test', to: 'b@remote.test', text: new PassThrough().end('streamed') }).compile();
  t.equal(buildSync(stream), undefined, 'stream content');
  const raw = await composeMessage({ ...base, html: `<p>${'x'.repeat(70 * 1024)}</p>` });
  t.match(raw.toString('latin1'), /Content-Type: text\/html/, 'composeMessage still builds it');
});
