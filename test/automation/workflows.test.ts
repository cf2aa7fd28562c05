// Workflows API: every endpoint with its errors, the graph check naming the step, the run lifecycle without
// mail (update contact, segments, conditions, webhook), tenant isolation. Mail end to end: workflows-e2e.test.ts.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { DAY, HOUR } from '../../src/core/clock.js';
import { verifyWebhookSignature as verifySignature } from '../../src/webhooks/verify.js';
import { createOtherTeam, startTestApp } from '../helpers/app.js';

interface Err {
  error: string;
  code: string;
}
interface Wf {
  id: string;
  name: string;
  status: string;
  timezone: string;
  graph: unknown;
  graph_version: number;
  allow_concurrent_runs: boolean;
}
interface RunStep {
  step_id: string;
  outcome: string;
  reason: string | null;
  data: Record<string, unknown>;
}
interface Run {
  id: string;
  contact_id: string;
  state: string;
  step: string | null;
  reason: string | null;
  wake_at: string | null;
  trigger: Record<string, unknown>;
  steps: RunStep[];
}

t.test('workflows API', async (t) => {
  const app = await startTestApp(t);
  const drain = () => app.appliance.ctx.jobs.drain();
  const contact = async (email: string, extra: Record<string, unknown> = {}, key?: string) => {
    const r = await app.request<{ contact: { id: string } }>('POST', '/contacts', { body: { email, ...extra }, ...(key ? { key } : {}) });
    if (r.status !== 201 && r.status !== 200) throw new Error(`contact ${email}: ${r.status} ${r.text}`);
    return r.body.contact.id;
  };
  const segment = async (name: string) => {
    const r = await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name } });
    if (!r.body.segment) throw new Error(`segment: ${r.status} ${r.text}`);
    return r.body.segment.id;
  };
  const create = async (body: Record<string, unknown>, key?: string) => app.request<{ success: boolean; workflow: Wf; signing_secret: string } & Err>('POST', '/workflows', { body, ...(key ? { key } : {}) });
  const runs = async (id: string, q = '') => (await app.request<{ data: Run[]; meta: { total: number } }>('GET', `/workflows/${id}/runs${q}`)).body;

  for (const [name, type] of [['plan', 'string'], ['stage', 'string'], ['welcomed', 'boolean'], ['vip', 'boolean'], ['news', 'boolean'], ['done', 'boolean']]) {
    const r = await app.request('POST', '/contact-properties', { body: { name, type } });
    if (r.status !== 201 && r.status !== 200) throw new Error(`property ${name}: ${r.status} ${r.text}`);
  }
  const simpleGraph = (name = 'signed_up') => ({
    trigger: { type: 'event', name, next: 'tag' },
    steps: [
      { id: 'tag', type: 'update_contact', properties: { stage: 'onboarding' }, next: 'end' },
      { id: 'end', type: 'exit' },
    ],
  });

  t.test('create a draft, read it, list oldest first without meta', async (t) => {
    const a = await create({ name: 'First' });
    t.equal(a.status, 201);
    t.match(a.body.workflow, { name: 'First', status: 'draft', timezone: 'UTC', graph: null, graph_version: 0, allow_concurrent_runs: false });
    t.match(a.body.workflow.id, /^wf_/);
    t.match(a.body.signing_secret, /^whsec_/, 'the signing secret is shown once');
    const b = await create({ name: 'Second', timezone: 'Europe/Paris', graph: simpleGraph() });
    t.equal(b.status, 201);
    t.equal(b.body.workflow.graph_version, 1);
    const list = await app.request<{ data: Wf[]; meta?: unknown }>('GET', '/workflows');
    t.equal(list.status, 200);
    t.same(list.body.data.slice(0, 2).map((w) => w.name), ['First', 'Second'], 'oldest first');
    t.equal(list.body.meta, undefined, 'no meta');
    t.notOk(JSON.stringify(list.body).includes('whsec_'), 'no secret in the list');
    const got = await app.request<Wf & { runs: Record<string, number> }>('GET', `/workflows/${b.body.workflow.id}`);
    t.equal(got.status, 200);
    t.same(got.body.runs, { active: 0, completed: 0, exited: 0, failed: 0 });
    t.same(got.body.graph, simpleGraph());
  });

  t.test('create errors', async (t) => {
    t.match((await create({})).body, { code: 'invalid_request', error: 'Request body is missing required fields: name' });
    t.match((await create({ name: 'x', timezone: 'Mars/Olympus' })).body, { code: 'invalid_request', error: /timezone: 'Mars\/Olympus' is not an IANA time zone/ });
    t.match((await create({ name: 'x', graph: { trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'jump' }] } })).body, { error: /^step 'a': type: must be one of: send_email, wait/ });
    const sending = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'send', permission: 'sending_access' } });
    const r = await create({ name: 'x' }, sending.body.token);
    t.equal(r.status, 403, 'a sending_access key cannot manage workflows');
  });

  t.test('the graph check names the step', async (t) => {
    const wf = (await create({ name: 'Graphs' })).body.workflow;
    const put = (body: unknown) => app.request<Err & { workflow: Wf }>('PUT', `/workflows/${wf.id}/graph`, { body });
    const cases: Array<[unknown, RegExp]> = [
      [{ steps: [] }, /missing required fields: trigger/],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [] }, /steps: must contain at least 1 step/],
      [{ trigger: { type: 'teleport', next: 'a' }, steps: [{ id: 'a', type: 'exit' }] }, /^trigger\.type: must be one of: contact\.created/],
      [{ trigger: { type: 'manual', next: 'zz' }, steps: [{ id: 'a', type: 'exit' }] }, /^trigger: next 'zz' is not a step/],
      [{ trigger: { type: 'schedule', cron: '61 * * * *', next: 'a' }, steps: [{ id: 'a', type: 'exit' }] }, /^trigger\.cron: .*minute/],
      [{ trigger: { type: 'schedule', cron: '* *', next: 'a' }, steps: [{ id: 'a', type: 'exit' }] }, /^trigger\.cron: must have 5 fields/],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'wait', duration: { days: 1 } }, { id: 'b', type: 'exit' }] }, /^step 'a': next: is required \(every branch ends at an exit step\)/],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'wait', duration: { days: 1 }, next: 'nowhere' }] }, /^step 'a': 'nowhere' is not a step/],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'exit' }, { id: 'a', type: 'exit' }] }, /^step 'a': the id is used by another step/],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'exit' }, { id: 'lonely', type: 'exit' }] }, /^step 'lonely': cannot be reached from the trigger/],
      [
        {
          trigger: { type: 'manual', next: 'a' },
          steps: [
            { id: 'a', type: 'update_contact', first_name: 'A', next: 'b' },
            { id: 'b', type: 'condition', if: { field: 'first_name', operator: 'equals', value: 'A' }, yes: 'a', no: 'end' },
            { id: 'end', type: 'exit' },
          ],
        },
        /^step '(a|b)': is in a loop with no wait step in it/,
      ],
      [
        {
          trigger: { type: 'manual', next: 'a' },
          steps: [
            { id: 'a', type: 'wait', duration: { hours: 1 }, next: 'b' },
            { id: 'b', type: 'update_contact', first_name: 'A', next: 'a' },
          ],
        },
        /^step '(a|b)': no path from it reaches an exit step/,
      ],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'send_email', from: 'x@acme.example', next: 'e' }, { id: 'e', type: 'exit' }] }, /^step 'a': subject is required without a template_id/],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'send_email', from: 'not an address', subject: 's', text: 't', next: 'e' }, { id: 'e', type: 'exit' }] }, /^step 'a': from: must be a valid email address/],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'wait', next: 'e' }, { id: 'e', type: 'exit' }] }, /^step 'a': give either duration or until/],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'wait', until: '25:00', next: 'e' }, { id: 'e', type: 'exit' }] }, /^step 'a': until: must be a time of day/],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'condition', if: { email: 'opened', step: 'e' }, yes: 'e', no: 'e' }, { id: 'e', type: 'exit' }] }, /^step 'a': if.step 'e' is not a send_email step/],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'webhook', url: 'ftp://x', next: 'e' }, { id: 'e', type: 'exit' }] }, /^step 'a': url: must be an http or https URL/],
      [{ trigger: { type: 'segment.added', segment_id: 'seg_nope', next: 'e' }, steps: [{ id: 'e', type: 'exit' }] }, /^trigger: segment 'seg_nope' not found/],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'add_to_segment', segment_id: 'seg_nope', next: 'e' }, { id: 'e', type: 'exit' }] }, /^step 'a': segment 'seg_nope' is not a manual segment/],
      [{ trigger: { type: 'manual', next: 'a' }, steps: [{ id: 'a', type: 'send_email', from: 'x@acme.example', template_id: 'tpl_nope', next: 'e' }, { id: 'e', type: 'exit' }] }, /^step 'a': template 'tpl_nope' not found/],
      [{ trigger: { type: 'manual', next: 'e' }, steps: [{ id: 'e', type: 'exit', next: 'x' }] }, /^step 'e': unknown field: next/],
    ];
    for (const [body, message] of cases) {
      const r = await put(body);
      t.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
      t.match(r.body, { code: 'invalid_request', error: message });
    }
    // A loop through a wait is fine.
    const ok = await put({
      trigger: { type: 'manual', next: 'a' },
      steps: [
        { id: 'a', type: 'wait', duration: { days: 1 }, next: 'b' },
        { id: 'b', type: 'condition', if: { field: 'properties.done', operator: 'exists' }, yes: 'e', no: 'a' },
        { id: 'e', type: 'exit' },
      ],
    });
    t.equal(ok.status, 200, ok.text);
    t.equal(ok.body.workflow.graph_version, 1);
    t.equal((await app.request('PUT', '/workflows/wf_nope/graph', { body: simpleGraph() })).status, 404);
  });

  t.test('activate, pause, trigger, delete: states and errors', async (t) => {
    const draft = (await create({ name: 'No graph' })).body.workflow;
    t.match((await app.request<Err>('POST', `/workflows/${draft.id}/activate`)).body, { code: 'unprocessable_entity', error: /has no graph/ });
    t.match((await app.request<Err>('POST', `/workflows/${draft.id}/pause`)).body, { code: 'unprocessable_entity', error: /draft/ });
    const wf = (await create({ name: 'Manual', graph: { trigger: { type: 'manual', next: 'w' }, steps: [{ id: 'w', type: 'wait', duration: { hours: 2 }, next: 'e' }, { id: 'e', type: 'exit' }] } })).body.workflow;
    const cid = await contact('manual@dest.example');
    t.match((await app.request<Err>('POST', `/workflows/${wf.id}/trigger`, { body: { contact_id: cid } })).body, { code: 'unprocessable_entity', error: /draft: only an active workflow/ });
    const act = await app.request<{ workflow: Wf }>('POST', `/workflows/${wf.id}/activate`);
    t.equal(act.status, 200);
    t.equal(act.body.workflow.status, 'active');
    t.equal((await app.request<Err>('PUT', `/workflows/${wf.id}/graph`, { body: simpleGraph() })).status, 409, 'no graph change while active');
    t.match((await app.request<Err>('POST', `/workflows/${wf.id}/trigger`, { body: {} })).body, { error: 'Request body is missing required fields: contact_id or email' });
    t.equal((await app.request<Err>('POST', `/workflows/${wf.id}/trigger`, { body: { contact_id: 'ct_nope' } })).status, 404);
    const first = await app.request<{ run_id: string }>('POST', `/workflows/${wf.id}/trigger`, { body: { email: 'MANUAL@dest.example', data: { plan: 'pro' } } });
    t.equal(first.status, 201, first.text);
    t.match(first.body.run_id, /^wfr_/);
    const again = await app.request<Err>('POST', `/workflows/${wf.id}/trigger`, { body: { contact_id: cid } });
    t.equal(again.status, 409, 'one run per contact at a time');
    await drain();
    let r = (await runs(wf.id)).data[0]!;
    t.match(r, { state: 'waiting', step: 'e', contact_id: cid, trigger: { type: 'manual', data: { plan: 'pro' } } });
    t.match(r.steps, [{ step_id: 'w', outcome: 'waiting' }]);

    // Pause: the wait runs out, the run stops there; activate resumes it.
    t.equal((await app.request<{ workflow: Wf }>('POST', `/workflows/${wf.id}/pause`)).body.workflow.status, 'paused');
    app.clock.advance(3 * HOUR);
    await drain();
    r = (await runs(wf.id)).data[0]!;
    t.equal(r.state, 'paused', 'stopped at its next step');
    t.equal(r.steps.length, 1);
    t.equal((await app.request<Err>('POST', `/workflows/${wf.id}/trigger`, { body: { contact_id: cid } })).status, 422, 'a paused workflow starts nothing');
    await app.request('POST', `/workflows/${wf.id}/activate`);
    await drain();
    r = (await runs(wf.id)).data[0]!;
    t.equal(r.state, 'completed');
    t.match(r.steps, [{ step_id: 'w', outcome: 'waiting' }, { step_id: 'e', outcome: 'completed' }]);
    const second = await app.request<{ run_id: string }>('POST', `/workflows/${wf.id}/trigger`, { body: { contact_id: cid } });
    t.equal(second.status, 201, 'a new run once the first has ended');
    t.equal((await runs(wf.id, '?state=completed')).meta.total, 1);
    t.equal((await runs(wf.id, `?contact_id=${cid}`)).meta.total, 2);
    t.match((await app.request<Err>('GET', `/workflows/${wf.id}/runs?state=bogus`)).body, { code: 'invalid_request', error: /state/ });
    t.match((await app.request<Err>('GET', `/workflows/${wf.id}/runs?per_page=0`)).body, { code: 'invalid_request', error: /per_page/ });

    const del = await app.request<{ success: boolean }>('DELETE', `/workflows/${wf.id}`);
    t.same(del.body, { success: true });
    t.equal((await app.request('GET', `/workflows/${wf.id}`)).status, 404);
    t.equal((await app.request('DELETE', `/workflows/${wf.id}`)).status, 404);
    app.clock.advance(3 * HOUR);
    await drain(); // the deleted run's wait job finds nothing
    t.equal((await app.request('POST', `/workflows/${wf.id}/activate`)).status, 404);
  });

  t.test('custom events: a run per contact, once at a time unless the workflow allows more', async (t) => {
    const seg = await segment('Onboarded');
    const wf = (
      await create({
        name: 'Events',
        graph: {
          trigger: { type: 'event', name: 'plan_changed', next: 'check' },
          steps: [
            { id: 'check', type: 'condition', if: { field: 'data.plan', operator: 'equals', value: 'pro' }, yes: 'mark', no: 'end' },
            { id: 'mark', type: 'update_contact', properties: { plan: 'pro' }, first_name: 'Pro', next: 'join' },
            { id: 'join', type: 'add_to_segment', segment_id: seg, next: 'end' },
            { id: 'end', type: 'exit' },
          ],
        },
      })
    ).body.workflow;
    const pro = await contact('pro@dest.example');
    const free = await contact('free@dest.example');
    // Before activation an event starts nothing.
    t.equal((await app.request('POST', '/workflows/events', { body: { name: 'plan_changed', contact_id: pro, data: { plan: 'pro' } } })).status, 202);
    await drain();
    t.equal((await runs(wf.id)).meta.total, 0);
    await app.request('POST', `/workflows/${wf.id}/activate`);
    t.equal((await app.request('POST', '/workflows/events', { body: { name: 'plan_changed', contact_id: pro, data: { plan: 'pro' } } })).status, 202);
    t.equal((await app.request('POST', '/workflows/events', { body: { name: 'plan_changed', email: 'free@dest.example', data: { plan: 'free' } } })).status, 202);
    t.equal((await app.request('POST', '/workflows/events', { body: { name: 'other_event', contact_id: pro } })).status, 202);
    await drain();
    const all = (await runs(wf.id)).data;
    t.equal(all.length, 2);
    const proRun = all.find((r) => r.contact_id === pro)!;
    t.match(proRun, { state: 'completed', trigger: { type: 'event', name: 'plan_changed', data: { plan: 'pro' } } });
    t.same(proRun.steps.map((s) => `${s.step_id}:${s.outcome}`), ['check:yes', 'mark:updated', 'join:added', 'end:completed']);
    t.match(proRun.steps[0]!.reason, /data\.plan equals "pro": true/);
    const freeRun = all.find((r) => r.contact_id === free)!;
    t.same(freeRun.steps.map((s) => `${s.step_id}:${s.outcome}`), ['check:no', 'end:completed']);
    const c = await app.request<{ contact: { first_name: string; properties: Record<string, unknown> } }>('GET', `/contacts/${pro}`);
    t.match(c.body.contact, { first_name: 'Pro', properties: { plan: 'pro' } });
    const members = await app.request<{ data: Array<{ id: string }> }>('GET', `/segments/${seg}/members`);
    t.same(members.body.data.map((m) => m.id), [pro]);

    // Errors of the events endpoint.
    t.match((await app.request<Err>('POST', '/workflows/events', { body: { contact_id: pro } })).body, { error: 'Request body is missing required fields: name' });
    t.match((await app.request<Err>('POST', '/workflows/events', { body: { name: 'x' } })).body, { error: 'Request body is missing required fields: contact_id or email' });
    t.match((await app.request<Err>('POST', '/workflows/events', { body: { name: 'x', email: 'nobody@dest.example' } })).body, { code: 'not_found', error: 'Contact not found' });
    t.match((await app.request<Err>('POST', '/workflows/events', { body: { name: 'x', contact_id: pro, data: 'str' } })).body, { code: 'invalid_request', error: /^data: / });
  });

  t.test('contact.created, segment.added and topic.subscribed triggers, from the event log and the database', async (t) => {
    const seg = await segment('VIP');
    const topic = await app.request<{ id?: string; topic?: { id: string } }>('POST', '/subscription-topics', { body: { name: 'Product news', default_subscription: 'opt_out' } });
    const topicId = topic.body.topic?.id ?? topic.body.id!;
    const graph = (trigger: Record<string, unknown>, tag: string) => ({
      trigger: { ...trigger, next: 'tag' },
      steps: [
        { id: 'tag', type: 'update_contact', properties: { [tag]: true }, next: 'end' },
        { id: 'end', type: 'exit' },
      ],
    });
    const created = (await create({ name: 'On create', graph: graph({ type: 'contact.created' }, 'welcomed') })).body.workflow;
    const vip = (await create({ name: 'On VIP', graph: graph({ type: 'segment.added', segment_id: seg }, 'vip') })).body.workflow;
    const news = (await create({ name: 'On news', graph: graph({ type: 'topic.subscribed', topic_id: topicId }, 'news') })).body.workflow;
    const before = await contact('before@dest.example');
    for (const w of [created, vip, news]) t.equal((await app.request('POST', `/workflows/${w.id}/activate`)).status, 200);
    const after = await contact('after@dest.example');
    await drain();
    t.same((await runs(created.id)).data.map((r) => r.contact_id), [after], 'only contacts created after activation');
    await app.request('POST', `/segments/${seg}/contacts`, { body: { contact_ids: [before, after] } });
    await app.request('POST', `/segments/${seg}/contacts`, { body: { contact_ids: [before] } }); // already in: no signal
    const sub = await app.request('POST', `/subscription-topics/contacts/${before}/subscriptions`, { body: { subscriptions: [{ topic_id: topicId, subscribed: true }] } });
    t.equal(sub.status, 200, sub.text);
    await drain();
    t.same((await runs(vip.id)).data.map((r) => r.contact_id).sort(), [after, before].sort());
    t.same((await runs(news.id)).data.map((r) => r.contact_id), [before]);
    t.match((await runs(news.id)).data[0], { state: 'completed', trigger: { type: 'topic.subscribed', topic_id: topicId } });
    const c = await app.request<{ contact: { properties: Record<string, unknown> } }>('GET', `/contacts/${before}`);
    t.match(c.body.contact.properties, { vip: true, news: true });
    // Pausing stops the signals: nothing is kept for later.
    await app.request('POST', `/workflows/${vip.id}/pause`);
    const late = await contact('late@dest.example');
    await app.request('POST', `/segments/${seg}/contacts`, { body: { contact_ids: [late] } });
    await drain();
    t.equal((await runs(vip.id)).meta.total, 2);
  });

  t.test('a webhook step: signed with the workflow secret, through the webhook client', async (t) => {
    const received: Array<{ body: string; headers: IncomingMessage['headers'] }> = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ body, headers: req.headers });
        res.writeHead(received.length === 1 ? 200 : 500).end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.teardown(() => server.close());
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const made = await create({
      name: 'Hook',
      allow_concurrent_runs: true,
      graph: { trigger: { type: 'manual', next: 'call' }, steps: [{ id: 'call', type: 'webhook', url, next: 'end' }, { id: 'end', type: 'exit' }] },
    });
    const wf = made.body.workflow;
    await app.request('POST', `/workflows/${wf.id}/activate`);
    const cid = await contact('hook@dest.example', { first_name: 'Hook' });
    await app.request('POST', `/workflows/${wf.id}/trigger`, { body: { contact_id: cid, data: { order: 7 } } });
    const second = await app.request('POST', `/workflows/${wf.id}/trigger`, { body: { contact_id: cid } });
    t.equal(second.status, 201, 'allow_concurrent_runs: a second run at once');
    await drain();
    t.equal(received.length, 2);
    const first = received[0]!;
    t.ok(verifySignature(first.body, String(first.headers['x-service-signature']), made.body.signing_secret), 'signed with the secret shown at creation');
    const payload = JSON.parse(first.body) as { type: string; data: { workflow_id: string; contact: { email: string }; trigger: { data: Record<string, unknown> } } };
    t.match(payload, { type: 'workflow.webhook', data: { workflow_id: wf.id, step_id: 'call', contact: { email: 'hook@dest.example', first_name: 'Hook' } } });
    const outcomes = (await runs(wf.id)).data.map((r) => r.steps[0]!).map((s) => `${s.outcome}:${s.reason ?? ''}`).sort();
    t.same(outcomes, ['called:', 'failed:HTTP 500'], 'a failed call is recorded, the run goes on');
    t.ok((await runs(wf.id)).data.every((r) => r.state === 'completed'));
  });

  t.test('tenant isolation', async (t) => {
    const other = await createOtherTeam(app);
    const mine = (await create({ name: 'Mine', graph: simpleGraph('iso') })).body.workflow;
    await app.request('POST', `/workflows/${mine.id}/activate`);
    const theirs = await app.request<{ workflow: Wf }>('POST', '/workflows', { key: other.apiKey, body: { name: 'Theirs', graph: simpleGraph('iso') } });
    t.equal(theirs.status, 201);
    const list = await app.request<{ data: Wf[] }>('GET', '/workflows', { key: other.apiKey });
    t.same(list.body.data.map((w) => w.name), ['Theirs']);
    for (const [method, path] of [
      ['GET', `/workflows/${mine.id}`],
      ['GET', `/workflows/${mine.id}/runs`],
      ['PUT', `/workflows/${mine.id}/graph`],
      ['POST', `/workflows/${mine.id}/activate`],
      ['POST', `/workflows/${mine.id}/pause`],
      ['POST', `/workflows/${mine.id}/trigger`],
      ['DELETE', `/workflows/${mine.id}`],
    ] as const) {
      const body = method === 'PUT' ? simpleGraph() : method === 'POST' && path.endsWith('trigger') ? { email: 'x@dest.example' } : undefined;
      const r = await app.request<Err>(method, path, { key: other.apiKey, ...(body ? { body } : {}) });
      t.equal(r.status, 404, `${method} ${path}`);
    }
    // My contact is unknown to the other team's events; its own event does not start my workflow.
    const mineContact = await contact('iso@dest.example');
    t.equal((await app.request('POST', '/workflows/events', { key: other.apiKey, body: { name: 'iso', contact_id: mineContact } })).status, 404);
    const theirContact = await contact('iso@dest.example', {}, other.apiKey);
    t.equal((await app.request('POST', '/workflows/events', { key: other.apiKey, body: { name: 'iso', contact_id: theirContact } })).status, 202);
    await drain();
    t.equal((await runs(mine.id)).meta.total, 0, "another team's event starts nothing here");
    t.equal((await app.request<{ runs: { active: number; completed: number } }>('GET', `/workflows/${mine.id}`)).body.runs.completed, 0);
  });

  t.test('wait until a time of day, in the workflow time zone; events with a sending_access key', async (t) => {
    // The clock stands at 2026-03-01T10:00Z: 11:00 in Paris. The next 09:00 there is 08:00Z the next day.
    const wf = (
      await create({
        name: 'Morning',
        timezone: 'Europe/Paris',
        graph: { trigger: { type: 'event', name: 'morning', next: 'w' }, steps: [{ id: 'w', type: 'wait', until: '09:00', next: 'e' }, { id: 'e', type: 'exit' }] },
      })
    ).body.workflow;
    await app.request('POST', `/workflows/${wf.id}/activate`);
    const cid = await contact('morning@dest.example');
    const sending = await app.request<{ token: string }>('POST', '/api-keys', { body: { name: 'events', permission: 'sending_access' } });
    const posted = await app.request('POST', '/workflows/events', { key: sending.body.token, body: { name: 'morning', contact_id: cid } });
    t.equal(posted.status, 202, 'any key may post events');
    await drain();
    const run = (await runs(wf.id)).data[0]!;
    const expected = new Date(app.clock.now());
    expected.setUTCDate(expected.getUTCDate() + 1);
    expected.setUTCHours(8, 0, 0, 0);
    t.match(run, { state: 'waiting', wake_at: expected.toISOString() });
    t.equal(run.steps[0]!.reason, `until ${expected.toISOString()}`);
  });

  t.test('a deleted contact ends its run', async (t) => {
    const wf = (await create({ name: 'Deleted', graph: { trigger: { type: 'manual', next: 'w' }, steps: [{ id: 'w', type: 'wait', duration: { days: 1 }, next: 'e' }, { id: 'e', type: 'exit' }] } })).body.workflow;
    await app.request('POST', `/workflows/${wf.id}/activate`);
    const cid = await contact('gone@dest.example');
    await app.request('POST', `/workflows/${wf.id}/trigger`, { body: { contact_id: cid } });
    await drain();
    t.equal((await app.request('DELETE', `/contacts/${cid}`)).status, 200);
    app.clock.advance(DAY + HOUR);
    await drain();
    t.match((await runs(wf.id)).data[0], { state: 'exited', reason: 'the contact was deleted' });
  });
});
