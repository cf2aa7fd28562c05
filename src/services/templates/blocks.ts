// The visual builder: a template with `builder_type: visual` keeps its `builder_blocks`, and each save compiles
// them to the html and text the template sends. The HTML is mjml's (https://mjml.io): tables, inline styles,
// a 600 px container that narrows to a phone's width, columns that stack on phones, Outlook's conditional
// tables; block-render.ts adds alt texts, a dark scheme and the text part. Merge tags go through unchanged,
// for the template's renderer to fill at send.
import { parseBlocks } from './block-schema.js';
import { TagVault, toMjml, toText } from './block-render.js';

export type {
  Block,
  BlockInput,
  ButtonBlock,
  Column,
  ContentBlock,
  DividerBlock,
  FooterBlock,
  ImageBlock,
  SectionBlock,
  SocialBlock,
  SocialNetwork,
  SpacerBlock,
  TextBlock,
} from './block-schema.js';
export { BLOCK_LIMITS, BLOCKS_FIELD, blockListSchema, parseBlocks } from './block-schema.js';

export interface CompiledBlocks {
  html: string;
  text: string;
}

type Mjml = typeof import('mjml');
let mjml: Promise<Mjml> | null = null;

/** mjml and its CSS tools take a while to load; only a save of a visual template needs them. */
function loadMjml(): Promise<Mjml> {
  mjml ??= import('mjml').then((m) => m.default);
  return mjml;
}

/**
 * Checks a block tree (a bad one: 400 naming its path, `builder_blocks.2.columns.0.blocks.1.url: …`) and
 * compiles it to the email's html and text parts.
 */
export async function compileBlocks(input: unknown): Promise<CompiledBlocks> {
  const blocks = parseBlocks(input);
  const vault = new TagVault(JSON.stringify(input));
  const mjml2html = await loadMjml();
  // strict: the source is ours, so anything mjml finds wrong in it is a bug here, not the user's input.
  // fonts: {} — no <link> to Google Fonts (mjml adds one for some font names); our stack is the system's.
  const result = await mjml2html(toMjml(blocks, vault), { validationLevel: 'strict', fonts: {}, keepComments: false, ignoreIncludes: true });
  return { html: vault.restore(result.html), text: toText(blocks) };
}
