// The appliance as a real child process, started the way `npm start` starts it (src/main.ts), so that a
// test can signal, freeze or kill it and read its structured logs.
import type { Test } from 'tap';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import http from 'node:http';
import { readFileSync, rmSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { newToken } from '../../src/services/platform/api-keys.js';
import { makeDataDir, TEST_HOSTNAME } from './app.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Polls `check` until it returns a value, with a deadline (no fixed sleeps). */
export async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, wait));
  }
}

/** Every listener on a free port (parallel test files must not collide on the defaults). */
const ALL_PORTS_FREE = Object.fromEntries(
  ['API', 'MX', 'SUBMISSION', 'SUBMISSIONS', 'IMAP', 'IMAPS', 'POP3', 'POP3S'].map((l) => [`MAIL_${l}_PORT`, '0']),
);

/** What every spawned test appliance shares: loopback only, the tests' host name, structured logs (ports are read from them). */
const TEST_DEFAULTS = { MAIL_BIND: '127.0.0.1', MAIL_HOSTNAME: TEST_HOSTNAME, MAIL_LOG_LEVEL: 'info' };

/** This process's environment without any MAIL_* setting, every listener on port 0, the test defaults, plus `env`. */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('MAIL_')) base[k] = v;
  return { ...base, ...ALL_PORTS_FREE, ...TEST_DEFAULTS, ...env };
}

/**
 * The environment of an appliance process a test kills and starts again: childEnv plus `env`, a fresh data
 * directory (removed at teardown) and a bootstrap API key, which it returns with the directory.
 */
export function restartableEnv(t: Test, env: Record<string, string>): { env: NodeJS.ProcessEnv; apiKey: string; dataDir: string } {
  const dataDir = makeDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const apiKey = newToken('live');
  return { env: childEnv({ MAIL_DATA_DIR: dataDir, MAIL_BOOTSTRAP_API_KEY: apiKey, ...env }), apiKey, dataDir };
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface LogLine {
  msg?: string;
  listener?: string;
  address?: string;
  port?: number;
  [k: string]: unknown;
}

/** Two minutes: a cold tsx start on a loaded machine. */
const START_DEADLINE_MS = 120_000;

export class ApplianceProcess {
  stdout = '';
  stderr = '';
  readonly exited: Promise<Exit>;
  private exit: Exit | null = null;
  private readonly waiters = new Set<() => void>();
  private readonly child: ChildProcessByStdio<null, Readable, Readable>;

  /**
   * `env` is the whole environment of the child (see `childEnv`); the child is SIGKILLed at teardown if still running.
   * `command` replaces src/main.ts under tsx (e.g. `['npm', 'start']`).
   */
  constructor(t: Test, env: NodeJS.ProcessEnv, command: string[] = [process.execPath, '--import', 'tsx', 'src/main.ts']) {
    this.child = spawn(command[0]!, command.slice(1), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout.on('data', (c: Buffer) => {
      this.stdout += c.toString();
      this.wake();
    });
    this.child.stderr.on('data', (c: Buffer) => {
      this.stderr += c.toString();
      this.wake();
    });
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        this.exit = { code, signal };
        this.wake();
        resolve(this.exit);
      });
    });
    t.teardown(async () => {
      if (!this.exit) {
        this.child.kill('SIGKILL');
        await this.exited;
      }
    });
  }

  get pid(): number {
    return this.child.pid!;
  }

  private wake(): void {
    for (const w of this.waiters) w();
  }

  /** Waits (woken by output or exit, with a deadline) until `check` returns a value. */
  waitFor<T>(what: string, check: () => T | undefined, timeoutMs = START_DEADLINE_MS): Promise<T> {
    return new Promise((resolve, reject) => {
      const attempt = () => {
        const v = check();
        if (v !== undefined) {
          done();
          resolve(v);
        } else if (this.exit) {
          done();
          reject(new Error(`process exited (${JSON.stringify(this.exit)}) before ${what}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for ${what}\nstdout: ${this.stdout}\nstderr: ${this.stderr}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(attempt);
      };
      this.waiters.add(attempt);
      attempt();
    });
  }

  logs(): LogLine[] {
    const out: LogLine[] = [];
    for (const line of this.stdout.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        out.push(JSON.parse(line) as LogLine);
      } catch {
        // a line still being written
      }
    }
    return out;
  }

  /** The port a listener bound, from its structured `listening` log line. */
  port(listener = 'api'): Promise<number> {
    return this.waitFor(`the ${listener} listening log line`, () => this.logs().find((l) => l.msg === 'listening' && l.listener === listener)?.port);
  }

  signal(sig: NodeJS.Signals): void {
    this.child.kill(sig);
  }

  async exitCode(timeoutMs = 30_000): Promise<Exit> {
    await this.waitFor('exit', () => this.exit ?? undefined, timeoutMs);
    return this.exit!;
  }

  /** SIGKILL: no handler runs, no transaction commits, nothing is flushed; what is committed stays. */
  async kill(): Promise<Exit> {
    this.child.kill('SIGKILL');
    return this.exited;
  }

  /** SIGSTOP, and wait until the kernel reports the process stopped (Linux /proc). */
  async freeze(): Promise<void> {
    this.child.kill('SIGSTOP');
    await until('the process to be stopped', () => (/^\d+ \(.*\) [tT]/.test(readFileSync(`/proc/${this.pid}/stat`, 'utf8')) ? true : undefined), 10_000);
  }
}

/** One GET /health on its own connection, never reused: 'connected', or the error code (ECONNREFUSED…). */
export function connectOnce(port: number): Promise<'connected' | string> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/health', agent: false }, (res) => {
      res.resume();
      resolve('connected');
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
}
