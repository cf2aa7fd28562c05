// Signup forms: management with a full_access key; the submit, its CORS preflight, the hosted page and the
// confirmation pages are public (no credential). A plain HTML form post (application/x-www-form-urlencoded)
// is answered with a page or a 303 to the form's redirect_url; JSON with JSON.
import type Koa from 'koa';
import { z } from 'zod';
import { defineRoute, type Route } from '../../route.js';
import { paged, Success } from '../../schemas/common.js';
import { CreateSignupForm, SignupForm, SubmitSignup, UpdateSignupForm } from '../../schemas/automation/signup-forms.js';
import { AppError, forbidden } from '../../../core/errors.js';
import { parseBody } from '../../../core/validation.js';
import { parsePaging } from '../../../core/paging.js';
import {
  confirmSignup, createSignupForm, deleteSignupForm, FORM_PAGE_PATH, getSignupForm, HONEYPOT_FIELD, listSignupForms, originAllowed, publicForm, readConfirmToken,
  submitSignup, updateSignupForm
} from '../../../services/automation/index.js';
import { readsOf } from '../../../db/index.js';
import { badConfirmPage, confirmedPage, confirmPage, errorPage, formPage, successPage } from './signup-pages.js';

const tag = 'Signup forms';
const withForm = z.object({ success: z.literal(true), signup_form: SignupForm });
/** A signup is a few hundred bytes; past this it is not one. */
const SUBMIT_MAX_BYTES = 64 * 1024;

function html(koa: Koa.Context, status: number, body: string, formAction = "'self'"): undefined {
  koa.status = status;
  koa.type = 'text/html; charset=utf-8';
  koa.set('Cache-Control', 'no-store');
  // A confirmation page's address holds its token: no Referer at all. The form's page sends its origin (the
  // submit checks Origin; under no-referrer a browser sends `null`).
  koa.set('Referrer-Policy', koa.path.startsWith(`${FORM_PAGE_PATH}/confirm/`) ? 'no-referrer' : 'strict-origin-when-cross-origin');
  koa.set('Content-Security-Policy', `default-src 'none'; style-src 'unsafe-inline'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`);
  koa.body = body;
  return undefined;
}

/** CORS: an Origin the form allows is echoed (with Vary); any other gets no Access-Control header, so its browser refuses. */
async function cors(app: Parameters<NonNullable<Route['prepare']>>[0], koa: Koa.Context): Promise<void> {
  koa.set('Vary', 'Origin');
  const origin = koa.get('origin');
  // `null`: an opaque origin (a page under Referrer-Policy no-referrer, a sandboxed frame, a file): nothing to
  // allow by name; a plain form post from it is served, and a script there gets no CORS header, so cannot read.
  if (!origin || origin === 'null') return;
  const form = await publicForm(app, koa.params.id ?? '').catch(() => null);
  const allowed = form !== null && originAllowed(app, form, origin);
  koa.state.originRefused = !allowed && form !== null;
  if (allowed) {
    koa.set('Access-Control-Allow-Origin', origin);
    koa.set('Access-Control-Expose-Headers', 'X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After');
  }
}

async function readRaw(koa: Koa.Context): Promise<string> {
  if (Number(koa.get('content-length') || 0) > SUBMIT_MAX_BYTES) throw new AppError(413, 'payload_too_large', 'A signup body is at most 64 KB');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of koa.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > SUBMIT_MAX_BYTES) throw new AppError(413, 'payload_too_large', 'A signup body is at most 64 KB');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A form post's flat fields as the JSON body: email, the honeypot, every other field a property. */
function fromForm(text: string): Record<string, unknown> {
  const params = new URLSearchParams(text);
  const properties: Record<string, string> = {};
  const out: Record<string, unknown> = { properties };
  for (const [k, v] of params) {
    if (k === 'email' || k === HONEYPOT_FIELD) out[k] = v;
    else properties[k] = v;
  }
  return out;
}

export const signupFormRoutes: Route[] = [
  defineRoute({
    method: 'POST',
    path: '/signup-forms',
    summary: 'Create a signup form (CreateSignupForm): fields mapped to contact properties, a manual segment and topics to join, double opt-in, success message or redirect, allowed origins',
    tag,
    access: 'full_access',
    body: CreateSignupForm,
    status: 201,
    response: withForm,
    async handle({ app, principal, body }) {
      return { success: true, signup_form: await createSignupForm(app, principal.teamId, principal.mode, body) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/signup-forms',
    summary: "The team's signup forms, newest first (Form A)",
    tag,
    access: 'full_access',
    paged: true,
    response: paged(SignupForm),
    async handle({ app, principal, rawQuery }) {
      return listSignupForms(app, principal.teamId, parsePaging(rawQuery));
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/signup-forms/{id}',
    summary: 'A signup form, with its hosted page URL, submit URL and embeddable HTML',
    tag,
    access: 'full_access',
    response: withForm,
    async handle({ app, principal, params }) {
      return { success: true, signup_form: await getSignupForm(app, principal.teamId, params.id!) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/signup-forms/{id}',
    summary: 'Change a signup form (any field of CreateSignupForm; null clears segment_id, double_opt_in, success_message, redirect_url)',
    tag,
    access: 'full_access',
    body: UpdateSignupForm,
    response: withForm,
    async handle({ app, principal, params, body }) {
      return { success: true, signup_form: await updateSignupForm(app, principal.teamId, params.id!, body) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/signup-forms/{id}',
    summary: 'Delete a signup form (its pending confirmation links stop working; contacts stay)',
    tag,
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteSignupForm(app, principal.teamId, params.id!);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'OPTIONS',
    path: '/signup-forms/{id}/submit',
    summary: 'CORS preflight of the submit (public): 204; Access-Control-Allow-* only for an origin the form allows',
    tag,
    access: 'public',
    status: 204,
    prepare: cors,
    async handle({ koa }) {
      if (koa.response.get('Access-Control-Allow-Origin')) {
        koa.set('Access-Control-Allow-Methods', 'POST, OPTIONS');
        koa.set('Access-Control-Allow-Headers', 'Content-Type');
        koa.set('Access-Control-Max-Age', '600');
      }
      koa.status = 204;
      return undefined;
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/signup-forms/{id}/submit',
    summary:
      'Public signup (no credential): `email`, `properties` (only the form’s fields), the honeypot `website_url` (leave empty). JSON, or a plain HTML form post (application/x-www-form-urlencoded: flat fields; answered with the success page or 303 to redirect_url). 403 for an Origin the form does not allow; 422 for a bad address (syntax, no mail server)',
    tag,
    access: 'public',
    body: SubmitSignup,
    ownBody: true,
    prepare: cors,
    response: z.object({ success: z.literal(true), confirmation_required: z.boolean() }),
    async handle({ app, params, koa }) {
      const isForm = koa.is('application/x-www-form-urlencoded') === 'application/x-www-form-urlencoded';
      const formName = async () => (await publicForm(app, params.id!).catch(() => null))?.name ?? 'Signup';
      try {
        if (koa.state.originRefused) throw forbidden('Origin not allowed by this signup form');
        const text = await readRaw(koa);
        let raw: unknown;
        if (isForm) raw = fromForm(text);
        else {
          try {
            raw = text.trim() === '' ? {} : JSON.parse(text);
          } catch {
            throw new AppError(400, 'invalid_request', 'Malformed JSON in request body');
          }
        }
        const body = parseBody(SubmitSignup, raw);
        const outcome = await submitSignup(app, params.id!, { email: body.email, properties: body.properties ?? {}, honeypot: body.website_url ?? '' });
        if (!isForm) return { success: true, confirmation_required: outcome.pending };
        if (outcome.form.redirect_url) {
          koa.status = 303;
          koa.redirect(outcome.form.redirect_url);
          return undefined;
        }
        return html(koa, 200, successPage(outcome.form.name, outcome.form.success_message, outcome.pending));
      } catch (err) {
        if (isForm && err instanceof AppError && err.status < 500) return html(koa, err.status, errorPage(await formName(), err.message));
        throw err;
      }
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${FORM_PAGE_PATH}/{id}`,
    summary: 'The hosted signup page (HTML, no credential, works without JavaScript): posts to the submit',
    tag,
    access: 'public',
    async handle({ app, params, koa }) {
      const form = await publicForm(app, params.id!).catch(() => null);
      if (!form) return html(koa, 404, errorPage('Signup', 'This signup form does not exist.'));
      const redirect = form.redirect_url ? ` ${new URL(form.redirect_url).origin}` : '';
      return html(koa, 200, formPage(form, `/signup-forms/${form.id}/submit`), `'self'${redirect}`);
    },
  }),
  defineRoute({
    method: 'GET',
    path: `${FORM_PAGE_PATH}/confirm/{token}`,
    summary: 'The confirmation link of a double opt-in email (HTML): a page with the button that confirms; changes nothing (link scanners fetch links)',
    tag,
    access: 'public',
    async handle({ app, params, koa }) {
      const check = await readConfirmToken(app, readsOf(app.db), params.token!);
      if (!check.ok) return html(koa, check.reason === 'expired' ? 410 : 404, badConfirmPage(check.reason));
      if (check.already) return html(koa, 200, confirmedPage(check.form.name, true));
      return html(koa, 200, confirmPage(check.form.name, check.email, `${FORM_PAGE_PATH}/confirm/${params.token!}`));
    },
  }),
  defineRoute({
    method: 'POST',
    path: `${FORM_PAGE_PATH}/confirm/{token}`,
    summary: 'Confirm a double opt-in (the confirmation page’s button; HTML): the contact becomes confirmed and joins the form’s segment and topics',
    tag,
    access: 'public',
    async handle({ app, params, koa }) {
      const check = await confirmSignup(app, params.token!);
      if (!check.ok) return html(koa, check.reason === 'expired' ? 410 : 404, badConfirmPage(check.reason));
      return html(koa, 200, confirmedPage(check.form.name, check.already));
    },
  }),
];
