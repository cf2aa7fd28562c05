// Email html for test/mta/html-text.test.ts: shapes that transactional and marketing templates use, and the
// edges of html-to-text's block model. Plus a seeded generator of random nestings of the same elements.

export const CORPUS: string[] = [
  '<p>Hello</p>',
  '<!doctype html><html><head><title>Receipt</title><style>p{color:red}</style></head><body><h1>Your order has shipped</h1><p>Item 1: a product, quantity 2, price 9.99 EUR.</p><p><a href="https://shop.example/orders/12345">Track your parcel</a></p></body></html>',
  'plain text without tags &amp; an entity &nbsp; and&nbsp;nbsp',
  '<div>one</div><div>two</div><p>three</p><div></div><p>four</p>',
  '<p>a<b>b</b>c <i>d</i> e<span> f</span></p>',
  '<h1>Title</h1><h2>Sub</h2><h3>h3</h3><h4>h4</h4><h5>h5 <a href="https://x.example/">link</a></h5><h6>six</h6>',
  '<p>Line one<br>Line two<br/><br />Line four</p>',
  '<ul><li>one</li><li>two <b>bold</b></li>\n  <li>three</li></ul><ol><li>a</li><li>b</li></ol>',
  '<ol start="9"><li>nine</li><li>ten</li><li>eleven</li></ol>',
  '<ol type="a"><li>x</li><li>y</li></ol><ol type="I" start="3"><li>iii</li><li>iv</li><li>v</li></ol><ol type="i" start="8"><li>viii</li><li>ix</li></ol><ol type="A" start="26"><li>z</li><li>aa</li></ol>',
  '<ul><li>outer<ul><li>inner 1</li><li>inner 2<ol><li>deep</li></ol></li></ul></li><li>second</li></ul>',
  '<ul><!-- a comment --><li>after comment</li>text child<p>para child</p></ul>',
  '<ul>   </ul><ol></ol><p>after empty lists</p>',
  '<blockquote><p>Quoted para</p><p>Second</p></blockquote><p>after</p>',
  '<blockquote>outer<blockquote>inner quote that is long enough to wrap around the line length limit of the quote block for sure</blockquote></blockquote>',
  '<pre>  code\n    indented\n</pre><p>after pre</p><pre><b>bold</b> in   pre<br>next</pre>',
  '<hr><p>between</p><hr/>',
  '<p><a href="mailto:help@shop.example">help@shop.example</a> <a href="mailto:help@shop.example">Write to us</a> <a href="#top">top</a> <a href="">empty</a> <a>no href</a></p>',
  '<p><a href="https://example.com">https://example.com</a> <a href="https://example.com/"><img src="logo.png" alt="Logo"></a> <a href="https://example.com/x">Two words</a></p>',
  '<p>Click <a href="https://example.com/a">here</a>, or <a href="https://example.com/b"><b>there</b> now</a>.</p>',
  '<table width="100%"><tr><td>Cell 1</td><td>Cell 2</td></tr><tr><td><p>Para in cell</p></td><td>x</td></tr></table><p>after table</p>',
  '<table><tbody><tr><th>Item</th><th>Qty</th></tr><tr><td>Widget</td><td>2</td></tr></tbody></table>',
  '<p>' + 'word '.repeat(60) + '</p>',
  '<p>' + 'https://example.com/a/very/long/path/that/does/not/fit/on/one/line/at/all/because/it/is/much/longer/than/seventy/eight/characters ' + 'then more words after it</p>',
  '<p>unbreakable' + 'x'.repeat(100) + ' short</p><p>a' + '<wbr>bcdefghij'.repeat(12) + '</p>',
  '<p>  leading and trailing spaces  </p><p>\n\ttabs\tand\nnewlines\n</p>',
  '<p>&lt;tag&gt; &quot;quoted&quot; &#39;apos&#39; &euro;10 &copy; caf&eacute; 😀 日本語</p>',
  '<P>UPPER <B>CASE</B> TAGS</P><DIV>div</DIV>',
  '<body><p>in body</p></body><p>outside body</p>',
  '<html><body><script>var x = "<p>no</p>";</script><p>visible</p><style>.a{}</style><noscript>ns</noscript></body></html>',
  '<div><p>nested para in div</p>text after para<div>inner div</div></div>',
  '<section><header>Header</header><main><article>Article</article><aside>Aside</aside></main><nav>Nav</nav><footer>Footer</footer></section><form>Form</form>',
  '<p>Before<img src="x.png" alt="alt text">after</p>',
  '<h2><a href="https://example.com/h">Heading link</a></h2>',
  '<ul><li><p>para in item</p></li><li>plain item that is rather long and will certainly need to wrap when the prefix is counted in</li></ul>',
  '<p>a\u200bb zero width</p><p>non\u00a0breaking\u00a0space</p>',
  '<div>   </div><p></p><p> </p><div><br></div><p>x</p>',
  '<center>centered</center><font face="Arial">font</font><span style="display:block">span block</span>',
  '<p>Your code is <strong>123456</strong>.</p><p>Expires in 10 minutes.</p><p style="font-size:12px">If you did not ask for it, ignore this email. <a href="https://example.com/unsubscribe?u=1&amp;t=2">Unsubscribe</a></p>',
  '',
  '   ',
  '<br><br>text<br><br>',
  '<pre></pre><blockquote></blockquote><h1></h1>',
  '<ol start="0"><li>zero</li></ol><ol start="-1"><li>minus</li><li>zero</li></ol>',
  '<li>orphan item</li><td>orphan cell</td>',
  '<p>unclosed <b>bold <i>italic</p><p>next',
  '<table><tr><td><table><tr><td>nested table</td></tr></table></td></tr></table>',
];

/** A deterministic pseudo-random generator (mulberry32). */
export function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TAGS = ['p', 'div', 'span', 'b', 'a', 'ul', 'ol', 'li', 'h1', 'h4', 'blockquote', 'pre', 'table', 'tr', 'td', 'br', 'hr', 'img', 'wbr', 'section', 'em'];
const WORDS = ['alpha', 'beta', 'gamma', 'x', 'longer-word-with-dashes', 'https://example.com/some/path', '&amp;', '&nbsp;', ' ', '\n', '  ', 'Zeta', 'ÿ', 'thisisaverylongwordthatwillnotfitonaline'.repeat(2)];

/** Random html from the elements above: nesting, attributes, whitespace and text in every arrangement. */
export function randomHtml(rnd: () => number, depth = 0): string {
  let out = '';
  const n = 1 + Math.floor(rnd() * 5);
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.45 || depth > 5) {
      const words = 1 + Math.floor(rnd() * 8);
      for (let w = 0; w < words; w++) out += WORDS[Math.floor(rnd() * WORDS.length)]! + (rnd() < 0.7 ? ' ' : '');
      continue;
    }
    const tag = TAGS[Math.floor(rnd() * TAGS.length)]!;
    if (tag === 'br' || tag === 'hr' || tag === 'img' || tag === 'wbr') {
      out += tag === 'img' ? '<img src="i.png" alt="pic">' : `<${tag}>`;
      continue;
    }
    let attrs = '';
    if (tag === 'a') attrs = rnd() < 0.2 ? ' href="#x"' : rnd() < 0.3 ? ' href="alpha"' : ' href="https://example.com/l"';
    if (tag === 'ol' && rnd() < 0.5) attrs = ` start="${Math.floor(rnd() * 12)}" type="${['1', 'a', 'I', 'i', 'A'][Math.floor(rnd() * 5)]}"`;
    out += `<${tag}${attrs}>${randomHtml(rnd, depth + 1)}</${tag}>`;
  }
  return out;
}
