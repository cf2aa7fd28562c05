// The pages the box serves, in headless Chromium as a new user meets them (not part of npm test): a signup
// form's hosted page and its embed snippet, the unsubscribe and preference pages reached from a real email read
// over IMAP, and the OAuth consent page. Against a running appliance whose MAIL_PUBLIC_URL is API, with a
// mailbox MAILBOX/PASSWORD on a verified domain (the README's first hour), OAuth on (MAIL_OAUTH_ENABLED=true)
// and an OAuth login (admin oauth logins create) in OAUTH_EMAIL/OAUTH_PASSWORD.
//
//   API=… KEY=… MAILBOX=alice@example.com PASSWORD='correct horse battery' IMAPS_PORT=32993 \
//   OAUTH_EMAIL=… OAUTH_PASSWORD=… npx tsx scripts/blackbox-browser.ts
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { ImapFlow } from 'imapflow';

const API = (process.env.API ?? 'http://127.0.0.1:3000').replace(/\/$/, '');
const KEY = process.env.KEY ?? '';
const MAILBOX = process.env.MAILBOX ?? 'alice@example.com';
const PASSWORD = process.env.PASSWORD ?? 'correct horse battery';
const IMAPS_PORT = Number(process.env.IMAPS_PORT ?? 2993);
const results: Array<[string, boolean, string]> = [];
const check = (name: string, ok: boolean, detail = '') => results.push([name, ok, detail]);

async function api(method: string, p: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(API + p, { method, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = { text };
  }
  return { status: r.status, body: parsed };
}

async function main(): Promise<void> {
  const stamp = Date.now().toString(36);
  const domain = MAILBOX.split('@')[1]!;
  const profile = mkdtempSync(path.join(os.tmpdir(), 'bb-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const consoleErrors: string[] = [];
  try {
    const page = browser.pages()[0] ?? (await browser.newPage());
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });

    // 1. signup form: hosted page, then the embed snippet on a page of "my site"
    const form = await api('POST', '/signup-forms', { name: `Newsletter ${stamp}`, fields: [{ property: 'first_name', label: 'First name', required: false }], allowed_origins: ['http://127.0.0.1:39999'] });
    const sf = (form.body.signup_form ?? form.body) as Record<string, unknown>;
    check('signup form created', form.status === 201 || form.status === 200, `${form.status}`);
    const hosted = String(sf.hosted_url);
    const resp = await page.goto(hosted);
    check('hosted form page 200', resp?.status() === 200, `${resp?.status()} ${hosted}`);
    const email = `signup-${stamp}@${domain}`;
    await page.fill('input[name=email]', email);
    await page.fill('input[name=first_name]', 'Sig');
    await Promise.all([page.waitForLoadState('load'), page.click('button[type=submit], input[type=submit]')]);
    const after = await page.textContent('body');
    check('hosted form submit shows a success page', /thank|confirm|subscribed|success/i.test(after ?? ''), (after ?? '').trim().slice(0, 120));
    const contacts = await api('GET', `/contacts?search=${encodeURIComponent(email)}`);
    check('the signup made a contact', Array.isArray(contacts.body.data) && (contacts.body.data as unknown[]).length === 1, JSON.stringify(contacts.body).slice(0, 120));

    // the embed snippet on another origin
    const site = createServer((_q, s) => {
      s.setHeader('content-type', 'text/html');
      s.end(`<!doctype html><html><body><h1>My site</h1>${String(sf.embed_html)}</body></html>`);
    });
    await new Promise<void>((r) => site.listen(39999, '127.0.0.1', () => r()));
    try {
      await page.goto('http://127.0.0.1:39999/');
      const email2 = `embed-${stamp}@${domain}`;
      await page.fill('input[name=email]', email2);
      await Promise.all([page.waitForLoadState('load'), page.click('button[type=submit], input[type=submit]')]);
      const t2 = (await page.textContent('body')) ?? '';
      check('embedded form posts and lands on a page', /thank|confirm|subscribed|success/i.test(t2), `${page.url()} ${t2.trim().slice(0, 100)}`);
      const c2 = await api('GET', `/contacts?search=${encodeURIComponent(email2)}`);
      check('the embed signup made a contact', (c2.body.data as unknown[] | undefined)?.length === 1, JSON.stringify(c2.body).slice(0, 120));
    } finally {
      site.close();
    }

    // 2. unsubscribe + preferences from a real email in the mailbox
    await api('POST', '/contacts', { email: MAILBOX, first_name: 'Alice' });
    const topic = await api('POST', '/subscription-topics', { name: `Tips ${stamp}`, default_subscription: 'opt_in' });
    const topicId = String((topic.body.topic as Record<string, unknown> | undefined)?.id);
    const subject = `Topic mail ${stamp}`;
    const sent = await api('POST', '/emails', { from: `News <news@${domain}>`, to: [MAILBOX], subject, html: '<p>Hello</p>', topic_id: topicId });
    check('topic email accepted', sent.status === 202, JSON.stringify(sent.body));
    const imap = new ImapFlow({ host: '127.0.0.1', port: IMAPS_PORT, secure: true, tls: { rejectUnauthorized: false }, auth: { user: MAILBOX, pass: PASSWORD }, logger: false });
    await imap.connect();
    let listUnsub = '';
    for (let i = 0; i < 40 && !listUnsub; i++) {
      const lock = await imap.getMailboxLock('INBOX');
      try {
        for await (const m of imap.fetch({ header: { subject } }, { headers: ['list-unsubscribe'] })) {
          listUnsub = m.headers?.toString().replace(/\r?\n\s+/g, ' ') ?? '';
        }
      } finally {
        lock.release();
      }
      if (!listUnsub) await new Promise((r) => setTimeout(r, 500));
    }
    await imap.logout();
    const url = /<(https?:[^>]+)>/.exec(listUnsub)?.[1];
    check('List-Unsubscribe carries an https/http link', !!url, listUnsub.slice(0, 160));
    if (url) {
      const r = await page.goto(url);
      check('unsubscribe page 200', r?.status() === 200, `${r?.status()}`);
      const text = (await page.textContent('body')) ?? '';
      check('preference page lists the topic', text.includes(`Tips ${stamp}`), text.trim().slice(0, 160));
      const buttons = await page.locator('button').allTextContents();
      check('unsubscribe page has buttons', buttons.length > 0, buttons.join(' | '));
    }

    // 3. OAuth consent page
    const oauthEmail = process.env.OAUTH_EMAIL;
    const oauthPassword = process.env.OAUTH_PASSWORD;
    if (oauthEmail && oauthPassword) {
      const redirect = 'http://127.0.0.1:39998/cb';
      const reg = await fetch(`${API}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [redirect], client_name: 'Tour app', scope: 'email:read domains:read' }) });
      const client = (await reg.json()) as { client_id: string };
      check('oauth register 201', reg.status === 201, `${reg.status}`);
      const verifier = randomBytes(32).toString('base64url');
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      const cb = createServer((_q, s) => s.end('ok'));
      await new Promise<void>((r) => cb.listen(39998, '127.0.0.1', () => r()));
      try {
        const q = new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: redirect, scope: 'email:read domains:read', state: 'st8', code_challenge: challenge, code_challenge_method: 'S256' });
        const r = await page.goto(`${API}/oauth/authorize?${q}`);
        check('consent page 200', r?.status() === 200, `${r?.status()}`);
        const text = (await page.textContent('body')) ?? '';
        check('consent page names the app', text.includes('Tour app'), text.trim().slice(0, 120));
        await page.fill('input[name=email]', oauthEmail);
        await page.fill('input[name=password]', oauthPassword);
        await Promise.all([page.waitForURL(/127\.0\.0\.1:39998\/cb/), page.click('button[value=approve]')]);
        const back = new URL(page.url());
        check('approve redirects with code and state', !!back.searchParams.get('code') && back.searchParams.get('state') === 'st8', page.url());
        const tok = await fetch(`${API}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ grant_type: 'authorization_code', code: back.searchParams.get('code') ?? '', code_verifier: verifier, redirect_uri: redirect, client_id: client.client_id }) });
        const tj = (await tok.json()) as { access_token?: string };
        check('token exchange', tok.status === 200 && !!tj.access_token, `${tok.status}`);
        const doms = await fetch(`${API}/domains`, { headers: { authorization: `Bearer ${tj.access_token}` } });
        check('pat_ token reads /domains', doms.status === 200, `${doms.status}`);
        const send = await fetch(`${API}/emails`, { method: 'POST', headers: { authorization: `Bearer ${tj.access_token}`, 'content-type': 'application/json' }, body: JSON.stringify({ from: `a@${domain}`, to: [MAILBOX], text: 'x' }) });
        check('pat_ token without email:send cannot send (403)', send.status === 403, `${send.status} ${await send.text()}`);
      } finally {
        cb.close();
      }
    }
    check('no console errors on the pages', consoleErrors.length === 0, consoleErrors.join(' | ').slice(0, 200));
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
  for (const [name, ok, detail] of results) process.stdout.write(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ` — ${detail}` : ''}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`browser tour stopped: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
