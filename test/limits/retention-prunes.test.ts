// The retention job's prunes by age beyond the email log (issue 37): finished workflow runs (the team's plan
// retention, at most 90 days), expired OAuth codes and tokens (a day after expiry), provider block counters (7
// days) and contacts a double opt-in signup left pending (30 days after the link expired, unless they have other
// data). Each made the way the box makes it, the fake clock moved, the job enqueued by the hourly wake-up's check
// and drained; one appliance for the file.
import { createHash } from 'node:crypto';
import t from 'tap';
import { DAY, HOUR, MINUTE } from '../../src/core/clock.js';
import { CONFIRM_LIFETIME_DAYS, UNCONFIRMED_KEEP_DAYS } from '../../src/services/automation/index.js';
import { RETENTION_BATCH, RETENTION_JOB, scheduleRetention, WORKFLOW_RUN_KEEP_MAX_DAYS } from '../../src/services/housekeeping/retention.js';
import { approveAuthorization, checkAuthorizationRequest, createOAuthUser, exchangeCode, registerClient } from '../../src/services/platform/oauth.js';
import { createOtherTeam, startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';

t.test('retention prunes', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: 9 } });
  const ctx = app.appliance.ctx;
  const db = ctx.db;
  const retention = async () => {
    const enqueued = await scheduleRetention(ctx);
    await ctx.jobs.drain();
    return enqueued;
  };
  const count = async (table: string, where: Record<string, unknown> = {}) => Number((await db(table).where(where).count({ n: '*' }))[0]!.n);

  t.test('finished workflow runs: by the plan, at most 90 days; active runs stay', async (t) => {
    const t0 = app.clock.now().getTime();
    const free = await createOtherTeam(app, 'free');
    const runsOf = async (key?: string) => {
      const as = key ? { key } : {};
      const wf = (await app.request<{ workflow: { id: string } }>('POST', '/workflows', { ...as, body: { name: 'Ping', graph: { trigger: { type: 'event', name: 'ping', next: 'wait' }, steps: [{ id: 'wait', type: 'condition', if: { field: 'data.wait', operator: 'equals', value: 'yes' }, yes: 'hold', no: 'end' }, { id: 'hold', type: 'wait', duration: { days: 365 }, next: 'end' }, { id: 'end', type: 'exit' }] } } })).body.workflow;
      t.ok(wf, 'workflow created');
      t.equal((await app.request('POST', `/workflows/${wf.id}/activate`, as)).status, 200);
      for (const [email, wait] of [['r1@dest.example', 'no'], ['r2@dest.example', 'no'], ['r3@dest.example', 'yes']] as const) {
        await app.request('POST', '/contacts', { ...as, body: { email } });
        t.equal((await app.request('POST', '/workflows/events', { ...as, body: { name: 'ping', email, data: { wait } } })).status, 202);
      }
      await ctx.jobs.drain();
      return wf.id;
    };
    const own = await runsOf(); // the default team: Enterprise, keeps emails forever
    const theirs = await runsOf(free.apiKey);
    const states = async (id: string, key?: string) => (await app.request<{ data: Array<{ state: string }> }>('GET', `/workflows/${id}/runs`, key ? { key } : {})).body.data.map((r) => r.state).sort();
    t.same(await states(own), ['completed', 'completed', 'waiting']);
    t.same(await states(theirs, free.apiKey), ['completed', 'completed', 'waiting']);
    const steps = await count('workflow_run_steps');

    app.clock.set(t0 + 14 * DAY - MINUTE);
    await retention();
    t.same(await states(theirs, free.apiKey), ['completed', 'completed', 'waiting'], 'a minute before 14 days: kept');
    app.clock.set(t0 + 14 * DAY + MINUTE);
    t.equal(await retention(), true, 'the hourly check finds finished runs due');
    t.same(await states(theirs, free.apiKey), ['waiting'], 'Free (14 days): its finished runs are gone, the waiting one stays');
    t.same(await states(own), ['completed', 'completed', 'waiting'], 'Enterprise: kept');
    t.ok((await count('workflow_run_steps')) < steps, 'their steps went with them');
    t.equal((await db('workflow_run_steps as s').leftJoin('workflow_runs as r', 'r.pk', 's.run_pk').whereNull('r.pk').count({ n: '*' }))[0]!.n, 0, 'no orphan step');
    app.clock.set(t0 + WORKFLOW_RUN_KEEP_MAX_DAYS * DAY + MINUTE);
    await retention();
    t.same(await states(own), ['waiting'], 'Enterprise: at most 90 days');
    t.match((await app.request<{ runs: { active: number; completed: number } }>('GET', `/workflows/${own}`)).body, { runs: { active: 1, completed: 0 } }, 'the workflow stays; its counts cover the runs kept');
  });

  t.test('OAuth codes and tokens: a day after they expired', async (t) => {
    const { client } = await registerClient(ctx, { name: 'App', redirectUris: ['https://app.example/cb'], registeredBy: 'operator' });
    const { user } = await createOAuthUser(ctx, app.teamId, 'ops@acme.example');
    const verifier = 'v'.repeat(50);
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const params = { client_id: client.client_id, response_type: 'code', code_challenge: challenge, code_challenge_method: 'S256' } as Record<string, string>;
    const check = await checkAuthorizationRequest(ctx, (n) => params[n] ?? null);
    if (check.kind !== 'ok') throw new Error(JSON.stringify(check));
    const unused = await approveAuthorization(ctx, check.request, user);
    const used = await approveAuthorization(ctx, check.request, user);
    await exchangeCode(ctx, { clientId: client.client_id, secret: null }, { code: used, redirectUri: null, codeVerifier: verifier });
    t.equal(await count('oauth_codes'), 2);
    t.equal(await count('oauth_tokens'), 2, 'an access and a refresh token');
    const t0 = app.clock.now().getTime();
    app.clock.set(t0 + 10 * MINUTE + DAY - MINUTE);
    await retention();
    t.equal(await count('oauth_codes'), 2, 'codes expired less than a day ago are kept (a reuse is still recognised)');
    app.clock.set(t0 + 10 * MINUTE + DAY + MINUTE);
    await retention();
    t.equal(await count('oauth_codes'), 0, 'both codes (10 minutes) gone');
    t.equal(await count('oauth_tokens'), 2, 'the tokens not yet');
    app.clock.set(t0 + HOUR + DAY + MINUTE);
    await retention();
    t.same((await db('oauth_tokens').select('kind')).map((r) => r.kind), ['refresh'], 'the access token (1 hour) gone, the refresh token (30 days) kept');
    app.clock.set(t0 + 31 * DAY + MINUTE);
    await retention();
    t.equal(await count('oauth_tokens'), 0, 'the refresh token a day after its expiry');
    t.equal(await count('oauth_grants'), 2, 'grants are not touched');
    void unused;
  });

  t.test('provider block counters: 7 days, in batches', async (t) => {
    const now = app.clock.now().getTime();
    const hour = (ms: number) => new Date(ms).toISOString().slice(0, 13);
    const rows = [];
    for (let i = 0; i < RETENTION_BATCH + 5; i++) rows.push({ team_id: app.teamId, provider: `p${i}.example`, hour: hour(now - 8 * DAY), count: 3 });
    rows.push({ team_id: app.teamId, provider: 'gmail', hour: hour(now - 6 * DAY), count: 12 });
    rows.push({ team_id: app.teamId, provider: 'gmail', hour: hour(now), count: 1 });
    for (let i = 0; i < rows.length; i += 100) await db('provider_blocks').insert(rows.slice(i, i + 100));
    t.equal(await retention(), true);
    t.same((await db('provider_blocks').orderBy('hour').select('hour')).map((r) => r.hour), [hour(now - 6 * DAY), hour(now)], 'older than 7 days gone (a full batch ran the job again)');
    t.equal(await count('jobs', { kind: RETENTION_JOB }), 0);
  });

  t.test('contacts left pending by a double opt-in: 30 days after the link expired, unless they have other data', async (t) => {
    await addVerifiedDomain(app, dns, 'acme.example');
    const form = (
      await app.request<{ signup_form: { id: string } }>('POST', '/signup-forms', {
        body: { name: 'News', double_opt_in: { from: 'news@acme.example', subject: 'Confirm', html: '<p><a href="{{ confirm_url }}">Confirm</a></p>' } },
      })
    ).body.signup_form;
    const submit = async (email: string) => t.equal((await app.request('POST', `/signup-forms/${form.id}/submit`, { key: null, body: { email } })).status, 200);
    const seg = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'Kept' } })).body.segment.id;
    const t0 = app.clock.now().getTime();
    for (const e of ['gone', 'segment', 'edited', 'confirmed']) await submit(`${e}@dest.example`);
    await ctx.jobs.drain();
    // "segment": added to a segment by the API; "edited": changed by the API; "confirmed": its link used.
    const inSegment = (await app.request<{ contact: { id: string } }>('GET', '/contacts/segment@dest.example')).body.contact.id;
    t.match((await app.request('POST', `/segments/${seg}/contacts`, { body: { contact_ids: [inSegment] } })).body, { success: true, added: 1 });
    app.clock.advance(MINUTE);
    t.equal((await app.request('PATCH', '/contacts/edited@dest.example', { body: { first_name: 'Ed' } })).status, 200);
    const signup = await db('signups as s').join('contacts as c', 'c.pk', 's.contact_pk').where('c.email', 'confirmed@dest.example').first<{ pk: number; contact_pk: number }>('s.pk', 's.contact_pk');
    await db('signups').where({ pk: signup!.pk }).update({ status: 'confirmed', confirmed_at: app.clock.now().toISOString() });
    await db('contacts').where({ pk: signup!.contact_pk }).update({ opt_in_status: 'confirmed' });
    // "late": asked again on day 20, so its newest link expires later.
    app.clock.set(t0 + 20 * DAY);
    await submit('late@dest.example');
    await ctx.jobs.drain();
    const status = async (email: string) => (await app.request<{ contact: { opt_in_status: string } }>('GET', `/contacts/${email}`)).body.contact?.opt_in_status ?? 'gone';
    const all = async () => Promise.all(['gone', 'segment', 'edited', 'confirmed', 'late'].map((e) => status(`${e}@dest.example`)));

    app.clock.set(t0 + (CONFIRM_LIFETIME_DAYS + UNCONFIRMED_KEEP_DAYS) * DAY - HOUR);
    await retention();
    t.same(await all(), ['pending', 'pending', 'pending', 'confirmed', 'pending'], 'an hour before: all kept');
    app.clock.set(t0 + (CONFIRM_LIFETIME_DAYS + UNCONFIRMED_KEEP_DAYS) * DAY + HOUR);
    await retention();
    t.same(await all(), ['gone', 'pending', 'pending', 'confirmed', 'pending'], 'the untouched pending contact is deleted; the others have other data or a newer link');
    t.equal(await count('signups as s', {}), 4, 'its signup went with it');
    app.clock.set(t0 + 20 * DAY + (CONFIRM_LIFETIME_DAYS + UNCONFIRMED_KEEP_DAYS) * DAY + HOUR);
    await retention();
    t.equal(await status('late@dest.example'), 'gone', 'the later signup, 30 days after its own link expired');
    t.same((await app.request<{ data: Array<{ type: string }> }>('GET', '/events?per_page=100')).body.data.filter((e) => e.type === 'contact.deleted'), [], 'never announced, so no contact.deleted');
  });
});
