// The text a visual builder's block carries: plain text with merge tags, and (in text blocks and the footer)
// a small inline markup. Pure: strings in, a typed tree out; the renderers below write it as HTML or text.
//
// The markup (documented in docs/API.md, Templates):
//   **bold**            *italic*            [label](url)   (url: https, mailto: or a merge tag)
//   a line break        a blank line starts a new paragraph
//   \* \[ \] \( \) \\   a character taken literally
// Merge tags — {{ … }}, {{{ … }}} and {% … %} — are atoms: copied through unchanged, markup inside them not read.
// Everything else is text: `<b>` in a block shows as the characters `<b>`, never as a tag.

/** A merge tag, or a run of inline content. */
export type Inline =
  | { kind: 'text'; value: string }
  | { kind: 'tag'; value: string }
  | { kind: 'break' }
  | { kind: 'strong'; children: Inline[] }
  | { kind: 'em'; children: Inline[] }
  | { kind: 'link'; url: string; children: Inline[] };

export type Paragraph = Inline[];

/** Text and merge tags: what a URL, a button's label or an image's alt may hold. */
export type Piece = { kind: 'text'; value: string } | { kind: 'tag'; value: string };

const TAG_FORMS: ReadonlyArray<readonly [string, string]> = [
  ['{{{', '}}}'],
  ['{{', '}}'],
  ['{%', '%}'],
];

/** The merge tag that starts at `i`, if one does and is closed. */
function tagAt(s: string, i: number): string | null {
  for (const [open, close] of TAG_FORMS) {
    if (!s.startsWith(open, i)) continue;
    const end = s.indexOf(close, i + open.length);
    return end < 0 ? null : s.slice(i, end + close.length);
  }
  return null;
}

/** Splits a string into text and merge tags (no markup). */
export function splitTags(s: string): Piece[] {
  const out: Piece[] = [];
  let text = '';
  for (let i = 0; i < s.length; ) {
    const tag = s[i] === '{' ? tagAt(s, i) : null;
    if (tag === null) {
      text += s[i];
      i += 1;
      continue;
    }
    if (text) out.push({ kind: 'text', value: text });
    text = '';
    out.push({ kind: 'tag', value: tag });
    i += tag.length;
  }
  if (text) out.push({ kind: 'text', value: text });
  return out;
}

const ESCAPABLE = new Set(['\\', '*', '[', ']', '(', ')', '_']);

type Token =
  | Piece
  | { kind: 'break' }
  | { kind: 'paragraph' }
  | { kind: 'stars'; count: number; canOpen: boolean; canClose: boolean }
  | { kind: 'open-bracket' }
  | { kind: 'link-close'; url: string; raw: string };

const isSpace = (c: string | undefined) => c === undefined || /\s/.test(c);

/** `](url)` at `i` (the `]`): the url and the whole source, or null when it is not a link's end. */
function linkCloseAt(s: string, i: number): { url: string; raw: string } | null {
  if (s[i + 1] !== '(') return null;
  let url = '';
  for (let j = i + 2; j < s.length; ) {
    const c = s[j]!;
    if (c === ')') return { url, raw: s.slice(i, j + 1) };
    if (/\s/.test(c)) return null;
    const tag = c === '{' ? tagAt(s, j) : null;
    if (tag !== null) {
      url += tag;
      j += tag.length;
    } else if (c === '\\' && ESCAPABLE.has(s[j + 1] ?? '')) {
      url += s[j + 1];
      j += 2;
    } else {
      url += c;
      j += 1;
    }
  }
  return null;
}

function lex(source: string): Token[] {
  const s = source.replace(/\r\n?/g, '\n');
  const out: Token[] = [];
  let text = '';
  const flush = () => {
    if (text) out.push({ kind: 'text', value: text });
    text = '';
  };
  for (let i = 0; i < s.length; ) {
    const c = s[i]!;
    const tag = c === '{' ? tagAt(s, i) : null;
    if (tag !== null) {
      flush();
      out.push({ kind: 'tag', value: tag });
      i += tag.length;
    } else if (c === '\\' && ESCAPABLE.has(s[i + 1] ?? '')) {
      text += s[i + 1];
      i += 2;
    } else if (c === '\n') {
      flush();
      const blank = /^\n[ \t]*\n\s*/.exec(s.slice(i));
      if (blank) {
        out.push({ kind: 'paragraph' });
        i += blank[0].length;
      } else {
        out.push({ kind: 'break' });
        i += 1;
      }
    } else if (c === '*') {
      flush();
      let count = 1;
      while (s[i + count] === '*') count += 1;
      // Emphasis opens before a non-space and closes after one, as in Markdown: "5 * 3" stays text.
      out.push({ kind: 'stars', count, canOpen: !isSpace(s[i + count]), canClose: !isSpace(s[i - 1]) });
      i += count;
    } else if (c === '[') {
      flush();
      out.push({ kind: 'open-bracket' });
      i += 1;
    } else if (c === ']') {
      const close = linkCloseAt(s, i);
      if (close) {
        flush();
        out.push({ kind: 'link-close', ...close });
        i += close.raw.length;
      } else {
        text += c;
        i += 1;
      }
    } else {
      text += c;
      i += 1;
    }
  }
  flush();
  return out;
}

// While a paragraph is read, its content is a flat list of finished nodes and the delimiters still open.
type Open = { kind: 'stars'; count: number } | { kind: 'bracket'; active: boolean };
type Work = Inline | { kind: 'open'; open: Open };

/** Delimiters never closed are text again, and neighbouring texts join. */
function settle(items: Work[]): Inline[] {
  const out: Inline[] = [];
  for (const item of items) {
    const node: Inline =
      item.kind === 'open'
        ? { kind: 'text', value: item.open.kind === 'stars' ? '*'.repeat(item.open.count) : '[' }
        : item;
    const last = out[out.length - 1];
    if (node.kind === 'text' && last?.kind === 'text') last.value += node.value;
    else if (node.kind !== 'text' || node.value) out.push(node);
  }
  return out;
}

function paragraphOf(tokens: Token[]): Paragraph {
  const items: Work[] = [];
  for (const token of tokens) {
    switch (token.kind) {
      case 'text':
      case 'tag':
      case 'break':
        items.push(token);
        break;
      case 'open-bracket':
        items.push({ kind: 'open', open: { kind: 'bracket', active: true } });
        break;
      case 'stars': {
        let left = token.count;
        while (token.canClose && left > 0) {
          // The nearest open run of stars, not reaching back past an open link label.
          let at = -1;
          for (let j = items.length - 1; j >= 0; j -= 1) {
            const item = items[j]!;
            if (item.kind !== 'open') continue;
            if (item.open.kind === 'bracket') break;
            at = j;
            break;
          }
          if (at < 0) break;
          const opener = items[at] as { kind: 'open'; open: { kind: 'stars'; count: number } };
          const use = left >= 2 && opener.open.count >= 2 ? 2 : 1;
          const children = settle(items.splice(at + 1));
          opener.open.count -= use;
          left -= use;
          if (opener.open.count === 0) items.pop();
          items.push(use === 2 ? { kind: 'strong', children } : { kind: 'em', children });
        }
        if (left > 0) items.push(token.canOpen ? { kind: 'open', open: { kind: 'stars', count: left } } : { kind: 'text', value: '*'.repeat(left) });
        break;
      }
      case 'link-close': {
        let at = -1;
        for (let j = items.length - 1; j >= 0 && at < 0; j -= 1) {
          const item = items[j]!;
          if (item.kind === 'open' && item.open.kind === 'bracket') at = j;
        }
        const opener = at < 0 ? null : (items[at] as { kind: 'open'; open: { kind: 'bracket'; active: boolean } });
        if (!opener?.open.active) {
          // No label to close, or one inside another link's label: the brackets are text.
          if (opener) items[at] = { kind: 'text', value: '[' };
          items.push({ kind: 'text', value: token.raw });
          break;
        }
        const children = settle(items.splice(at + 1));
        items.pop();
        items.push({ kind: 'link', url: token.url, children });
        // No link inside a link: the labels still open before this one can no longer become links.
        for (const item of items) if (item.kind === 'open' && item.open.kind === 'bracket') item.open.active = false;
        break;
      }
      case 'paragraph':
        throw new Error('paragraph tokens are split off before');
    }
  }
  return trimBreaks(settle(items));
}

/** Breaks at a paragraph's edges draw nothing useful; drop them. */
function trimBreaks(nodes: Inline[]): Inline[] {
  let start = 0;
  let end = nodes.length;
  while (start < end && nodes[start]!.kind === 'break') start += 1;
  while (end > start && nodes[end - 1]!.kind === 'break') end -= 1;
  return nodes.slice(start, end);
}

/** Reads a block's text into paragraphs of inline content. */
export function parseInline(source: string): Paragraph[] {
  const paragraphs: Paragraph[] = [];
  let current: Token[] = [];
  const close = () => {
    const p = paragraphOf(current);
    if (p.length > 0) paragraphs.push(p);
    current = [];
  };
  for (const token of lex(source.trim())) {
    if (token.kind === 'paragraph') close();
    else current.push(token);
  }
  close();
  return paragraphs;
}

/** Every link of a parsed text, outermost first. */
export function linksOf(paragraphs: readonly Paragraph[]): Array<{ url: string; label: string }> {
  const out: Array<{ url: string; label: string }> = [];
  const walk = (nodes: readonly Inline[]) => {
    for (const n of nodes) {
      if (n.kind === 'link') out.push({ url: n.url, label: plainOf(n.children) });
      if (n.kind === 'strong' || n.kind === 'em' || n.kind === 'link') walk(n.children);
    }
  };
  for (const p of paragraphs) walk(p);
  return out;
}

/** The characters of inline content, markup dropped, links as their labels. */
export function plainOf(nodes: readonly Inline[]): string {
  return nodes
    .map((n) => {
      switch (n.kind) {
        case 'text':
        case 'tag':
          return n.value;
        case 'break':
          return '\n';
        case 'strong':
        case 'em':
        case 'link':
          return plainOf(n.children);
      }
    })
    .join('');
}

/** Inline content as the text part reads it: a link as "label (url)", or the url when that is its label. */
export function textOf(nodes: readonly Inline[]): string {
  return nodes
    .map((n) => {
      if (n.kind !== 'link') return n.kind === 'strong' || n.kind === 'em' ? textOf(n.children) : plainOf([n]);
      const label = textOf(n.children);
      return label === n.url || label === '' ? n.url : `${label} (${n.url})`;
    })
    .join('');
}
