// The text part of an html-only email, as html-to-text 10 renders it with our options (wordwrap 78, images
// skipped, a link's href hidden when it repeats the link text; its default formats otherwise: headings in
// capitals, paragraphs and blocks apart by its line-break rules, " * " and " 1. " list items, "> " quotes,
// "text [href]" links, <pre> kept, tables as blocks, only <body> when there is one).
//
// Why not html-to-text itself: for a 2 KB body it allocates ~115 KB and spends ~70 µs of CPU (a selector
// engine picking every element's format, a regex match object per word, closures per word transform), and
// it ran on the event loop of every send: ~45% of the main thread's allocations and most of its scavenges
// at 500 sends/s. This is the same block model (its BlockTextBuilder, InlineTextBuilder and whitespace rules,
// ported for the formats above) over the same parser (htmlparser2's DOM), with a character scanner for words;
// test/mta/html-text.test.ts holds it to html-to-text's output on a corpus of email html.
import { DomUtils, ElementType, parseDocument } from 'htmlparser2';

type DomNode = ReturnType<typeof parseDocument>['children'][number];
type ElementNode = Extract<DomNode, { attribs: Record<string, string> }>;

const WORDWRAP = 78;

/** An element html-to-text formats: script and style elements (and comments, directives) are not. */
function isElement(node: DomNode): node is ElementNode {
  return node.type === ElementType.Tag;
}

/** html-to-text's whitespace characters: ' \t\r\n\f' and the zero-width space. */
function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d || c === 0x0c || c === 0x200b;
}

/**
 * Words of one block, wrapped into lines as they come (html-to-text's InlineTextBuilder). The open line is a
 * string and where its last word starts, rather than an array of words: gluing a fragment to the word before
 * it (`a<b>b</b>`) is the only time a word is taken back.
 */
class Lines {
  /** Finished lines. */
  lines: string[] = [];
  line = '';
  wordsInLine = 0;
  lastWordStart = 0;
  available: number;
  stashedSpace = false;
  wordBreakOpportunity = false;
  constructor(readonly maxLength: number) {
    this.available = maxLength;
  }

  pushWord(word: string): void {
    if (this.available <= 0) this.newLine();
    const lineStart = this.wordsInLine === 0;
    const cost = word.length + (lineStart ? 0 : 1);
    if (cost <= this.available) this.available -= cost;
    else {
      // A word longer than the line stays whole (html-to-text without wrap characters or forced wraps).
      if (!lineStart) this.newLine();
      this.available -= word.length;
    }
    if (this.wordsInLine === 0) {
      this.line = word;
      this.lastWordStart = 0;
    } else {
      this.lastWordStart = this.line.length + 1;
      this.line = `${this.line} ${word}`;
    }
    this.wordsInLine++;
  }

  /** Glues a word to the one before it on the open line (text split by an inline tag: `a<b>b</b>`). */
  concatWord(word: string): void {
    if (this.wordBreakOpportunity && word.length > this.available) {
      this.pushWord(word);
      this.wordBreakOpportunity = false;
      return;
    }
    if (this.wordsInLine === 0) return this.pushWord(word);
    const last = this.line.slice(this.lastWordStart);
    this.wordsInLine--;
    this.available += last.length + (this.wordsInLine === 0 ? 0 : 1);
    this.line = this.wordsInLine === 0 ? '' : this.line.slice(0, this.lastWordStart - 1);
    this.pushWord(last + word);
  }

  newLine(n = 1): void {
    this.lines.push(this.line);
    for (let i = 1; i < n; i++) this.lines.push('');
    this.line = '';
    this.wordsInLine = 0;
    this.available = this.maxLength;
  }

  isEmpty(): boolean {
    return this.lines.length === 0 && this.wordsInLine === 0;
  }

  clear(): void {
    this.lines = [];
    this.line = '';
    this.wordsInLine = 0;
    this.available = this.maxLength;
  }

  toString(): string {
    return this.lines.length === 0 ? this.line : `${this.lines.join('\n')}\n${this.line}`;
  }
}

/** A block being built: its finished text, then the line of words still open. */
class Block {
  rawText = '';
  stashedLineBreaks = 0;
  readonly lines: Lines;
  isPre: boolean;
  /** List blocks: the width every item's prefix is padded to. */
  maxPrefixLength = 0;
  /** List item blocks: " * ", " 1. ". */
  prefix = '';
  constructor(
    readonly parent: Block | undefined,
    public leadingLineBreaks: number,
    maxLength: number,
  ) {
    this.lines = new Lines(maxLength);
    this.isPre = parent?.isPre ?? false;
  }

  text(): string {
    return this.lines.isEmpty() ? this.rawText : this.rawText + this.lines.toString();
  }

  /** A finished child's text, after the line breaks both sides ask for (html-to-text's addText). */
  add(text: string, leadingLineBreaks: number, trailingLineBreaks: number): void {
    const parentText = this.text();
    const lineBreaks = Math.max(this.stashedLineBreaks, leadingLineBreaks);
    this.lines.clear();
    if (parentText) this.rawText = parentText + '\n'.repeat(lineBreaks) + text;
    else {
      this.rawText = text;
      this.leadingLineBreaks = lineBreaks;
    }
    this.stashedLineBreaks = trailingLineBreaks;
  }
}

/** A word transform in force: capitals (headings) or collecting a link's text. */
interface Transform {
  upper: boolean;
  collected: string;
}

/**
 * Characters the prefixing formats (quotes, list items) may rewrite, per character of html, and at least.
 * Each nested quote or list rewrites every line of what it holds: n levels cost n times the text, and the
 * text itself grows with n ("> > > …"), so 1,200 nested quotes in 16 KB of html would take 1.4 s and give
 * 2.9 MB of text. Past the budget the renderer gives up (a RangeError), and the caller falls back to the
 * linear tag-stripping text (compose.ts).
 */
const REWRITE_BUDGET_PER_CHAR = 32;
const MIN_REWRITE_BUDGET = 1 << 20;

class TextBuilder {
  block = new Block(undefined, 1, WORDWRAP);
  private transforms: Transform[] = [];
  private budget: number;

  constructor(htmlLength: number) {
    this.budget = Math.max(MIN_REWRITE_BUDGET, htmlLength * REWRITE_BUDGET_PER_CHAR);
  }

  private spend(text: string): void {
    this.budget -= text.length;
    if (this.budget < 0) throw new RangeError('The html nests quotes or lists too deeply to render as text');
  }

  pushTransform(upper: boolean): Transform {
    const t = { upper, collected: '' };
    this.transforms.push(t);
    return t;
  }

  popTransform(): void {
    this.transforms.pop();
  }

  private transform(word: string): string {
    for (let i = this.transforms.length - 1; i >= 0; i--) {
      const t = this.transforms[i]!;
      if (t.upper) word = word.toUpperCase();
      else if (word) t.collected += word;
    }
    return word;
  }

  addLineBreak(): void {
    if (this.block.isPre) this.block.rawText += '\n';
    else this.block.lines.newLine();
  }

  addWordBreakOpportunity(): void {
    this.block.lines.wordBreakOpportunity = true;
  }

  /** Inline text: whitespace collapsed into single spaces between words, words wrapped into lines. */
  addInline(str: string, transform = true): void {
    const block = this.block;
    if (block.isPre) {
      block.rawText += str;
      return;
    }
    if (str.length === 0) return;
    let first = 0;
    while (first < str.length && isSpace(str.charCodeAt(first))) first++;
    if (block.stashedLineBreaks && first === str.length) return;
    const lines = block.lines;
    if (block.stashedLineBreaks) lines.newLine(block.stashedLineBreaks);
    const useTransforms = transform && this.transforms.length > 0;
    const previouslyStashedSpace = lines.stashedSpace;
    let i = first;
    let anyWord = false;
    while (i < str.length) {
      let end = i;
      while (end < str.length && !isSpace(str.charCodeAt(end))) end++;
      let word = str.slice(i, end);
      if (useTransforms) word = this.transform(word);
      if (anyWord || previouslyStashedSpace || first > 0) lines.pushWord(word);
      else lines.concatWord(word);
      anyWord = true;
      i = end;
      while (i < str.length && isSpace(str.charCodeAt(i))) i++;
    }
    lines.stashedSpace = (previouslyStashedSpace && !anyWord) || isSpace(str.charCodeAt(str.length - 1));
    block.stashedLineBreaks = 0;
  }

  openBlock(leadingLineBreaks: number, reservedLineLength = 0, isPre = false): void {
    const maxLength = Math.max(20, this.block.lines.maxLength - reservedLineLength);
    this.block = new Block(this.block, leadingLineBreaks, maxLength);
    if (isPre) this.block.isPre = true;
  }

  closeBlock(trailingLineBreaks: number, blockTransform?: (text: string) => string): void {
    const block = this.pop();
    let text = block.text();
    if (blockTransform) {
      this.spend(text);
      text = blockTransform(text);
    }
    this.block.add(text, block.leadingLineBreaks, Math.max(block.stashedLineBreaks, trailingLineBreaks));
  }

  openList(leadingLineBreaks: number, maxPrefixLength: number): void {
    this.block = new Block(this.block, leadingLineBreaks, this.block.lines.maxLength);
    this.block.maxPrefixLength = maxPrefixLength;
  }

  openListItem(prefix: string): void {
    const list = this.block;
    const prefixLength = Math.max(prefix.length, list.maxPrefixLength);
    this.block = new Block(list, 1, Math.max(20, list.lines.maxLength - prefixLength));
    this.block.prefix = prefix;
  }

  closeListItem(): void {
    const item = this.pop();
    const list = this.block;
    const prefixLength = Math.max(item.prefix.length, list.maxPrefixLength);
    const inner = item.text();
    this.spend(inner);
    const text = item.prefix.padEnd(prefixLength) + inner.replaceAll('\n', `\n${' '.repeat(prefixLength)}`);
    list.add(text, item.leadingLineBreaks, Math.max(item.stashedLineBreaks, 1));
  }

  closeList(trailingLineBreaks: number): void {
    const list = this.pop();
    const text = list.text();
    if (text) this.block.add(text, list.leadingLineBreaks, trailingLineBreaks);
  }

  private pop(): Block {
    const block = this.block;
    this.block = block.parent!;
    return block;
  }
}

/** The elements html-to-text renders as plain blocks: their leading and trailing line breaks. */
const BLOCKS: Record<string, readonly [leading: number, trailing: number]> = {
  article: [1, 1], aside: [1, 1], div: [1, 1], footer: [1, 1], form: [1, 1],
  header: [1, 1], main: [1, 1], nav: [1, 1], section: [1, 1],
  p: [2, 2], table: [2, 2], h1: [3, 2], h2: [3, 2], h3: [3, 2], h4: [2, 2], h5: [2, 2], h6: [2, 2],
};
const HEADINGS = new Set(['h1', 'h2', 'h3', 'h4', 'h5', 'h6']);

function walk(nodes: DomNode[], b: TextBuilder): void {
  for (const node of nodes) {
    if (DomUtils.isText(node)) b.addInline(node.data);
    else if (isElement(node)) element(node, b);
  }
}

function element(el: ElementNode, b: TextBuilder): void {
  const name = el.name;
  switch (name) {
    case 'img':
      return;
    case 'br':
      return b.addLineBreak();
    case 'wbr':
      return b.addWordBreakOpportunity();
    case 'a':
      return anchor(el, b);
    case 'ul':
      return list(el, b, () => ' * ');
    case 'ol': {
      let next = Number(el.attribs.start || '1');
      const index = orderedIndex(el.attribs.type);
      return list(el, b, () => ` ${index(next++)}. `);
    }
    case 'hr':
      b.openBlock(2);
      b.addInline('-'.repeat(WORDWRAP));
      return b.closeBlock(2);
    case 'pre':
      b.openBlock(2, 0, true);
      walk(el.children, b);
      return b.closeBlock(2);
    case 'blockquote':
      b.openBlock(2, 2);
      walk(el.children, b);
      return b.closeBlock(2, (text) => trimNewlines(text).split('\n').map((line) => `> ${line}`).join('\n'));
  }
  const breaks = BLOCKS[name];
  if (breaks === undefined) return walk(el.children, b); // inline: spans, tds, fonts, …
  b.openBlock(breaks[0]);
  const heading = HEADINGS.has(name);
  if (heading) b.pushTransform(true);
  walk(el.children, b);
  if (heading) b.popTransform();
  b.closeBlock(breaks[1]);
}

function anchor(el: ElementNode, b: TextBuilder): void {
  let href = (el.attribs.href ?? '').replace(/^mailto:/, '');
  if (href.startsWith('#')) href = '';
  if (!href) return walk(el.children, b);
  const collector = b.pushTransform(false);
  walk(el.children, b);
  b.popTransform();
  if (href !== collector.collected) b.addInline(collector.collected ? ` [${href}]` : href, false);
}

function list(el: ElementNode, b: TextBuilder, nextPrefix: () => string): void {
  const nested = el.parent !== null && 'name' in el.parent && el.parent.name === 'li';
  let maxPrefixLength = 0;
  const items: Array<{ node: DomNode; prefix: string }> = [];
  for (const child of el.children) {
    if (DomUtils.isText(child) && /^\s*$/.test(child.data)) continue;
    let prefix = '';
    if (isElement(child) && child.name === 'li') {
      prefix = nested ? nextPrefix().trimStart() : nextPrefix();
      maxPrefixLength = Math.max(maxPrefixLength, prefix.length);
    }
    items.push({ node: child, prefix });
  }
  if (!items.length) return;
  b.openList(nested ? 1 : 2, maxPrefixLength);
  for (const { node, prefix } of items) {
    b.openListItem(prefix);
    walk([node], b);
    b.closeListItem();
  }
  b.closeList(nested ? 1 : 2);
}

function trimNewlines(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && s[start] === '\n') start++;
  while (end > start && s[end - 1] === '\n') end--;
  return s.slice(start, end);
}

function orderedIndex(type: string | undefined): (i: number) => string {
  switch (type) {
    case 'a':
      return (i) => letters(i, 'a');
    case 'A':
      return (i) => letters(i, 'A');
    case 'i':
      return (i) => roman(i).toLowerCase();
    case 'I':
      return roman;
    default:
      return String;
  }
}

function letters(num: number, base: string): string {
  const digits: number[] = [];
  do {
    num -= 1;
    digits.push(num % 26);
    num = (num / 26) >> 0;
  } while (num > 0);
  return digits.reverse().map((n) => String.fromCharCode(base.charCodeAt(0) + n)).join('');
}

const ROMAN_I = ['I', 'X', 'C', 'M'];
const ROMAN_V = ['V', 'L', 'D'];
function roman(num: number): string {
  return [...String(num)]
    .map(Number)
    .reverse()
    .map((v, i) => (v % 5 < 4 ? (v < 5 ? '' : ROMAN_V[i]!) + ROMAN_I[i]!.repeat(v % 5) : ROMAN_I[i]! + (v < 5 ? ROMAN_V[i]! : ROMAN_I[i + 1]!)))
    .reverse()
    .join('');
}

/** The `body` elements of a document, outermost first (html-to-text renders only them when there are any). */
function bodies(nodes: DomNode[]): ElementNode[] {
  const found: ElementNode[] = [];
  const visit = (list: DomNode[]) => {
    for (const node of list) {
      if (!isElement(node)) continue;
      if (node.name === 'body') found.push(node);
      else visit(node.children);
    }
  };
  visit(nodes);
  return found;
}

/**
 * The text rendering of an html document. Throws RangeError on nesting deeper than the stack, or quotes and
 * lists nested so deep that rewriting their lines would cost more than REWRITE_BUDGET_PER_CHAR per character.
 */
export function renderHtmlText(html: string): string {
  const doc = parseDocument(html, { decodeEntities: true });
  const b = new TextBuilder(html.length);
  const found = bodies(doc.children);
  if (found.length === 0) walk(doc.children, b);
  for (const body of found) walk(body.children, b);
  return b.block.text();
}
