// The pages an email's List-Unsubscribe URL leads to (no credential: the signed token in the path is the
// only key). GET shows the preference page and changes nothing (link scanners and previews fetch links);
// POST with `List-Unsubscribe=One-Click` is RFC 8058's one-click unsubscribe, as mail clients send it; the
// page's own form posts to …/preferences and is answered with a redirect back to the page (303). A link that
// cannot be used answers a page saying why (404 altered or unknown, 410 expired), never a JSON error.
import type Koa from 'koa';
import { defineRoute, type Route } from '../../route.js';
import { AppError } from '../../../core/errors.js';
import { UNSUBSCRIBE_PATH, type PreferenceChange } from '../../../services/audience/index.js';
import { linkPreferences, savePreferencesThroughLink, unsubscribeThroughLink, type LinkAnswer } from '../../../services/sending/index.js';
import { badLinkPage, preferencePage, type PageNotice } from './unsubscribe-page.js';

/** A form or a one-click body is a few hundred bytes; past this it is neither. */
export const FORM_MAX_BYTES = 16 * 1024;
const tag = 'Unsubscribe (public)';

/** The form body as URLSearchParams; null when it is over FORM_MAX_BYTES. */
async function readForm(koa: Koa.Context): Promise<URLSearchParams | null> {
  if (Number(koa.get('content-length') || 0) > FORM_MAX_BYTES) return null;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of koa.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > FORM_MAX_BYTES) return null;
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

function html(koa: Koa.Context, status: number, body: string): undefined {
  koa.status = status;
  koa.type = 'text/html; charset=utf-8';
  // The token in the address is a credential: not cached, not sent on as a Referer, not indexed.
  koa.set('Cache-Control', 'no-store');
  koa.set('Referrer-Policy', 'no-referrer');
  koa.set('X-Robots-Tag', 'noindex');
  koa.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
  koa.body = body;
  return undefined;
}

/** Runs a page: a link that cannot be used, a bad request or a failure each get their page, never a JSON 500. */
async function page(koa: Koa.Context, log: { error(o: object, m: string): void }, run: () => Promise<undefined>): Promise<undefined> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof AppError && err.status < 500) return html(koa, err.status, badLinkPage('invalid'));
    log.error({ err, path: koa.path }, 'unsubscribe page failed');
    return html(koa, 500, badLinkPage('error'));
  }
}

function refused<T>(koa: Koa.Context, answer: LinkAnswer<T>): answer is { ok: false; reason: 'invalid' | 'expired' } {
  if (answer.ok) return false;
  html(koa, answer.reason === 'expired' ? 410 : 404, badLinkPage(answer.reason));
  return true;
}

const NOTICES: Record<string, PageNotice> = { saved: 'saved' };

export const unsubscribeRoutes: Route[] = [
  defineRoute({
    method: 'GET',
    path: `${UNSUBSCRIBE_PATH}/{token}`,
    summary: 'The preference page of an email’s unsubscribe link (HTML, no credential): the public topics and where the person stands; changes nothing',
    tag,
    access: 'public',
    async handle({ app, params, rawQuery, koa }) {
      return page(koa, app.log, async () => {
        const answer = await linkPreferences(app, params.token!);
        if (refused(koa, answer)) return undefined;
        const notice = typeof rawQuery.done === 'string' ? (NOTICES[rawQuery.done] ?? null) : null;
        return html(koa, 200, preferencePage(answer.value, `${UNSUBSCRIBE_PATH}/${params.token!}/preferences`, notice));
      });
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${UNSUBSCRIBE_PATH}/{token}`,
    summary:
      'One-click unsubscribe (RFC 8058; no credential): a body of `List-Unsubscribe=One-Click` (application/x-www-form-urlencoded) unsubscribes the contact from the topic the email was sent for, else from everything. Answers an HTML page',
    tag,
    access: 'public',
    async handle({ app, params, koa }) {
      return page(koa, app.log, async () => {
        const form = await readForm(koa);
        if (form?.get('List-Unsubscribe') !== 'One-Click') return html(koa, 400, badLinkPage('not_one_click'));
        const answer = await unsubscribeThroughLink(app, params.token!);
        if (refused(koa, answer)) return undefined;
        const action = `${UNSUBSCRIBE_PATH}/${params.token!}/preferences`;
        return html(koa, 200, preferencePage(answer.value, action, answer.value.changed ? 'unsubscribed' : 'already'));
      });
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${UNSUBSCRIBE_PATH}/{token}/preferences`,
    summary:
      'The preference page’s form (no credential): `action` save (with a `topic` field per public topic ticked), unsubscribe_all or resubscribe. Answers 303 to the page',
    tag,
    access: 'public',
    async handle({ app, params, koa }) {
      return page(koa, app.log, async () => {
        const form = await readForm(koa);
        const action = form?.get('action');
        let change: PreferenceChange;
        if (action === 'save') change = { kind: 'topics', subscribed: form!.getAll('topic') };
        else if (action === 'unsubscribe_all') change = { kind: 'unsubscribe_all' };
        else if (action === 'resubscribe') change = { kind: 'resubscribe' };
        else return html(koa, 400, badLinkPage('bad_form'));
        const answer = await savePreferencesThroughLink(app, params.token!, change);
        if (refused(koa, answer)) return undefined;
        koa.status = 303;
        koa.set('Cache-Control', 'no-store');
        koa.set('Referrer-Policy', 'no-referrer');
        koa.redirect(`${UNSUBSCRIBE_PATH}/${params.token!}?done=saved`);
        return undefined;
      });
    },
  }),
];
