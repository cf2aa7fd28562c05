// Issue 34: the appliance's start does not load what it does not need yet. The heavy libraries of areas a box
// may never use (MCP, mailauth, mailparser, liquidjs, selfsigned's X.509 stack, ua-parser-js, csv-parse,
// fast-xml-parser, tar) load at their first use, behind their area's functions, and the worker threads start with
// the first work. Seen here through require.cache; then one first use shows the lazy path still works.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import t from 'tap';

// The CommonJS ones: require.cache shows them whether imported or required (an ES module such as the MCP SDK or
// tar leaves no trace there; a module-resolution hook would, but hooks and tsx's loader hung together here).
const LAZY = ['mailauth', 'mailparser', 'liquidjs', 'ua-parser-js', 'csv-parse', 'fast-xml-parser', 'geoip-country', 'mjml'];

/** The lazy packages loaded so far (by either loader). */
function loadedLazy(): string[] {
  const cjs = Object.keys(createRequire(import.meta.url).cache);
  return LAZY.filter((name) => cjs.some((u) => u.includes(`/node_modules/${name}/`)));
}

t.test('a started appliance has loaded none of the lazy libraries and runs no worker thread', async (t) => {
  const { startTestApp } = await import('../helpers/app.js');
  const app = await startTestApp(t);
  t.ok(Object.keys(createRequire(import.meta.url).cache).some((u) => u.includes('/node_modules/sqlite3/')), 'the CommonJS packages the start needs are seen');
  t.same(loadedLazy(), [], 'no lazy library loaded at start');
  if (process.platform === 'linux') {
    const names = readdirSync('/proc/self/task').map((tid) => readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim());
    t.same(names.filter((n) => n.startsWith('mail-render')), [], 'no render thread before the first email');
  }
  t.equal((await app.request('GET', '/health')).status, 200);

  // First use: a raw send parses with mailparser, loaded now; the appliance answers as before.
  const { parseInbound } = await import('../../src/services/inbound/inbound-emails.js');
  const parsed = await parseInbound(Buffer.from('From: a@example.com\r\nTo: b@example.com\r\nSubject: first use\r\n\r\nhello\r\n'));
  t.equal(parsed.parsed.subject, 'first use', 'mailparser works at its first use');
  t.ok(loadedLazy().includes('mailparser'), 'and is loaded only then');
});
