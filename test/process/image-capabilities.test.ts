// The image binds the mail ports below 1024 as the unprivileged `node` user without a file capability on node
// (issue 34 §3): it starts through a copy of setpriv that holds cap_net_bind_service (permitted) and raises it
// as an ambient capability. A node with file capabilities runs in glibc's secure mode (AT_SECURE), where
// MALLOC_ARENA_MAX and the other MALLOC_* settings are ignored; one started this way is not.
//
// First the Dockerfile says so; then, where this test runs as root on Linux with setpriv and setcap (this
// machine, CI), the same entrypoint is rebuilt in a temp dir and run as an unprivileged user: the started node
// sees MALLOC_ARENA_MAX, is not AT_SECURE, carries the capability only as an ambient one, and binds a port < 1024.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
const instructions = dockerfile.split('\n').filter((l) => !l.trimStart().startsWith('#')).join('\n');
const entrypointScript = readFileSync(path.join(root, 'scripts/docker-entrypoint.sh'), 'utf8');

t.test('the Dockerfile: no setcap on node; setpriv with cap_net_bind_service as the entrypoint; MALLOC_ARENA_MAX set', async (t) => {
  t.notMatch(instructions, /setcap[^\n]*node/, 'node carries no file capability');
  t.match(instructions, /setcap cap_net_bind_service=p \/usr\/local\/bin\/setpriv-net-bind/);
  const entry = /^ENTRYPOINT (\[.*\])$/m.exec(instructions);
  t.ok(entry, 'an ENTRYPOINT');
  t.same(JSON.parse(entry![1]!), ['/usr/local/bin/mail-entrypoint']);
  t.match(instructions, /COPY scripts\/docker-entrypoint\.sh \/usr\/local\/bin\/mail-entrypoint/);
  t.match(entrypointScript, /^BIND=\/usr\/local\/bin\/setpriv-net-bind$/m, 'the entrypoint raises the capability through the setcap copy of setpriv');
  t.match(entrypointScript, /^RAISE="--inh-caps=\+net_bind_service --ambient-caps=\+net_bind_service"$/m);
  t.match(instructions, /^CMD \["npm", "start"\]$/m, 'CMD is still the README\'s start command');
  t.match(instructions, /^USER node$/m, 'still the unprivileged user');
  t.match(instructions, /MALLOC_ARENA_MAX=2/);
  for (const port of [25, 465, 587, 143, 993, 110, 995, 3000]) t.match(instructions, new RegExp(`EXPOSE[^\\n]*\\b${port}\\b`), `port ${port} unchanged`);
});

const which = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim();
const setpriv = which('setpriv');
const setcap = which('setcap');
const canRun = process.platform === 'linux' && process.getuid?.() === 0 && !!setpriv && !!setcap;

t.test('the entrypoint, rebuilt here: the started node honours MALLOC_*, is not AT_SECURE, binds a low port', { skip: canRun ? false : 'needs root, Linux, setpriv and setcap' }, async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mail-caps-'));
  chmodSync(dir, 0o755);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const entry = path.join(dir, 'setpriv-net-bind');
  execFileSync('install', ['-m', '0755', setpriv, entry]);
  execFileSync(setcap, ['cap_net_bind_service=p', entry]);
  const probe = path.join(dir, 'probe.cjs');
  writeFileSync(
    probe,
    `const fs = require('fs');
const status = Object.fromEntries(fs.readFileSync('/proc/self/status', 'utf8').split('\\n').map((l) => l.split(':\\t')).filter((p) => p.length === 2));
const auxv = fs.readFileSync('/proc/self/auxv'); let secure = null;
for (let i = 0; i + 16 <= auxv.length; i += 16) if (auxv.readBigUInt64LE(i) === 23n) secure = Number(auxv.readBigUInt64LE(i + 8));
const out = { uid: status.Uid.split('\\t')[0], capEff: status.CapEff, capAmb: status.CapAmb, secure, malloc: process.env.MALLOC_ARENA_MAX ?? null, port: null, error: null };
const tryPort = (p) => { if (p > 1000) { console.log(JSON.stringify(out)); return; } const s = require('net').createServer(); s.once('error', (e) => { out.error = e.code; tryPort(p + 1); }); s.listen(p, '127.0.0.1', () => { out.port = p; out.error = null; s.close(() => console.log(JSON.stringify(out))); }); };
tryPort(900);`,
  );
  chmodSync(probe, 0o644);
  // The image's entrypoint script, pointed at this copy of setpriv.
  const script = path.join(dir, 'mail-entrypoint');
  writeFileSync(script, entrypointScript.replace(/^BIND=.*$/m, `BIND=${entry}`), { mode: 0o755 });
  chmodSync(script, 0o755);
  // As the image runs it: an unprivileged user (nobody) with an empty inheritable set; `noNewPrivs` as under
  // `docker run --security-opt no-new-privileges`. (`env -u NODE_OPTIONS`: tap's process-info hook, which nobody
  // may not write, is not the probe's business.)
  const run = (how: 'entrypoint' | 'plain' | 'no-new-privs') => {
    const argv = ['--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all', ...(how === 'no-new-privs' ? ['--no-new-privs'] : []), ...(how === 'plain' ? [] : [script]), 'env', '-u', 'NODE_OPTIONS', process.execPath, probe];
    const r = spawnSync(setpriv, argv, { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', MALLOC_ARENA_MAX: '2' } });
    t.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout.trim()) as { uid: string; capEff: string; capAmb: string; secure: number; malloc: string | null; port: number | null; error: string | null };
    return { ...out, stderr: r.stderr };
  };
  const started = run('entrypoint');
  t.equal(started.uid, '65534', 'runs unprivileged');
  t.equal(started.secure, 0, 'not AT_SECURE: glibc reads MALLOC_*');
  t.equal(started.malloc, '2', 'MALLOC_ARENA_MAX reached node');
  t.equal(BigInt(`0x${started.capAmb}`), 1n << 10n, 'cap_net_bind_service (10) as an ambient capability, nothing else');
  t.equal(BigInt(`0x${started.capEff}`), 1n << 10n);
  t.ok(started.port !== null && started.port < 1024, `bound port ${started.port}`);
  t.equal(started.stderr, '', 'nothing said');
  const plain = run('plain');
  t.equal(plain.port, null, 'without it the same user cannot bind below 1024');
  t.equal(plain.error, 'EACCES');
  // Without the capability to be had, the command still runs (ports of 1024 and above work), and says why.
  const hardened = run('no-new-privs');
  t.equal(hardened.malloc, '2', 'no-new-privileges: the command runs all the same');
  t.equal(BigInt(`0x${hardened.capAmb}`), 0n);
  t.equal(hardened.port, null);
  t.equal(hardened.error, 'EACCES');
  t.match(hardened.stderr, /cap_net_bind_service is not available/);
  t.ok(existsSync(entry));
});
