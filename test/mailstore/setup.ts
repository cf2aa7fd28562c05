// A mail store over a real SQLite file in a temp dir, with a fake clock, plus a team and a domain to hang
// accounts on (inserted directly: they belong to other services).
import type { Test } from 'tap';
import { rmSync } from 'node:fs';
import { createContext, type AppContext } from '../../src/context.js';
import { FakeClock } from '../../src/core/clock.js';
import type { MailStore } from '../../src/mailstore/types.js';
import { testConfig } from '../helpers/app.js';

export interface StoreFixture {
  ctx: AppContext;
  store: MailStore;
  clock: FakeClock;
  teamId: string;
  domainId: string;
  account(local: string, opts?: { quotaBytes?: number; password?: string }): Promise<number>;
}

export async function setupStore(t: Test): Promise<StoreFixture> {
  const clock = new FakeClock('2026-05-01T00:00:00.000Z');
  const config = testConfig();
  const ctx = await createContext(config, { clock });
  t.teardown(async () => {
    await ctx.db.destroy();
    rmSync(config.dataDir, { recursive: true, force: true });
  });
  const now = clock.now().toISOString();
  await ctx.db('teams').insert({ id: 'team_store', name: 'Store', plan: 'pro', owner_email: 'owner@example.com', created_at: now });
  await ctx.db('domains').insert({
    id: 'dom_store',
    team_id: 'team_store',
    name: 'example.com',
    status: 'verified',
    region: 'eu-west-1',
    open_tracking: false,
    click_tracking: false,
    tls_mode: 'opportunistic',
    created_at: now,
    updated_at: now,
  });
  const store = ctx.mailstore;
  return {
    ctx,
    store,
    clock,
    teamId: 'team_store',
    domainId: 'dom_store',
    async account(local, opts = {}) {
      const a = await store.createAccount({
        teamId: 'team_store',
        domainId: 'dom_store',
        address: `${local}@example.com`,
        password: opts.password ?? 'correct horse',
        ...(opts.quotaBytes !== undefined ? { quotaBytes: opts.quotaBytes } : {}),
      });
      return a.id;
    },
  };
}

let n = 0;
/** A small RFC 5322 message; `body` makes it unique. */
export function message(opts: { subject?: string; from?: string; to?: string; body?: string; headers?: string } = {}): Buffer {
  n++;
  return Buffer.from(
    [
      `From: ${opts.from ?? 'Alice Example <alice@remote.test>'}`,
      `To: ${opts.to ?? 'bob@example.com'}`,
      `Subject: ${opts.subject ?? 'Hello'}`,
      'Date: Fri, 01 May 2026 10:00:00 +0000',
      `Message-ID: <m${n}.${Date.now()}@remote.test>`,
      ...(opts.headers ? [opts.headers] : []),
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      opts.body ?? `Body ${n}`,
      '',
    ].join('\r\n'),
  );
}
