// The visual builder's block tree (`builder_blocks`) and its rules. A tree is a list of sections (each one to
// four columns of content blocks) and content blocks, which stand in a one-column section of their own.
// Pure: `parseBlocks` takes what a request sent and returns the typed tree, or throws a 400 naming the path.
import { z } from 'zod';
import { badRequest } from '../../core/errors.js';
import { describeIssues } from '../../core/validation.js';
import { linksOf, parseInline, splitTags } from './inline-markup.js';
import { contrast, MIN_CONTRAST, THEME } from './theme.js';

export const BLOCK_LIMITS = {
  /** Blocks at the top of the tree. */
  topLevel: 100,
  /** Blocks in the whole tree, sections and columns' blocks alike. */
  total: 300,
  columns: 4,
  blocksPerColumn: 50,
  textChars: 10_000,
  labelChars: 200,
  urlChars: 2_048,
  socialLinks: 12,
} as const;

// URLs. A merge tag may stand for the whole URL ({{ reset_url }}) or a part of it
// (https://example.com/orders/{{ order_id }}); the rest is checked with the tags stood in for by a word.

const WORD_FOR_TAG = 'tag';

function readUrl(value: string): URL | null {
  const stood = splitTags(value)
    .map((p) => (p.kind === 'tag' ? WORD_FOR_TAG : p.value))
    .join('');
  if (stood === '' || /\s/.test(stood)) return null;
  try {
    return new URL(stood);
  } catch {
    return null;
  }
}

const startsWithTag = (value: string) => splitTags(value)[0]?.kind === 'tag';

/** An https URL, or one a merge tag starts (the variable holds it). No space outside the tags. */
export function isHttpsUrl(value: string): boolean {
  if (startsWithTag(value)) return !/\s/.test(splitTags(value).map((p) => (p.kind === 'tag' ? '' : p.value)).join(''));
  const url = readUrl(value);
  return url !== null && url.protocol === 'https:' && url.hostname !== '';
}

/** Where a link may go: an https URL, a mailto: address, or a merge tag's value. */
export function isLinkUrl(value: string): boolean {
  if (isHttpsUrl(value)) return true;
  const url = readUrl(value);
  return url !== null && url.protocol === 'mailto:' && url.pathname.includes('@');
}

/**
 * A merge tag inside an attribute is written with its strings in single quotes (Liquid reads both kinds the same),
 * so that the attribute's double quotes still enclose it; a tag holding both kinds cannot be written there.
 */
export const tagFitsAttribute = (value: string) =>
  splitTags(value).every((p) => p.kind === 'text' || !(p.value.includes('"') && p.value.includes("'")));

const TAG_QUOTES = `a merge tag in a URL may quote its strings with ' or ", not both`;

const https = () =>
  z
    .string({ error: 'must be a string' })
    .max(BLOCK_LIMITS.urlChars, `must be at most ${BLOCK_LIMITS.urlChars} characters`)
    .refine(isHttpsUrl, 'must be an https URL')
    .refine(tagFitsAttribute, TAG_QUOTES);

const link = () =>
  z
    .string({ error: 'must be a string' })
    .max(BLOCK_LIMITS.urlChars, `must be at most ${BLOCK_LIMITS.urlChars} characters`)
    .refine(isLinkUrl, 'must be an https URL, a mailto: address or a merge tag')
    .refine(tagFitsAttribute, TAG_QUOTES);

const colour = () =>
  z.string({ error: 'must be a colour written #rrggbb' }).regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour written #rrggbb');

const align = () => z.enum(['left', 'center', 'right'], { error: 'must be left, center or right' });

const int = (min: number, max: number) =>
  z
    .number({ error: 'must be a number' })
    .int('must be an integer')
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);

/** One line of text and merge tags (a label, an alt text); no markup. */
const line = (min: number, max: number) =>
  z
    .string({ error: 'must be a string' })
    .min(min, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .refine((v) => !/[\r\n]/.test(v), 'must be one line');

/** Text with the inline markup; every link it makes must go somewhere a link may. */
const richText = (min: number) =>
  z
    .string({ error: 'must be a string' })
    .min(min, 'must not be empty')
    .max(BLOCK_LIMITS.textChars, `must be at most ${BLOCK_LIMITS.textChars} characters`)
    .superRefine((value, ctx) => {
      for (const { url, label } of linksOf(parseInline(value))) {
        if (!isLinkUrl(url)) ctx.addIssue({ code: 'custom', message: `the link '${label}' must go to an https URL, a mailto: address or a merge tag` });
        else if (!tagFitsAttribute(url)) ctx.addIssue({ code: 'custom', message: `the link '${label}': ${TAG_QUOTES}` });
      }
    });

/** An object of these fields and no other: a misspelt field is an error, not a silent default. */
const fields = <S extends z.core.$ZodLooseShape>(shape: S) =>
  z.strictObject(shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? `unknown field '${issue.keys.join("', '")}'` : undefined),
  });

/** A builder's own name for a block or column (kept, never read here). */
const id = () => z.string({ error: 'must be a string' }).max(100, 'must be at most 100 characters').optional();

const block = <S extends z.core.$ZodLooseShape>(shape: S) => fields({ id: id(), ...shape });

export const textBlockSchema = block({
  type: z.literal('text'),
  text: richText(1),
  /** heading → h1, subheading → h2, small → muted fine print. */
  variant: z.enum(['paragraph', 'heading', 'subheading', 'small'], { error: 'must be paragraph, heading, subheading or small' }).default('paragraph'),
  align: align().default('left'),
  color: colour().optional(),
});

export const imageBlockSchema = block({
  type: z.literal('image'),
  src: https(),
  /** Required: what the image says, for screen readers and clients that block images; "" for a decorative one. */
  alt: line(0, 500),
  /** The largest width it is shown at, in pixels; narrower screens scale it down. Default: the column's width. */
  width: int(16, 600).optional(),
  href: link().optional(),
  align: align().default('center'),
});

export const buttonBlockSchema = block({
  type: z.literal('button'),
  label: line(1, BLOCK_LIMITS.labelChars),
  url: link(),
  align: align().default('center'),
  background_color: colour().default('#2563eb'),
  text_color: colour().default('#ffffff'),
  full_width: z.boolean({ error: 'must be true or false' }).default(false),
});

export const dividerBlockSchema = block({
  type: z.literal('divider'),
  color: colour().optional(),
  thickness: int(1, 8).default(1),
});

export const spacerBlockSchema = block({
  type: z.literal('spacer'),
  height: int(4, 160).default(24),
});

export const SOCIAL_NETWORKS = {
  website: 'Website',
  facebook: 'Facebook',
  instagram: 'Instagram',
  x: 'X',
  linkedin: 'LinkedIn',
  youtube: 'YouTube',
  tiktok: 'TikTok',
  github: 'GitHub',
  mastodon: 'Mastodon',
  bluesky: 'Bluesky',
} as const;
export type SocialNetwork = keyof typeof SOCIAL_NETWORKS;
const NETWORK_NAMES = Object.keys(SOCIAL_NETWORKS) as [SocialNetwork, ...SocialNetwork[]];

export const socialBlockSchema = block({
  type: z.literal('social'),
  links: z
    .array(
      fields({
        network: z.enum(NETWORK_NAMES, { error: `must be one of ${NETWORK_NAMES.join(', ')}` }),
        url: link(),
        /** Default: the network's name. */
        label: line(1, 50).optional(),
      }),
      { error: 'must be an array' },
    )
    .min(1, 'must hold at least one link')
    .max(BLOCK_LIMITS.socialLinks, `must hold at most ${BLOCK_LIMITS.socialLinks} links`),
  align: align().default('center'),
  /** The links' colour. */
  color: colour().optional(),
});

export const footerBlockSchema = block({
  type: z.literal('footer'),
  /** Who sends this and why (an address, the reason the reader gets it), with the inline markup. */
  text: richText(0).optional(),
  /** The link to `{{ unsubscribe_url }}`; off for transactional mail (a password reset has nothing to leave). */
  unsubscribe: z.boolean({ error: 'must be true or false' }).default(true),
  unsubscribe_text: line(1, 100).default('Unsubscribe'),
  align: align().default('center'),
  /** The text's and links' colour (default: muted grey). */
  color: colour().optional(),
});

const CONTENT_TYPES = ['text', 'image', 'button', 'divider', 'spacer', 'social', 'footer'] as const;
const BLOCK_TYPES = ['section', ...CONTENT_TYPES] as const;

const typeError = (names: readonly string[]) => (issue: z.core.$ZodRawIssue) =>
  issue.code === 'invalid_type' ? 'must be an object' : `must be one of ${names.join(', ')}`;

export const contentBlockSchema = z.discriminatedUnion(
  'type',
  [textBlockSchema, imageBlockSchema, buttonBlockSchema, dividerBlockSchema, spacerBlockSchema, socialBlockSchema, footerBlockSchema],
  { error: typeError(CONTENT_TYPES) },
);

export const columnSchema = fields({
  id: id(),
  /** Percent of the section; columns without one share what is left. On phones the columns stack. */
  width: int(10, 100).optional(),
  background_color: colour().optional(),
  vertical_align: z.enum(['top', 'middle', 'bottom'], { error: 'must be top, middle or bottom' }).default('top'),
  blocks: z
    .array(contentBlockSchema, { error: 'must be an array' })
    .max(BLOCK_LIMITS.blocksPerColumn, `must hold at most ${BLOCK_LIMITS.blocksPerColumn} blocks`),
});

export const sectionBlockSchema = block({
  type: z.literal('section'),
  background_color: colour().optional(),
  /** Space above and below the columns, in pixels. */
  padding: int(0, 80).default(16),
  columns: z
    .array(columnSchema, { error: 'must be an array' })
    .min(1, 'must hold at least one column')
    .max(BLOCK_LIMITS.columns, `must hold at most ${BLOCK_LIMITS.columns} columns`),
}).superRefine((section, ctx) => {
  const given = section.columns.flatMap((c) => (c.width === undefined ? [] : [c.width]));
  const sum = given.reduce((a, b) => a + b, 0);
  const open = section.columns.length - given.length;
  if (open === 0 ? sum !== 100 : sum > 100 - 10 * open) {
    const need = open === 0 ? 'add up to 100' : `leave at least 10 for each column without one (they add up to ${sum})`;
    ctx.addIssue({ code: 'custom', path: ['columns'], message: `column widths must ${need}` });
  }
});

export const blockSchema = z.discriminatedUnion('type', [sectionBlockSchema, ...contentBlockSchema.options], { error: typeError(BLOCK_TYPES) });

export type TextBlock = z.output<typeof textBlockSchema>;
export type ImageBlock = z.output<typeof imageBlockSchema>;
export type ButtonBlock = z.output<typeof buttonBlockSchema>;
export type DividerBlock = z.output<typeof dividerBlockSchema>;
export type SpacerBlock = z.output<typeof spacerBlockSchema>;
export type SocialBlock = z.output<typeof socialBlockSchema>;
export type FooterBlock = z.output<typeof footerBlockSchema>;
export type ContentBlock = z.output<typeof contentBlockSchema>;
export type Column = z.output<typeof columnSchema>;
export type SectionBlock = z.output<typeof sectionBlockSchema>;
/** A block as parsed: every default filled in. */
export type Block = z.output<typeof blockSchema>;
/** A block as a request (or a preset) writes it: defaults may be left out. */
export type BlockInput = z.input<typeof blockSchema>;

type Check = (path: Array<string | number>, message: string) => void;

/** The colour a content block's text is drawn in, and the field that sets it. */
function foreground(content: ContentBlock): { colour: string; field: string; given: boolean } | null {
  switch (content.type) {
    case 'text':
      return { colour: content.color ?? (content.variant === 'small' ? THEME.muted : THEME.text), field: 'color', given: content.color !== undefined };
    case 'social':
      return { colour: content.color ?? THEME.link, field: 'color', given: content.color !== undefined };
    case 'footer':
      return { colour: content.color ?? THEME.muted, field: 'color', given: content.color !== undefined };
    case 'button':
      return { colour: content.text_color, field: 'text_color', given: true };
    default:
      return null;
  }
}

/** Every text must stand out from what is behind it: a button from its own colour, the rest from the section's or column's. */
function checkColours(content: ContentBlock, behind: string, path: Array<string | number>, report: Check) {
  const fg = foreground(content);
  if (!fg) return;
  const [bg, bgName] = content.type === 'button' ? [content.background_color, 'background_color'] : [behind, `the background (${behind})`];
  const ratio = contrast(fg.colour, bg);
  if (ratio >= MIN_CONTRAST) return;
  const what = fg.given ? `contrast with ${bgName}` : `the default ${fg.field} (${fg.colour}): its contrast with ${bgName}`;
  report([...path, fg.field], `${what} is ${ratio.toFixed(1)}:1, at least ${MIN_CONTRAST}:1 is needed`);
}

export const blockListSchema = z
  .array(blockSchema, { error: 'must be an array' })
  .min(1, 'must hold at least one block')
  .max(BLOCK_LIMITS.topLevel, `must hold at most ${BLOCK_LIMITS.topLevel} blocks`)
  .superRefine((blocks, ctx) => {
    const report: Check = (path, message) => ctx.addIssue({ code: 'custom', path, message });
    let total = 0;
    blocks.forEach((b, i) => {
      total += 1;
      if (b.type !== 'section') return checkColours(b, THEME.surface, [i], report);
      b.columns.forEach((column, c) =>
        column.blocks.forEach((content, k) => {
          total += 1;
          checkColours(content, column.background_color ?? b.background_color ?? THEME.surface, [i, 'columns', c, 'blocks', k], report);
        }),
      );
    });
    if (total > BLOCK_LIMITS.total) report([], `must hold at most ${BLOCK_LIMITS.total} blocks in all (it holds ${total})`);
  });

/** The field a template keeps its blocks in: the first word of every error's path. */
export const BLOCKS_FIELD = 'builder_blocks';

/** Checks a block tree; a bad one is a 400 naming its path (`builder_blocks.2.columns.0.blocks.1.url: …`). */
export function parseBlocks(input: unknown): Block[] {
  const result = blockListSchema.safeParse(input);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => ({ ...issue, path: [BLOCKS_FIELD, ...issue.path] }));
  throw badRequest(describeIssues(issues, { [BLOCKS_FIELD]: input }, 'body'));
}
