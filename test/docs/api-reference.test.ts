// docs/API.md cannot drift from the routes: every path and method of the box's /openapi.json has a row of
// its own in a table of the reference (first cell, `METHOD /path`), and every route a table of the reference
// names is one the box serves.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { startTestApp } from '../helpers/app.js';

interface OpenApi {
  paths: Record<string, Record<string, unknown>>;
}

const ROUTE = /`(GET|POST|PUT|PATCH|DELETE|OPTIONS) (\/[^`?\s]*)[^`]*`/g;

/** The table cells of a Markdown document, each row split on unescaped pipes. */
function tableRows(markdown: string): string[][] {
  return markdown
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|[\s|:-]+\|?$/.test(line))
    .map((line) => line.replace(/^\||\|$/g, '').split(/(?<!\\)\|/).map((cell) => cell.trim()));
}

function routesIn(text: string): string[] {
  return [...text.matchAll(ROUTE)].map((m) => `${m[1]} ${m[2]}`);
}

t.test('tableRows and routesIn read what the reference writes', async (t) => {
  const rows = tableRows('| Method and path | Answer |\n|---|---|\n| `GET /emails/{id}` (also `POST /x?y=1`) | the Email, see `GET /health` |\n');
  t.same(rows, [['Method and path', 'Answer'], ['`GET /emails/{id}` (also `POST /x?y=1`)', 'the Email, see `GET /health`']]);
  t.same(routesIn(rows[1]![0]!), ['GET /emails/{id}', 'POST /x']);
});

t.test('docs/API.md documents every route of /openapi.json, and only those', async (t) => {
  const app = await startTestApp(t);
  const res = await app.request<OpenApi>('GET', '/openapi.json', { key: null });
  t.equal(res.status, 200);
  const served = new Set<string>();
  for (const [path, ops] of Object.entries(res.body.paths)) for (const method of Object.keys(ops)) served.add(`${method.toUpperCase()} ${path}`);
  t.ok(served.size > 50, `the document lists the box's routes (${served.size})`);

  const rows = tableRows(readFileSync(new URL('../../docs/API.md', import.meta.url), 'utf8'));
  const rowed = new Set(rows.flatMap((cells) => routesIn(cells[0] ?? '')));
  const missing = [...served].filter((r) => !rowed.has(r));
  t.same(missing, [], 'every served route has a row of its own in docs/API.md');

  const named = new Set(rows.flatMap((cells) => cells.flatMap(routesIn)));
  const stale = [...named].filter((r) => !served.has(r));
  t.same(stale, [], 'every route a table in docs/API.md names is served');
});
