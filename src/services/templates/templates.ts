// Templates (spec: Broadcasts and templates, States): named emails kept in versions. Every update writes a new
// version (kept, listed, readable, restorable by copying it forward); publishing marks the current version as
// the one sends use, so editing a published template changes nothing that goes out until it is published
// again. Subject, html and text hold Liquid merge tags (merge-tags.ts), checked at every save.
import type { AppContext } from '../../context.js';
import { readsOf, type Queryable } from '../../db/index.js';
import { badRequest, conflict, notFound, unprocessable } from '../../core/errors.js';
import { ForgetfulCache } from '../../core/forgetful-cache.js';
import { newPublicId } from '../../core/ids.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';
import { compileBlocks } from './blocks.js';
import { missingPaths, parsePart, renderPart, type ParsedPart } from './merge-tags.js';
import { PRESETS, type Preset } from './presets.js';

export const BUILDER_TYPES = ['html', 'visual'] as const;
export type BuilderType = (typeof BUILDER_TYPES)[number];

/** A version's content. */
export interface TemplateContent {
  name: string;
  subject: string;
  html: string;
  text: string | null;
  /** Variables a send must give (a missing one is a 422). */
  variables: string[];
  builder_type: BuilderType;
  builder_blocks: unknown[] | null;
}

export interface Template extends TemplateContent {
  id: string;
  /** The version shown (the latest). */
  version: number;
  published: boolean;
  /** The version sends use; null while a draft. */
  published_version: number | null;
  created_at: string;
  updated_at: string;
}

export interface TemplateVersion extends TemplateContent {
  version: number;
  published: boolean;
  created_at: string;
}

export interface TemplateInput {
  name: string;
  subject: string;
  html?: string | undefined;
  text?: string | null | undefined;
  variables?: string[] | undefined;
  builder_type?: BuilderType | undefined;
  builder_blocks?: unknown[] | undefined;
}

export type TemplateUpdate = Partial<TemplateInput>;

interface TemplateRow {
  pk: number;
  id: string;
  team_id: string;
  name: string;
  current_version: number;
  published_version: number | null;
  created_at: string;
  updated_at: string;
}

interface VersionRow {
  template_pk: number;
  version: number;
  name: string;
  subject: string;
  html: string;
  text: string | null;
  variables: string;
  builder_type: BuilderType;
  builder_blocks: string | null;
  created_at: string;
}

/** Templates per team, versions kept per template (the oldest beyond it are dropped, never a published one). */
export const MAX_TEMPLATES = 1_000;
export const MAX_VERSIONS = 100;

const content = (v: VersionRow): TemplateContent => ({
  name: v.name,
  subject: v.subject,
  html: v.html,
  text: v.text,
  variables: JSON.parse(v.variables) as string[],
  builder_type: v.builder_type,
  builder_blocks: v.builder_blocks === null ? null : (JSON.parse(v.builder_blocks) as unknown[]),
});

const toTemplate = (t: TemplateRow, v: VersionRow): Template => ({
  id: t.id,
  ...content(v),
  version: t.current_version,
  published: t.published_version !== null,
  published_version: t.published_version,
  created_at: t.created_at,
  updated_at: t.updated_at,
});

async function findRow(q: Queryable, teamId: string, id: string): Promise<TemplateRow> {
  const row = await q<TemplateRow>('templates').where({ team_id: teamId, id }).first();
  if (!row) throw notFound('Template not found');
  return row;
}

async function versionRow(q: Queryable, t: TemplateRow, version: number): Promise<VersionRow> {
  const v = await q<VersionRow>('template_versions').where({ template_pk: t.pk, version }).first();
  if (!v) throw notFound(`Template version ${version} not found`);
  return v;
}

/**
 * A version's content from input: a visual template's html and text compiled from its blocks; every part's
 * merge tags parsed (a syntax error is a 400 with the part and line).
 */
async function checkedContent(input: TemplateInput): Promise<TemplateContent> {
  const builderType = input.builder_type ?? 'html';
  let html = input.html;
  let text = input.text ?? null;
  let blocks: unknown[] | null = null;
  if (builderType === 'visual') {
    if (!input.builder_blocks) throw badRequest('Request body is missing required fields: builder_blocks');
    const compiled = await compileBlocks(input.builder_blocks);
    html = compiled.html;
    text = input.text ?? compiled.text;
    blocks = input.builder_blocks;
  }
  if (html === undefined) throw badRequest('Request body is missing required fields: html');
  parsePart('subject', input.subject);
  parsePart('html', html);
  if (text !== null) parsePart('text', text);
  return { name: input.name, subject: input.subject, html, text, variables: [...new Set(input.variables ?? [])], builder_type: builderType, builder_blocks: blocks };
}

function versionOf(pk: number, version: number, c: TemplateContent, at: string): VersionRow {
  return {
    template_pk: pk,
    version,
    name: c.name,
    subject: c.subject,
    html: c.html,
    text: c.text,
    variables: JSON.stringify(c.variables),
    builder_type: c.builder_type,
    builder_blocks: c.builder_blocks === null ? null : JSON.stringify(c.builder_blocks),
    created_at: at,
  };
}

async function insertTemplate(ctx: AppContext, trx: Queryable, teamId: string, c: TemplateContent): Promise<Template> {
  const [{ n }] = (await trx('templates').where('team_id', teamId).count({ n: '*' })) as [{ n: number }];
  if (Number(n) >= MAX_TEMPLATES) throw unprocessable(`Template limit reached: ${MAX_TEMPLATES} per team`);
  const now = ctx.clock.now();
  const at = now.toISOString();
  const row: Omit<TemplateRow, 'pk'> = { id: newPublicId('tpl', now.getTime()), team_id: teamId, name: c.name, current_version: 1, published_version: null, created_at: at, updated_at: at };
  const [pk] = (await trx('templates').insert(row)) as number[];
  const v = versionOf(pk!, 1, c, at);
  await trx('template_versions').insert(v);
  return toTemplate({ pk: pk!, ...row }, v);
}

export async function createTemplate(ctx: AppContext, teamId: string, input: TemplateInput): Promise<Template> {
  const c = await checkedContent(input);
  return ctx.db.transaction((trx) => insertTemplate(ctx, trx, teamId, c));
}

export async function getTemplate(ctx: AppContext, teamId: string, id: string): Promise<Template> {
  const reads = readsOf(ctx.db);
  const t = await findRow(reads, teamId, id);
  return toTemplate(t, await versionRow(reads, t, t.current_version));
}

/** A new version from the current one with `change` applied. */
async function addVersion(ctx: AppContext, trx: Queryable, t: TemplateRow, c: TemplateContent): Promise<Template> {
  const at = ctx.clock.now().toISOString();
  const version = t.current_version + 1;
  const v = versionOf(t.pk, version, c, at);
  await trx('template_versions').insert(v);
  await trx('templates').where('pk', t.pk).update({ name: c.name, current_version: version, updated_at: at });
  // Keep MAX_VERSIONS: the oldest beyond go, but never the published one.
  await trx('template_versions')
    .where('template_pk', t.pk)
    .andWhere('version', '<=', version - MAX_VERSIONS)
    .andWhereNot('version', t.published_version ?? -1)
    .delete();
  return toTemplate({ ...t, name: c.name, current_version: version, updated_at: at }, v);
}

export async function updateTemplate(ctx: AppContext, teamId: string, id: string, change: TemplateUpdate): Promise<Template> {
  // The new content is checked (and a visual template compiled, which takes milliseconds, the first time a
  // second) outside the write transaction; the transaction then writes it only onto the version it was made
  // from, and otherwise starts again from the newer one.
  for (let attempt = 0; ; attempt++) {
    const reads = readsOf(ctx.db);
    const t = await findRow(reads, teamId, id);
    const current = content(await versionRow(reads, t, t.current_version));
    const merged: TemplateInput = {
      name: change.name ?? current.name,
      subject: change.subject ?? current.subject,
      html: change.html ?? current.html,
      text: change.text === undefined ? current.text : change.text,
      variables: change.variables ?? current.variables,
      builder_type: change.builder_type ?? current.builder_type,
      builder_blocks: change.builder_blocks ?? current.builder_blocks ?? undefined,
    };
    // A visual template's html is its blocks' compilation: a new html alone would be overwritten.
    if (merged.builder_type === 'visual' && change.html !== undefined && change.builder_blocks === undefined && change.builder_type !== 'html') {
      throw badRequest('html: a visual template’s html is compiled from builder_blocks (send builder_type html to edit the html itself)');
    }
    const next = await checkedContent(merged);
    const written = await ctx.db.transaction(async (trx) => {
      const now = await findRow(trx, teamId, id);
      return now.current_version === t.current_version ? addVersion(ctx, trx, now, next) : null;
    });
    if (written) return written;
    if (attempt >= 2) throw conflict('Template changed while this update was made: try again');
  }
}

export async function deleteTemplate(ctx: AppContext, teamId: string, id: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const t = await findRow(trx, teamId, id);
    await trx('templates').where('pk', t.pk).delete();
  });
}

export async function duplicateTemplate(ctx: AppContext, teamId: string, id: string): Promise<Template> {
  return ctx.db.transaction(async (trx) => {
    const t = await findRow(trx, teamId, id);
    const c = content(await versionRow(trx, t, t.current_version));
    return insertTemplate(ctx, trx, teamId, { ...c, name: `${c.name} (copy)`.slice(0, 200) });
  });
}

/** Publishes the current version (sends use it from now on), or unpublishes (the template becomes a draft). */
export async function setPublished(ctx: AppContext, teamId: string, id: string, publish: boolean): Promise<Template> {
  return ctx.db.transaction(async (trx) => {
    const t = await findRow(trx, teamId, id);
    const at = ctx.clock.now().toISOString();
    const published_version = publish ? t.current_version : null;
    await trx('templates').where('pk', t.pk).update({ published_version, updated_at: at });
    return toTemplate({ ...t, published_version, updated_at: at }, await versionRow(trx, t, t.current_version));
  });
}

export interface TemplateListFilters {
  search?: string | undefined;
  published?: boolean | undefined;
}

/** Most recently updated first; `counts` are the whole team's. */
export async function listTemplates(ctx: AppContext, teamId: string, filters: TemplateListFilters, paging: PageRequest): Promise<Page<Template> & { counts: { published: number; draft: number } }> {
  const reads = readsOf(ctx.db);
  const base = () => {
    const q = reads<TemplateRow>('templates as t').where('t.team_id', teamId);
    if (filters.published !== undefined) q.where((w) => (filters.published ? w.whereNotNull('t.published_version') : w.whereNull('t.published_version')));
    if (filters.search) {
      const needle = filters.search.toLowerCase();
      q.whereExists((e) => e.select(reads.raw('1')).from('template_versions as v').whereRaw('v.template_pk = t.pk AND v.version = t.current_version').andWhere((w) => w.whereRaw('instr(lower(v.name), ?) > 0', [needle]).orWhereRaw('instr(lower(v.subject), ?) > 0', [needle])));
    }
    return q;
  };
  const [[{ n }], rows, [counts]] = await Promise.all([
    base().count({ n: '*' }) as unknown as Promise<[{ n: number }]>,
    base().select('t.*').orderBy([{ column: 't.updated_at', order: 'desc' }, { column: 't.pk', order: 'desc' }]).limit(paging.perPage).offset(paging.offset),
    reads('templates').where('team_id', teamId).select(reads.raw('count(published_version) AS published, count(*) - count(published_version) AS draft')) as unknown as Promise<[{ published: number; draft: number }]>,
  ]);
  const versions = rows.length
    ? await reads<VersionRow>('template_versions').whereIn(
        ['template_pk', 'version'],
        rows.map((r) => [r.pk, r.current_version]),
      )
    : [];
  const byPk = new Map(versions.map((v) => [v.template_pk, v]));
  const page = toPage(rows.map((r) => toTemplate(r, byPk.get(r.pk)!)), Number(n), paging);
  return { ...page, counts: { published: Number(counts?.published ?? 0), draft: Number(counts?.draft ?? 0) } };
}

/** A template's versions, newest first. */
export async function listVersions(ctx: AppContext, teamId: string, id: string, paging: PageRequest): Promise<Page<TemplateVersion>> {
  const reads = readsOf(ctx.db);
  const t = await findRow(reads, teamId, id);
  const [[{ n }], rows] = await Promise.all([
    reads('template_versions').where('template_pk', t.pk).count({ n: '*' }) as unknown as Promise<[{ n: number }]>,
    reads<VersionRow>('template_versions').where('template_pk', t.pk).orderBy('version', 'desc').limit(paging.perPage).offset(paging.offset),
  ]);
  return toPage(rows.map((v) => ({ version: v.version, ...content(v), published: v.version === t.published_version, created_at: v.created_at })), Number(n), paging);
}

export async function getVersion(ctx: AppContext, teamId: string, id: string, version: number): Promise<TemplateVersion> {
  const reads = readsOf(ctx.db);
  const t = await findRow(reads, teamId, id);
  const v = await versionRow(reads, t, version);
  return { version: v.version, ...content(v), published: v.version === t.published_version, created_at: v.created_at };
}

/** Restores a version by copying it forward as the newest (history is never rewritten); publishing stays as it was. */
export async function restoreVersion(ctx: AppContext, teamId: string, id: string, version: number): Promise<Template> {
  return ctx.db.transaction(async (trx) => {
    const t = await findRow(trx, teamId, id);
    return addVersion(ctx, trx, t, content(await versionRow(trx, t, version)));
  });
}

// Rendering. A version's parts are parsed once and kept (versions never change; a deleted template's go).
interface ParsedVersion {
  subject: ParsedPart;
  html: ParsedPart;
  text: ParsedPart | null;
  variables: string[];
  /** What it holds in memory, estimated from its source (parsedBytes). */
  bytes: number;
}
/** Parsed versions kept at most, in bytes; a version over an eighth of this (2 MiB parsed) is parsed per use. */
export const PARSED_TEMPLATE_CACHE_BYTES = 16 * 1024 * 1024;
/**
 * A part's heap once parsed: its text, plus ~1.5 KiB per tag or output (Liquid's template objects and the
 * substitution plan; measured with 2,000–6,000 tags: 1.0–1.6 KiB each, text without tags ~1 byte a byte).
 */
function parsedBytes(source: string): number {
  let tags = 0;
  for (let i = source.indexOf('{'); i >= 0; i = source.indexOf('{', i + 1)) if (source[i + 1] === '{' || source[i + 1] === '%') tags++;
  return source.length + 1536 * tags;
}
// Keyed by template id and version, which never change once written: nothing to forget but by time and size.
// Sized from the source, not by walking the parsed form (Liquid's templates refer to the shared engine).
const parsedCaches = new WeakMap<AppContext, ForgetfulCache<string, ParsedVersion>>();
function parsedCache(ctx: AppContext): ForgetfulCache<string, ParsedVersion> {
  let cache = parsedCaches.get(ctx);
  if (!cache) parsedCaches.set(ctx, (cache = new ForgetfulCache(10 * 60_000, 2_000, PARSED_TEMPLATE_CACHE_BYTES, (key, v) => key.length + v.bytes)));
  return cache;
}

function parseVersion(v: VersionRow): ParsedVersion {
  return {
    subject: parsePart('subject', v.subject),
    html: parsePart('html', v.html),
    text: v.text === null ? null : parsePart('text', v.text),
    variables: JSON.parse(v.variables) as string[],
    bytes: 1024 + parsedBytes(v.subject) + parsedBytes(v.html) + (v.text === null ? 0 : parsedBytes(v.text)),
  };
}

export interface Rendered {
  subject: string;
  html: string;
  text: string | null;
  /** The paths the template reads that were not given (rendered empty, or with their default). */
  missing_variables: string[];
}

function renderParsed(p: ParsedVersion, scope: Record<string, unknown>): Rendered {
  return {
    subject: renderPart(p.subject, scope).trim(),
    html: renderPart(p.html, scope),
    text: p.text === null ? null : renderPart(p.text, scope),
    missing_variables: missingPaths(p.text ? [p.subject, p.html, p.text] : [p.subject, p.html], scope),
  };
}

/** Renders a version (the latest unless `version` says) with `variables`: what would go out, and what was missing. */
export async function renderTemplate(ctx: AppContext, teamId: string, id: string, variables: Record<string, unknown>, version?: number): Promise<Rendered & { version: number }> {
  const reads = readsOf(ctx.db);
  const t = await findRow(reads, teamId, id);
  const n = version ?? t.current_version;
  const parsed = await parsedCache(ctx).get(`${t.id}:${n}`, async () => parseVersion(await versionRow(reads, t, n)));
  return { ...renderParsed(parsed, variables), version: n };
}

export interface RenderedForSend {
  subject: string;
  html: string;
  text: string | null;
}

/** A template as sends use it: its published version, parsed, ready to render with each send's variables. */
export interface SendTemplate {
  id: string;
  version: number;
  /** What a send with `variables` sends (422 when a declared variable is missing). */
  render(variables: Record<string, unknown>): RenderedForSend;
}

/**
 * The template a send by `template_id` uses: its published version (422 when the template is unknown or
 * unpublished). A batch looks each template up once and renders it per email. `contact` is given by sends
 * that know their contact (broadcasts).
 */
export async function templateForSend(ctx: AppContext, teamId: string, id: string): Promise<SendTemplate> {
  const reads = readsOf(ctx.db);
  const t = await reads<TemplateRow>('templates').where({ team_id: teamId, id }).first();
  if (!t) throw unprocessable(`Template '${id}' not found`);
  if (t.published_version === null) throw unprocessable('Template is not published');
  const n = t.published_version;
  const parsed = await parsedCache(ctx).get(`${t.id}:${n}`, async () => parseVersion(await versionRow(reads, t, n)));
  return {
    id: t.id,
    version: n,
    render(variables) {
      const absent = parsed.variables.filter((v) => variables[v] === undefined || variables[v] === null);
      if (absent.length > 0) throw unprocessable(`Missing template variables: ${absent.join(', ')}`);
      // No missing-variable report here (render's answer has it): a send only needs the parts.
      return {
        subject: renderPart(parsed.subject, variables).trim(),
        html: renderPart(parsed.html, variables),
        text: parsed.text === null ? null : renderPart(parsed.text, variables),
      };
    },
  };
}

/** The presets a template can start from, in their fixed order. */
export function listPresets(): readonly Preset[] {
  return PRESETS;
}

/** A new draft template from a preset (its blocks compiled as any visual template's). */
export async function useTemplatePreset(ctx: AppContext, teamId: string, presetId: string, name?: string): Promise<Template> {
  const preset = PRESETS.find((p) => p.id === presetId);
  if (!preset) throw notFound('Template preset not found');
  return createTemplate(ctx, teamId, { name: name ?? preset.name, subject: preset.subject, variables: [...preset.variables], builder_type: 'visual', builder_blocks: [...preset.blocks] });
}
