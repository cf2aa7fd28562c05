// The admin CLI as an operator runs it: a separate process on a data directory (MAIL_* of this process left out).
import type { Test } from 'tap';
import { spawn } from 'node:child_process';
import { ROOT } from './process.js';

export interface AdminRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `npm run admin -- …args` on `dataDir`, logs silent; resolves when it exits. */
export function runAdmin(dataDir: string, ...args: string[]): Promise<AdminRun> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MAIL_')) env[k] = v;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/admin.ts', ...args], {
      cwd: ROOT,
      env: { ...env, MAIL_DATA_DIR: dataDir, MAIL_LOG_LEVEL: 'silent' },
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

/** The command's JSON answer, after checking that it exited 0. */
export function adminJson<T>(t: Test, r: AdminRun, what: string): T {
  t.equal(r.code, 0, `${what}: exit 0 (stderr: ${r.stderr})`);
  return JSON.parse(r.stdout) as T;
}
