// Account limits per plan (domains, API keys, webhooks, retention): the table against the spec's, and the
// 403 past a cap over HTTP for the plans whose caps are small enough to reach.
import t from 'tap';
import { PLAN_LIMITS } from '../../src/services/platform/limits.js';
import { SEND_QUOTAS } from '../../src/limits/table.js';
import { createOtherTeam, startTestApp } from '../helpers/app.js';

t.test('the table is the spec’s', async (t) => {
  t.same(PLAN_LIMITS, {
    free: { domains: 1, apiKeys: 5, webhooks: 20, retentionDays: 14 },
    starter: { domains: 3, apiKeys: 10, webhooks: 20, retentionDays: 14 },
    pro: { domains: 10, apiKeys: 50, webhooks: 20, retentionDays: 30 },
    scale: { domains: 1000, apiKeys: 1000, webhooks: 20, retentionDays: 90 },
    enterprise: { domains: Infinity, apiKeys: Infinity, webhooks: 20, retentionDays: Infinity },
  });
  t.same(
    Object.fromEntries(Object.entries(SEND_QUOTAS).map(([plan, q]) => [plan, q.monthlyIncluded])),
    { free: 3000, starter: 10_000, pro: 50_000, scale: 100_000, enterprise: Infinity },
  );
});

t.test('past a cap: 403', async (t) => {
  const app = await startTestApp(t);
  for (const [plan, domains, keys] of [['free', 1, 5], ['starter', 3, 10]] as const) {
    const { apiKey } = await createOtherTeam(app, plan);
    for (let i = 0; i < domains; i++) t.equal((await app.request('POST', '/domains', { key: apiKey, body: { name: `d${i}.${plan}.example` } })).status, 201);
    const domain = await app.request('POST', '/domains', { key: apiKey, body: { name: `over.${plan}.example` } });
    t.equal(domain.status, 403, `${plan}: domain ${domains + 1}`);
    t.same(domain.body, { error: `Domain limit reached: the ${plan} plan allows ${domains} domain${domains === 1 ? '' : 's'}`, code: 'forbidden' });
    for (let i = 1; i < keys; i++) t.equal((await app.request('POST', '/api-keys', { key: apiKey, body: { name: `k${i}`, permission: 'sending_access' } })).status, 201);
    const key = await app.request('POST', '/api-keys', { key: apiKey, body: { name: 'over', permission: 'sending_access' } });
    t.equal(key.status, 403, `${plan}: key ${keys + 1}`);
    t.same(key.body, { error: `API key limit reached: the ${plan} plan allows ${keys} keys`, code: 'forbidden' });
  }
});
