// What open and click tracking change in an email's html (pure, no I/O): the tracked links, in document
// order, and the html with each of them pointing at the box and a 1×1 pixel before </body>.
//
// A tracked link is an <a> or <area> whose href is an absolute http(s) URL — not mailto:, tel:, a `#` anchor
// or a relative one — and not one the caller keeps (the box's own unsubscribe and tracking URLs). Its index
// is its place among the tracked links of the stored html: the click's token carries the index, and the click
// answers a redirect to the URL the stored html has there (trackedLinks again), so a link's target is never
// taken from the request. The same html always gives the same list.
import { Parser } from 'htmlparser2';
import { MAX_TRACKED_LINK } from './tracking-tokens.js';

interface LinkTag {
  /** Where the tag starts ('<') and ends ('>'), inclusive. */
  start: number;
  end: number;
  name: string;
  attribs: Record<string, string>;
  /** The href as a URL: entities decoded, blanks around it trimmed. */
  url: string;
}

const LINK_TAGS = new Set(['a', 'area']);

/** An absolute http(s) URL, as it will be redirected to; null for anything else. */
function httpUrl(href: string): string | null {
  const trimmed = href.trim();
  if (!/^https?:\/\//i.test(trimmed)) return null;
  try {
    new URL(trimmed);
    return trimmed;
  } catch {
    return null;
  }
}

function linkTags(html: string, keep: (url: string) => boolean): LinkTag[] {
  const tags: LinkTag[] = [];
  const parser = new Parser(
    {
      onopentag(name, attribs, implied) {
        if (implied || !LINK_TAGS.has(name) || attribs.href === undefined) return;
        const url = httpUrl(attribs.href);
        if (url === null || keep(url)) return;
        if (tags.length > MAX_TRACKED_LINK) return;
        tags.push({ start: parser.startIndex, end: parser.endIndex, name, attribs, url });
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.end(html);
  return tags;
}

/** The tracked links' URLs, in document order (index = the link number a click's token carries). */
export function trackedLinks(html: string, keep: (url: string) => boolean = () => false): string[] {
  return linkTags(html, keep).map((t) => t.url);
}

const escapeAttribute = (v: string) => v.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export interface TrackingRewrite {
  /** The pixel's URL, when opens are tracked. */
  pixelUrl?: string | undefined;
  /** The URL that stands for link `index`, when clicks are tracked. */
  linkUrl?: ((index: number) => string) | undefined;
  /** URLs left as they are (the unsubscribe links). */
  keep?: ((url: string) => boolean) | undefined;
}

/** `html` with its tracked links rewritten and the pixel added (before the last </body>, else at the end). */
export function rewriteForTracking(html: string, opts: TrackingRewrite): string {
  let out = html;
  if (opts.linkUrl) {
    const tags = linkTags(html, opts.keep ?? (() => false));
    if (tags.length > 0) {
      const parts: string[] = [];
      let at = 0;
      tags.forEach((tag, index) => {
        const attribs = { ...tag.attribs, href: opts.linkUrl!(index) };
        const serialised = Object.entries(attribs)
          .map(([k, v]) => ` ${k}="${escapeAttribute(v)}"`)
          .join('');
        parts.push(html.slice(at, tag.start), `<${tag.name}${serialised}>`);
        at = tag.end + 1;
      });
      parts.push(html.slice(at));
      out = parts.join('');
    }
  }
  if (opts.pixelUrl) {
    const pixel = `<img src="${escapeAttribute(opts.pixelUrl)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />`;
    const close = out.toLowerCase().lastIndexOf('</body');
    out = close >= 0 ? `${out.slice(0, close)}${pixel}${out.slice(close)}` : `${out}${pixel}`;
  }
  return out;
}
