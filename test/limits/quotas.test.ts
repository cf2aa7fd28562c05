// Sending quotas and safety caps over real HTTP: the monthly allowance per plan (Free refused, paid plans
// billed past it), the external-recipient caps of new and Free accounts with their holds and release,
// the operator's pause of new senders, batch elements carrying their codes, GET /usage. The fake clock
// moves through hours, days and months; long histories are written into the counters directly.
import t, { type Test } from 'tap';
import { DAY, HOUR, MINUTE } from '../../src/core/clock.js';
import { AppError } from '../../src/core/errors.js';
import type { Plan } from '../../src/config.js';
import { rmSync } from 'node:fs';
import { createOtherTeam, makeDataDir, startTestApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { startDns, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { isSendQuotaRefusal, QUOTA_SMTP_REPLY, releaseHold, setNewSenderPause, type Usage } from '../../src/services/sending/quotas.js';

interface Sent {
  id?: string;
  error?: string;
  code?: string;
}

interface Team {
  teamId: string;
  key: string;
  testKey: string;
  domain: string;
  send(to: string | string[], opts?: { key?: string; idempotency_key?: string }): Promise<TestResponse<Sent>>;
  batch(tos: string[]): Promise<TestResponse<{ data: Sent[] }>>;
  usage(): Promise<Usage>;
}

let seq = 0;

async function setup(t: Test): Promise<{ app: TestApp; team(plan: Plan): Promise<Team> }> {
  const dns: TestDns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  // Nothing here is about delivery: the worker is stopped so accepted emails just wait in the queue.
  await app.appliance.ctx.jobs.stop();
  return {
    app,
    async team(plan) {
      const { teamId, apiKey } = await createOtherTeam(app, plan);
      const domain = `t${++seq}-${plan}.example`;
      await addVerifiedDomain(app, dns, domain, apiKey);
      const testKey = (await app.request<{ token: string }>('POST', '/api-keys', { key: apiKey, body: { name: 'test', permission: 'sending_access', mode: 'test' } })).body.token;
      const message = (to: string | string[]) => ({ from: `hello@${domain}`, to: Array.isArray(to) ? to : [to], subject: 'Hi', text: 'Hello' });
      return {
        teamId,
        key: apiKey,
        testKey,
        domain,
        send: (to, opts = {}) =>
          app.request<Sent>('POST', '/emails', { key: opts.key ?? apiKey, body: { ...message(to), ...(opts.idempotency_key ? { idempotency_key: opts.idempotency_key } : {}) } }),
        batch: (tos) => app.request<{ data: Sent[] }>('POST', '/emails/batch', { key: apiKey, body: { emails: tos.map((to) => message(to)) } }),
        usage: async () => (await app.request<Usage>('GET', '/usage', { key: apiKey })).body,
      };
    },
  };
}

const EXTERNAL = 'someone@dest.example';
const internal = (team: Team) => `me@${team.domain}`;

async function sendMany(t: Test, team: Team, n: number, to: string, what: string): Promise<void> {
  for (let i = 1; i <= n; i++) {
    const res = await team.send(to);
    if (res.status !== 202) return void t.fail(`${what}: send ${i} of ${n} answered ${res.status} ${res.text}`);
  }
  t.pass(`${what}: ${n} sends accepted`);
}

const setUsage = (app: TestApp, teamId: string, month: string, sent: number) =>
  app.appliance.ctx.db.raw('INSERT INTO team_usage (team_id, month, sent) VALUES (?, ?, ?) ON CONFLICT(team_id, month) DO UPDATE SET sent = excluded.sent', [teamId, month, sent]);

t.test('monthly allowance: counting, Free refusal until the 1st, upgrade', async (t) => {
  const { app, team } = await setup(t);
  const free = await team('free');
  // Internal recipients: the external caps stay out of the way.
  t.equal((await free.send(internal(free))).status, 202);
  t.equal((await free.send([internal(free), `two@${free.domain}`, `three@${free.domain}`])).status, 202, 'three recipients, one message');
  t.equal((await free.send(internal(free), { key: free.testKey })).status, 202, 'test mode');
  const first = await free.send(internal(free), { idempotency_key: 'k1' });
  const replay = await free.send(internal(free), { idempotency_key: 'k1' });
  t.equal(replay.body.id, first.body.id, 'an idempotent replay');
  const batch = await free.batch(Array.from({ length: 100 }, (_, i) => `r${i}@${free.domain}`));
  t.equal(batch.status, 202);
  t.equal(batch.body.data.filter((d) => d.id).length, 100);
  let usage = await free.usage();
  t.match(usage, { month: '2026-03', plan: 'free', sent: 103, allowance: 3000, overage: 0, overage_cost_eur: 0, past_allowance: 'refused', on_hold: false }, 'each message once, a batch of 100 as 100; test mode and replays not counted');

  await setUsage(app, free.teamId, '2026-03', 2999);
  t.equal((await free.send(internal(free))).status, 202, 'the 3,000th message');
  const refused = await free.send(internal(free));
  t.equal(refused.status, 429);
  t.equal(refused.body.code, 'monthly_limit_exceeded');
  t.match(refused.body.error, /3,000 emails per month.*2026-04-01/);
  t.equal(refused.headers.get('retry-after'), null, 'no Retry-After on a quota code');
  t.equal((await free.send(internal(free), { key: free.testKey })).status, 202, 'test mode still sends');
  const elements = await free.batch([internal(free), internal(free)]);
  t.equal(elements.status, 202);
  t.same(elements.body.data.map((d) => d.code), ['monthly_limit_exceeded', 'monthly_limit_exceeded'], 'batch elements carry the code next to the error');
  t.ok(elements.body.data.every((d) => typeof d.error === 'string' && d.error.length > 0));
  t.equal((await free.usage()).sent, 3000, 'refused sends do not count');

  app.clock.set('2026-03-31T23:59:59.000Z');
  t.equal((await free.send(internal(free))).status, 429, 'still refused in the last second of the month');
  app.clock.set('2026-04-01T00:00:00.000Z');
  t.equal((await free.send(internal(free))).status, 202, 'the 1st of the next month (UTC)');
  usage = await free.usage();
  t.match(usage, { month: '2026-04', sent: 1 });
  t.equal((await app.request<Usage>('GET', '/usage?month=2026-03', { key: free.key })).body.sent, 3000, 'an earlier month on request');
  t.equal((await app.request('GET', '/usage?month=2026-13', { key: free.key })).status, 400);

  await setUsage(app, free.teamId, '2026-04', 3000);
  t.equal((await free.send(internal(free))).status, 429);
  await app.appliance.ctx.db('teams').where({ id: free.teamId }).update({ plan: 'starter' });
  t.equal((await free.send(internal(free))).status, 202, 'an upgrade lifts the refusal at once');
});

t.test('paid plans continue past the allowance and record the overage; Enterprise is unlimited', async (t) => {
  const { app, team } = await setup(t);
  for (const [plan, allowance] of [['starter', 10_000], ['pro', 50_000], ['scale', 100_000]] as const) {
    const paid = await team(plan);
    await setUsage(app, paid.teamId, '2026-03', allowance + 3999);
    t.equal((await paid.send(internal(paid))).status, 202, `${plan}: past its allowance`);
    t.match(await paid.usage(), { plan, sent: allowance + 4000, allowance, overage: 4000, overage_cost_eur: 1, past_allowance: 'billed' }, `${plan}: 4,000 over at 0.25 EUR per 1,000`);
  }
  const ent = await team('enterprise');
  await setUsage(app, ent.teamId, '2026-03', 5_000_000);
  t.equal((await ent.send(internal(ent))).status, 202);
  t.match(await ent.usage(), { allowance: null, overage: 0, overage_cost_eur: 0, past_allowance: 'unlimited' });
});

t.test('first hour: 10 external sends, then a hold that only an operator lifts', async (t) => {
  const { app, team } = await setup(t);
  const pro = await team('pro');
  t.equal((await pro.send(internal(pro))).status, 202, 'internal recipients do not count toward the cap');
  await sendMany(t, pro, 10, EXTERNAL, 'first hour');
  const held = await pro.send([internal(pro), EXTERNAL]);
  t.equal(held.status, 403, 'the 11th external send in the first hour');
  t.equal(held.body.code, 'forbidden');
  t.match(held.body.error, /on hold for safety review.*10 external sends in the account's first hour/);
  t.equal((await pro.send(internal(pro))).status, 403, 'a hold stops every live send');
  t.equal((await pro.send(EXTERNAL, { key: pro.testKey })).status, 202, 'test mode is exempt');
  const batch = await pro.batch([internal(pro)]);
  t.same(batch.body.data.map((d) => d.code), ['forbidden'], 'a held batch element carries its code');
  t.match(await pro.usage(), { on_hold: true, sent: 11, external: { sent: 10, cap: 10 } });

  app.clock.advance(2 * DAY);
  t.equal((await pro.send(internal(pro))).status, 403, 'time does not lift a hold');

  await releaseHold(app.appliance.ctx, pro.teamId);
  t.equal((await pro.send(EXTERNAL)).status, 202, 'released by an operator');
  t.equal((await pro.usage()).on_hold, false);
});

t.test('first hour after a review: the cap answers 429 daily_limit_exceeded naming 10', async (t) => {
  const { app, team } = await setup(t);
  const pro = await team('pro');
  await sendMany(t, pro, 10, EXTERNAL, 'first hour');
  t.equal((await pro.send(EXTERNAL)).status, 403);
  await releaseHold(app.appliance.ctx, pro.teamId);
  const capped = await pro.send(EXTERNAL);
  t.equal(capped.status, 429);
  t.equal(capped.body.code, 'daily_limit_exceeded');
  t.match(capped.body.error, /at most 10 emails to external recipients/);
  t.equal(capped.headers.get('retry-after'), null);
  app.clock.advance(HOUR);
  t.equal((await pro.send(EXTERNAL)).status, 202, 'after the first hour');
});

t.test('Free: 50 external sends per fixed 24-hour window from the first counted send, 429 after the first day', async (t) => {
  const { app, team } = await setup(t);
  const free = await team('free');
  app.clock.advance(25 * HOUR);
  const windowStart = app.clock.now();
  await sendMany(t, free, 50, EXTERNAL, 'window');
  const capped = await free.send(EXTERNAL);
  t.equal(capped.status, 429);
  t.equal(capped.body.code, 'daily_limit_exceeded');
  t.match(capped.body.error, /at most 50 emails to external recipients per 24 hours/);
  t.match(capped.body.error, new Date(windowStart.getTime() + DAY).toISOString(), 'names when the window ends');
  t.equal(capped.headers.get('retry-after'), null);
  t.equal((await free.send(internal(free))).status, 202, 'internal sends go on');
  t.same((await free.batch([EXTERNAL])).body.data.map((d) => d.code), ['daily_limit_exceeded']);
  t.match((await free.usage()).external, { window_started_at: windowStart.toISOString(), sent: 50, cap: 50 });
  app.clock.set(windowStart.getTime() + DAY - MINUTE);
  t.equal((await free.send(EXTERNAL)).status, 429, 'the window is fixed: still capped a minute before its end');
  app.clock.set(windowStart.getTime() + DAY);
  t.equal((await free.send(EXTERNAL)).status, 202, 'the count resets when the window ends');
  t.match((await free.usage()).external, { window_started_at: app.clock.now().toISOString(), sent: 1 });
  app.clock.advance(30 * DAY);
  await sendMany(t, free, 50, EXTERNAL, 'a month later');
  t.equal((await free.send(EXTERNAL)).status, 429, 'Free keeps the cap for good');
});

t.test('releasing a team that is not held is refused and does not exempt it from holds', async (t) => {
  const { app, team } = await setup(t);
  const pro = await team('pro');
  const err = await releaseHold(app.appliance.ctx, pro.teamId).catch((e: unknown) => e);
  t.ok(err instanceof AppError && err.status === 409 && /not on hold/.test(err.message), 'refused');
  await sendMany(t, pro, 10, EXTERNAL, 'first hour');
  t.equal((await pro.send(EXTERNAL)).status, 403, 'the 11th external send of the first hour still holds');
});

t.test('first 24 hours: the first breach of the 50 cap holds sending', async (t) => {
  const { app, team } = await setup(t);
  const free = await team('free');
  app.clock.advance(2 * HOUR);
  await sendMany(t, free, 50, EXTERNAL, 'day one');
  const held = await free.send(EXTERNAL);
  t.equal(held.status, 403);
  t.match(held.body.error, /on hold.*50 external sends in 24 hours/);
  await releaseHold(app.appliance.ctx, free.teamId);
  const capped = await free.send(EXTERNAL);
  t.equal(capped.status, 429, 'after a review, the rest of the window answers 429');
  t.equal(capped.body.code, 'daily_limit_exceeded');
});

t.test('paid plans: the 50 cap within 72 hours, none after; a send far above history is held', async (t) => {
  const { app, team } = await setup(t);
  const pro = await team('pro');
  app.clock.advance(30 * HOUR);
  await sendMany(t, pro, 50, EXTERNAL, 'paid, 30 hours old');
  const capped = await pro.send(EXTERNAL);
  t.equal(capped.status, 429, 'a paid plan in its first 72 hours');
  t.equal(capped.body.code, 'daily_limit_exceeded');

  app.clock.advance(43 * HOUR); // 73 hours old; the window has ended
  await sendMany(t, pro, 60, EXTERNAL, 'paid, after 72 hours');
  t.match((await pro.usage()).external, { sent: 60, cap: null });

  // History: the busiest earlier window had 50; the rule holds past max(1,000, 10 × 50) in a window.
  await app.appliance.ctx.db('team_send_state').where({ team_id: pro.teamId }).update({ window_count: 999 });
  t.equal((await pro.send(EXTERNAL)).status, 202, 'the 1,000th external send of the window');
  const held = await pro.send(EXTERNAL);
  t.equal(held.status, 403);
  t.match(held.body.error, /on hold.*more than 1,000 external sends in 24 hours, far above the account's history/);
  await releaseHold(app.appliance.ctx, pro.teamId);
  t.equal((await pro.send(EXTERNAL)).status, 202, 'after review the reviewed window is the new history');
});

t.test('send_limit_exceeded: the operator pauses new accounts platform-wide; established ones go on', async (t) => {
  const { app, team } = await setup(t);
  const old = await team('free');
  app.clock.advance(73 * HOUR);
  const young = await team('pro');
  await setNewSenderPause(app.appliance.ctx, true);
  const paused = await young.send(internal(young));
  t.equal(paused.status, 429);
  t.equal(paused.body.code, 'send_limit_exceeded');
  t.equal(paused.headers.get('retry-after'), null);
  t.same((await young.batch([internal(young)])).body.data.map((d) => d.code), ['send_limit_exceeded']);
  t.equal((await young.send(internal(young), { key: young.testKey })).status, 202, 'test mode is exempt');
  t.equal((await old.send(internal(old))).status, 202, 'an account older than 72 hours is established');
  t.equal((await app.request('POST', '/emails', { body: { from: 'x@nowhere.example', to: [EXTERNAL] } })).status, 400, 'the operator’s own team (bootstrap) is not paused (it reaches validation)');
  app.clock.advance(72 * HOUR);
  t.equal((await young.send(internal(young))).status, 202, 'clears by itself once the account is established');
  const younger = await team('starter');
  t.equal((await younger.send(internal(younger))).status, 429);
  await setNewSenderPause(app.appliance.ctx, false);
  t.equal((await younger.send(internal(younger))).status, 202, 'or when the operator turns it off');
});

t.test('the operator’s own (bootstrap) team is exempt from the new-account rules', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  await app.appliance.ctx.jobs.stop();
  await addVerifiedDomain(app, dns, 'own.example');
  for (let i = 0; i < 60; i++) {
    const res = await app.request('POST', '/emails', { body: { from: 'a@own.example', to: [EXTERNAL], subject: 's', text: 't' } });
    if (res.status !== 202) return void t.fail(`send ${i}: ${res.status} ${res.text}`);
  }
  t.pass('60 external sends in its first hour');
  app.clock.advance(100 * HOUR);
  await app.appliance.ctx.db('team_send_state').where({ team_id: app.teamId }).update({ window_start: app.clock.now().getTime(), window_count: 50_000, window_peak: 0 });
  const big = await app.request('POST', '/emails', { body: { from: 'a@own.example', to: [EXTERNAL], subject: 's', text: 't' } });
  t.equal(big.status, 202, 'nor held for volume (the benchmark sends from it)');
});

t.test('quotas and holds are durable: they survive a restart', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const first = await startTestApp(t, { dataDir: makeDataDir(), config: { dnsServers: [dns.server] } });
  t.teardown(() => rmSync(first.dataDir, { recursive: true, force: true }));
  await first.appliance.ctx.jobs.stop();
  const { teamId, apiKey } = await createOtherTeam(first, 'free');
  await addVerifiedDomain(first, dns, 'durable.example', apiKey);
  const mail = { from: 'a@durable.example', to: [EXTERNAL], subject: 's', text: 't' };
  for (let i = 0; i < 10; i++) t.equal((await first.request('POST', '/emails', { key: apiKey, body: mail })).status, 202);
  t.equal((await first.request('POST', '/emails', { key: apiKey, body: mail })).status, 403, 'held');
  await first.stop();

  const second = await startTestApp(t, { dataDir: first.dataDir, clock: first.clock, config: { dnsServers: [dns.server] } });
  await second.appliance.ctx.jobs.stop();
  const again = await second.request<Sent>('POST', '/emails', { key: apiKey, body: mail });
  t.equal(again.status, 403, 'still held after the restart');
  await releaseHold(second.appliance.ctx, teamId);
  const usage = (await second.request<Usage>('GET', '/usage', { key: apiKey })).body;
  t.match(usage, { sent: 10, on_hold: false, external: { sent: 10 } }, 'counts kept');
});

t.test('SMTP submission maps every quota refusal to 451', async (t) => {
  t.same(QUOTA_SMTP_REPLY, { code: 451, enhanced: '4.7.1' });
  for (const code of ['monthly_limit_exceeded', 'daily_limit_exceeded', 'send_limit_exceeded'] as const) t.ok(isSendQuotaRefusal(new AppError(429, code, 'x')), code);
  t.notOk(isSendQuotaRefusal(new AppError(429, 'rate_limit_exceeded', 'x')), 'a request rate limit is not a quota');
  t.notOk(isSendQuotaRefusal(new AppError(403, 'forbidden', 'API key does not have permission')), 'a permission refusal is not a quota');
  t.notOk(isSendQuotaRefusal(new Error('boom')));
});
