// The admin CLI two ways. `runAdmin`: as an operator runs it, a separate process on a data directory (MAIL_* of
// this process left out); for what only a process shows (exit status, concurrent writers, the entry point).
// `adminInProcess`: the same commands (src/cli/admin-cli.ts main) in this process, with the same environment,
// output and exit code, without a process start and a module graph load per command.
import type { Test } from 'tap';
import { spawn } from 'node:child_process';
import { main } from '../../src/cli/admin-cli.js';
import { ROOT } from './process.js';

export interface AdminRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment a run sees: this process's without any MAIL_* setting, plus the data dir, logs silent. */
function adminEnv(dataDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MAIL_')) env[k] = v;
  return { ...env, MAIL_DATA_DIR: dataDir, MAIL_LOG_LEVEL: 'silent' };
}

/** `npm run admin -- …args` on `dataDir`, logs silent; resolves when it exits. */
export function runAdmin(dataDir: string, ...args: string[]): Promise<AdminRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/admin.ts', ...args], {
      cwd: ROOT,
      env: adminEnv(dataDir),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The same command run in this process: what it wrote to stdout and stderr, and the exit code it returned. */
export async function adminInProcess(dataDir: string, ...args: string[]): Promise<AdminRun> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    env: adminEnv(dataDir),
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
  });
  return { code, stdout, stderr };
}

/** The command's JSON answer, after checking that it exited 0. */
export function adminJson<T>(t: Test, r: AdminRun, what: string): T {
  t.equal(r.code, 0, `${what}: exit 0 (stderr: ${r.stderr})`);
  return JSON.parse(r.stdout) as T;
}
