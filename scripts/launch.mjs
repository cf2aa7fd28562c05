// Runs a compiled entry point (dist/<entry>.js), compiling first when this is a source checkout whose
// dist/ is missing or older than src/. A built image has dist/ and no src/, so it just runs.
// Compiler output goes to stderr so that the entry's stdout (e.g. the admin CLI's JSON) stays clean.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = process.argv[2];
if (!entry) {
  process.stderr.write('usage: node scripts/launch.mjs <entry, e.g. main or cli/admin> [args…]\n');
  process.exit(2);
}
const src = path.join(root, 'src');
const stamp = path.join(root, 'dist', '.tsbuildinfo');

function newestMtime(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

if (existsSync(src)) {
  const stale = !existsSync(stamp) || newestMtime(src) > statSync(stamp).mtimeMs;
  if (stale) {
    let tsc;
    try {
      tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    } catch {
      process.stderr.write('dist/ is out of date and TypeScript is not installed: run `npm install` first\n');
      process.exit(1);
    }
    const r = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { stdio: ['ignore', 2, 2] });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
}
process.argv.splice(2, 1); // the entry sees its own arguments from argv[2]
await import(pathToFileURL(path.join(root, 'dist', `${entry}.js`)).href);
