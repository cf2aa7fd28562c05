// The spam-preview rules (spam-score.ts) do what docs/API.md says they do: links are read from the text as well
// as the html, MANY_LINKS weighs each part's links against that part's words, and SUBJECT_ALL_CAPS reads capitals
// of any script.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { scoreContent, SPAM_RULES, type ScoredInput } from '../../src/services/sending/spam-score.js';

const fired = (input: Partial<ScoredInput>) =>
  scoreContent({ subject: 'Your receipt', headers: {}, tags: [], recipientCount: 1, fromVerified: true, ...input }).rules.map((r) => r.name);
const words = (n: number) => Array.from({ length: n }, (_, k) => `word${k}`).join(' ');

t.test('URLs written out in the text are links for every link rule', async (t) => {
  t.ok(fired({ text: 'go https://bit.ly/abc now' }).includes('URL_SHORTENER'), 'a shortener in the text');
  t.ok(fired({ text: 'see http://bit.ly.' }).includes('URL_SHORTENER'), 'trailing punctuation is not part of the URL');
  t.ok(fired({ text: Array.from({ length: 21 }, (_, k) => `https://a.example/${k}`).join('\n') + `\n${words(500)}` }).includes('MANY_LINKS'), '21 URLs in the text');
  t.ok(fired({ text: 'www.a.example www.b.example, www.c.example and WWW.D.EXAMPLE.' }).includes('MANY_LINKS'), 'www. links count');
  t.notOk(fired({ text: 'mail joe@www.bit.ly or see xhttps://bit.ly/a and /path/www.bit.ly' }).includes('URL_SHORTENER'), 'not a URL glued to a word');
  t.notOk(fired({ text: 'https://a.example/x https://a.example/y' }).includes('URL_SHORTENER'), 'no shortener');
  t.ok(fired({ text: 'News', tags: ['newsletter'] }).includes('BULK_WITHOUT_UNSUBSCRIBE'), 'no unsubscribe link');
  t.notOk(fired({ text: 'News. Leave: https://a.example/unsubscribe?u=1', tags: ['newsletter'] }).includes('BULK_WITHOUT_UNSUBSCRIBE'), 'an unsubscribe link in the text');
});

t.test('hostile text of many MB is scanned for URLs in one pass', async (t) => {
  const bodies = ['http://'.repeat(5_000_000), 'www.'.repeat(9_000_000), `https://a${'.'.repeat(36_000_000)}`, 'ahttp://'.repeat(4_500_000), 'www.x '.repeat(6_000_000)];
  for (const text of bodies) {
    const started = Date.now();
    t.ok(scoreContent({ subject: 's', text, headers: {}, tags: [], recipientCount: 1, fromVerified: true }).score >= 0, 'scored');
    t.ok(Date.now() - started < 5000, `${JSON.stringify(text.slice(0, 12))}… scored in ${Date.now() - started} ms`);
  }
});

t.test("MANY_LINKS weighs each part's links against that part's own words", async (t) => {
  const html = `<p>${words(1000)}</p>${Array.from({ length: 5 }, (_, k) => `<a href="https://a.example/${k}">link ${k}</a>`).join(' ')}`;
  t.notOk(fired({ html }).includes('MANY_LINKS'), '5 links in 1,000 words of html');
  t.notOk(fired({ html, text: 'own text' }).includes('MANY_LINKS'), 'a short text part does not lend its word count to the html');
  t.ok(fired({ html: `<p>${words(1000)}</p>`, text: 'https://a.example/1 https://a.example/2 https://a.example/3 https://a.example/4' }).includes('MANY_LINKS'), 'a text part with 4 links and no words fires on its own');
  const many = `<p>${words(100)}</p>${Array.from({ length: 21 }, (_, k) => `<a href="https://a.example/${k}">l</a>`).join(' ')}`;
  t.ok(fired({ html: many, text: words(5000) }).includes('MANY_LINKS'), 'over 20 links in the html fire whatever the text');
});

t.test('MANY_LINKS: 4 or more links, fewer than 20 words per link, as docs/API.md says', async (t) => {
  const links = (n: number) => Array.from({ length: n }, (_, k) => `https://a.example/${k}`).join(' ');
  t.notOk(fired({ text: `${links(2)} ${words(30)}` }).includes('MANY_LINKS'), '2 links in 32 words');
  t.notOk(fired({ text: `${links(3)} ${words(10)}` }).includes('MANY_LINKS'), '3 links in 13 words');
  t.ok(fired({ text: `${links(4)} ${words(75)}` }).includes('MANY_LINKS'), '4 links in 79 words');
  t.notOk(fired({ text: `${links(4)} ${words(76)}` }).includes('MANY_LINKS'), '4 links in 80 words');
  const readme = readFileSync(new URL('../../docs/API.md', import.meta.url), 'utf8');
  const rules = readme.slice(readme.indexOf('**Spam preview rules**'), readme.indexOf('\n\n', readme.indexOf('**Spam preview rules**')));
  t.match(rules, /`MANY_LINKS` 1 \([^)]*over 20 links, or 4 or more links and fewer than 20 words per link/, 'docs/API.md states the minimum');
  t.match(SPAM_RULES.find((r) => r.name === 'MANY_LINKS')?.description, /4 or more links and fewer than 20 words per link/, 'so does the rule description');
  for (const r of SPAM_RULES) t.match(rules, `\`${r.name}\` ${r.score}`, `docs/API.md gives ${r.name} its score`);
});

t.test('SUBJECT_ALL_CAPS reads capitals of any script', async (t) => {
  t.ok(fired({ subject: 'ПРИВЕТ ДРУГ', text: 'x' }).includes('SUBJECT_ALL_CAPS'), 'Cyrillic capitals');
  t.ok(fired({ subject: 'ΕΚΠΤΩΣΕΙΣ ΤΩΡΑ', text: 'x' }).includes('SUBJECT_ALL_CAPS'), 'Greek capitals');
  t.ok(fired({ subject: 'ÉTÉ GRATUIT', text: 'x' }).includes('SUBJECT_ALL_CAPS'), 'accented Latin capitals count');
  t.notOk(fired({ subject: 'Привет друг', text: 'x' }).includes('SUBJECT_ALL_CAPS'), 'Cyrillic in sentence case');
  t.ok(fired({ subject: 'FREE MONEY NOW', text: 'x' }).includes('SUBJECT_ALL_CAPS'), 'Latin as before');
  t.notOk(fired({ subject: 'Free money now', text: 'x' }).includes('SUBJECT_ALL_CAPS'), 'Latin in sentence case');
  t.notOk(fired({ subject: 'BIG SALE', text: 'x' }).includes('SUBJECT_ALL_CAPS'), 'under 8 letters');
  t.notOk(fired({ subject: '限时优惠活动马上开始', text: 'x' }).includes('SUBJECT_ALL_CAPS'), 'a script without case');
  t.notOk(fired({ subject: '2024-05-01 #12345 !!!', text: 'x' }).includes('SUBJECT_ALL_CAPS'), 'no letters');
});
