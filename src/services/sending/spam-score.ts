// Content scoring for POST /emails/spam-preview: a small, documented rule set in the spirit of
// SpamAssassin's, aimed at the mistakes senders actually make. Each rule that fires adds its score;
// a total of SPAM_THRESHOLD or more is "likely_spam". Pure: input in, verdict out.

import { findLinks, stripTags } from '../../mta/html-scan.js';

export const SPAM_THRESHOLD = 5;

export interface ScoredInput {
  subject: string;
  html?: string | undefined;
  text?: string | undefined;
  headers: Record<string, string>;
  tags: string[];
  recipientCount: number;
  /** The from domain is verified for the team (DKIM will sign). */
  fromVerified: boolean;
}

export interface RuleHit {
  name: string;
  score: number;
  description: string;
}

export interface SpamVerdict {
  score: number;
  threshold: number;
  verdict: 'ok' | 'likely_spam';
  rules: RuleHit[];
}

interface Rule {
  name: string;
  score: number;
  description: string;
  fires(i: Derived): boolean;
}

interface Derived extends ScoredInput {
  visibleText: string;
  /** The html's `<a href>` links, then the URLs written out in the text. */
  links: Array<{ href: string; text: string }>;
  /** The html and the text, each with its own links and words (MANY_LINKS judges each part on its own). */
  parts: Array<{ links: number; words: number }>;
  images: number;
}

const SHORTENERS = /^(bit\.ly|tinyurl\.com|t\.co|goo\.gl|ow\.ly|is\.gd|buff\.ly|rebrand\.ly|cutt\.ly|shorturl\.at)$/i;
const SPAM_PHRASES = /\b(100% free|free money|act now|winner|you have won|viagra|risk[- ]free|no obligation|click here|cash bonus|urgent response|limited time offer|guaranteed)\b/gi;
const BULK_TAGS = /^(marketing|newsletter|promo|promotion|campaign|broadcast)$/i;

function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return null;
  }
}

/** The links, images and visible text are read from the first MiB of each body (docs/API.md, spam preview rules). */
export const SCORED_BODY_CHARS = 1024 * 1024;

// A URL written out in the text: http://, https:// or www. (not glued to a word, an address or a path before
// it) up to the next space, quote or angle bracket. Linear: a match takes its run greedily with nothing after it
// to backtrack into, and the next search starts where it ended; trailing punctuation is trimmed by a loop
// (a /[.,]+$/ would rescan a run of dots from each dot).
const TEXT_URL = /(?<![\w@./-])(?:https?:\/\/|www\.)[^\s<>"']+/gi;
const TRAILING_PUNCTUATION = '.,;:!?)]}';

function findTextLinks(text: string): Array<{ href: string; text: string }> {
  const links: Array<{ href: string; text: string }> = [];
  for (const m of text.matchAll(TEXT_URL)) {
    let end = m[0].length;
    while (end > 0 && TRAILING_PUNCTUATION.includes(m[0][end - 1]!)) end--;
    const url = m[0].slice(0, end);
    links.push({ href: /^www\./i.test(url) ? `http://${url}` : url, text: url });
  }
  return links;
}

function wordCount(s: string): number {
  return (s.match(/\S+/g) ?? []).length;
}

// Every scan of the body is linear (html-scan.ts) and bounded (SCORED_BODY_CHARS): a hostile body of any
// size must not hold the event loop.
function derive(input: ScoredInput): Derived {
  const html = (input.html ?? '').slice(0, SCORED_BODY_CHARS);
  const text = input.text?.slice(0, SCORED_BODY_CHARS);
  const htmlLinks = findLinks(html);
  const textLinks = findTextLinks(text ?? '');
  const htmlText = stripTags(html, { replacement: ' ', dropScripts: true });
  const images = (html.match(/<img\b/gi) ?? []).length;
  const visibleText = (text ?? htmlText).replace(/\s+/g, ' ').trim();
  const parts = [
    { links: htmlLinks.length, words: wordCount(htmlText) },
    { links: textLinks.length, words: wordCount(text ?? '') },
  ];
  return { ...input, links: [...htmlLinks, ...textLinks], parts, images, visibleText };
}

const RULES: Rule[] = [
  { name: 'UNVERIFIED_FROM', score: 3, description: 'The from domain is not a verified domain of the team: it would not be DKIM-signed', fires: (i) => !i.fromVerified },
  { name: 'EMPTY_SUBJECT', score: 1, description: 'The subject is empty', fires: (i) => i.subject.trim() === '' },
  {
    name: 'SUBJECT_ALL_CAPS',
    score: 1.5,
    description: 'The subject is mostly capital letters (8 or more letters with case, of any script, 80% or more of them capitals)',
    fires: (i) => {
      const letters = i.subject.match(/[\p{Lu}\p{Ll}]/gu) ?? [];
      return letters.length >= 8 && letters.filter((c) => /\p{Lu}/u.test(c)).length / letters.length >= 0.8;
    },
  },
  { name: 'SUBJECT_EXCLAMATIONS', score: 1, description: 'The subject shouts (!! or three or more exclamation marks)', fires: (i) => /!!/.test(i.subject) || (i.subject.match(/!/g) ?? []).length >= 3 },
  { name: 'NO_TEXT_PART', score: 0.5, description: 'HTML without a text version written by the sender (the box derives one)', fires: (i) => i.html !== undefined && i.text === undefined },
  { name: 'IMAGE_ONLY', score: 2, description: 'Images with almost no text (under 100 characters)', fires: (i) => i.images > 0 && i.visibleText.length < 100 },
  { name: 'LOW_TEXT_TO_IMAGE_RATIO', score: 1, description: 'Fewer than 400 characters of text per image', fires: (i) => i.images > 0 && i.visibleText.length >= 100 && i.visibleText.length / i.images < 400 },
  {
    name: 'MANY_LINKS',
    score: 1,
    description: 'The html or the text, each on its own, has more than 20 links, or 4 or more links and fewer than 20 words per link',
    fires: (i) => i.parts.some((p) => p.links > 20 || (p.links > 3 && p.links > p.words / 20)),
  },
  { name: 'URL_SHORTENER', score: 1.5, description: 'Links through a URL shortener hide their destination', fires: (i) => i.links.some((l) => SHORTENERS.test(hostOf(l.href) ?? '')) },
  {
    name: 'LINK_TEXT_MISMATCH',
    score: 1.5,
    description: 'A link whose visible text is a URL on another host than its target',
    fires: (i) =>
      i.links.some((l) => {
        const shown = /^https?:\/\//i.test(l.text) ? hostOf(l.text) : null;
        const target = hostOf(l.href);
        return shown !== null && target !== null && shown !== target;
      }),
  },
  { name: 'ACTIVE_CONTENT', score: 2, description: 'Scripts, forms or frames, which mail clients block', fires: (i) => /<(script|form|iframe|object|embed)\b/i.test(i.html ?? '') },
  { name: 'SPAM_PHRASES', score: 1, description: 'Phrases common in spam (e.g. "act now", "100% free", "click here")', fires: (i) => (`${i.subject} ${i.visibleText}`.match(SPAM_PHRASES) ?? []).length > 0 },
  {
    name: 'BULK_WITHOUT_UNSUBSCRIBE',
    score: 2,
    description: 'Bulk or marketing mail (over 10 recipients, a marketing tag or a List-Id) without List-Unsubscribe or an unsubscribe link',
    fires: (i) => {
      const headerNames = Object.keys(i.headers).map((h) => h.toLowerCase());
      const bulk = i.recipientCount > 10 || i.tags.some((t) => BULK_TAGS.test(t)) || headerNames.includes('list-id');
      const canLeave = headerNames.includes('list-unsubscribe') || i.links.some((l) => /unsubscribe|opt[- ]?out/i.test(`${l.href} ${l.text}`));
      return bulk && !canLeave;
    },
  },
];

export function scoreContent(input: ScoredInput): SpamVerdict {
  const d = derive(input);
  const rules = RULES.filter((r) => r.fires(d)).map(({ name, score, description }) => ({ name, score, description }));
  const score = Math.round(rules.reduce((sum, r) => sum + r.score, 0) * 10) / 10;
  return { score, threshold: SPAM_THRESHOLD, verdict: score >= SPAM_THRESHOLD ? 'likely_spam' : 'ok', rules };
}

/** The rules, for documentation and docs/API.md. */
export const SPAM_RULES = RULES.map(({ name, score, description }) => ({ name, score, description }));
