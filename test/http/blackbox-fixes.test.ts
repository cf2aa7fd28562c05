// What a new user's tour from outside found (scripts/blackbox-tour.ts, scripts/blackbox-browser.ts), each over
// real HTTP against one appliance: a trial box with a domain declared its own (MAIL_LOCAL_DOMAINS) and no public
// DNS (a loopback DNS server that knows nothing). The box's own mailboxes were "undeliverable" to its own
// validation, so its signup forms refused them; GET /templates/presets answered `presets` where the spec says `data`;
// POST /mailboxes, /subscription-topics and /suppressions left out the `success` the spec's table gives them.
import t from 'tap';
import { startTestApp, TEST_HOSTNAME } from '../helpers/app.js';
import { startDns } from '../helpers/dns-server.js';

interface Validation {
  result: string;
  reason: string;
  checks: { mx: { status: string; records: Array<{ exchange: string; priority: number }> } };
}

t.test('a trial box without public DNS', async (t) => {
  const dns = await startDns();
  t.teardown(() => dns.stop());
  const app = await startTestApp(t, { config: { dnsServers: [dns.server], localDomains: ['own.example'] } });
  const mb = await app.request<{ success: boolean; address: string }>('POST', '/mailboxes', { body: { address: 'ann@own.example', password: 'correct horse battery' } });
  t.equal(mb.status, 201, mb.text);

  t.test('validation: an address the box serves takes mail, whatever the DNS says', async (t) => {
    const ann = await app.request<Validation>('POST', '/email-validations', { body: { email: 'Ann@Own.Example' } });
    t.equal(ann.status, 200, ann.text);
    t.match(ann.body, { result: 'deliverable', reason: 'mail_server_found' });
    t.same(ann.body.checks.mx, { status: 'found', records: [{ exchange: TEST_HOSTNAME, priority: 0 }], message: null }, 'the box itself is the mail server');

    // An address of the same domain that nothing on the box takes: the DNS decides, as before.
    const nobody = await app.request<Validation>('POST', '/email-validations', { body: { email: 'nobody@own.example' } });
    t.match(nobody.body, { result: 'undeliverable', reason: 'no_mail_server' });
    t.equal(nobody.body.checks.mx.status, 'no_records');

    const batch = await app.request<{ data: Validation[] }>('POST', '/email-validations/batch', { body: { emails: ['x@elsewhere.example', 'ann@own.example'] } });
    t.equal(batch.status, 200, batch.text);
    t.same(batch.body.data.map((v) => v.result), ['undeliverable', 'deliverable'], 'in a batch too, in order');
  });

  t.test('a signup form takes the address of a mailbox on the box', async (t) => {
    const form = await app.request<{ signup_form: { id: string } }>('POST', '/signup-forms', { body: { name: 'News' } });
    t.equal(form.status, 201);
    const sub = await app.request<{ success: boolean }>('POST', `/signup-forms/${form.body.signup_form.id}/submit`, { key: null, body: { email: 'ann@own.example' } });
    t.equal(sub.status, 200, sub.text);
    t.equal(sub.body.success, true);
    const contacts = await app.request<{ data: Array<{ email: string }> }>('GET', '/contacts?search=ann%40own.example');
    t.same(contacts.body.data.map((c) => c.email), ['ann@own.example']);
    const refused = await app.request<{ error: string; code: string }>('POST', `/signup-forms/${form.body.signup_form.id}/submit`, { key: null, body: { email: 'nobody@own.example' } });
    t.same([refused.status, refused.body], [422, { error: 'email: the domain own.example does not receive mail', code: 'unprocessable_entity' }]);
  });

  t.test('creates answer the spec’s success beside the record', async (t) => {
    t.match(mb.body, { success: true, address: 'ann@own.example' }, 'POST /mailboxes');
    const topic = await app.request<{ success: boolean; topic: { name: string } }>('POST', '/subscription-topics', { body: { name: 'News', default_subscription: 'opt_in' } });
    t.equal(topic.status, 201, topic.text);
    t.match(topic.body, { success: true, topic: { name: 'News' } }, 'POST /subscription-topics');
    const sup = await app.request<{ success: boolean; suppression: { email: string } }>('POST', '/suppressions', { body: { email: 'gone@elsewhere.example', reason: 'manual' } });
    t.equal(sup.status, 201, sup.text);
    t.match(sup.body, { success: true, suppression: { email: 'gone@elsewhere.example', reason: 'manual' } }, 'POST /suppressions');
  });

  t.test('GET /templates/presets answers the spec’s { data }', async (t) => {
    const res = await app.request<{ data: Array<{ id: string }>; presets: Array<{ id: string }> }>('GET', '/templates/presets');
    t.equal(res.status, 200);
    t.same(res.body.data.map((p) => p.id), ['welcome', 'password-reset', 'receipt', 'newsletter', 'announcement'], 'a fixed order');
    t.same(res.body.presets, res.body.data, 'presets kept for earlier clients');
  });
});
