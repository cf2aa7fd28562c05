// The house's rules of imports (docs/ARCHITECTURE.md), read off the source: arrows point down, the service
// areas are layered, one area reaches another only through its index.ts, and no module needs itself again.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const src = path.join(root, 'src');

/** The service areas, lowest first: an area imports only areas before it. */
const AREAS = ['platform', 'audience', 'templates', 'sending', 'inbound', 'mailboxes', 'notifications', 'campaigns', 'automation', 'housekeeping'];
/** Machinery and ground: they never import a service or an adapter. */
const BELOW_SERVICES = ['core', 'db', 'dns', 'jobs', 'mta', 'mailstore', 'events', 'limits', 'webhooks', 'config.ts', 'context.ts'];

interface Import {
  from: string;
  to: string;
  /** Erased at compile time (`import type`, `export type`, or every name marked `type`). */
  typeOnly: boolean;
}

function walk(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const IMPORT = /^(import|export)\s+(type\s+)?(?:\{([^}]*)\}|[^'{;]*?)\s*from\s*'(\.[^']+)'/gm;
const DYNAMIC = /import\(\s*'(\.[^']+)'\s*\)/g;

function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const resolve = (spec: string) => path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts'));
  const found: Import[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const names = m[3]?.split(',').map((s) => s.trim()).filter(Boolean);
    const typeOnly = Boolean(m[2]) || (names !== undefined && names.length > 0 && names.every((n) => n.startsWith('type ')));
    found.push({ from: file, to: resolve(m[4]!), typeOnly });
  }
  for (const m of text.matchAll(DYNAMIC)) found.push({ from: file, to: resolve(m[1]!), typeOnly: false });
  return found;
}

const rel = (p: string) => path.relative(src, p);
/** `services/<area>` for a service file, else the first segment under src (a folder, or a top-level file). */
function placeOf(file: string): string {
  if (!file.startsWith(src + path.sep)) return path.relative(root, file).split(path.sep)[0]!;
  const parts = rel(file).split(path.sep);
  if (parts[0] === 'services' && parts.length > 2) return `services/${parts[1]}`;
  return parts[0]!;
}
const areaOf = (place: string) => (place.startsWith('services/') ? place.slice('services/'.length) : null);

const files = walk(src);
// The benchmarks and operator scripts are adapters too, as far as the indexes go.
const imports = [...files, ...walk(path.join(root, 'scripts'))].flatMap(importsOf);

t.test('the parser sees the imports it should (the rules below are not vacuous)', async (t) => {
  t.ok(files.length > 100, `${files.length} source files`);
  t.ok(imports.length > 500, `${imports.length} imports`);
  t.ok(imports.some((i) => areaOf(placeOf(i.from)) === 'inbound' && areaOf(placeOf(i.to)) === 'sending'), 'a cross-area import is seen');
  t.ok(imports.some((i) => i.typeOnly), 'a type-only import is seen');
  t.same(AREAS.filter((a) => !files.some((f) => placeOf(f) === `services/${a}`)), [], 'every area named here exists');
  const unnamed = [...new Set(files.map(placeOf).filter((p) => p.startsWith('services/')))].filter((p) => !AREAS.includes(areaOf(p)!));
  t.same(unnamed, [], 'every area that exists is named here (and in docs/ARCHITECTURE.md)');
});

t.test('every service lives in an area, and every area has an index.ts', async (t) => {
  t.same(files.filter((f) => placeOf(f) === 'services'), [], 'no file directly under src/services');
  for (const a of AREAS) t.ok(files.includes(path.join(src, 'services', a, 'index.ts')), `services/${a}/index.ts`);
});

t.test('one area, an adapter or appliance.ts reaches an area only through its index.ts', async (t) => {
  const bad = imports.filter((i) => {
    const to = areaOf(placeOf(i.to));
    return to !== null && placeOf(i.from) !== placeOf(i.to) && path.basename(i.to) !== 'index.ts';
  });
  t.same(bad.map((i) => `${rel(i.from)} -> ${rel(i.to)}`), []);
});

t.test('an area imports only the areas below it', async (t) => {
  const bad = imports.filter((i) => {
    const from = areaOf(placeOf(i.from));
    const to = areaOf(placeOf(i.to));
    return from !== null && to !== null && from !== to && AREAS.indexOf(to) > AREAS.indexOf(from);
  });
  t.same(bad.map((i) => `${rel(i.from)} -> ${rel(i.to)}`), []);
});

t.test('machinery and ground never import a service or an adapter; core imports only core', async (t) => {
  const upward = imports.filter((i) => BELOW_SERVICES.includes(placeOf(i.from)) && !BELOW_SERVICES.includes(placeOf(i.to)));
  t.same(upward.map((i) => `${rel(i.from)} -> ${rel(i.to)}`), []);
  const fromCore = imports.filter((i) => placeOf(i.from) === 'core' && placeOf(i.to) !== 'core');
  t.same(fromCore.map((i) => `${rel(i.from)} -> ${rel(i.to)}`), [], 'core imports nothing above it, the configuration included');
});

t.test('no module imports itself again through others (no cycle of runtime imports)', async (t) => {
  const graph = new Map<string, string[]>();
  for (const i of imports) if (!i.typeOnly) graph.set(i.from, [...(graph.get(i.from) ?? []), i.to]);
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, trail: string[]): void => {
    state.set(file, 'open');
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') cycles.push([...trail.slice(trail.indexOf(next)), next].map(rel).join(' -> '));
      else if (!state.has(next)) visit(next, [...trail, next]);
    }
    state.set(file, 'done');
  };
  for (const f of files) if (!state.has(f)) visit(f, [f]);
  t.same(cycles, []);
});
