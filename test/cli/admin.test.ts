// The operator CLI: one JSON value on stdout, errors on stderr with a non-zero exit; then the appliance on the
// same directory accepts its keys. The commands run in-process (src/cli/admin-cli.ts, same environment, output
// and exit code); what only a process shows runs as one: concurrent writers, a bad configuration, `npm run admin`.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { makeDataDir, request, startTestApp } from '../helpers/app.js';
import { adminInProcess } from '../helpers/admin-cli.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// `npm run admin` compiles dist/ on a fresh clone: give this file more than the default budget.
t.setTimeout(600_000);

/** Runs the tasks with at most `n` at once, results in order. */
async function inParallel<T>(tasks: Array<() => Promise<T>>, n = 4): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      out[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, tasks.length) }, worker));
  return out;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a child: ours without any MAIL_* setting, plus the given ones. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MAIL_')) env[k] = v;
  return { ...env, ...extra };
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function dataDir(t: Test): string {
  const dir = makeDataDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const admin = adminInProcess;
// Several start at once (each compiles its module graph through tsx): a generous deadline on a busy machine.
const adminProcess = (dir: string, ...args: string[]) =>
  run(process.execPath, ['--import', 'tsx', 'src/cli/admin.ts', ...args], childEnv({ MAIL_DATA_DIR: dir, MAIL_LOG_LEVEL: 'silent' }), 180_000);

/** Exactly one line of JSON on stdout, exit 0, nothing on stderr. */
function json<T>(t: Test, r: Run, what: string): T {
  t.equal(r.code, 0, `${what}: exit 0 (stderr: ${r.stderr})`);
  t.equal(r.stderr, '', `${what}: nothing on stderr`);
  t.match(r.stdout, /^[^\n]+\n$/, `${what}: exactly one line`);
  return JSON.parse(r.stdout) as T;
}

function failed(t: Test, r: Run, what: string, message: RegExp): void {
  t.not(r.code, 0, `${what}: non-zero exit`);
  t.equal(r.stdout, '', `${what}: nothing on stdout`);
  t.match(r.stderr, message, `${what}: says why on stderr`);
  t.notMatch(r.stderr, /^\s+at /m, `${what}: no stack trace`);
}

interface CreatedTeam {
  team_id: string;
  name: string;
  plan: string;
  owner_email: string;
  created_at: string;
  key_id: string;
  api_key: string;
}
interface CreatedKey {
  team_id: string;
  id: string;
  name: string;
  permission: string;
  mode: string;
  api_key: string;
}
interface ListedKey {
  id: string;
  name: string;
  permission: string;
  mode: string;
  token_hint: string;
}

t.test('teams and keys through the CLI, then over HTTP', async (t) => {
  const dir = dataDir(t);

  const empty = json<unknown[]>(t, await admin(dir, 'teams', 'list'), 'teams list on a new box');
  t.same(empty, [], 'no team yet');

  const team = json<CreatedTeam>(t, await admin(dir, 'teams', 'create', '--name', 'Acme', '--plan', 'pro', '--owner', 'a@b.test'), 'teams create');
  t.type(team.team_id, 'string');
  t.match(team.api_key, /^sk_live_[0-9A-Za-z]{32}$/);
  t.match(team, { name: 'Acme', plan: 'pro', owner_email: 'a@b.test' });
  t.type(team.key_id, 'string');

  const teams = json<Array<{ team_id: string; name: string; plan: string; owner_email: string; created_at: string }>>(t, await admin(dir, 'teams', 'list'), 'teams list');
  t.ok(Array.isArray(teams));
  t.equal(teams.length, 1);
  // Every command names a team's id `team_id` (as `--team TEAM_ID`, teams create, usage and hold do).
  t.same(teams[0], { team_id: team.team_id, name: 'Acme', plan: 'pro', owner_email: 'a@b.test', created_at: team.created_at }, 'the team as teams create showed it');
  t.notOk(JSON.stringify(teams).includes(team.api_key), 'no key values in the team list');

  const second = json<CreatedTeam>(t, await admin(dir, 'teams', 'create', '--name=Beta', '--plan=free', '--owner=ops@beta.test'), '--flag=value form');
  t.match(second, { name: 'Beta', plan: 'free' });
  const two = json<Array<{ team_id: string }>>(t, await admin(dir, 'teams', 'list'), 'teams list with two');
  t.same(new Set(two.map((x) => x.team_id)), new Set([team.team_id, second.team_id]));
  const planned = json<Record<string, unknown>>(t, await admin(dir, 'teams', 'set-plan', '--team', second.team_id, '--plan', 'starter'), 'teams set-plan');
  t.same(planned, { team_id: second.team_id, name: 'Beta', plan: 'starter', owner_email: 'ops@beta.test', created_at: second.created_at }, 'set-plan answers the same team shape');

  const key = json<CreatedKey>(
    t,
    await admin(dir, 'keys', 'create', '--team', team.team_id, '--name', 'k', '--permission', 'sending_access', '--mode', 'test'),
    'keys create',
  );
  t.match(key.api_key, /^sk_test_[0-9A-Za-z]{32}$/);
  t.match(key, { team_id: team.team_id, name: 'k', permission: 'sending_access', mode: 'test' });

  const full = json<CreatedKey>(t, await admin(dir, 'keys', 'create', '--team', team.team_id, '--name', 'ops', '--permission', 'full_access'), 'keys create, mode defaults');
  t.match(full.api_key, /^sk_live_/);
  t.equal(full.mode, 'live');

  const keys = json<ListedKey[]>(t, await admin(dir, 'keys', 'list', '--team', team.team_id), 'keys list');
  t.same(new Set(keys.map((k) => k.id)), new Set([team.key_id, key.id, full.id]));
  const listed = keys.find((k) => k.id === key.id);
  t.match(listed, { name: 'k', permission: 'sending_access', mode: 'test' });
  for (const secret of [team.api_key, key.api_key, full.api_key]) {
    t.notOk(JSON.stringify(keys).includes(secret.slice(8)), 'keys list shows no value');
  }
  const betaKeys = json<ListedKey[]>(t, await admin(dir, 'keys', 'list', '--team', second.team_id), 'keys list of the other team');
  t.equal(betaKeys.length, 1, 'each team sees its own keys');

  // The appliance on the same directory: not empty, so no bootstrap; the CLI's keys work.
  const app = await startTestApp(t, { dataDir: dir });
  t.equal(app.appliance.bootstrap, null, 'the box was not empty: no default team');
  const as = (k: string, method: string, path: string) => request<Record<string, unknown>>(app.url, k, method, path);

  const owner = await as(team.api_key, 'GET', '/api-keys');
  t.equal(owner.status, 200, 'the team key from teams create is full_access');
  t.same(new Set((owner.body.keys as ListedKey[]).map((k) => k.id)), new Set([team.key_id, key.id, full.id]));
  t.equal((await as(full.api_key, 'GET', '/domains')).status, 200, 'a full_access key from keys create works');
  const sending = await as(key.api_key, 'GET', '/api-keys');
  t.equal(sending.status, 403, 'the sending_access key has sending rights only');
  t.same(sending.body, { error: 'API key does not have permission', code: 'forbidden' });
  t.equal((await as(second.api_key, 'GET', '/api-keys')).status, 200, 'the other team key works');
  t.equal((await as(app.apiKey, 'GET', '/api-keys')).status, 401, 'the unused bootstrap value was never stored');

  // A key made over HTTP shows up in the CLI, while the appliance runs (WAL: both at once).
  const made = await request<{ id: string }>(app.url, team.api_key, 'POST', '/api-keys', { body: { name: 'http', permission: 'full_access' } });
  t.equal(made.status, 201);
  const after = json<ListedKey[]>(t, await admin(dir, 'keys', 'list', '--team', team.team_id), 'keys list while the appliance runs');
  t.ok(after.some((k) => k.id === made.body.id && k.name === 'http'));
  const live = json<CreatedKey>(t, await admin(dir, 'keys', 'create', '--team', team.team_id, '--name', 'hot', '--permission', 'full_access'), 'keys create while the appliance runs');
  t.equal((await as(live.api_key, 'GET', '/api-keys')).status, 200, 'a key made by the CLI works at once on the running box');
});

t.test('the CLI enforces per-plan key caps', async (t) => {
  const dir = dataDir(t);
  const team = json<CreatedTeam>(t, await admin(dir, 'teams', 'create', '--name', 'Tiny', '--plan', 'free', '--owner', 'o@tiny.test'), 'teams create');
  // One after the other: concurrent writers are the subject of the next test.
  for (let i = 2; i <= 5; i++) {
    json<CreatedKey>(t, await admin(dir, 'keys', 'create', '--team', team.team_id, '--name', `k${i}`, '--permission', 'sending_access'), `key ${i}`);
  }
  const over = await admin(dir, 'keys', 'create', '--team', team.team_id, '--name', 'k6', '--permission', 'sending_access');
  failed(t, over, 'the sixth key of a free team', /limit.*5/i);
});

// Write transactions begin IMMEDIATE (src/db/sqlite-client.ts), so concurrent writers wait for each other
// (busy_timeout) instead of failing with SQLITE_BUSY.
t.test('several CLI processes creating keys at once all succeed', async (t) => {
  const dir = dataDir(t);
  const team = json<CreatedTeam>(t, await admin(dir, 'teams', 'create', '--name', 'Busy', '--plan', 'pro', '--owner', 'o@busy.test'), 'teams create');
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) => adminProcess(dir, 'keys', 'create', '--team', team.team_id, '--name', `p${i}`, '--permission', 'full_access')),
  );
  const ok = results.filter((r) => r.code === 0).length;
  results.forEach((r, i) => t.equal(r.code, 0, `process ${i}: exit 0 ${r.stderr ? `(${r.stderr.split('\n')[0]!.slice(0, 60)}…)` : ''}`));
  const keys = json<ListedKey[]>(t, await admin(dir, 'keys', 'list', '--team', team.team_id), 'keys list');
  t.equal(keys.length, 1 + ok, 'every process that said it made a key did, and no other did');
});

t.test('errors: non-zero exit, stderr only', async (t) => {
  const dir = dataDir(t);
  const team = json<CreatedTeam>(t, await admin(dir, 'teams', 'create', '--name', 'Acme', '--plan', 'pro', '--owner', 'a@b.test'), 'teams create');
  const cases: Array<[string, string[], RegExp]> = [
    ['no command', [], /no command/],
    ['unknown command', ['teams', 'destroy'], /unknown command: teams destroy/],
    ['unknown resource', ['widgets', 'list'], /unknown command/],
    ['missing --name', ['teams', 'create', '--plan', 'pro', '--owner', 'a@b.test'], /--name is required/],
    ['missing --plan', ['teams', 'create', '--name', 'N', '--owner', 'a@b.test'], /--plan is required/],
    ['missing --owner', ['teams', 'create', '--name', 'N', '--plan', 'pro'], /--owner is required/],
    ['flag without a value', ['teams', 'create', '--name', 'N', '--plan', 'pro', '--owner'], /--owner needs a value/],
    ['blank name', ['teams', 'create', '--name', '  ', '--plan', 'pro', '--owner', 'a@b.test'], /--name is required/],
    ['bad plan', ['teams', 'create', '--name', 'N', '--plan', 'gold', '--owner', 'a@b.test'], /--plan must be one of free, starter, pro, scale, enterprise/],
    ['bad owner', ['teams', 'create', '--name', 'N', '--plan', 'pro', '--owner', 'nobody'], /--owner must be an email address/],
    ['unknown team', ['keys', 'create', '--team', 'no-such-team', '--name', 'k', '--permission', 'full_access'], /Team not found/],
    ['unknown team (list)', ['keys', 'list', '--team', 'no-such-team'], /Team not found/],
    ['missing --team', ['keys', 'list'], /--team is required/],
    ['missing --permission', ['keys', 'create', '--team', team.team_id, '--name', 'k'], /--permission is required/],
    ['bad permission', ['keys', 'create', '--team', team.team_id, '--name', 'k', '--permission', 'admin'], /--permission must be one of full_access, sending_access/],
    ['bad mode', ['keys', 'create', '--team', team.team_id, '--name', 'k', '--permission', 'full_access', '--mode', 'prod'], /--mode must be one of live, test/],
  ];
  // Several at once on the same file, as operators' scripts do.
  const results = await inParallel(cases.map(([, args]) => () => admin(dir, ...args)));
  cases.forEach(([what, , message], i) => failed(t, results[i]!, what, message));
  const list = json<ListedKey[]>(t, await admin(dir, 'keys', 'list', '--team', team.team_id), 'keys list after the failures');
  t.equal(list.length, 1, 'no failed command created a key');
  const teams = json<unknown[]>(t, await admin(dir, 'teams', 'list'), 'teams list after the failures');
  t.equal(teams.length, 1, 'no failed command created a team');
});

t.test('a bad configuration stops the CLI naming the variable', async (t) => {
  const dir = dataDir(t);
  const r = await run(
    process.execPath,
    ['--import', 'tsx', 'src/cli/admin.ts', 'teams', 'list'],
    childEnv({ MAIL_DATA_DIR: dir, MAIL_LOG_LEVEL: 'silent', MAIL_DEFAULT_PLAN: 'gold' }),
  );
  failed(t, r, 'MAIL_DEFAULT_PLAN=gold', /MAIL_DEFAULT_PLAN/);
});

t.test('npm run -s admin -- teams list works (compiled through scripts/launch.mjs)', async (t) => {
  const dir = dataDir(t);
  const made = json<CreatedTeam>(t, await admin(dir, 'teams', 'create', '--name', 'Npm', '--plan', 'starter', '--owner', 'n@pm.test'), 'teams create');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = await run(npm, ['run', '-s', 'admin', '--', 'teams', 'list'], childEnv({ MAIL_DATA_DIR: dir, MAIL_LOG_LEVEL: 'silent' }), 180_000);
  t.equal(r.code, 0, `exit 0 (stderr: ${r.stderr})`);
  // npm itself may warn on stderr (e.g. about user config); stdout must be exactly the JSON answer.
  t.match(r.stdout, /^[^\n]+\n$/, 'exactly one line on stdout');
  const teams = JSON.parse(r.stdout) as Array<{ team_id: string; name: string; plan: string }>;
  t.same(
    teams.map((x) => [x.team_id, x.name, x.plan]),
    [[made.team_id, 'Npm', 'starter']],
  );
});

t.test('--help and -h print the usage', async (t) => {
  const dir = dataDir(t);
  for (const args of [['--help'], ['-h'], ['keys', 'create', '--help'], ['help']]) {
    const r = await admin(dir, ...args);
    t.equal(r.code, 0, `${args.join(' ')}: exit 0`);
    t.match(r.stderr, /^usage: npm run -s admin -- <command>/, `${args.join(' ')}: the usage`);
    t.equal(r.stdout, '', `${args.join(' ')}: nothing on stdout`);
  }
});
