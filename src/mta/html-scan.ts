// Linear-time scans of html for the places that must not hand a parser (or a backtracking regex) a hostile
// body: the spam score's link and text extraction, and the plain fallback when html-to-text gives up.
//
// Every search moves forward only: a "next X at or after i" lookup is remembered until i passes it, so a
// body of n characters costs O(n) however its tags are (un)closed — `'<a '.repeat(n)` (no '>' at all)
// included, which `/<[^>]+>/g` scans to the end from every '<' (quadratic).

/** Finds the next match of a global regex at or after a position; positions asked must not decrease. */
function forwardFinder(s: string, source: RegExp): (from: number) => number {
  const re = new RegExp(source.source, source.flags.includes('g') ? source.flags : `${source.flags}g`);
  let cached = -2; // -2: not searched yet; -1: none at or after the last search
  let cachedFrom = 0;
  return (from) => {
    if (cached === -1 && from >= cachedFrom) return -1;
    if (cached >= from) return cached;
    re.lastIndex = from;
    const m = re.exec(s);
    cachedFrom = from;
    cached = m ? m.index : -1;
    return cached;
  };
}

export interface StripOptions {
  /** What a tag is replaced with ('' or ' '). */
  replacement: string;
  /** Drop <script>…</script> and <style>…</style> blocks with their content. */
  dropScripts: boolean;
}

/**
 * The text between tags, as `html.replace(/<[^>]+>/g, replacement)` would give it (a '<' with no later '>'
 * is text), in one pass.
 */
export function stripTags(html: string, opts: StripOptions): string {
  if (!html.includes('<')) return html;
  const out: string[] = [];
  const nextGt = forwardFinder(html, />/);
  let closeScript: ((from: number) => number) | undefined;
  let closeStyle: ((from: number) => number) | undefined;
  let i = 0;
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    if (lt < 0) break;
    const gt = nextGt(lt + 1);
    if (gt < 0) break; // no '>' left: the rest is text
    if (gt === lt + 1) {
      out.push(html.slice(i, lt + 1)); // "<>" is text
      i = lt + 1;
      continue;
    }
    out.push(html.slice(i, lt));
    out.push(opts.replacement);
    i = gt + 1;
    if (opts.dropScripts) {
      const name = /^(script|style)\b/i.exec(html.slice(lt + 1, Math.min(gt, lt + 8)))?.[1]?.toLowerCase();
      if (name) {
        const close = name === 'script' ? (closeScript ??= forwardFinder(html, /<\/script>/i))(gt + 1) : (closeStyle ??= forwardFinder(html, /<\/style>/i))(gt + 1);
        if (close >= 0) i = close + name.length + 3;
      }
    }
  }
  out.push(html.slice(i));
  return out.join('');
}

export interface HtmlLink {
  href: string;
  /** The link's content with its tags removed, trimmed. */
  text: string;
}

const HREF = /href\s*=\s*["']([^"']+)["']/gi;

/**
 * The links of an html body: each `<a …href="…"…>` with its content up to the next `</a>`, as
 * `/<a\b[^>]*href\s*=\s*["']([^"']+)["'][^>]*>([\s\S]*?)<\/a>/gi` would find them, in one pass.
 */
export function findLinks(html: string): HtmlLink[] {
  const links: HtmlLink[] = [];
  const nextOpen = forwardFinder(html, /<a\b/i);
  const nextGt = forwardFinder(html, />/);
  const nextClose = forwardFinder(html, /<\/a>/i);
  let i = 0;
  while (i < html.length) {
    const open = nextOpen(i);
    if (open < 0) break;
    const gt = nextGt(open + 2);
    if (gt < 0) break;
    const tag = html.slice(open + 2, gt);
    let href: string | undefined;
    HREF.lastIndex = 0;
    for (let m = HREF.exec(tag); m; m = HREF.exec(tag)) href = m[1]; // the last, as the greedy [^>]* picks
    if (href === undefined) {
      i = gt + 1; // any later '<a' inside this tag ends at the same '>': no href either
      continue;
    }
    const close = nextClose(gt + 1);
    if (close < 0) break; // no '</a>' left: no later link closes either
    links.push({ href, text: stripTags(html.slice(gt + 1, close), { replacement: '', dropScripts: false }).trim() });
    i = close + 4;
  }
  return links;
}

/** A plain text part from html without a parser: blocks dropped, tags as spaces, whitespace collapsed per line. */
export function plainTextOf(html: string): string {
  const text = stripTags(html.replace(/<br\b[^>]{0,200}>|<\/(p|div|h[1-6]|li|tr|blockquote|pre|table|ul|ol)\s{0,20}>/gi, '\n'), { replacement: ' ', dropScripts: true });
  return decodeBasicEntities(text)
    .split('\n')
    .map((line) => line.replace(/[ \t\r\f\v]+/g, ' ').trim())
    .filter((line, idx, all) => line !== '' || (idx > 0 && all[idx - 1] !== ''))
    .join('\n')
    .trim();
}

function decodeBasicEntities(s: string): string {
  return s.replace(/&(nbsp|amp|lt|gt|quot|#39|apos);/g, (_, e: string) => ({ nbsp: ' ', amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", apos: "'" })[e] ?? '');
}
