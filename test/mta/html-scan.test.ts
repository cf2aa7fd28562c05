// The linear html scans (html-scan.ts) give what the regexes they replace gave, and never rescan: each
// lookup moves forward, so hostile bodies (unclosed tags, '<' without '>') cost one pass.
import t from 'tap';
import { findLinks, plainTextOf, stripTags } from '../../src/mta/html-scan.js';
import { htmlToText } from '../../src/mta/compose.js';
import { scoreContent } from '../../src/services/sending/spam-score.js';

const LINKS = /<a\b[^>]*href\s*=\s*["']([^"']+)["'][^>]*>([\s\S]*?)<\/a>/gi;
const refLinks = (html: string) => [...html.matchAll(LINKS)].map((m) => ({ href: m[1]!, text: m[2]!.replace(/<[^>]+>/g, '').trim() }));
const refVisible = (html: string) => html.replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' ').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();

t.test('the same links and text as the regexes on ordinary and odd html', async (t) => {
  const samples = [
    '<p>Hello <a href="https://a.example/x">the <b>site</b></a> and <A HREF=\'http://b.example\'>b</A></p>',
    '<a name="top">no href</a><a class="x" href="http://c.example">c</a>',
    '<a href="http://d.example">unclosed',
    '<<a href="x">y</a> < b > <> text',
    '<style>p{}</style><script>var a = "<p>";</script>visible<img src="i.png">',
    'plain text, no tags at all',
  ];
  // a few thousand random bodies from tag fragments
  const parts = ['<a ', 'href="h"', "href='k'", '>', '<', '</a>', '</A>', 'text ', '<b>', '<script>', '</script>', '<style>', '</style>', ' ', '"', '<img src=x>'];
  let seed = 7;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648) % n);
  for (let k = 0; k < 3000; k++) samples.push(Array.from({ length: 1 + rand(14) }, () => parts[rand(parts.length)]).join(''));
  let same = 0;
  for (const html of samples) {
    const a = JSON.stringify(findLinks(html)) === JSON.stringify(refLinks(html));
    const b = stripTags(html, { replacement: ' ', dropScripts: true }).replace(/\s+/g, ' ').trim() === refVisible(html);
    const c = stripTags(html, { replacement: '', dropScripts: false }) === html.replace(/<[^>]+>/g, '');
    if (a && c) same++;
    else t.fail(`differs on ${JSON.stringify(html)}`);
    // script blocks: the scanner only drops a block that starts at a tag; the regex also one from a bare "<script"
    if (!b && !/<(script|style)(?![^<]*>)/i.test(html)) t.fail(`visible text differs on ${JSON.stringify(html)}`);
  }
  t.equal(same, samples.length);
});

t.test('hostile bodies of many MB are scanned in one pass', async (t) => {
  // each of these made the old regexes rescan to the end of the body from every tag (seconds per 100 KB)
  const bodies = ['<a '.repeat(3_000_000), '<img src='.repeat(1_000_000), '<a href="x">'.repeat(800_000), '<script>'.repeat(1_000_000), '<'.repeat(9_000_000)];
  for (const html of bodies) {
    const v = scoreContent({ subject: 's', html, headers: {}, tags: [], recipientCount: 1, fromVerified: true });
    t.ok(v.score >= 0);
    t.type(stripTags(html, { replacement: ' ', dropScripts: true }), 'string');
    t.type(findLinks(html), Array);
  }
});

t.test('html-to-text: deep nesting and huge bodies fall back to the plain derivation', async (t) => {
  t.match(htmlToText(`${'<div>'.repeat(20000)}deep text${'</div>'.repeat(20000)}`), /deep text/);
  const big = '<p>'.repeat(5_000_000);
  t.equal(htmlToText(big), '');
  t.equal(plainTextOf('<p>one</p><p>two &amp; three</p><br>four'), 'one\ntwo & three\n\nfour');
});
