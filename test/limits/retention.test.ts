// Email log retention per plan (14/14/30/90 days/unlimited): the retention job deletes expired emails
// with their recipients, attachments and timeline, in batches of 200 that re-run the job at once, and
// keeps emails still waiting for delivery; the same job purges deleted mailboxes after 30 days and prunes
// the mail store's change feed to its 7-day window. The fake clock moves through the days; the job is enqueued
// the way the appliance's hourly wake-up does it and run by draining the queue.
import t from 'tap';
import { DAY, MINUTE } from '../../src/core/clock.js';
import type { Plan } from '../../src/config.js';
import { createOtherTeam, startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { RETENTION_BATCH, RETENTION_JOB, scheduleRetention } from '../../src/services/housekeeping/retention.js';

t.test('retention per plan', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  const ctx = app.appliance.ctx;
  const plans: Plan[] = ['free', 'starter', 'pro', 'scale', 'enterprise'];
  const teams = new Map<Plan, { key: string; teamId: string; domain: string }>();
  for (const plan of plans) {
    const { teamId, apiKey } = await createOtherTeam(app, plan);
    const domain = `${plan}.example`;
    await addVerifiedDomain(app, dns, domain, apiKey);
    const key = (await app.request<{ token: string }>('POST', '/api-keys', { key: apiKey, body: { name: 'test', permission: 'full_access', mode: 'test' } })).body.token;
    teams.set(plan, { key, teamId, domain });
  }
  const send = async (plan: Plan) => {
    const team = teams.get(plan)!;
    const res = await app.request<{ id: string }>('POST', '/emails', {
      key: team.key,
      body: { from: `a@${team.domain}`, to: ['x@dest.example'], subject: plan, text: 'hi', attachments: [{ filename: 'a.txt', content: Buffer.from('hello').toString('base64') }] },
    });
    t.equal(res.status, 202);
    return res.body.id;
  };
  const exists = async (plan: Plan, id: string) => (await app.request('GET', `/emails/${id}`, { key: teams.get(plan)!.key })).status === 200;
  const runRetention = async () => {
    const enqueued = await scheduleRetention(ctx);
    await ctx.jobs.drain();
    return enqueued;
  };

  const t0 = app.clock.now().getTime();
  const old = new Map<Plan, string>();
  for (const plan of plans) old.set(plan, await send(plan));
  const scheduled = (await app.request<{ id: string }>('POST', '/emails', {
    key: teams.get('free')!.key,
    body: { from: 'a@free.example', to: ['x@dest.example'], subject: 'later', text: 'hi', scheduled_at: new Date(t0 + 60 * DAY).toISOString() },
  })).body.id;
  await ctx.jobs.drain();
  const oldRow = await ctx.db('emails').where({ public_id: old.get('free') }).first('id');

  t.equal(await runRetention(), false, 'nothing expired: no job is enqueued');
  app.clock.set(t0 + 14 * DAY - MINUTE);
  t.equal(await runRetention(), false, 'a minute before 14 days');

  app.clock.set(t0 + 14 * DAY + MINUTE);
  t.equal(await runRetention(), true);
  t.same(await Promise.all(plans.map((p) => exists(p, old.get(p)!))), [false, false, true, true, true], '14 days: Free and Starter emails deleted');
  for (const table of ['email_recipients', 'email_attachments', 'email_events']) {
    t.equal((await ctx.db(table).where({ email_id: oldRow.id })).length, 0, `its ${table} rows too`);
  }
  t.ok(await exists('free', scheduled), 'an email still waiting for its scheduled time is kept');
  t.equal((await ctx.db('jobs').where({ kind: RETENTION_JOB })).length, 0, 'the job is done and gone');

  app.clock.set(t0 + 30 * DAY + MINUTE);
  await runRetention();
  t.same(await Promise.all(plans.map((p) => exists(p, old.get(p)!))), [false, false, false, true, true], '30 days: Pro');
  app.clock.set(t0 + 90 * DAY + MINUTE);
  await runRetention();
  t.same(await Promise.all(plans.map((p) => exists(p, old.get(p)!))), [false, false, false, false, true], '90 days: Scale; Enterprise keeps everything');
  app.clock.set(t0 + 3650 * DAY);
  await runRetention();
  t.ok(await exists('enterprise', old.get('enterprise')!), 'Enterprise: unlimited');
  t.notOk(await exists('free', scheduled), 'the scheduled email, sent on day 60, expires like any other');
});

t.test('retention deletes in batches of 200, the job running again at once until none is left', async (t) => {
  const app = await startTestApp(t);
  const ctx = app.appliance.ctx;
  const { teamId } = await createOtherTeam(app, 'free');
  const at = app.clock.now().toISOString();
  const row = (i: number) => ({
    public_id: `em_bulk${String(i).padStart(19, '0')}`,
    team_id: teamId,
    mode: 'live',
    from_header: 'a@bulk.example',
    from_address: 'a@bulk.example',
    from_domain: 'bulk.example',
    to_addrs: '[]',
    cc_addrs: '[]',
    bcc_addrs: '[]',
    reply_to: '[]',
    subject: 's',
    headers: '{}',
    tags: '[]',
    status: 'delivered',
    message_id: `<${i}@bulk.example>`,
    created_at: at,
    updated_at: at,
  });
  const total = 2 * RETENTION_BATCH + 50;
  await ctx.db.transaction(async (trx) => {
    for (let i = 0; i < total; i++) {
      const [id] = (await trx('emails').insert(row(i))) as [number];
      await trx('email_recipients').insert({ email_id: id, kind: 'to', address: 'x@dest.example', domain: 'dest.example', status: 'delivered', updated_at: at });
    }
  });
  await ctx.jobs.stop(); // drain by hand, counting the runs
  app.clock.advance(15 * DAY);
  t.equal(await scheduleRetention(ctx), true);
  t.equal(await scheduleRetention(ctx), false, 'one retention job at a time');
  t.equal(await ctx.jobs.drain(), 3, 'three runs: 200, 200, 50');
  t.equal((await ctx.db('emails').where({ team_id: teamId })).length, 0);
  t.equal((await ctx.db('email_recipients')).length, 0);
  t.equal((await ctx.db('jobs').where({ kind: RETENTION_JOB })).length, 0);
});

t.test('a deleted mailbox keeps its messages for 30 days, then the retention job purges it', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server] } });
  const ctx = app.appliance.ctx;
  await addVerifiedDomain(app, dns, 'corp.example');
  const made = await app.request<{ id: number }>('POST', '/mailboxes', { body: { address: 'gone@corp.example', password: 'gone-pass-1' } });
  t.equal(made.status, 201, made.text);
  await ctx.mailstore.deliver(Buffer.from('Subject: kept for a while\r\n\r\nhello\r\n'), [{ mailboxId: made.body.id }]);
  t.equal((await app.request('DELETE', `/mailboxes/${made.body.id}`)).status, 200);
  t.equal(await ctx.mailstore.findAccountByAddress('gone@corp.example'), null, 'the address stops at once');
  t.equal((await ctx.db('mail_messages')).length, 1, 'its messages are still there');

  // The mail store's change feed keeps 7 days: after that the job prunes it (and keeps the deleted mailbox).
  t.ok((await ctx.db('mail_changes')).length > 0);
  app.clock.advance(7 * DAY - MINUTE);
  t.equal(await scheduleRetention(ctx), false, 'a minute before 7 days: nothing to do');
  app.clock.advance(2 * MINUTE);
  t.equal(await scheduleRetention(ctx), true, 'changes older than 7 days');
  await ctx.jobs.drain();
  t.same(await ctx.db('mail_changes'), [], 'the change feed is pruned');
  t.equal((await ctx.db('mail_messages')).length, 1, 'the messages stay');

  app.clock.advance(23 * DAY - 2 * MINUTE);
  t.equal(await scheduleRetention(ctx), false, 'a minute before 30 days: nothing to do');
  app.clock.advance(2 * MINUTE);
  t.equal(await scheduleRetention(ctx), true);
  await ctx.jobs.drain();
  t.same(await ctx.db('mailboxes').where({ id: made.body.id }), [], 'the mailbox is purged');
  t.same(await ctx.db('mail_messages'), [], 'with its messages');
  t.same(await ctx.db('mail_blobs'), [], 'and their sources');
  t.equal(await scheduleRetention(ctx), false);
});

t.test('the event log, webhook deliveries and inbound emails follow the plan\'s retention', async (t) => {
  const app = await startTestApp(t);
  const ctx = app.appliance.ctx;
  const free = await createOtherTeam(app, 'free');
  const enterprise = await createOtherTeam(app, 'enterprise');
  const seed = async (teamId: string, at: string) => {
    await ctx.db('events').insert({ team_id: teamId, type: 'email.sent', data: '{}', created_at: at });
    const [webhookId] = (await ctx.db('webhooks').insert({ team_id: teamId, url: 'https://hooks.example/x', events: '["email.sent"]', active: false, secret_sealed: 'x', created_at: at, updated_at: at })) as [number];
    for (const status of ['delivered', 'failed', 'pending']) {
      await ctx.db('webhook_deliveries').insert({ webhook_id: webhookId, event_type: 'email.sent', payload: '{}', status, created_at: at });
    }
    const [inboundId] = (await ctx.db('inbound_emails').insert({
      team_id: teamId, domain: 'in.example', mail_from: 'a@b.example', rcpt_to: '[]', from_header: 'a@b.example', to_addrs: '[]', cc_addrs: '[]',
      reply_to: '[]', subject: 's', headers: '[]', auth: '{}', mailbox_ids: '[]', raw: Buffer.from('x'), size: 1, created_at: at,
    })) as [number];
    await ctx.db('inbound_attachments').insert({ inbound_email_id: inboundId, position: 0, content_type: 'text/plain', size: 1, content: Buffer.from('x') });
  };
  const counts = async (teamId: string) => ({
    events: (await ctx.db('events').where({ team_id: teamId })).length,
    deliveries: (await ctx.db('webhook_deliveries as d').join('webhooks as w', 'w.id', 'd.webhook_id').where('w.team_id', teamId).select('d.status')).map((r: { status: string }) => r.status).sort(),
    inbound: (await ctx.db('inbound_emails').where({ team_id: teamId })).length,
  });
  const t0 = app.clock.now().getTime();
  await seed(free.teamId, new Date(t0).toISOString());
  await seed(enterprise.teamId, new Date(t0).toISOString());
  await seed(free.teamId, new Date(t0 + 10 * DAY).toISOString()); // newer: still kept on day 15
  app.clock.set(t0 + 14 * DAY - MINUTE);
  t.equal(await scheduleRetention(ctx), false, 'nothing expired a minute before 14 days');
  app.clock.set(t0 + 15 * DAY);
  t.equal(await scheduleRetention(ctx), true);
  await ctx.jobs.drain();
  t.same(await counts(free.teamId), { events: 1, deliveries: ['delivered', 'failed', 'pending', 'pending'], inbound: 1 }, 'Free: the 15-day-old rows are gone but a pending delivery');
  t.same(await counts(enterprise.teamId), { events: 1, deliveries: ['delivered', 'failed', 'pending'], inbound: 1 }, 'Enterprise keeps everything');
  t.equal((await ctx.db('inbound_attachments')).length, 2, 'the expired inbound email\'s attachment went with it');
});
