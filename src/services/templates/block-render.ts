// A checked block tree written out twice: as MJML source (which mjml turns into the email's HTML) and as the
// text part. Pure. Merge tags never reach mjml: each is stood in for by a placeholder word that nothing in
// mjml rewrites, and `TagVault.restore` puts the tags back, byte for byte, into the HTML mjml made.
import { randomBytes } from 'node:crypto';
import { parseInline, splitTags, textOf, type Inline, type Paragraph } from './inline-markup.js';
import { THEME } from './theme.js';
import { SOCIAL_NETWORKS, type Block, type Column, type ContentBlock, type SectionBlock } from './block-schema.js';

/** The container's width on a wide screen; narrower screens get all of theirs. */
export const CONTAINER_PX = 600;
const GUTTER = '24px';

export class TagVault {
  private readonly tags: Array<{ tag: string; inAttribute: boolean }> = [];
  private readonly word: string;

  /** `avoid`: text the placeholders must never occur in (the tree's own characters). */
  constructor(avoid: string) {
    let word: string;
    do word = `mtag${randomBytes(6).toString('hex')}n`;
    while (avoid.includes(word));
    this.word = word;
  }

  keep(tag: string, inAttribute: boolean): string {
    this.tags.push({ tag, inAttribute });
    return `${this.word}${this.tags.length - 1}x`;
  }

  restore(html: string): string {
    return html.replace(new RegExp(`${this.word}(\\d+)x`, 'g'), (_, i: string) => {
      const { tag, inAttribute } = this.tags[Number(i)]!;
      // Liquid reads '…' and "…" alike; inside a double-quoted attribute only the first can stand.
      return inAttribute ? tag.replaceAll('"', "'") : tag;
    });
  }
}

const escapeText = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
const escapeAttribute = (s: string) => escapeText(s).replaceAll('"', '&quot;');

/** Text and merge tags as element content. */
function textHtml(s: string, vault: TagVault): string {
  return splitTags(s)
    .map((p) => (p.kind === 'tag' ? vault.keep(p.value, false) : escapeText(p.value)))
    .join('');
}

/** Text and merge tags as an attribute's value (between double quotes). */
function attributeHtml(s: string, vault: TagVault): string {
  return splitTags(s)
    .map((p) => (p.kind === 'tag' ? vault.keep(p.value, true) : escapeAttribute(p.value)))
    .join('');
}

function inlineHtml(nodes: readonly Inline[], vault: TagVault, linkColour: string): string {
  return nodes
    .map((n) => {
      switch (n.kind) {
        case 'text':
          return escapeText(n.value);
        case 'tag':
          return vault.keep(n.value, false);
        case 'break':
          return '<br />';
        case 'strong':
          return `<strong>${inlineHtml(n.children, vault, linkColour)}</strong>`;
        case 'em':
          return `<em>${inlineHtml(n.children, vault, linkColour)}</em>`;
        case 'link':
          return `<a href="${attributeHtml(n.url, vault)}" style="color:${linkColour};text-decoration:underline;" target="_blank">${inlineHtml(n.children, vault, linkColour)}</a>`;
      }
    })
    .join('');
}

const PARAGRAPH_STYLE = {
  paragraph: { tag: 'p', style: '' },
  heading: { tag: 'h1', style: 'font-size:28px;line-height:1.25;font-weight:700;' },
  subheading: { tag: 'h2', style: 'font-size:20px;line-height:1.3;font-weight:700;' },
  small: { tag: 'p', style: 'font-size:13px;line-height:1.5;' },
} as const;

function paragraphsHtml(paragraphs: readonly Paragraph[], variant: keyof typeof PARAGRAPH_STYLE, vault: TagVault, linkColour: string): string {
  const { tag, style } = PARAGRAPH_STYLE[variant];
  return paragraphs
    .map((p, i) => {
      const margin = i === paragraphs.length - 1 ? '0' : '0 0 16px 0';
      return `<${tag} style="margin:${margin};${style}">${inlineHtml(p, vault, linkColour)}</${tag}>`;
    })
    .join('');
}

// The dark scheme: `prefers-color-scheme` for Apple Mail, iOS and Outlook for Mac, `[data-ogsc]`/`[data-ogsb]`
// for Outlook.com. It darkens only what has the page's own colours (class names below); a section or column
// with a background of its own keeps it, and its text keeps the colours chosen (checked for contrast).
const DARK_CSS = (() => {
  const d = THEME.dark;
  // c: the prefix of a rule that sets a text colour, b: of one that sets a background.
  const rules = (c: string, b: string) => `
    ${b}.eb-page, ${b}.eb-page > div { background-color:${d.page} !important; }
    ${b}.eb-surface, ${b}.eb-surface > table { background:${d.surface} !important; background-color:${d.surface} !important; }
    ${c}.eb-plain .eb-text div, ${c}.eb-plain .eb-text h1, ${c}.eb-plain .eb-text h2, ${c}.eb-plain .eb-text p { color:${d.text} !important; }
    ${c}.eb-plain .eb-muted div, ${c}.eb-plain .eb-muted p { color:${d.muted} !important; }
    ${c}.eb-plain .eb-text a, ${c}.eb-plain .eb-muted a { color:${d.link} !important; }
    ${c}.eb-plain .eb-rule p { border-top-color:${d.rule} !important; }`;
  return `
    :root { color-scheme: light dark; supported-color-schemes: light dark; }
    @media (prefers-color-scheme: dark) {
    body { background-color:${d.page} !important; }${rules('', '')}
    }${rules('[data-ogsc] ', '[data-ogsb] ')}
    a { word-break: break-word; }`;
})();

const attrs = (pairs: Record<string, string | undefined>) =>
  Object.entries(pairs)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => ` ${k}="${v}"`)
    .join('');

function contentMjml(block: ContentBlock, vault: TagVault): string {
  switch (block.type) {
    case 'text': {
      const small = block.variant === 'small';
      const colour = block.color ?? (small ? THEME.muted : THEME.text);
      const body = paragraphsHtml(parseInline(block.text), block.variant, vault, block.color ?? THEME.link);
      return `<mj-text${attrs({ align: block.align, color: colour, 'css-class': small ? 'eb-muted' : 'eb-text' })}>${body}</mj-text>`;
    }
    case 'image':
      return `<mj-image${attrs({
        src: attributeHtml(block.src, vault),
        alt: attributeHtml(block.alt, vault),
        href: block.href === undefined ? undefined : attributeHtml(block.href, vault),
        target: block.href === undefined ? undefined : '_blank',
        width: block.width === undefined ? undefined : `${block.width}px`,
        // Without a width of its own, an image fills its column, on a phone too (mjml would keep its desktop width).
        'fluid-on-mobile': block.width === undefined ? 'true' : undefined,
        align: block.align,
      })} />`;
    case 'button':
      return `<mj-button${attrs({
        href: attributeHtml(block.url, vault),
        align: block.align,
        'background-color': block.background_color,
        color: block.text_color,
        width: block.full_width ? '100%' : undefined,
      })}>${textHtml(block.label, vault)}</mj-button>`;
    case 'divider':
      return `<mj-divider${attrs({
        'border-color': block.color ?? THEME.rule,
        'border-width': `${block.thickness}px`,
        'css-class': block.color === undefined ? 'eb-rule' : undefined,
      })} />`;
    case 'spacer':
      return `<mj-spacer height="${block.height}px" />`;
    case 'social': {
      const links = block.links.map(
        (l) =>
          `<a href="${attributeHtml(l.url, vault)}" style="color:${block.color ?? THEME.link};text-decoration:none;font-weight:600;" target="_blank">${textHtml(l.label ?? SOCIAL_NETWORKS[l.network], vault)}</a>`,
      );
      // Plain links, no icons: an icon is an image from someone's server, blocked by default in many clients.
      return `<mj-text${attrs({ align: block.align, 'font-size': '14px', 'css-class': 'eb-text' })}>${links.join(' &middot; ')}</mj-text>`;
    }
    case 'footer': {
      const paragraphs = block.text === undefined ? [] : parseInline(block.text);
      const colour = block.color ?? THEME.muted;
      const unsubscribe = block.unsubscribe
        ? `<p style="margin:${paragraphs.length ? '12px' : '0'} 0 0 0;"><a href="${vault.keep('{{ unsubscribe_url }}', true)}" style="color:${colour};text-decoration:underline;" target="_blank">${textHtml(block.unsubscribe_text, vault)}</a></p>`
        : '';
      return `<mj-text${attrs({
        align: block.align,
        color: colour,
        'font-size': '13px',
        'line-height': '1.5',
        'css-class': 'eb-muted',
        'padding-top': '16px',
        'padding-bottom': '16px',
      })}>${paragraphsHtml(paragraphs, 'paragraph', vault, colour)}${unsubscribe}</mj-text>`;
    }
  }
}

function columnMjml(column: Column, width: string, plainSection: boolean, vault: TagVault): string {
  const plain = plainSection && column.background_color === undefined;
  return `<mj-column${attrs({
    width,
    'background-color': column.background_color,
    'vertical-align': column.vertical_align,
    'css-class': plain ? 'eb-plain' : undefined,
  })}>${column.blocks.map((b) => contentMjml(b, vault)).join('\n')}</mj-column>`;
}

function sectionMjml(section: SectionBlock, vault: TagVault): string {
  const given = section.columns.reduce((sum, c) => sum + (c.width ?? 0), 0);
  const open = section.columns.filter((c) => c.width === undefined).length;
  const share = open === 0 ? 0 : (100 - given) / open;
  const plain = section.background_color === undefined;
  const columns = section.columns.map((c) => columnMjml(c, `${Number((c.width ?? share).toFixed(4))}%`, plain, vault));
  return `<mj-section${attrs({
    'background-color': section.background_color ?? THEME.surface,
    padding: `${section.padding}px 0`,
    'css-class': plain ? 'eb-surface' : undefined,
  })}>${columns.join('\n')}</mj-section>`;
}

/** Content blocks at the top of the tree stand, one after another, in one-column sections of their own. */
function sectionsOf(blocks: readonly Block[]): SectionBlock[] {
  const out: SectionBlock[] = [];
  let loose: ContentBlock[] = [];
  const close = () => {
    if (loose.length) out.push({ type: 'section', padding: 16, columns: [{ vertical_align: 'top', blocks: loose }] });
    loose = [];
  };
  for (const b of blocks) {
    if (b.type === 'section') {
      close();
      out.push(b);
    } else loose.push(b);
  }
  close();
  return out;
}

/** The MJML document for a checked tree; its merge tags are in the vault. */
export function toMjml(blocks: readonly Block[], vault: TagVault): string {
  const sections = sectionsOf(blocks).map((s) => sectionMjml(s, vault));
  return `<mjml>
  <mj-head>
    <mj-attributes>
      <mj-all font-family="${THEME.font}" />
      <mj-text font-size="16px" line-height="1.6" color="${THEME.text}" padding="8px ${GUTTER}" />
      <mj-image padding="8px ${GUTTER}" />
      <mj-button font-size="16px" font-weight="600" line-height="1.25" border-radius="6px" inner-padding="12px 24px" padding="12px ${GUTTER}" />
      <mj-divider padding="16px ${GUTTER}" />
    </mj-attributes>
    <mj-raw><meta name="color-scheme" content="light dark" /><meta name="supported-color-schemes" content="light dark" /></mj-raw>
    <mj-style>${DARK_CSS}</mj-style>
  </mj-head>
  <mj-body width="${CONTAINER_PX}px" background-color="${THEME.page}" css-class="eb-page">
    <mj-wrapper padding="24px 0">
${sections.join('\n')}
    </mj-wrapper>
  </mj-body>
</mjml>`;
}

// The text part: each block as a reader of plain text expects it, blocks apart by a blank line.

function contentText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return parseInline(block.text)
        .map((p) => textOf(p))
        .join('\n\n');
    case 'image': {
      const alt = block.alt.trim() === '' ? '' : `[${block.alt}]`;
      if (block.href === undefined) return alt;
      return alt ? `${alt} (${block.href})` : block.href;
    }
    case 'button':
      return `${block.label}: ${block.url}`;
    case 'divider':
      return '----------';
    case 'spacer':
      return '';
    case 'social':
      return block.links.map((l) => `${l.label ?? SOCIAL_NETWORKS[l.network]}: ${l.url}`).join('\n');
    case 'footer': {
      const parts = block.text === undefined ? [] : parseInline(block.text).map((p) => textOf(p));
      if (block.unsubscribe) parts.push(`${block.unsubscribe_text}: {{ unsubscribe_url }}`);
      return parts.join('\n\n');
    }
  }
}

/**
 * A section of several columns: a row of one-line texts reads as one line ("Tax: 1.20"); other columns come
 * one after another, the blocks of each on consecutive lines.
 */
function sectionText(section: SectionBlock): string {
  const columns = section.columns.map((c) => c.blocks.map(contentText).filter((t) => t.trim() !== ''));
  if (columns.length === 1) return columns[0]!.join('\n\n');
  const oneLine = section.columns.every((c) => c.blocks.length === 1 && c.blocks[0]!.type === 'text') && columns.every((c) => c.length === 1 && !c[0]!.includes('\n'));
  if (oneLine) return columns.map((c) => c[0]!).join(columns.length === 2 ? ': ' : ' | ');
  return columns
    .filter((c) => c.length > 0)
    .map((c) => c.join('\n'))
    .join('\n\n');
}

export function toText(blocks: readonly Block[]): string {
  const parts = sectionsOf(blocks).map(sectionText);
  return `${parts.filter((p) => p.trim() !== '').join('\n\n')}\n`;
}
