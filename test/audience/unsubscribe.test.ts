// Unsubscribing through the mail itself: the send opt-in (`topic_id`, `unsubscribe`) and its 400/422 answers,
// the List-Unsubscribe headers on the message as delivered, the one-click POST exactly as a mail client sends
// it (RFC 8058), the events, the next send skipped with its reason, the mailto over real SMTP to the MX, the
// preference page's form, and links that cannot be used (altered, malformed, expired, deleted contact).
import t from 'tap';
import { DAY, MINUTE } from '../../src/core/clock.js';
import { smtpSend } from '../inbound/support.js';
import { headerOf, startUnsubscribeEnv, unsubscribeTargets, type UnsubscribeEnv } from './unsubscribe-support.js';

interface Subscriptions {
  unsubscribed: boolean;
  subscriptions: Array<{ topic_id: string; subscribed: boolean; by_default: boolean }>;
}
interface EventPage {
  data: Array<{ type: string; data: Record<string, unknown> }>;
}
interface Detail {
  status: string;
  headers: Record<string, string>;
  recipients: Array<{ email: string; status: string }>;
}

/** Sends one email and delivers it; answers its id and the List-Unsubscribe targets of the delivered message. */
async function sendAndDeliver(env: UnsubscribeEnv, body: Record<string, unknown>): Promise<{ id: string; url: string; mailto: string; raw: Buffer }> {
  const before = env.sink.accepted.length;
  const res = await env.send(body);
  if (res.status !== 202) throw new Error(`send: ${res.status} ${JSON.stringify(res.body)}`);
  await env.drain();
  const tx = env.sink.accepted[before];
  if (!tx) throw new Error('nothing delivered');
  return { id: res.body.id, raw: tx.raw, ...unsubscribeTargets(headerOf(tx.raw, 'List-Unsubscribe')!) };
}

/** The one-click POST as Gmail, Apple Mail and Yahoo send it (RFC 8058 §3.2). */
const oneClick = (url: string) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click', redirect: 'manual' });

const events = async (env: UnsubscribeEnv, type: string) => (await env.app.request<EventPage>('GET', '/events?per_page=100')).body.data.filter((e) => e.type === type).map((e) => e.data);
const subscriptions = async (env: UnsubscribeEnv, contact: string) => (await env.app.request<Subscriptions>('GET', `/subscription-topics/contacts/${contact}/subscriptions`)).body;

t.test('the send opt-in: what it refuses', async (t) => {
  const env = await startUnsubscribeEnv(t);
  await env.contact('ann@dest.example');
  const news = await env.topic('News', 'opt_in');
  const cases: Array<[Record<string, unknown>, number, string]> = [
    [{ to: ['ann@dest.example', 'bob@dest.example'], topic_id: news }, 422, 'An email with unsubscribe links (unsubscribe or topic_id) goes to exactly one recipient; this one has 2 (send one email per contact, e.g. with POST /emails/batch)'],
    [{ to: 'ann@dest.example', cc: 'bob@dest.example', unsubscribe: true }, 422, 'An email with unsubscribe links (unsubscribe or topic_id) goes to exactly one recipient; this one has 2 (send one email per contact, e.g. with POST /emails/batch)'],
    [{ to: 'stranger@dest.example', unsubscribe: true }, 422, "'stranger@dest.example' is not a contact of this team: an email with unsubscribe links goes to a contact (POST /contacts)"],
    [{ to: 'ann@dest.example', topic_id: 'top_nope' }, 422, "Topic 'top_nope' not found"],
    [{ to: 'ann@dest.example', topic_id: news, unsubscribe: false }, 400, 'unsubscribe: cannot be false with topic_id: an email sent for a topic always carries its unsubscribe links'],
    [{ to: 'ann@dest.example', unsubscribe: true, headers: { 'list-unsubscribe': '<https://elsewhere.example/u>' } }, 400, 'headers: must not set List-Unsubscribe or List-Unsubscribe-Post when unsubscribe or topic_id is given: the service writes them'],
    [{ to: 'ann@dest.example', unsubscribe: 'yes' }, 400, 'unsubscribe: must be a boolean'],
    [{ to: 'ann@dest.example', topic_id: '' }, 400, 'topic_id: must not be empty'],
  ];
  for (const [body, status, error] of cases) {
    const res = await env.send(body);
    t.same([res.status, res.body], [status, { error, code: status === 400 ? 'invalid_request' : 'unprocessable_entity' }], JSON.stringify(body));
  }
  const batch = await env.app.request<{ data: Array<{ id?: string; error?: string }> }>('POST', '/emails/batch', {
    body: { emails: [{ from: 'news@acme.example', to: 'ann@dest.example', subject: 's', text: 'x', topic_id: news }, { from: 'news@acme.example', to: 'nobody@dest.example', subject: 's', text: 'x', unsubscribe: true }] },
  });
  t.equal(batch.status, 202);
  t.match(batch.body.data[0], { id: /^em_/ }, 'a batch element with a contact is accepted');
  t.match(batch.body.data[1], { error: /is not a contact of this team/ }, 'the other answers its own 422');
  t.equal(env.sink.accepted.length, 0, 'nothing refused went out');
  const plain = await env.send({ to: 'stranger@dest.example' });
  t.equal(plain.status, 202, 'without the opt-in, any address as before');
});

t.test('a topic send carries the headers; one-click POST leaves the topic, once; the next send for it is skipped', async (t) => {
  const env = await startUnsubscribeEnv(t);
  const ann = await env.contact('Ann@Dest.Example');
  const news = await env.topic('News', 'opt_in');
  const offers = await env.topic('Offers', 'opt_in');

  const mail = await sendAndDeliver(env, { to: 'ann@dest.example', topic_id: news });
  t.match(mail.url, /^https:\/\/mx\.appliance\.test\/unsubscribe\/[a-z2-7]{56}$/, 'https on the box’s host name, a 56-character token');
  t.match(mail.mailto, /^unsub-[a-z2-7]{56}@mx\.appliance\.test$/);
  t.ok(mail.mailto.split('@')[0]!.length <= 64, 'the mailto’s local part fits RFC 5321');
  t.equal(mail.url.split('/').pop(), mail.mailto.slice('unsub-'.length).split('@')[0], 'one token in both');
  t.equal(headerOf(mail.raw, 'List-Unsubscribe-Post'), 'List-Unsubscribe=One-Click');
  t.match(headerOf(mail.raw, 'DKIM-Signature'), /h=[^;]*list-unsubscribe/i, 'the DKIM signature covers List-Unsubscribe');
  const detail = (await env.app.request<Detail>('GET', `/emails/${mail.id}`)).body;
  t.equal(detail.headers['List-Unsubscribe-Post'], 'List-Unsubscribe=One-Click', 'the email’s record shows its headers');

  const path = new URL(mail.url).pathname;
  // GET (a link scanner, a preview) changes nothing.
  const look = await fetch(env.app.url + path);
  t.equal(look.status, 200);
  t.equal((await subscriptions(env, ann)).subscriptions.find((s) => s.topic_id === news)?.subscribed, true, 'GET changes nothing');

  env.app.clock.advance(MINUTE);
  const res = await oneClick(env.app.url + path);
  t.equal(res.status, 200);
  t.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
  t.equal(res.headers.get('cache-control'), 'no-store');
  t.equal(res.headers.get('referrer-policy'), 'no-referrer');
  t.match(await res.text(), /You will no longer receive “News”/);
  const after = await subscriptions(env, ann);
  t.same(
    after.subscriptions.map((s) => [s.topic_id, s.subscribed, s.by_default]),
    [
      [offers, true, true],
      [news, false, false],
    ],
    'only the email’s topic is left',
  );
  t.equal(after.unsubscribed, false);
  t.same(await events(env, 'contact.unsubscribed'), [{ contact_id: ann, email: 'Ann@dest.example', topic_id: news, email_id: mail.id }]);
  const emailEvents = await events(env, 'email.unsubscribed');
  t.equal(emailEvents.length, 1);
  t.match(emailEvents[0], { email_id: mail.id, recipient: 'Ann@dest.example', contact_id: ann, topic_id: news, subject: 'Hello' });

  const second = await oneClick(env.app.url + path);
  t.equal(second.status, 200);
  t.match(await second.text(), /You were unsubscribed already/);
  t.equal((await events(env, 'contact.unsubscribed')).length, 1, 'a second click records nothing');

  // The next send for the topic: accepted, not sent, with why.
  const next = await env.send({ to: 'ann@dest.example', topic_id: news });
  t.equal(next.status, 202);
  await env.drain();
  const skipped = (await env.app.request<Detail>('GET', `/emails/${next.body.id}`)).body;
  t.same([skipped.status, skipped.recipients.map((r) => r.status)], ['failed', ['suppressed']]);
  const timeline = (await env.app.request<{ events: Array<{ type: string; data: Record<string, unknown> }> }>('GET', `/emails/${next.body.id}/events`)).body.events;
  t.same(timeline.at(-1), { type: 'failed', timestamp: '2026-03-01T10:01:00.000Z', data: { reason: `the contact is not subscribed to topic 'News' (${news})`, suppressed: ['ann@dest.example'] } });
  t.match((await events(env, 'email.suppressed')).at(-1), { email_id: next.body.id, suppressed: ['ann@dest.example'], reason: `the contact is not subscribed to topic 'News' (${news})` });
  t.equal(env.sink.accepted.length, 1, 'nothing more went out');

  // Other topics, and mail without the opt-in, still go.
  await sendAndDeliver(env, { to: 'ann@dest.example', topic_id: offers });
  const transactional = await env.send({ to: 'ann@dest.example' });
  await env.drain();
  t.equal((await env.app.request<Detail>('GET', `/emails/${transactional.body.id}`)).body.status, 'delivered');
  t.notOk(headerOf(env.sink.accepted.at(-1)!.raw, 'List-Unsubscribe'), 'no links without the opt-in');

  // An opt_out topic: nobody gets it until they opt in.
  const beta = await env.topic('Beta', 'opt_out');
  const notYet = await env.send({ to: 'ann@dest.example', topic_id: beta });
  t.equal((await env.app.request<Detail>('GET', `/emails/${notYet.body.id}`)).body.status, 'failed');
  await env.app.request('POST', `/subscription-topics/contacts/${ann}/subscriptions`, { body: { subscriptions: [{ topic_id: beta, subscribed: true }] } });
  await sendAndDeliver(env, { to: 'ann@dest.example', topic_id: beta });
});

t.test('unsubscribe: true leaves everything; the next opted-in send is skipped; transactional mail still goes', async (t) => {
  const env = await startUnsubscribeEnv(t);
  const bob = await env.contact('bob@dest.example');
  const news = await env.topic('News', 'opt_in');
  const mail = await sendAndDeliver(env, { to: 'bob@dest.example', unsubscribe: true });
  const res = await oneClick(env.app.url + new URL(mail.url).pathname);
  t.match(await res.text(), /You are unsubscribed: no more mail from this list/);
  const contact = (await env.app.request<{ contact: { unsubscribed: boolean } }>('GET', `/contacts/${bob}`)).body.contact;
  t.equal(contact.unsubscribed, true);
  t.same(await events(env, 'contact.unsubscribed'), [{ contact_id: bob, email: 'bob@dest.example', topic_id: null, email_id: mail.id }]);
  t.match(await events(env, 'contact.updated'), [{ contact_id: bob, unsubscribed: true }]);
  t.equal((await events(env, 'email.unsubscribed')).length, 1);

  for (const body of [{ unsubscribe: true }, { topic_id: news }]) {
    const next = await env.send({ to: 'bob@dest.example', ...body });
    const detail = (await env.app.request<Detail>('GET', `/emails/${next.body.id}`)).body;
    t.equal(detail.status, 'failed', JSON.stringify(body));
    const last = (await env.app.request<{ events: Array<{ data: Record<string, unknown> }> }>('GET', `/emails/${next.body.id}/events`)).body.events.at(-1);
    t.equal(last?.data.reason, 'the contact unsubscribed from all mail');
  }
  const plain = await env.send({ to: 'bob@dest.example' });
  await env.drain();
  t.equal((await env.app.request<Detail>('GET', `/emails/${plain.body.id}`)).body.status, 'delivered', 'a send without the opt-in is transactional: it goes');
});

t.test('the mailto: a message to the address at the MX unsubscribes; a bad token is refused at RCPT', async (t) => {
  const env = await startUnsubscribeEnv(t);
  const ann = await env.contact('ann@dest.example');
  const news = await env.topic('News', 'opt_in');
  const mail = await sendAndDeliver(env, { to: 'ann@dest.example', topic_id: news });
  const mxPort = env.app.appliance.ports.mx.port;
  const message = `From: ann@dest.example\r\nTo: ${mail.mailto}\r\nSubject: unsubscribe\r\nMessage-ID: <u1@dest.example>\r\nDate: Sun, 01 Mar 2026 10:00:00 +0000\r\n\r\nunsubscribe\r\n`;

  const forged = mail.mailto.replace(/unsub-(.)/, (_m, c: string) => `unsub-${c === 'a' ? 'b' : 'a'}`);
  const refused = await smtpSend(mxPort, { from: 'ann@dest.example', to: [forged] }, message, { plain: true });
  t.equal(refused.ok, false);
  t.match(refused.response, /^550 /, 'an altered token is no address here');
  t.equal((await subscriptions(env, ann)).subscriptions[0]?.subscribed, true, 'nothing changed');

  const sent = await smtpSend(mxPort, { from: 'ann@dest.example', to: [mail.mailto.toUpperCase()] }, message, { plain: true });
  t.equal(sent.ok, true, sent.response);
  t.equal((await subscriptions(env, ann)).subscriptions[0]?.subscribed, false, 'unsubscribed from the topic (the address is read in any case)');
  t.same(await events(env, 'contact.unsubscribed'), [{ contact_id: ann, email: 'ann@dest.example', topic_id: news, email_id: mail.id }]);
  t.equal((await events(env, 'email.unsubscribed')).length, 1);
  const again = await smtpSend(mxPort, { from: 'ann@dest.example', to: [mail.mailto] }, message, { plain: true });
  t.equal(again.ok, true, 'a second message is accepted');
  t.equal((await events(env, 'contact.unsubscribed')).length, 1, 'and changes nothing');
});

t.test('links that cannot be used get a page that says why, never a 500', async (t) => {
  const env = await startUnsubscribeEnv(t);
  const ann = await env.contact('ann@dest.example');
  const carl = await env.contact('carl@dest.example');
  const mail = await sendAndDeliver(env, { to: 'ann@dest.example', unsubscribe: true });
  const carlMail = await sendAndDeliver(env, { to: 'carl@dest.example', unsubscribe: true });
  const token = new URL(mail.url).pathname.split('/').pop()!;
  const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'a' ? 'b' : 'a') + s.slice(i + 1);

  for (const [label, bad] of [
    ['a character of the signed part changed', flip(token, 3)],
    ['a character of the MAC changed', flip(token, 50)],
    ['cut short', token.slice(0, 40)],
    ['not base32', token.slice(0, 55) + '!'],
    ['garbage', 'hello'],
  ] as Array<[string, string]>) {
    for (const method of ['GET', 'POST'] as const) {
      const res = method === 'GET' ? await fetch(`${env.app.url}/unsubscribe/${encodeURIComponent(bad)}`) : await oneClick(`${env.app.url}/unsubscribe/${encodeURIComponent(bad)}`);
      t.equal(res.status, 404, `${label}: ${method}`);
      t.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
      t.match(await res.text(), /This link is not valid/);
    }
  }
  const notOneClick = await fetch(mail.url.replace(/^https:\/\/[^/]+/, env.app.url), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'unsubscribe=yes' });
  t.equal(notOneClick.status, 400);
  t.match(await notOneClick.text(), /Nothing was changed/);
  const badForm = await fetch(`${env.app.url}/unsubscribe/${token}/preferences`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'action=explode' });
  t.equal(badForm.status, 400);
  t.equal((await env.app.request<{ contact: { unsubscribed: boolean } }>('GET', `/contacts/${ann}`)).body.contact.unsubscribed, false, 'nothing changed');

  // A deleted contact's link is no longer valid.
  await env.app.request('DELETE', `/contacts/${carl}`);
  t.equal((await oneClick(env.app.url + new URL(carlMail.url).pathname)).status, 404);

  // A year on, the link has expired.
  env.app.clock.advance(366 * DAY);
  const expired = await fetch(`${env.app.url}/unsubscribe/${token}`);
  t.equal(expired.status, 410);
  t.match(await expired.text(), /This link has expired/);
  t.equal((await oneClick(`${env.app.url}/unsubscribe/${token}`)).status, 410);
});

t.test('the preference page’s form without a browser: public topics only, save, everything, again', async (t) => {
  const env = await startUnsubscribeEnv(t);
  const ann = await env.contact('ann@dest.example');
  const news = await env.topic('News <weekly>', 'opt_in');
  const beta = await env.topic('Beta', 'opt_out');
  const hidden = await env.topic('Internal', 'opt_in', 'private');
  const mail = await sendAndDeliver(env, { to: 'ann@dest.example', topic_id: hidden });
  const page = new URL(mail.url).pathname;
  const html = await (await fetch(env.app.url + page)).text();
  t.match(html, /News &#60;weekly&#62;/, 'names are escaped');
  t.match(html, new RegExp(`value="${news}" checked`));
  t.match(html, new RegExp(`value="${beta}">`));
  t.notMatch(html, /Internal/, 'a private topic is not shown');
  t.notMatch(html, /<script/i, 'no script');

  const post = (body: string) => fetch(`${env.app.url}${page}/preferences`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body, redirect: 'manual' });
  const saved = await post(`action=save&topic=${beta}&topic=${hidden}`);
  t.equal(saved.status, 303);
  t.equal(saved.headers.get('location'), `${page}?done=saved`);
  const subs = await subscriptions(env, ann);
  t.same(
    subs.subscriptions.map((s) => [s.topic_id, s.subscribed, s.by_default]),
    [
      [hidden, true, true],
      [beta, true, false],
      [news, false, false],
    ],
    'ticked Beta, left News; a private topic cannot be reached by a hand-made form',
  );
  t.match(await (await fetch(`${env.app.url}${page}?done=saved`)).text(), /Your preferences are saved/);
  t.same((await events(env, 'contact.unsubscribed')).map((e) => e.topic_id), [news]);

  t.equal((await post('action=unsubscribe_all')).status, 303);
  t.equal((await env.app.request<{ contact: { unsubscribed: boolean } }>('GET', `/contacts/${ann}`)).body.contact.unsubscribed, true);
  t.match(await (await fetch(env.app.url + page)).text(), /You are unsubscribed from everything/);
  t.equal((await events(env, 'email.unsubscribed')).length, 2, 'each leaving is an email.unsubscribed of the email the link came from');
  t.equal((await post('action=resubscribe')).status, 303);
  t.equal((await env.app.request<{ contact: { unsubscribed: boolean } }>('GET', `/contacts/${ann}`)).body.contact.unsubscribed, false, 'the person may come back');
});
