// The text part renderer (src/mta/html-text.ts) against html-to-text, whose output it reproduces: html-to-text
// stays a dev dependency as the oracle. Email-shaped html, the block model's edges, and seeded random nestings.
import t from 'tap';
import { compile } from 'html-to-text';
import { renderHtmlText } from '../../src/mta/html-text.js';
import { htmlToText } from '../../src/mta/compose.js';
import { plainTextOf } from '../../src/mta/html-scan.js';
import { CORPUS, random, randomHtml } from '../helpers/html-corpus.js';

// The options compose.ts rendered with while it called html-to-text.
const oracle = compile({
  wordwrap: 78,
  selectors: [
    { selector: 'img', format: 'skip' },
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
  ],
});

t.test('the same text as html-to-text on email html and the block model edges', async (t) => {
  for (const html of CORPUS) t.equal(renderHtmlText(html), oracle(html), JSON.stringify(html).slice(0, 80));
});

t.test('the same text as html-to-text on 3,000 random nestings', async (t) => {
  const rnd = random(20261125);
  let same = 0;
  const differing: string[] = [];
  for (let i = 0; i < 3000; i++) {
    const html = randomHtml(rnd);
    if (renderHtmlText(html) === oracle(html)) same++;
    else differing.push(html);
  }
  t.same(differing.slice(0, 3), [], 'no document renders differently');
  t.equal(same, 3000);
});

t.test('what a reader of the text part sees', async (t) => {
  const text = renderHtmlText(
    '<html><head><title>t</title><style>p{}</style></head><body><h1>Order shipped</h1>' +
      '<p>Hi <b>Ann</b>,&nbsp;your&nbsp;order is on its way.</p><ul><li>Widget × 2</li><li>Gadget</li></ul>' +
      '<p><a href="https://shop.example/t/1">Track it</a> · <a href="https://shop.example/">https://shop.example/</a></p>' +
      '<img src="logo.png" alt="Logo"><script>alert(1)</script></body></html>',
  );
  t.equal(
    text,
    'ORDER SHIPPED\n\nHi Ann,\u00a0your\u00a0order is on its way.\n\n * Widget × 2\n * Gadget\n\n' +
      'Track it [https://shop.example/t/1] · https://shop.example/',
  );
  const long = renderHtmlText(`<p>${'word '.repeat(40)}</p>`);
  t.ok(long.split('\n').every((line) => line.length <= 78), 'wrapped at 78');
  t.equal(renderHtmlText('<blockquote>quoted</blockquote><pre>  kept\n  as is</pre>'), '> quoted\n\n  kept\n  as is');
});

t.test('htmlToText: a body nested deeper than the stack gets the plain derivation', async (t) => {
  const deep = `${'<div>'.repeat(50_000)}deep text${'</div>'.repeat(50_000)}`;
  t.throws(() => renderHtmlText(deep), RangeError);
  t.equal(htmlToText(deep), 'deep text');
});

t.test('quotes and lists nested past the rewrite budget fall back to the plain derivation', async (t) => {
  // Each level rewrites every line inside it: 1,200 nested quotes in 17 KB would be 2.9 MB of text.
  const quotes = '<blockquote>x '.repeat(1200);
  t.throws(() => renderHtmlText(quotes), RangeError);
  t.equal(htmlToText(quotes), plainTextOf(quotes));
  const lists = '<ul><li>x '.repeat(1600);
  t.throws(() => renderHtmlText(lists), RangeError);
  t.equal(htmlToText(lists), plainTextOf(lists));
  // A long reply thread, 40 quotes deep, is well within it and renders as html-to-text does.
  const thread = `${'<blockquote>On Monday someone wrote:<br>'.repeat(40)}the first message${'</blockquote>'.repeat(40)}`;
  t.equal(renderHtmlText(thread), oracle(thread));
});
