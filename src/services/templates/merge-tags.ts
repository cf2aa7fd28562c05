// Merge tags: Liquid (liquidjs), sandboxed. `{{ name }}` is HTML-escaped in html and plain in the subject and
// text; `{{ name | raw }}` (or the mustache form `{{{ name }}}`) skips the escaping; `{{ name | default: "friend" }}`
// fills a missing value. A template reads only the values it is given: no file system (includes resolve
// against an empty in-memory map), only own properties, unknown filters refused at parse, and bounded parse
// and render work (a template cannot loop the box to a stop).
//
// Most parts are text with `{{ path }}` outputs only (a broadcast's `{{ contact.first_name }}`): such a part is
// also kept as a substitution plan at parse, and rendered per recipient by filling in the values (escaped as
// Liquid escapes them) without running Liquid, ~10 times cheaper; a part with tags, other filters or a value
// that is not a string, number or nothing is rendered by Liquid.
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
  /** The part as text and outputs, when it is only that (see above); null: Liquid renders it. */
  plan: Piece[] | null;
}

/** A piece of a substitution plan: text as it is, or an output (a path, its `default`, whether it is escaped). */
type Piece = string | { path: string[]; fallback: string | null; escape: boolean };

/** An output the plan takes: a dotted path of plain names, then optionally `| default: "literal"`, then optionally `| raw`. */
const PLAIN_OUTPUT_RE = /^\s*([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*(?:\|\s*default\s*:\s*(?:"([^"\\{}]*)"|'([^'\\{}]*)')\s*)?(\|\s*raw\s*)?$/;
/** Names Liquid reads specially (`size` of a string or array, …): such paths go through Liquid. */
const SPECIAL_NAMES = new Set(['size', 'first', 'last']);
/** Liquid's literals: `{{ true }}` is not a variable. */
const LITERALS = new Set(['true', 'false', 'nil', 'null', 'empty', 'blank']);

/** The substitution plan of a source Liquid has parsed, or null when it has more than text and plain outputs. */
function substitutionPlan(source: string, html: boolean): Piece[] | null {
  if (source.includes('{%')) return null;
  const pieces: Piece[] = [];
  let last = 0;
  for (const m of source.matchAll(/\{\{([^{}]*)\}\}/g)) {
    const o = PLAIN_OUTPUT_RE.exec(m[1]!);
    if (!o) return null; // whitespace control (`{{-`), other filters, literals, brackets: Liquid's
    const path = o[1]!.split('.');
    if (LITERALS.has(path[0]!) || path.some((name) => SPECIAL_NAMES.has(name))) return null;
    pieces.push(source.slice(last, m.index), { path, fallback: o[2] ?? o[3] ?? null, escape: html && !o[4] });
    last = m.index + m[0].length;
  }
  const tail = source.slice(last);
  if (tail.includes('{{') || pieces.some((p) => typeof p === 'string' && p.includes('{{'))) return null;
  pieces.push(tail);
  return pieces.filter((p) => p !== '');
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' };
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

/** A plan filled in with `scope`, as Liquid renders it; undefined when a value is one Liquid must render. */
function substitute(plan: Piece[], scope: Record<string, unknown>): string | undefined {
  const out: string[] = [];
  for (const piece of plan) {
    if (typeof piece === 'string') {
      out.push(piece);
      continue;
    }
    let v: unknown = scope;
    for (const name of piece.path) {
      if (v === null || v === undefined) break;
      if (typeof v !== 'object' || Array.isArray(v)) return undefined;
      v = Object.hasOwn(v, name) ? (v as Record<string, unknown>)[name] : undefined;
    }
    let text: string;
    if (typeof v === 'string') text = v === '' && piece.fallback !== null ? piece.fallback : v;
    else if (typeof v === 'number') text = String(v);
    else if (v === null || v === undefined) text = piece.fallback ?? '';
    else return undefined;
    out.push(piece.escape ? escapeHtml(text) : text);
  }
  return out.join('');
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
    const liquid = mustacheRaw(source, html);
    const templates = engine.parse(liquid);
    return { templates, variables: engine.globalVariablesSync(templates), paths: engine.globalFullVariablesSync(templates), html, plan: substitutionPlan(liquid, html) };
  } catch (err) {
    const e = err as { message?: string };
    // liquidjs: "tag "foo" not found, line:3, col:5" — the line is the template's own.
    const message = (e.message ?? 'cannot be parsed').split('\n')[0]!.replace(/, file:[^,]*/, '');
    throw badRequest(`${part}: ${message}`);
  }
}

/** Renders a parsed part with `scope` (the values; anything missing renders empty). */
export function renderPart(parsed: ParsedPart, scope: Record<string, unknown>): string {
  const substituted = parsed.plan ? substitute(parsed.plan, scope) : undefined;
  if (substituted !== undefined) return substituted;
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
