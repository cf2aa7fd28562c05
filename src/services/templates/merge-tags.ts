// Merge tags: Liquid (liquidjs), sandboxed. `{{ name }}` is HTML-escaped in html and plain in the subject and
// text; `{{ name | raw }}` (or the mustache form `{{{ name }}}`) skips the escaping; `{{ name | default: "friend" }}`
// fills a missing value. A template reads only the values it is given: no file system (includes resolve
// against an empty in-memory map), only own properties, unknown filters refused at parse, and bounded parse
// and render work (a template cannot loop the box to a stop).
import { createRequire } from 'node:module';
import type { Liquid as LiquidEngine, Template } from 'liquidjs';
import { badRequest } from '../../core/errors.js';

/** The work one template may cost: characters parsed, milliseconds and bytes of rendering. */
export const PARSE_LIMIT = 1_000_000;
export const RENDER_LIMIT_MS = 1_000;
export const MEMORY_LIMIT = 20_000_000;

const options = {
  templates: {},
  strictFilters: true,
  strictVariables: false,
  ownPropertyOnly: true,
  parseLimit: PARSE_LIMIT,
  renderLimit: RENDER_LIMIT_MS,
  memoryLimit: MEMORY_LIMIT,
} as const;
/**
 * The two engines, built with the first template parsed: liquidjs (~7 MiB of code and heap) is not loaded by a
 * box that never renders a template (docs/PERFORMANCE.md "Memory"). html: every output escaped unless piped
 * through `raw`; plain (subject, text part): outputs as they are.
 */
let engines: { html: LiquidEngine; plain: LiquidEngine } | undefined;
function liquid(): { html: LiquidEngine; plain: LiquidEngine } {
  if (!engines) {
    const { Liquid } = createRequire(import.meta.url)('liquidjs') as typeof import('liquidjs');
    engines = { html: new Liquid({ ...options, outputEscape: 'escape' }), plain: new Liquid(options) };
  }
  return engines;
}

export type Part = 'subject' | 'html' | 'text';
/** A part parsed once, with the variables it reads. */
export interface ParsedPart {
  templates: Template[];
  /** Top-level names it reads (`contact` for `{{ contact.first_name }}`). */
  variables: string[];
  /** The paths it reads (`contact.first_name`, `name`). */
  paths: string[];
  html: boolean;
}

/** `{{{ x }}}` (mustache's raw form) as Liquid's `{{ x | raw }}` in html, `{{ x }}` elsewhere. */
function mustacheRaw(source: string, html: boolean): string {
  return source.replace(/\{\{\{\s*([^{}]+?)\s*\}\}\}/g, (_, expr: string) => (html ? `{{ ${expr} | raw }}` : `{{ ${expr} }}`));
}

/** Parses a part; a syntax error is a 400 naming the part and the line. */
export function parsePart(part: Part, source: string): ParsedPart {
  const html = part === 'html';
  const engine = html ? liquid().html : liquid().plain;
  try {
    const templates = engine.parse(mustacheRaw(source, html));
    return { templates, variables: engine.globalVariablesSync(templates), paths: engine.globalFullVariablesSync(templates), html };
  } catch (err) {
    const e = err as { message?: string };
    // liquidjs: "tag "foo" not found, line:3, col:5" — the line is the template's own.
    const message = (e.message ?? 'cannot be parsed').split('\n')[0]!.replace(/, file:[^,]*/, '');
    throw badRequest(`${part}: ${message}`);
  }
}

/** Renders a parsed part with `scope` (the values; anything missing renders empty). */
export function renderPart(parsed: ParsedPart, scope: Record<string, unknown>): string {
  const engine = parsed.html ? liquid().html : liquid().plain;
  try {
    return engine.renderSync(parsed.templates, scope) as string;
  } catch (err) {
    // A render limit, or a filter failing on its input: the template is at fault, not the box.
    throw badRequest(`Template cannot be rendered: ${(err as Error).message.split('\n')[0]}`);
  }
}

/** The paths the parts read that `scope` does not hold (a value given as an empty string counts as given). */
export function missingPaths(parts: ParsedPart[], scope: Record<string, unknown>): string[] {
  const missing = new Set<string>();
  for (const part of parts) {
    for (const p of part.paths) {
      let cur: unknown = scope;
      for (const seg of p.split('.')) cur = cur !== null && typeof cur === 'object' && Object.hasOwn(cur, seg) ? (cur as Record<string, unknown>)[seg] : undefined;
      if (cur === undefined || cur === null) missing.add(p);
    }
  }
  return [...missing].sort();
}
