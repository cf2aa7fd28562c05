// Boots the real appliance (the same composition root as `npm start`) on port 0 with its own data
// directory, a fake clock and, when given, a loopback DNS server. Each test file gets its own instance.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { ANY_FREE_PORTS, loadConfig, type Config } from '../../src/config.js';
import { startAppliance, type Appliance } from '../../src/appliance.js';
import { FakeClock } from '../../src/core/clock.js';
import type { WorkerOptions } from '../../src/jobs/queue.js';
import { newToken } from '../../src/services/platform/api-keys.js';

export const TEST_HOSTNAME = 'mx.appliance.test';

export interface TestResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Raw body text, sent as is (for malformed JSON). */
  raw?: string;
  /** Bearer credential; defaults to the bootstrap key. `null` sends none. */
  key?: string | null;
  headers?: Record<string, string>;
}

export interface TestApp {
  appliance: Appliance;
  url: string;
  /** The bootstrap team's full_access live key. */
  apiKey: string;
  teamId: string;
  clock: FakeClock;
  dataDir: string;
  request<T = Record<string, unknown>>(method: string, path: string, opts?: RequestOptions): Promise<TestResponse<T>>;
  stop(): Promise<void>;
}

export interface TestAppOptions {
  config?: Partial<Config>;
  clock?: FakeClock;
  /** Reuse a data directory (restart tests); a fresh temporary one otherwise. */
  dataDir?: string;
  /** Job worker options over the config's (e.g. a small maxParked). */
  jobs?: Partial<WorkerOptions>;
}


export function makeDataDir(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'mail-test-'));
}

/**
 * Configuration as a test wants it: loopback, port 0, silent, own data dir; process env ignored.
 * Request rate limits are off (the fake clock stands still, so a test's many requests would trip them);
 * the limits tests turn them on with `rateLimits: true`.
 */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return loadConfig(
    {},
    { dataDir: overrides.dataDir ?? makeDataDir(), bind: '127.0.0.1', ...ANY_FREE_PORTS, hostname: TEST_HOSTNAME, logLevel: 'silent', bootstrapApiKey: newToken('live'), dnsTimeoutMs: 1000, webhookAllowPrivate: true, rateLimits: false, ...overrides },
  );
}

export async function request<T>(base: string, defaultKey: string | null, method: string, urlPath: string, opts: RequestOptions = {}): Promise<TestResponse<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  const key = opts.key === undefined ? defaultKey : opts.key;
  if (key) headers.authorization = `Bearer ${key}`;
  let body: string | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(base + urlPath, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

export async function startTestApp(t: Test, opts: TestAppOptions = {}): Promise<TestApp> {
  const clock = opts.clock ?? new FakeClock('2026-03-01T10:00:00.000Z');
  const config = testConfig({ ...(opts.dataDir ? { dataDir: opts.dataDir } : {}), ...opts.config });
  const appliance = await startAppliance({ config, clock, ...(opts.jobs ? { jobs: opts.jobs } : {}) });
  const url = `http://127.0.0.1:${appliance.ports.api.port}`;
  const apiKey = config.bootstrapApiKey!;
  const teamId = appliance.bootstrap?.team.id ?? '';
  let stopped = false;
  const app: TestApp = {
    appliance,
    url,
    apiKey,
    teamId,
    clock,
    dataDir: config.dataDir,
    request: (method, p, o) => request(url, apiKey, method, p, o),
    async stop() {
      if (stopped) return;
      stopped = true;
      await appliance.stop();
    },
  };
  t.teardown(async () => {
    await app.stop();
    if (!opts.dataDir) rmSync(config.dataDir, { recursive: true, force: true });
  });
  return app;
}

/** A second team with its own full_access key, created the way an operator would (admin service). */
export async function createOtherTeam(app: TestApp, plan: Config['defaultPlan'] = 'enterprise'): Promise<{ teamId: string; apiKey: string }> {
  const { createTeamWithKey } = await import('../../src/services/platform/teams.js');
  const { team, issued } = await createTeamWithKey(app.appliance.ctx, { name: 'Other', plan, ownerEmail: 'owner@other.test' });
  return { teamId: team.id, apiKey: issued.token };
}
