// The visual builder's blocks: the schema's errors (each naming its path), the inline markup, escaping, merge
// tags passed through, every block kind as HTML (read back with htmlparser2), the text part, and the presets.
import t from 'tap';
import { DomUtils, parseDocument } from 'htmlparser2';
import type { Document, Element } from 'domhandler';
import { AppError } from '../../src/core/errors.js';
import { compileBlocks, parseBlocks, type BlockInput } from '../../src/services/templates/blocks.js';
import { isHttpsUrl, isLinkUrl } from '../../src/services/templates/block-schema.js';
import { contrast } from '../../src/services/templates/theme.js';
import { parseInline, type Paragraph } from '../../src/services/templates/inline-markup.js';
import { PRESETS } from '../../src/services/templates/presets.js';

const html = async (blocks: unknown) => parseDocument((await compileBlocks(blocks)).html);
const all = (doc: Document, name: string) => DomUtils.getElementsByTagName(name, doc);
const textOf = (el: Element) => DomUtils.textContent(el);
const byText = (doc: Document, name: string, text: string) => all(doc, name).filter((e) => textOf(e).trim() === text);

function errorOf(input: unknown): string {
  try {
    parseBlocks(input);
  } catch (err) {
    if (err instanceof AppError && err.status === 400 && err.code === 'invalid_request') return err.message;
    throw err;
  }
  return 'accepted';
}

t.test('a bad block is a 400 naming its path', async (t) => {
  const text = { type: 'text', text: 'Hi' };
  const section = (blocks: unknown[]) => ({ type: 'section', columns: [{ blocks }] });
  const cases: Array<[string, unknown, string]> = [
    ['not a list', { type: 'text' }, 'builder_blocks: must be an array'],
    ['empty', [], 'builder_blocks: must hold at least one block'],
    ['missing', undefined, 'Request body is missing required fields: builder_blocks'],
    ['not an object', [text, 5], 'builder_blocks.1: must be an object'],
    ['unknown type', [{ type: 'video' }], 'builder_blocks.0.type: must be one of section, text, image, button, divider, spacer, social, footer'],
    ['no type', [{ text: 'x' }], 'Request body is missing required fields: builder_blocks.0.type'],
    ['a required field', [{ type: 'image', src: 'https://x.example/a.png' }], 'Request body is missing required fields: builder_blocks.0.alt'],
    ['a misspelt field', [{ type: 'text', text: 'x', colour: '#000000' }], "builder_blocks.0: unknown field 'colour'"],
    ['a misspelt field of a column', [{ type: 'section', columns: [{ blocks: [], block: [] }] }], "builder_blocks.0.columns.0: unknown field 'block'"],
    ['a misspelt field of a link', [{ type: 'social', links: [{ network: 'x', url: 'https://x.com/a', icon: 'x.png' }] }], "builder_blocks.0.links.0: unknown field 'icon'"],
    [
      'a button deep in a section',
      [text, text, { type: 'section', columns: [{ blocks: [text, { type: 'button', label: 'Go', url: 'http://x.example/' }] }] }],
      'builder_blocks.2.columns.0.blocks.1.url: must be an https URL, a mailto: address or a merge tag',
    ],
    ['an image over http', [{ type: 'image', src: 'http://x.example/a.png', alt: '' }], 'builder_blocks.0.src: must be an https URL'],
    ['an image from a data: URL', [{ type: 'image', src: 'data:image/png;base64,AAAA', alt: '' }], 'builder_blocks.0.src: must be an https URL'],
    ['a javascript: link', [{ type: 'button', label: 'Go', url: 'javascript:alert(1)' }], 'builder_blocks.0.url: must be an https URL, a mailto: address or a merge tag'],
    ['a space in a URL', [{ type: 'button', label: 'Go', url: 'https://x.example/a b' }], 'builder_blocks.0.url: must be an https URL, a mailto: address or a merge tag'],
    [
      'a link in text to javascript:',
      [{ type: 'text', text: 'See [this](javascript:alert(1)) now' }],
      "builder_blocks.0.text: the link 'this' must go to an https URL, a mailto: address or a merge tag",
    ],
    [
      'a tag with both quotes in a URL',
      [{ type: 'button', label: 'Go', url: `{{ u | default: "it's" }}` }],
      `builder_blocks.0.url: a merge tag in a URL may quote its strings with ' or ", not both`,
    ],
    ['a section in a column', [section([{ type: 'section', columns: [] }])], 'builder_blocks.0.columns.0.blocks.0.type: must be one of text, image, button, divider, spacer, social, footer'],
    ['a colour by name', [text, { type: 'text', text: 'x', color: 'red' }], 'builder_blocks.1.color: must be a colour written #rrggbb'],
    ['an alignment', [{ type: 'text', text: 'x', align: 'justify' }], 'builder_blocks.0.align: must be left, center or right'],
    ['an empty text', [{ type: 'text', text: '' }], 'builder_blocks.0.text: must not be empty'],
    ['a label of two lines', [{ type: 'button', label: 'a\nb', url: 'https://x.example' }], 'builder_blocks.0.label: must be one line'],
    ['a spacer too tall', [{ type: 'spacer', height: 500 }], 'builder_blocks.0.height: must be at most 160'],
    ['five columns', [{ type: 'section', columns: Array.from({ length: 5 }, () => ({ blocks: [] })) }], 'builder_blocks.0.columns: must hold at most 4 columns'],
    ['no column', [{ type: 'section', columns: [] }], 'builder_blocks.0.columns: must hold at least one column'],
    [
      'widths short of 100',
      [{ type: 'section', columns: [{ width: 50, blocks: [] }, { width: 40, blocks: [] }] }],
      'builder_blocks.0.columns: column widths must add up to 100',
    ],
    [
      'widths that leave no room',
      [{ type: 'section', columns: [{ width: 95, blocks: [] }, { blocks: [] }] }],
      'builder_blocks.0.columns: column widths must leave at least 10 for each column without one (they add up to 95)',
    ],
    ['a network', [{ type: 'social', links: [{ network: 'myspace', url: 'https://x.example' }] }], 'builder_blocks.0.links.0.network: must be one of website, facebook, instagram, x, linkedin, youtube, tiktok, github, mastodon, bluesky'],
    [
      'a button hard to read',
      [{ type: 'button', label: 'Go', url: 'https://x.example', background_color: '#ffff00', text_color: '#ffffff' }],
      'builder_blocks.0.text_color: contrast with background_color is 1.1:1, at least 3:1 is needed',
    ],
    [
      'text hard to read on its section',
      [{ type: 'section', background_color: '#1e3a8a', columns: [{ blocks: [{ type: 'text', text: 'x', color: '#111111' }] }] }],
      'builder_blocks.0.columns.0.blocks.0.color: contrast with the background (#1e3a8a) is 1.8:1, at least 3:1 is needed',
    ],
    [
      'the default text colour on a dark section',
      [{ type: 'section', background_color: '#1e3a8a', columns: [{ blocks: [{ type: 'text', text: 'x' }] }] }],
      'builder_blocks.0.columns.0.blocks.0.color: the default color (#1f2937): its contrast with the background (#1e3a8a) is 1.4:1, at least 3:1 is needed',
    ],
    [
      "a footer's grey on a column's colour",
      [{ type: 'section', columns: [{ background_color: '#374151', blocks: [{ type: 'footer' }] }] }],
      'builder_blocks.0.columns.0.blocks.0.color: the default color (#6b7280): its contrast with the background (#374151) is 2.1:1, at least 3:1 is needed',
    ],
    ['too many blocks', Array.from({ length: 101 }, () => text), 'builder_blocks: must hold at most 100 blocks'],
    [
      'too many in all',
      Array.from({ length: 7 }, () => ({ type: 'section', columns: [{ blocks: Array.from({ length: 50 }, () => text) }] })),
      'builder_blocks: must hold at most 300 blocks in all (it holds 357)',
    ],
  ];
  for (const [name, input, message] of cases) t.equal(errorOf(input), message, name);

  // And what is fine: merge tags for (or in) URLs, mailto:, widths that add up, a decorative image.
  const fine: BlockInput[] = [
    { type: 'button', label: 'Reset', url: '{{ reset_url }}' },
    { type: 'button', label: 'Order', url: 'https://shop.example/orders/{{ order_id }}?ref={{ ref | default: "mail" }}' },
    { type: 'text', text: 'Write to [us](mailto:help@x.example) or [your page]({{ page_url }}).' },
    { type: 'image', src: '{{ logo_url }}', alt: '' },
    { type: 'section', columns: [{ width: 70, blocks: [] }, { width: 30, blocks: [] }] },
    { type: 'section', columns: [{ width: 50, blocks: [] }, { blocks: [] }, { blocks: [] }] },
    {
      type: 'section',
      background_color: '#1e3a8a',
      columns: [{ blocks: [{ type: 'text', text: 'x', color: '#ffffff' }, { type: 'social', color: '#dbeafe', links: [{ network: 'x', url: 'https://x.com/a' }] }, { type: 'footer', color: '#dbeafe' }] }],
    },
  ];
  t.equal(errorOf(fine), 'accepted');
});

t.test('URL rules', async (t) => {
  for (const ok of ['https://x.example', 'https://x.example/a?b=c#d', '{{ u }}', '{{{ u }}}', '{{ base }}/path', 'https://x.example/{{ id }}']) t.ok(isHttpsUrl(ok), ok);
  for (const bad of ['http://x.example', 'https://', 'x.example', '//x.example', 'mailto:a@x.example', 'https://x.example/{{ a }} b', '', ' {{ u }} x'])
    t.notOk(isHttpsUrl(bad), bad);
  t.ok(isLinkUrl('mailto:a@x.example'));
  t.notOk(isLinkUrl('mailto:'));
  t.notOk(isLinkUrl('tel:+3312345678'));
  t.equal(contrast('#ffffff', '#000000').toFixed(0), '21');
  t.equal(contrast('#2563eb', '#2563eb'), 1);
});

t.test('the inline markup', async (t) => {
  const one = (s: string): Paragraph => {
    const ps = parseInline(s);
    t.equal(ps.length, 1, `one paragraph: ${s}`);
    return ps[0]!;
  };
  const text = (value: string) => ({ kind: 'text', value });
  t.same(one('a **b** c'), [text('a '), { kind: 'strong', children: [text('b')] }, text(' c')]);
  t.same(one('*i*'), [{ kind: 'em', children: [text('i')] }]);
  t.same(one('**b *i* b**'), [{ kind: 'strong', children: [text('b '), { kind: 'em', children: [text('i')] }, text(' b')] }]);
  t.same(one('***x***'), [{ kind: 'em', children: [{ kind: 'strong', children: [text('x')] }] }], 'bold and italic at once');
  t.same(one('5 * 3 = 15'), [text('5 * 3 = 15')], 'a star between spaces is text');
  t.same(one('**never closed'), [text('**never closed')]);
  t.same(one('\\*not italic\\*'), [text('*not italic*')], 'backslash escapes');
  t.same(one('a\\\\b'), [text('a\\b')]);
  t.same(one('see [the docs](https://x.example/a_(b\\)) now'), [
    text('see '),
    { kind: 'link', url: 'https://x.example/a_(b)', children: [text('the docs')] },
    text(' now'),
  ]);
  t.same(one('[**bold** label]({{ url }})'), [{ kind: 'link', url: '{{ url }}', children: [{ kind: 'strong', children: [text('bold')] }, text(' label')] }]);
  t.same(one('[outer [inner](https://i.example)](https://o.example)'), [
    text('[outer '),
    { kind: 'link', url: 'https://i.example', children: [text('inner')] },
    text('](https://o.example)'),
  ], 'no link inside a link');
  t.same(one('[no url] and [space](https://x.example/a b)'), [text('[no url] and [space](https://x.example/a b)')]);
  t.same(one('*a [b* c](https://x.example)'), [text('*a '), { kind: 'link', url: 'https://x.example', children: [text('b* c')] }], 'emphasis does not cross into a label');
  t.same(one('{{ a | default: "*x*" }} and {% if b %}[c]{% endif %}'), [
    { kind: 'tag', value: '{{ a | default: "*x*" }}' },
    text(' and '),
    { kind: 'tag', value: '{% if b %}' },
    text('[c]'),
    { kind: 'tag', value: '{% endif %}' },
  ], 'merge tags are atoms');
  t.same(one('{{ unclosed'), [text('{{ unclosed')]);
  t.same(one('line\nnext'), [text('line'), { kind: 'break' }, text('next')]);
  t.same(parseInline('one\n\n  \n\ntwo\r\n\r\nthree'), [[text('one')], [text('two')], [text('three')]], 'blank lines part paragraphs');
  t.same(parseInline('\n\n'), []);
});

t.test('user text is escaped; merge tags go through unchanged', async (t) => {
  const tag = '{{ contact.first_name | default: "friend" }}';
  const { html, text } = await compileBlocks([
    { type: 'text', text: `Hello ${tag} <script>alert(1)</script> & "quotes" **<b>bold</b>**` },
    { type: 'button', label: `<img src=x onerror=alert(1)> ${tag}`, url: 'https://x.example/?a=1&b="2"' },
    { type: 'image', src: 'https://x.example/a.png', alt: `A "quoted" <alt> ${tag}` },
    { type: 'social', links: [{ network: 'x', url: 'https://x.com/a', label: '<i>me</i>' }] },
    { type: 'footer', text: 'Acme <Inc> & co', unsubscribe_text: '<u>Leave</u>' },
    { type: 'button', label: 'Go', url: `{{ base_url | default: "https://x.example" }}/o/{{ id }}` },
  ]);
  const doc = parseDocument(html);
  t.same(all(doc, 'script'), [], 'no script element');
  t.same(
    DomUtils.findAll((e) => Object.keys(e.attribs).some((a) => a.startsWith('on')), doc.children),
    [],
    'no event handler attribute',
  );
  t.same(all(doc, 'b').length + all(doc, 'u').length + all(doc, 'i').length, 0, 'no element from user text');
  t.match(html, `Hello ${tag} &lt;script&gt;alert(1)&lt;/script&gt; &amp; "quotes" <strong>&lt;b&gt;bold&lt;/b&gt;</strong>`);
  t.match(html, `&lt;img src=x onerror=alert(1)&gt; ${tag}`);
  t.ok(html.includes('href="https://x.example/?a=1&amp;b=&quot;2&quot;"'), 'a URL escaped as an attribute');
  const img = all(doc, 'img')[0]!;
  t.equal(img.attribs.alt, `A "quoted" <alt> {{ contact.first_name | default: 'friend' }}`, 'alt read back as written, its tag in single quotes');
  t.match(html, '&lt;i&gt;me&lt;/i&gt;');
  t.match(html, 'Acme &lt;Inc&gt; &amp; co');
  t.match(html, '&lt;u&gt;Leave&lt;/u&gt;');
  t.ok(html.includes(`href="{{ base_url | default: 'https://x.example' }}/o/{{ id }}"`), "tags in an attribute: their strings in single quotes");
  t.notMatch(html, /mtag[0-9a-f]{12}n/, 'no placeholder left');
  t.notMatch(html, /&#123;|&lbrace;|&#x7b;/i, 'no brace encoded');

  // The text part is plain: nothing escaped, tags as written.
  t.match(text, `Hello ${tag} <script>alert(1)</script> & "quotes" <b>bold</b>`);
  t.match(text, `<img src=x onerror=alert(1)> ${tag}: https://x.example/?a=1&b="2"`);

  // A tag is Liquid's source, not HTML: whatever it holds is copied as it is, for the renderer to read.
  const tags = '{{{ raw_html }}} {% if vip %}VIP{% endif %} {{ a | default: "<b>&" }} {{ b | append: "**[x](y)**" }}';
  const both = await compileBlocks([{ type: 'text', text: tags }]);
  t.ok(both.html.includes(`>${tags}</p>`), 'tags in text: byte for byte');
  t.equal(both.text, `${tags}\n`);
});

t.test('a placeholder word in the blocks themselves is left alone', async (t) => {
  // The vault picks a word the input does not hold; text that looks like one stays text.
  const { html } = await compileBlocks([{ type: 'text', text: 'mtag000000000000n0x {{ a }}' }]);
  t.match(html, 'mtag000000000000n0x {{ a }}');
});

t.test('every block kind, as HTML', async (t) => {
  const doc = await html([
    { type: 'text', variant: 'heading', text: 'Title' },
    { type: 'text', variant: 'subheading', text: 'Sub' },
    { type: 'text', text: 'One **bold** *em* [link](https://l.example)\nline two\n\nPara two', align: 'center', color: '#333333' },
    { type: 'text', variant: 'small', text: 'Fine print' },
    { type: 'image', src: 'https://x.example/a.png', alt: 'Logo', width: 200, href: 'https://x.example' },
    { type: 'image', src: 'https://x.example/deco.png', alt: '' },
    { type: 'button', label: 'Press', url: 'https://b.example', background_color: '#111827', text_color: '#ffffff' },
    { type: 'divider', color: '#ff0000', thickness: 2 },
    { type: 'spacer', height: 40 },
    { type: 'social', links: [{ network: 'github', url: 'https://github.com/x' }, { network: 'website', url: 'https://x.example', label: 'Our site' }] },
    {
      type: 'section',
      background_color: '#fef3c7',
      padding: 32,
      columns: [
        { width: 70, blocks: [{ type: 'text', text: 'Left' }] },
        { width: 30, background_color: '#ffffff', vertical_align: 'middle', blocks: [{ type: 'text', text: 'Right' }] },
      ],
    },
    { type: 'section', columns: [{ blocks: [] }, { blocks: [] }, { blocks: [] }] },
    { type: 'footer', text: 'Acme, 1 Main St' },
    { type: 'footer', unsubscribe: false, text: 'Transactional' },
  ]);

  t.test('text', async (t) => {
    t.equal(byText(doc, 'h1', 'Title').length, 1);
    t.equal(byText(doc, 'h2', 'Sub').length, 1);
    const p = all(doc, 'p').find((e) => textOf(e).startsWith('One'))!;
    t.equal(DomUtils.getOuterHTML(p).replace(/ style="[^"]*"/g, ''), '<p>One <strong>bold</strong> <em>em</em> <a href="https://l.example" target="_blank">link</a><br>line two</p>');
    const next = DomUtils.nextElementSibling(p)!;
    t.equal(textOf(next), 'Para two', 'a blank line starts a paragraph');
    const div = p.parent as Element;
    t.match(div.attribs.style, /color:#333333/);
    t.match(div.attribs.style, /text-align:center/);
    const small = byText(doc, 'p', 'Fine print')[0]!;
    t.match(small.attribs.style, /font-size:13px/);
  });

  t.test('image', async (t) => {
    const [logo, deco] = all(doc, 'img');
    t.equal(logo!.attribs.src, 'https://x.example/a.png');
    t.equal(logo!.attribs.alt, 'Logo');
    t.equal(logo!.attribs.width, '200');
    t.match(logo!.attribs.style, /width:100%/, 'shrinks with its column');
    t.equal((logo!.parent as Element).name, 'a');
    t.equal((logo!.parent as Element).attribs.href, 'https://x.example');
    t.equal(deco!.attribs.alt, '', 'a decorative image says so');
    t.equal(all(doc, 'img').length, 2, 'no other image (no social icons from elsewhere)');
  });

  t.test('button', async (t) => {
    const a = byText(doc, 'a', 'Press')[0]!;
    t.equal(a.attribs.href, 'https://b.example');
    t.match(a.attribs.style, /background:#111827/);
    t.match(a.attribs.style, /color:#ffffff/);
    const cell = a.parent as Element;
    t.equal(cell.attribs.bgcolor, '#111827', 'the cell is painted too, for clients that drop the link style');
  });

  t.test('divider and spacer', async (t) => {
    const rules = all(doc, 'p').filter((p) => /border-top:\s*solid 2px #ff0000/.test(p.attribs.style ?? ''));
    t.equal(rules.length, 1);
    t.ok(all(doc, 'div').some((d) => /height:40px/.test(d.attribs.style ?? '')), 'a 40 px spacer');
  });

  t.test('social', async (t) => {
    t.equal(byText(doc, 'a', 'GitHub')[0]!.attribs.href, 'https://github.com/x');
    t.equal(byText(doc, 'a', 'Our site')[0]!.attribs.href, 'https://x.example');
  });

  t.test('sections and columns', async (t) => {
    const classes = all(doc, 'div').map((d) => d.attribs.class ?? '');
    t.ok(classes.some((c) => c.includes('mj-column-per-70')) && classes.some((c) => c.includes('mj-column-per-30')), '70 % and 30 %');
    t.equal(classes.filter((c) => /mj-column-per-33-333/.test(c)).length, 3, 'three columns share the width');
    const coloured = all(doc, 'div').find((d) => /background-color:#fef3c7/.test(d.attribs.style ?? ''))!;
    t.match(coloured.attribs.style, /max-width:600px/);
    t.notMatch(coloured.attribs.class ?? '', /eb-surface/, 'a section of its own colour keeps it in the dark');
    t.equal(byText(doc, 'p', 'Left').length, 1);
  });

  t.test('footer', async (t) => {
    const links = all(doc, 'a').filter((a) => a.attribs.href === '{{ unsubscribe_url }}');
    t.equal(links.length, 1, 'one unsubscribe link: the transactional footer has none');
    t.equal(textOf(links[0]!), 'Unsubscribe');
    t.equal(byText(doc, 'p', 'Acme, 1 Main St').length, 1);
    t.equal(byText(doc, 'p', 'Transactional').length, 1);
  });

  t.test('the page around them', async (t) => {
    t.equal(DomUtils.findOne((e) => e.name === 'meta' && e.attribs.name === 'viewport', doc.children)?.attribs.content, 'width=device-width, initial-scale=1');
    t.equal(DomUtils.findOne((e) => e.name === 'meta' && e.attribs.name === 'color-scheme', doc.children)?.attribs.content, 'light dark');
    t.same(all(doc, 'link'), [], 'nothing fetched from elsewhere (no web fonts)');
    const css = all(doc, 'style').map(textOf).join('\n');
    t.match(css, /@media only screen and \(min-width:480px\)/, 'columns side by side above 480 px, stacked below');
    t.match(css, /@media \(prefers-color-scheme: dark\)/);
    t.match(css, /\[data-ogsc\]/, "Outlook.com's dark mode");
    const comments = DomUtils.filter((n) => n.type === 'comment', doc, true);
    t.ok(comments.some((c) => 'data' in c && String(c.data).startsWith('[if mso')), 'Outlook gets its fixed-width tables in a conditional comment');
    t.ok(all(doc, 'table').every((tb) => tb.attribs.role === 'presentation'), 'layout tables say so to screen readers');
    t.ok(all(doc, 'img').every((img) => 'alt' in img.attribs), 'every image has an alt');
  });
});

t.test('the text part', async (t) => {
  const { text } = await compileBlocks([
    { type: 'text', variant: 'heading', text: 'Hello {{ name }}' },
    { type: 'text', text: 'A **bold** claim, a [link](https://l.example) and https://bare.example: [https://same.example](https://same.example)\nnext line\n\nNew paragraph' },
    { type: 'image', src: 'https://x.example/a.png', alt: 'Chart of sales' },
    { type: 'image', src: 'https://x.example/b.png', alt: '', href: 'https://x.example/b' },
    { type: 'image', src: 'https://x.example/c.png', alt: '' },
    { type: 'button', label: 'Open', url: '{{ url }}' },
    { type: 'divider' },
    { type: 'spacer' },
    { type: 'section', columns: [{ blocks: [{ type: 'text', text: 'Total' }] }, { blocks: [{ type: 'text', text: '{{ total }}' }] }] },
    { type: 'section', columns: [{ blocks: [{ type: 'text', text: 'A' }, { type: 'text', text: 'a' }] }, { blocks: [] }, { blocks: [{ type: 'button', label: 'B', url: 'https://b.example' }] }] },
    { type: 'social', links: [{ network: 'github', url: 'https://github.com/x' }] },
    { type: 'footer', text: 'Acme', unsubscribe_text: 'Stop these emails' },
  ]);
  t.equal(
    text,
    [
      'Hello {{ name }}',
      '',
      'A bold claim, a link (https://l.example) and https://bare.example: https://same.example',
      'next line',
      '',
      'New paragraph',
      '',
      '[Chart of sales]',
      '',
      'https://x.example/b',
      '',
      'Open: {{ url }}',
      '',
      '----------',
      '',
      'Total: {{ total }}',
      '',
      'A',
      'a',
      '',
      'B: https://b.example',
      '',
      'GitHub: https://github.com/x',
      '',
      'Acme',
      '',
      'Stop these emails: {{ unsubscribe_url }}',
      '',
    ].join('\n'),
  );
});

/** The variables a template's text names: each tag's first word, without contact fields and the unsubscribe URL. */
function variablesIn(source: string): { required: Set<string>; optional: Set<string> } {
  const required = new Set<string>();
  const optional = new Set<string>();
  for (const [, inner] of source.matchAll(/\{\{\{?\s*([^}]*?)\s*\}?\}\}/g)) {
    const name = /^[A-Za-z_][\w]*/.exec(inner!)?.[0];
    if (!name || name === 'contact' || name === 'unsubscribe_url') continue;
    (/\|\s*default\s*:/.test(inner!) ? optional : required).add(name);
  }
  return { required, optional };
}

t.test('the presets', async (t) => {
  t.same(
    PRESETS.map((p) => p.id),
    ['welcome', 'password-reset', 'receipt', 'newsletter', 'announcement'],
    'in their fixed order',
  );
  for (const preset of PRESETS) {
    t.test(preset.id, async (t) => {
      t.ok(preset.name && preset.description && preset.subject, 'named, described, with a subject');
      t.doesNotThrow(() => parseBlocks(preset.blocks), 'its blocks are valid');
      const { html, text } = await compileBlocks(preset.blocks);
      const { required } = variablesIn(`${preset.subject}\n${JSON.stringify(preset.blocks)}`);
      t.same([...required].sort(), [...preset.variables].sort(), 'variables: every variable it uses without a default');
      for (const v of preset.variables) {
        t.match(html + preset.subject, new RegExp(`\\{\\{ ${v}\\b`), `${v} in the html or the subject`);
        t.match(text + preset.subject, new RegExp(`\\{\\{ ${v}\\b`), `${v} in the text or the subject`);
      }
      const doc = parseDocument(html);
      t.ok(all(doc, 'img').every((img) => (img.attribs.alt ?? '').length > 0), 'its images say what they show');
      const unsubscribe = html.includes('href="{{ unsubscribe_url }}"');
      t.equal(unsubscribe, preset.variables.length === 0, 'broadcasts (no variables) have the unsubscribe link; transactional mail has none');
      t.equal(text.includes('{{ unsubscribe_url }}'), unsubscribe, 'and so does the text part');
      t.ok(html.length < 60_000, 'well under the 102 KB at which Gmail clips a message');
    });
  }
});
