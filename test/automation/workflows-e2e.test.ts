// Workflows end to end over a sink MX, driven by the fake clock: welcome → wait 2 days → opened? → two
// branches; the same with the appliance restarted in the middle of the wait (same data dir); unsubscribed and
// suppressed contacts skipped at the send, with the reason in the run; a template send with merge tags; a
// schedule trigger fired by moving the clock; email.opened and email.bounced triggers. Opens are recorded by
// test/helpers/email-open.ts, and once through the real tracking pixel (open tracking, test/tracking/support.ts).
import { rmSync } from 'node:fs';
import { simpleParser } from 'mailparser';
import t, { type Test } from 'tap';
import { FakeClock, DAY, HOUR, MINUTE } from '../../src/core/clock.js';
import { makeDataDir, startTestApp, type TestApp } from '../helpers/app.js';
import { startDns, type TestDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { simulateEngagement } from '../helpers/email-open.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { startTrackingEnv, trackingUrls, UA } from '../tracking/support.js';

interface RunStep {
  step_id: string;
  outcome: string;
  reason: string | null;
  email_id: string | null;
}
interface Run {
  id: string;
  contact_id: string;
  email: string;
  state: string;
  step: string | null;
  wake_at: string | null;
  steps: RunStep[];
}

const welcomeGraph = {
  trigger: { type: 'event', name: 'signed_up', next: 'welcome' },
  steps: [
    { id: 'welcome', type: 'send_email', from: 'Acme <hello@acme.example>', subject: 'Welcome, {{ contact.first_name | default: "friend" }}', html: '<p>Hi {{ contact.first_name }}, your plan: {{ data.plan }}</p><p><a href="{{ unsubscribe_url }}">Unsubscribe</a></p>', next: 'wait' },
    { id: 'wait', type: 'wait', duration: { days: 2 }, next: 'opened' },
    { id: 'opened', type: 'condition', if: { email: 'opened', step: 'welcome' }, yes: 'tips', no: 'nudge' },
    { id: 'tips', type: 'send_email', from: 'hello@acme.example', subject: 'Tips for {{ contact.email }}', text: 'Since you read our welcome: tips.', next: 'end' },
    { id: 'nudge', type: 'send_email', from: 'hello@acme.example', subject: 'Did you see our welcome?', text: 'A reminder.', next: 'end' },
    { id: 'end', type: 'exit' },
  ],
};

async function subjectsOf(sink: SmtpSink): Promise<Array<{ to: string; subject: string; html: string; text: string; listUnsubscribe: boolean }>> {
  return Promise.all(
    sink.accepted.map(async (tx) => {
      const p = await simpleParser(tx.raw);
      return { to: tx.to[0]!, subject: p.subject ?? '', html: typeof p.html === 'string' ? p.html : '', text: p.text ?? '', listUnsubscribe: /^List-Unsubscribe:/im.test(tx.raw.toString()) };
    }),
  );
}

async function setup(t: Test, app: TestApp, dns: TestDns) {
  await addVerifiedDomain(app, dns, 'acme.example');
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  t.pass('domain verified, destination MX published');
}

const contact = async (app: TestApp, email: string, extra: Record<string, unknown> = {}, key?: string) => {
  const r = await app.request<{ contact: { id: string } }>('POST', '/contacts', { body: { email, ...extra }, ...(key ? { key } : {}) });
  if (!r.body.contact) throw new Error(`contact: ${r.status} ${r.text}`);
  return r.body.contact.id;
};
const runsOf = async (app: TestApp, id: string, key?: string) => (await app.request<{ data: Run[] }>('GET', `/workflows/${id}/runs?per_page=100`, key ? { key } : {})).body.data;

t.test('welcome → wait 2 days → opened? → two branches, over a sink MX', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port } });
  await setup(t, app, dns);
  const drain = () => app.appliance.ctx.jobs.drain();

  const created = await app.request<{ workflow: { id: string } }>('POST', '/workflows', { body: { name: 'Welcome', graph: welcomeGraph } });
  t.equal(created.status, 201, created.text);
  const wf = created.body.workflow.id;
  t.equal((await app.request('POST', `/workflows/${wf}/activate`)).status, 200);

  const ann = await contact(app, 'ann@dest.example', { first_name: 'Ann' });
  const bob = await contact(app, 'bob@dest.example', { first_name: 'Bob' });
  const gone = await contact(app, 'gone@dest.example', { unsubscribed: true });
  const bounced = await contact(app, 'bounced@dest.example');
  t.equal((await app.request('POST', '/suppressions', { body: { email: 'bounced@dest.example', reason: 'bounce' } })).status < 300, true, 'suppressed');
  // A signup not confirmed yet (double opt-in, signup forms): as a signup form leaves it.
  const pending = await contact(app, 'pending@dest.example');
  await app.appliance.ctx.db('contacts').where({ email: 'pending@dest.example' }).update({ opt_in_status: 'pending' });
  for (const [id, plan] of [[ann, 'pro'], [bob, 'free'], [gone, 'free'], [bounced, 'free'], [pending, 'free']] as const) {
    t.equal((await app.request('POST', '/workflows/events', { body: { name: 'signed_up', contact_id: id, data: { plan } } })).status, 202);
  }
  await drain();
  let mail = await subjectsOf(sink);
  t.same(mail.map((m) => `${m.to}|${m.subject}`).sort(), ['ann@dest.example|Welcome, Ann', 'bob@dest.example|Welcome, Bob'], 'welcome sent, merge tags from the contact');
  const annWelcome = mail.find((m) => m.to === 'ann@dest.example')!;
  t.match(annWelcome.html, /Hi Ann, your plan: pro/, 'merge tags from the event data');
  const unsubscribeLink = /href="([^"]+\/unsubscribe\/[^"]+)"/.exec(annWelcome.html)?.[1];
  t.ok(unsubscribeLink, '{{ unsubscribe_url }}: the contact\'s own preference page');
  const page = await fetch(`${app.url}${new URL(unsubscribeLink!.replace(/&amp;/g, '&')).pathname}`);
  t.equal(page.status, 200, 'the link opens the preference page');
  t.ok(annWelcome.listUnsubscribe, 'a workflow email carries the unsubscribe links');

  let runs = await runsOf(app, wf);
  const byContact = (id: string) => runs.find((r) => r.contact_id === id)!;
  t.match(byContact(ann), { state: 'waiting', step: 'opened', wake_at: new Date(app.clock.now().getTime() + 2 * DAY).toISOString() });
  t.match(byContact(gone).steps[0], { step_id: 'welcome', outcome: 'skipped', reason: /^unsubscribed/ });
  t.match(byContact(bounced).steps[0], { step_id: 'welcome', outcome: 'skipped', reason: /^suppressed: bounced@dest\.example/ });
  t.match(byContact(pending).steps[0], { step_id: 'welcome', outcome: 'skipped', reason: /^unconfirmed/ });
  const welcomeId = byContact(ann).steps[0]!.email_id!;
  t.match(welcomeId, /^em_/);

  // Ann opens the welcome; nobody else does. A day later nothing has moved.
  await simulateEngagement(app, welcomeId, 'opened', 'ann@dest.example');
  app.clock.advance(DAY);
  await drain();
  t.equal(sink.accepted.length, 2, 'still waiting after one day');
  // A second signed_up while in the run starts no second run.
  await app.request('POST', '/workflows/events', { body: { name: 'signed_up', contact_id: ann } });
  await drain();
  t.equal((await runsOf(app, wf)).length, 5);

  app.clock.advance(DAY + MINUTE);
  await drain();
  mail = await subjectsOf(sink);
  t.same(mail.slice(2).map((m) => `${m.to}|${m.subject}`).sort(), ['ann@dest.example|Tips for ann@dest.example', 'bob@dest.example|Did you see our welcome?']);
  runs = await runsOf(app, wf);
  t.same(byContact(ann).steps.map((s) => `${s.step_id}:${s.outcome}`), ['welcome:sent', 'wait:waiting', 'opened:yes', 'tips:sent', 'end:completed']);
  t.match(byContact(ann).steps[2]!.reason, /the email of step 'welcome' was opened/);
  t.same(byContact(bob).steps.map((s) => `${s.step_id}:${s.outcome}`), ['welcome:sent', 'wait:waiting', 'opened:no', 'nudge:sent', 'end:completed']);
  t.same(byContact(gone).steps.map((s) => `${s.step_id}:${s.outcome}`), ['welcome:skipped', 'wait:waiting', 'opened:no', 'nudge:skipped', 'end:completed'], 'skipped at each send step');
  t.ok(runs.every((r) => r.state === 'completed'));
  const detail = await app.request<{ runs: Record<string, number> }>('GET', `/workflows/${wf}`);
  t.same(detail.body.runs, { active: 0, completed: 5, exited: 0, failed: 0 });
  // Time goes on: nothing more is sent.
  app.clock.advance(10 * DAY);
  await drain();
  t.equal(sink.accepted.length, 4, 'each email sent once');
});

t.test('a restart in the middle of the wait resumes every run, sending nothing twice', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  const dataDir = makeDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const config = { dnsServers: [dns.server], outboundPort: sink.port };
  const clock = new FakeClock('2026-03-01T10:00:00.000Z');
  const first = await startTestApp(t, { config, clock, dataDir });
  const key = first.apiKey;
  await setup(t, first, dns);
  const wf = (await first.request<{ workflow: { id: string } }>('POST', '/workflows', { body: { name: 'Welcome', graph: welcomeGraph } })).body.workflow.id;
  await first.request('POST', `/workflows/${wf}/activate`);
  const ann = await contact(first, 'ann@dest.example', { first_name: 'Ann' });
  const bob = await contact(first, 'bob@dest.example', { first_name: 'Bob' });
  for (const id of [ann, bob]) await first.request('POST', '/workflows/events', { body: { name: 'signed_up', contact_id: id, data: { plan: 'pro' } } });
  await first.appliance.ctx.jobs.drain();
  t.equal(sink.accepted.length, 2, 'welcomes sent before the restart');
  const welcome = (await runsOf(first, wf)).find((r) => r.contact_id === bob)!.steps[0]!.email_id!;
  await simulateEngagement(first, welcome, 'opened', 'bob@dest.example');
  clock.advance(DAY);
  await first.stop();

  const second = await startTestApp(t, { config: { ...config, bootstrapApiKey: key }, clock, dataDir });
  const req = <T>(method: string, path: string) => second.request<T>(method, path, { key });
  t.equal((await req<{ data: Run[] }>('GET', `/workflows/${wf}/runs`)).body.data.filter((r) => r.state === 'waiting').length, 2, 'both runs still waiting after the restart');
  await second.appliance.ctx.jobs.drain();
  t.equal(sink.accepted.length, 2, 'nothing re-sent at start-up');
  clock.advance(DAY + MINUTE);
  await second.appliance.ctx.jobs.drain();
  const mail = await subjectsOf(sink);
  t.same(mail.map((m) => `${m.to}|${m.subject}`).sort(), [
    'ann@dest.example|Did you see our welcome?',
    'ann@dest.example|Welcome, Ann',
    'bob@dest.example|Tips for bob@dest.example',
    'bob@dest.example|Welcome, Bob',
  ]);
  const runs = (await req<{ data: Run[] }>('GET', `/workflows/${wf}/runs`)).body.data;
  t.ok(runs.every((r) => r.state === 'completed'), 'both completed');
});

t.test('a schedule trigger fires as the clock moves, in the workflow time zone; email.opened starts a run; template sends', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  // 2026-03-01T10:00Z is 11:00 in Paris.
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], outboundPort: sink.port } });
  await setup(t, app, dns);
  const drain = () => app.appliance.ctx.jobs.drain();
  const seg = (await app.request<{ segment: { id: string } }>('POST', '/segments', { body: { name: 'Digest readers' } })).body.segment.id;
  const a = await contact(app, 'a@dest.example', { first_name: 'Ada' });
  const b = await contact(app, 'b@dest.example');
  const c = await contact(app, 'c@dest.example');
  await app.request('POST', `/segments/${seg}/contacts`, { body: { contact_ids: [a, b] } });

  const tpl = await app.request<{ template: { id: string } }>('POST', '/templates', { body: { name: 'Digest', subject: 'Your digest, {{ contact.first_name | default: "reader" }}', html: '<p>Digest for {{ contact.email }}</p>' } });
  t.equal(tpl.status, 201, tpl.text);
  await app.request('POST', `/templates/${tpl.body.template.id}/publish`);
  const wf = (
    await app.request<{ workflow: { id: string } }>('POST', '/workflows', {
      body: {
        name: 'Morning digest',
        timezone: 'Europe/Paris',
        allow_concurrent_runs: true,
        graph: {
          trigger: { type: 'schedule', cron: '0 9 * * *', segment_id: seg, next: 'send' },
          steps: [
            { id: 'send', type: 'send_email', from: 'news@acme.example', template_id: tpl.body.template.id, next: 'end' },
            { id: 'end', type: 'exit' },
          ],
        },
      },
    })
  ).body.workflow.id;
  t.equal((await app.request('POST', `/workflows/${wf}/activate`)).status, 200);
  await drain();
  t.equal(sink.accepted.length, 0, 'nothing before 09:00 Paris');
  app.clock.advance(20 * HOUR); // 2026-03-02T06:00Z = 07:00 Paris
  await drain();
  t.equal(sink.accepted.length, 0, 'still nothing at 07:00 Paris');
  app.clock.advance(2 * HOUR + MINUTE); // 08:01Z = 09:01 Paris
  await drain();
  let mail = await subjectsOf(sink);
  t.same(mail.map((m) => `${m.to}|${m.subject}`).sort(), ['a@dest.example|Your digest, Ada', 'b@dest.example|Your digest, reader'], 'the segment, by its template with merge tags');
  t.match(mail[0]!.html, /Digest for [ab]@dest\.example/);
  const runs = await runsOf(app, wf);
  t.equal(runs.length, 2);
  app.clock.advance(DAY);
  await drain();
  t.equal(sink.accepted.length, 4, 'and again the next morning');

  // Paused: the next morning passes without a digest.
  await app.request('POST', `/workflows/${wf}/pause`);
  app.clock.advance(DAY);
  await drain();
  t.equal(sink.accepted.length, 4);

  // email.opened: an open of any email of the team starts a run for its recipient.
  const follow = (
    await app.request<{ workflow: { id: string } }>('POST', '/workflows', {
      body: {
        name: 'After an open',
        graph: { trigger: { type: 'email.opened', next: 'thanks' }, steps: [{ id: 'thanks', type: 'send_email', from: 'news@acme.example', subject: 'Thanks for reading', text: 'Thanks.', next: 'end' }, { id: 'end', type: 'exit' }] },
      },
    })
  ).body.workflow.id;
  await app.request('POST', `/workflows/${follow}/activate`);
  const firstDigest = runs.find((r) => r.contact_id === a)!.steps[0]!.email_id!;
  await simulateEngagement(app, firstDigest, 'opened', 'a@dest.example');
  await drain();
  mail = await subjectsOf(sink);
  t.same(mail.slice(4).map((m) => `${m.to}|${m.subject}`), ['a@dest.example|Thanks for reading']);
  t.match((await runsOf(app, follow))[0], { contact_id: a, state: 'completed' });

  // email.bounced: the bounced recipient (not every recipient of the email) enters.
  const onBounce = (
    await app.request<{ workflow: { id: string } }>('POST', '/workflows', {
      body: { name: 'On bounce', graph: { trigger: { type: 'email.bounced', next: 'mark' }, steps: [{ id: 'mark', type: 'update_contact', last_name: 'Bounced', next: 'end' }, { id: 'end', type: 'exit' }] } },
    })
  ).body.workflow.id;
  await app.request('POST', `/workflows/${onBounce}/activate`);
  sink.recipients.set('c@dest.example', { code: 550, text: '5.1.1 No such user' });
  const sent = await app.request('POST', '/emails', { body: { from: 'news@acme.example', to: ['b@dest.example', 'c@dest.example'], subject: 'Hello', text: 'Hi' } });
  t.equal(sent.status, 202);
  await drain();
  await drain();
  const bounceRuns = await runsOf(app, onBounce);
  t.same(bounceRuns.map((r) => r.contact_id), [c], 'only the bounced recipient');
  t.match(bounceRuns[0], { state: 'completed', trigger: { type: 'email.bounced' } });
  t.match((await app.request<{ contact: { last_name: string } }>('GET', `/contacts/${c}`)).body.contact, { last_name: 'Bounced' });
});

t.test('the open condition over real open tracking: the pixel fetched from the delivered message', async (t) => {
  const env = await startTrackingEnv(t);
  const { app, sink } = env;
  await env.track({ open_tracking: true });
  const drain = () => app.appliance.ctx.jobs.drain();
  const wf = (await app.request<{ workflow: { id: string } }>('POST', '/workflows', { body: { name: 'Welcome', graph: welcomeGraph } })).body.workflow.id;
  await app.request('POST', `/workflows/${wf}/activate`);
  const ann = await contact(app, 'ann@dest.example', { first_name: 'Ann' });
  const bob = await contact(app, 'bob@dest.example', { first_name: 'Bob' });
  for (const id of [ann, bob]) await app.request('POST', '/workflows/events', { body: { name: 'signed_up', contact_id: id, data: { plan: 'pro' } } });
  await drain();
  t.equal(sink.accepted.length, 2);
  const annTx = sink.accepted.find((tx) => tx.to[0] === 'ann@dest.example')!;
  const parsed = await simpleParser(annTx.raw);
  const { pixel } = trackingUrls(typeof parsed.html === 'string' ? parsed.html : '');
  t.equal(pixel.length, 1, 'the welcome carries the open pixel');
  const hit = await fetch(pixel[0]!, { headers: { 'user-agent': UA.chromeWindows } });
  t.equal(hit.status, 200);
  await hit.arrayBuffer();
  app.clock.advance(2 * DAY + MINUTE);
  await drain();
  const mail = await subjectsOf(sink);
  t.same(mail.slice(2).map((m) => `${m.to}|${m.subject}`).sort(), ['ann@dest.example|Tips for ann@dest.example', 'bob@dest.example|Did you see our welcome?'], 'the opener gets the tips, the other the nudge');
});
