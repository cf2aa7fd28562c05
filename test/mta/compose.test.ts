// compose.ts's synchronous serialiser against nodemailer's own stream-based MimeNode.build(): the same tree
// must give the same bytes, for every shape of message the send path makes (html only, text and html,
// non-ASCII headers and bodies, long lines, trailing whitespace, attachments binary and textual, inline
// images, custom headers), and the cases it must leave to build() are left to it.
import t from 'tap';
import MailComposer from 'nodemailer/lib/mail-composer';
import { PassThrough } from 'node:stream';
import { simpleParser } from 'mailparser';
import { buildSync, composeMessage, composerOptions, htmlToText, textPartOf, unstructuredHeader, type ComposeInput } from '../../src/mta/compose.js';
import libmime from 'libmime';

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
  return new MailComposer(composerOptions(input)).compile();
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
  longTokens: { subject: 's'.repeat(998), headers: { 'X-Token': 't'.repeat(1024), 'X-Mixed': `Grüße ${'m'.repeat(1000)}` } },
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

// A template that renders an empty (or blank) text beside its html must not send an html-only message nor an
// empty alternative: the text part is derived as if none was given (SpamAssassin scored the former
// MIME_HTML_ONLY + HTML_MIME_NO_HTML_TAG, the latter MPART_ALT_DIFF).
for (const text of ['', '   ', '\r\n\n\t']) {
  t.test(`html with the text ${JSON.stringify(text)}: multipart/alternative with the derived text part`, async (t) => {
    const html = '<p>Hello Bob, the <a href="https://acme.test/x">report</a> is ready.</p>';
    const raw = (await composeMessage({ ...base, html, text })).toString('latin1');
    const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
    t.match(head, /^Content-Type: multipart\/alternative;/m, 'the message is multipart/alternative');
    const parsed = await simpleParser(raw);
    t.equal(parsed.text?.trimEnd(), 'Hello Bob, the report [https://acme.test/x] is ready.', 'the text part is derived from the html');
    t.equal(parsed.text?.trimEnd(), htmlToText(html).trimEnd());
    t.match(parsed.html, /<p>Hello Bob/);
  });
}

t.test('a text with content is kept as given, also beside html; text without html is never derived', async (t) => {
  t.equal(textPartOf({ html: '<p>Rich</p>', text: ' plain ' }), ' plain ');
  t.equal(textPartOf({ html: undefined, text: '' }), '');
  t.equal(textPartOf({ html: undefined, text: undefined }), undefined);
  t.equal(textPartOf({ html: '<p>Rich</p>', text: undefined }), 'Rich');
});

// RFC 5322 §2.1.1: no line over 998 characters. MailComposer folds only at whitespace, so a subject (up to 998
// characters in the API) or an X- header value (up to 1,024) without any went out on one longer line; such a
// value is now written as encoded words, which decode to the same text.
t.test('a subject or X- header with a run of ~1,000 characters and no space: every line within 998, same text', async (t) => {
  const input: ComposeInput = {
    ...base,
    subject: 's'.repeat(998),
    headers: { 'X-Token': 't'.repeat(1024), 'X-Mixed': `Grüße ${'m'.repeat(1000)}`, 'X-Words': 'word '.repeat(200).trim(), Comments: 'c'.repeat(1000), 'List-Id': '<news.sender.test>', 'List-Unsubscribe': `<mailto:u@sender.test>, <https://sender.test/u/${'a'.repeat(950)}>` },
  };
  const raw = (await composeMessage(input)).toString('utf8');
  const head = raw.slice(0, raw.indexOf('\r\n\r\n'));
  t.same(head.split('\r\n').filter((l) => l.length > 998).map((l) => `${l.length}: ${l.slice(0, 30)}`), [], 'no header line over 998');
  t.same(head.split('\r\n').filter((l) => l.length > 78 && !l.includes('https://sender.test/u/')).map((l) => `${l.length}: ${l.slice(0, 30)}`), [], 'nor over 78, but for the URL that cannot fold');
  const field = (name: string) => head.match(new RegExp(`^${name}:((?:.*)(?:\r\n[ \t].*)*)`, 'mi'))![1]!.replace(/\r\n[ \t]/g, ' ').trim();
  const parsed = await simpleParser(raw);
  t.equal(parsed.subject, input.subject, 'the subject decodes to itself');
  for (const name of ['X-Token', 'X-Mixed', 'X-Words', 'Comments']) t.equal(libmime.decodeWords(field(name)), input.headers[name], `${name} decodes to itself`);
  t.equal(field('X-Words'), input.headers['X-Words'], 'a long value with spaces is only folded, not encoded');
  t.equal(field('List-Id'), '<news.sender.test>');
  t.equal(field('List-Unsubscribe'), input.headers['List-Unsubscribe'], 'a structured field that folds is only folded');
});

t.test('unstructuredHeader: values that fit are left to MailComposer as they are', async (t) => {
  t.equal(unstructuredHeader('Subject', 'a'.repeat(989)), 'a'.repeat(989), 'Subject: and 989 characters is 998');
  t.type(unstructuredHeader('Subject', 'a'.repeat(990)), 'object', 'one more is encoded');
  t.equal(unstructuredHeader('X-A', `${'a '.repeat(600)}`), 'a '.repeat(600));
});

t.test('child MIME nodes take the message baseBoundary: no random bytes drawn per node, the same boundaries', async (t) => {
  const input = { ...base, text: 'Plain', html: '<p>Rich</p>', attachments: [{ filename: 'a.bin', contentType: 'application/octet-stream', content: bytes }] };
  const root = new MailComposer({ ...composerOptions(input), baseBoundary: 'feedc0de01234567' } as ConstructorParameters<typeof MailComposer>[0]).compile();
  const nodes: Array<typeof root> = [];
  const walk = (n: typeof root) => {
    nodes.push(n);
    n.childNodes.forEach(walk);
  };
  walk(root);
  t.ok(nodes.length >= 4, 'mixed, alternative, text, html, attachment');
  t.same(new Set(nodes.map((n) => n.baseBoundary)), new Set(['feedc0de01234567']), 'every node carries the root baseBoundary');
  const raw = (await root.build()).toString('latin1');
  t.match(raw, /boundary="--_NmP-feedc0de01234567-Part_1"/, 'the boundaries are built from it as before');
});
