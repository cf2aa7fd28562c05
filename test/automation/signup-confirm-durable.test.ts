// The double opt-in confirmation email is a durable job written in the submit's transaction (issue 37, retention
// and durability): the first box stops with its worker held before the job runs (a crash between the commit and
// the send), the job row and the pending signup are on disk with no email yet; a second box on the same data
// directory sends it, once, through the one send path, and the link in it confirms.
import { rmSync } from 'node:fs';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { FakeClock } from '../../src/core/clock.js';
import { SIGNUP_CONFIRM_JOB } from '../../src/services/automation/index.js';
import { makeDataDir, request, startTestApp } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';
import { addVerifiedDomain } from '../helpers/domains.js';
import { startSmtpSink } from '../helpers/smtp-sink.js';

t.test('a crash between the submit and the send still sends the confirmation', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const sink = await startSmtpSink({ starttls: false });
  t.teardown(() => sink.close());
  dns.set('MX', 'dest.example', [{ exchange: 'mx.dest.example', priority: 10 }]);
  dns.set('A', 'mx.dest.example', ['127.0.0.1']);
  const dataDir = makeDataDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const clock = new FakeClock('2026-03-01T10:00:00.000Z');
  const config = { dnsServers: [dns.server], outboundPort: sink.port };

  const first = await startTestApp(t, { dataDir, clock, config });
  await addVerifiedDomain(first, dns, 'acme.example');
  const form = (
    await first.request<{ signup_form: { id: string } }>('POST', '/signup-forms', {
      body: { name: 'News', fields: [{ property: 'first_name', label: 'First name' }], double_opt_in: { from: 'news@acme.example', subject: 'Confirm', html: '<p><a href="{{ confirm_url }}">Confirm</a></p>' } },
    })
  ).body.signup_form;
  await first.appliance.ctx.jobs.drain();
  // The worker is held: nothing runs after the submit's commit, as if the process died right after it.
  await first.appliance.ctx.jobs.stop();
  const r = await first.request('POST', `/signup-forms/${form.id}/submit`, { key: null, body: { email: 'dana@dest.example', properties: { first_name: 'Dana' } } });
  t.same(r.body, { success: true, confirmation_required: true }, r.text);
  const db = first.appliance.ctx.db;
  const signup = await db('signups').first<{ pk: number; email_id: string | null }>('pk', 'email_id');
  t.equal(signup?.email_id, null, 'no email yet');
  const jobs = await db('jobs').where({ kind: SIGNUP_CONFIRM_JOB }).select<Array<{ payload: string; state: string }>>('payload', 'state');
  t.same(jobs.map((j) => [JSON.parse(j.payload), j.state]), [[{ signupPk: signup!.pk }, 'ready']], 'the job committed with the signup');
  t.equal((await db('emails').count({ n: '*' }))[0]!.n, 0, 'no email row written by the submit');
  // A second submit within the hour, while the first job waits: no second email.
  t.equal((await first.request('POST', `/signup-forms/${form.id}/submit`, { key: null, body: { email: 'dana@dest.example' } })).status, 200);
  t.equal(await db('jobs').where({ kind: SIGNUP_CONFIRM_JOB }).count({ n: '*' }).then((x) => Number(x[0]!.n)), 1, 'one confirmation job');
  await first.stop();

  const second = await startTestApp(t, { dataDir, clock, config });
  const asFirst = <T>(method: string, p: string) => request<T>(second.url, first.apiKey, method, p);
  await second.appliance.ctx.jobs.drain();
  await second.appliance.ctx.jobs.drain();
  t.equal(sink.accepted.length, 1, 'the confirmation email sent by the restarted box, once');
  const mail = await simpleParser(sink.accepted[0]!.raw);
  t.equal(mail.subject, 'Confirm');
  const row = await second.appliance.ctx.db('signups').where({ pk: signup!.pk }).first<{ email_id: string | null }>('email_id');
  t.match(row?.email_id, /^.+$/, 'the signup knows its email');
  t.equal((await asFirst<{ id: string }>('GET', `/emails/${row!.email_id}`)).status, 200, 'an email of the one send path');
  t.equal(await second.appliance.ctx.db('jobs').where({ kind: SIGNUP_CONFIRM_JOB }).count({ n: '*' }).then((x) => Number(x[0]!.n)), 0, 'the job is done');
  const link = /href="([^"]+)"/.exec(String(mail.html))![1]!;
  const done = await fetch(second.url + new URL(link).pathname, { method: 'POST' });
  t.equal(done.status, 200);
  t.equal((await asFirst<{ contact: { opt_in_status: string } }>('GET', '/contacts/dana@dest.example')).body.contact.opt_in_status, 'confirmed');
});
