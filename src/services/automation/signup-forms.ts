// Hosted signup forms with double opt-in (spec: /signup-forms, the public submit; the shapes beyond the spec's
// are ours, see docs/API.md). A form names the fields it collects (each a contact column or custom property),
// the manual segment and topics a signup joins, and its double opt-in: the confirmation email (inline subject
// and html with {{ confirm_url }}, or a template rendered with the variable confirm_url) from a verified sender.
//
// Submit: the address is checked (syntax and MX, validation.ts) before anything is stored. Without double
// opt-in the contact is created (or updated) and joins at once. With it, a new contact is created `pending`
// (never marketable: audience's OPT_IN_SQL), a `signups` row keeps what was typed, and the confirmation email
// goes through the one send path with a signed link good for CONFIRM_LIFETIME_DAYS; confirming makes the contact
// `confirmed`, merges the values, joins the segment and topics, and records contact.created/contact.updated.
// The email is a durable job (SIGNUP_CONFIRM_JOB) enqueued in the submit's transaction: a crash after the commit
// sends it at the next start. The job sends with the idempotency key `signup:<pk>` and records the email's id on
// the signup in the send's transaction, so a job run again sends once. The link's lifetime counts from the submit.
//
// Retention (the housekeeping job calls pruneUnconfirmedSignups): a contact still `pending` whose every signup's
// link expired more than UNCONFIRMED_KEEP_DAYS ago is deleted with its signups, unless it has other data: a
// workflow run, a segment or a topic subscription, or a change since it was created (the API, an import).
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { AppContext } from '../../context.js';
import { readsOf, type Queryable } from '../../db/index.js';
import { base32Decode, base32Encode } from '../../core/base32.js';
import { AppError, notFound, unprocessable } from '../../core/errors.js';
import { newPublicId } from '../../core/ids.js';
import { toPage, type Page, type PageRequest } from '../../core/paging.js';
import { HOUR, DAY } from '../../core/clock.js';
import type { Job, JobOutcome } from '../../jobs/queue.js';
import type { KeyMode } from '../platform/index.js';
import { publicBaseUrl } from '../platform/index.js';
import { audienceTargets, checkSignupValues, confirmSignupContact, contactForSignup, deleteUnconfirmedContacts, joinAudience } from '../audience/index.js';
import { sendEmails, type SendEmailInput } from '../sending/index.js';
import { validateEmail } from './validation.js';
import { escapeHtml } from '../../core/html.js';

export const MAX_FORM_FIELDS = 20;
export const CONFIRM_LIFETIME_DAYS = 7;
/** A pending signup asked again within this window sends no second confirmation email (a mail bomb through a form). */
export const RESEND_AFTER_MS = HOUR;
/** The honeypot: a field people never see (off-screen, aria-hidden, tabindex -1); a bot fills it. */
export const HONEYPOT_FIELD = 'website_url';
/** Names a form field may not take (the address, the honeypot). */
export const RESERVED_FIELDS = ['email', HONEYPOT_FIELD, 'properties'];
/** The hosted page: `<public URL>/f/<id>`; confirmation links: `<public URL>/f/confirm/<token>`. */
export const FORM_PAGE_PATH = '/f';
/** The durable job that sends a signup's confirmation email (payload: the signup's pk). */
export const SIGNUP_CONFIRM_JOB = 'signup.confirm_email';
/** A contact left `pending` is deleted this many days after its last confirmation link expired (see above). */
export const UNCONFIRMED_KEEP_DAYS = 30;
const confirmJobKey = (signupPk: number) => `signup_confirm:${signupPk}`;

export interface FormField {
  /** first_name, last_name, or a custom contact property's name; also the input's name. */
  property: string;
  label: string;
  required: boolean;
}

export interface DoubleOptIn {
  from: string;
  subject?: string | undefined;
  html?: string | undefined;
  template_id?: string | undefined;
}

export interface SignupForm {
  id: string;
  name: string;
  fields: FormField[];
  segment_id: string | null;
  topic_ids: string[];
  double_opt_in: DoubleOptIn | null;
  success_message: string | null;
  redirect_url: string | null;
  allowed_origins: string[];
  hosted_url: string;
  submit_url: string;
  embed_html: string;
  created_at: string;
  updated_at: string;
}

export interface SignupFormInput {
  name: string;
  fields?: FormField[] | undefined;
  segment_id?: string | null | undefined;
  topic_ids?: string[] | undefined;
  double_opt_in?: DoubleOptIn | null | undefined;
  success_message?: string | null | undefined;
  redirect_url?: string | null | undefined;
  allowed_origins?: string[] | undefined;
}

interface FormRow {
  pk: number;
  id: string;
  team_id: string;
  name: string;
  fields: string;
  segment_id: string | null;
  topic_ids: string;
  double_opt_in: string | null;
  success_message: string | null;
  redirect_url: string | null;
  allowed_origins: string;
  mode: KeyMode;
  created_at: string;
  updated_at: string;
}

interface SignupRow {
  pk: number;
  form_pk: number;
  contact_pk: number;
  properties: string;
  status: 'pending' | 'confirmed';
  created_contact: number;
  email_id: string | null;
  created_at: string;
  confirmed_at: string | null;
}


/** The plain `<form>` a site pastes: posts to the submit URL, works without JavaScript, carries the honeypot. */
export function embedHtml(ctx: AppContext, form: { id: string; fields: FormField[] }): string {
  const inputs = form.fields
    .map((f) => `  <label>${escapeHtml(f.label)} <input type="text" name="${escapeHtml(f.property)}"${f.required ? ' required' : ''}></label>`)
    .join('\n');
  return `<form method="post" action="${escapeHtml(`${publicBaseUrl(ctx)}/signup-forms/${form.id}/submit`)}" accept-charset="utf-8">
  <label>Email <input type="email" name="email" required autocomplete="email"></label>
${inputs ? `${inputs}\n` : ''}  <div style="position:absolute;left:-10000px" aria-hidden="true"><input type="text" name="${HONEYPOT_FIELD}" tabindex="-1" autocomplete="off"></div>
  <button type="submit">Subscribe</button>
</form>`;
}

function toForm(ctx: AppContext, r: FormRow): SignupForm {
  const fields = JSON.parse(r.fields) as FormField[];
  return {
    id: r.id,
    name: r.name,
    fields,
    segment_id: r.segment_id,
    topic_ids: JSON.parse(r.topic_ids) as string[],
    double_opt_in: r.double_opt_in ? (JSON.parse(r.double_opt_in) as DoubleOptIn) : null,
    success_message: r.success_message,
    redirect_url: r.redirect_url,
    allowed_origins: JSON.parse(r.allowed_origins) as string[],
    hosted_url: `${publicBaseUrl(ctx)}${FORM_PAGE_PATH}/${r.id}`,
    submit_url: `${publicBaseUrl(ctx)}/signup-forms/${r.id}/submit`,
    embed_html: embedHtml(ctx, { id: r.id, fields }),
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

async function findForm(q: Queryable, teamId: string, id: string): Promise<FormRow> {
  const row = await q<FormRow>('signup_forms').where({ team_id: teamId, id }).first();
  if (!row) throw notFound('Signup form not found');
  return row;
}

/** The form's references checked: fields not reserved nor twice, a manual segment and topics the team has, the opt-in's content. */
async function checkForm(q: Queryable, teamId: string, f: Required<Pick<SignupFormInput, 'fields' | 'topic_ids'>> & { segment_id: string | null; double_opt_in: DoubleOptIn | null }): Promise<void> {
  const seen = new Set<string>();
  for (const [i, field] of f.fields.entries()) {
    if (RESERVED_FIELDS.includes(field.property)) throw unprocessable(`fields.${i}.property: '${field.property}' is reserved`);
    if (seen.has(field.property)) throw unprocessable(`fields.${i}.property: '${field.property}' is named twice`);
    seen.add(field.property);
    if (field.property !== 'first_name' && field.property !== 'last_name') {
      const known = await q('contact_properties').where({ team_id: teamId, name: field.property }).first('name');
      if (!known) throw unprocessable(`fields.${i}.property: '${field.property}' is not a contact property of the team (POST /contact-properties first)`);
    }
  }
  const targets = await audienceTargets(q, teamId, f.segment_id, f.topic_ids);
  if (targets.segment === 'missing') throw unprocessable(`Segment '${f.segment_id!}' not found`);
  if (targets.segment === 'dynamic') throw unprocessable(`Segment '${f.segment_id!}' is dynamic: a form joins a manual segment`);
  if (targets.missingTopics.length > 0) throw unprocessable(`Topics not found: ${targets.missingTopics.join(', ')}`);
  const d = f.double_opt_in;
  if (d) {
    if (d.template_id === undefined && (d.subject === undefined || d.html === undefined)) throw unprocessable('double_opt_in: give subject and html, or template_id');
    if (d.html !== undefined && !/\{\{\s*confirm_url\s*\}\}/.test(d.html)) throw unprocessable('double_opt_in.html: must contain {{ confirm_url }}, the confirmation link');
  }
}

export async function createSignupForm(ctx: AppContext, teamId: string, mode: KeyMode, input: SignupFormInput): Promise<SignupForm> {
  return ctx.db.transaction(async (trx) => {
    const f = { fields: input.fields ?? [], topic_ids: input.topic_ids ?? [], segment_id: input.segment_id ?? null, double_opt_in: input.double_opt_in ?? null };
    await checkForm(trx, teamId, f);
    const now = ctx.clock.now();
    const row: Omit<FormRow, 'pk'> = {
      id: newPublicId('sf', now.getTime()),
      team_id: teamId,
      name: input.name,
      fields: JSON.stringify(f.fields),
      segment_id: f.segment_id,
      topic_ids: JSON.stringify(f.topic_ids),
      double_opt_in: f.double_opt_in ? JSON.stringify(f.double_opt_in) : null,
      success_message: input.success_message ?? null,
      redirect_url: input.redirect_url ?? null,
      allowed_origins: JSON.stringify(input.allowed_origins ?? []),
      mode,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
    };
    const [pk] = (await trx('signup_forms').insert(row)) as number[];
    return toForm(ctx, { pk: pk!, ...row });
  });
}

export async function listSignupForms(ctx: AppContext, teamId: string, paging: PageRequest): Promise<Page<SignupForm>> {
  const reads = readsOf(ctx.db);
  const [count, rows] = await Promise.all([
    reads('signup_forms').where('team_id', teamId).count({ n: '*' }).first() as Promise<{ n: number } | undefined>,
    reads<FormRow>('signup_forms').where('team_id', teamId).orderBy('pk', 'desc').limit(paging.perPage).offset(paging.offset),
  ]);
  return toPage(rows.map((r) => toForm(ctx, r)), Number(count?.n ?? 0), paging);
}

export async function getSignupForm(ctx: AppContext, teamId: string, id: string): Promise<SignupForm> {
  return toForm(ctx, await findForm(readsOf(ctx.db), teamId, id));
}

export async function updateSignupForm(ctx: AppContext, teamId: string, id: string, input: Partial<SignupFormInput>): Promise<SignupForm> {
  return ctx.db.transaction(async (trx) => {
    const row = await findForm(trx, teamId, id);
    const cur = toForm(ctx, row);
    const f = {
      fields: input.fields ?? cur.fields,
      topic_ids: input.topic_ids ?? cur.topic_ids,
      segment_id: input.segment_id === undefined ? cur.segment_id : input.segment_id,
      double_opt_in: input.double_opt_in === undefined ? cur.double_opt_in : input.double_opt_in,
    };
    await checkForm(trx, teamId, f);
    const next: Partial<FormRow> = {
      name: input.name ?? row.name,
      fields: JSON.stringify(f.fields),
      topic_ids: JSON.stringify(f.topic_ids),
      segment_id: f.segment_id,
      double_opt_in: f.double_opt_in ? JSON.stringify(f.double_opt_in) : null,
      success_message: input.success_message === undefined ? row.success_message : input.success_message,
      redirect_url: input.redirect_url === undefined ? row.redirect_url : input.redirect_url,
      allowed_origins: input.allowed_origins === undefined ? row.allowed_origins : JSON.stringify(input.allowed_origins),
      updated_at: ctx.clock.now().toISOString(),
    };
    await trx('signup_forms').where('pk', row.pk).update(next);
    return toForm(ctx, { ...row, ...next });
  });
}

export async function deleteSignupForm(ctx: AppContext, teamId: string, id: string): Promise<void> {
  await ctx.db.transaction(async (trx) => {
    const row = await findForm(trx, teamId, id);
    await trx('signup_forms').where('pk', row.pk).delete();
  });
}

/** A form as the public sees it (the hosted page, the submit, CORS): by id alone. 404 when there is none. */
export async function publicForm(ctx: AppContext, id: string): Promise<SignupForm & { teamId: string }> {
  const row = await readsOf(ctx.db)<FormRow>('signup_forms').where('id', id).first();
  if (!row) throw notFound('Signup form not found');
  return { ...toForm(ctx, row), teamId: row.team_id };
}

/** Origins a browser may post from: the box's own (the hosted page) and the form's allowed ones (`*`: any). */
export function originAllowed(ctx: AppContext, form: Pick<SignupForm, 'allowed_origins'>, origin: string): boolean {
  if (form.allowed_origins.includes('*')) return true;
  if (origin === new URL(publicBaseUrl(ctx)).origin) return true;
  return form.allowed_origins.includes(origin);
}

export interface Submission {
  email: string;
  properties: Record<string, unknown>;
  honeypot: string;
}

export type SubmitOutcome = { kind: 'stored' | 'honeypot' | 'suppressed'; pending: boolean };

/**
 * The public submit. 422 for an address whose syntax or mail servers fail (nothing stored), a property that
 * is not one of the form's fields or a required field left empty. A filled honeypot or an address on the
 * suppression list answers like a success and stores nothing.
 */
export async function submitSignup(ctx: AppContext, formId: string, s: Submission): Promise<SubmitOutcome & { form: SignupForm }> {
  const form = await publicForm(ctx, formId);
  const pending = form.double_opt_in !== null;
  if (s.honeypot.trim() !== '') return { kind: 'honeypot', pending, form };
  const fieldNames = new Set(form.fields.map((f) => f.property));
  for (const key of Object.keys(s.properties)) if (!fieldNames.has(key)) throw unprocessable(`properties.${key}: not a field of this form`);
  for (const f of form.fields) {
    const v = s.properties[f.property];
    if (f.required && (v === undefined || v === null || String(v).trim() === '')) throw unprocessable(`properties.${f.property}: is required`);
  }
  const check = await validateEmail(ctx, form.teamId, s.email);
  if (check.reason === 'invalid_syntax') throw unprocessable(`email: ${check.checks.syntax.message ?? 'must be a valid email address'}`);
  if (check.reason === 'null_mx' || check.reason === 'no_mail_server') throw unprocessable(`email: the domain ${check.domain ?? ''} does not receive mail`);
  if (check.reason === 'dns_unavailable') throw new AppError(503, 'service_unavailable', 'email: the domain could not be checked now; try again later');
  if (check.reason === 'suppressed') return { kind: 'suppressed', pending, form };
  const email = check.normalized_email!;
  const values = { properties: {} as Record<string, unknown>, first_name: undefined as string | undefined, last_name: undefined as string | undefined };
  for (const [k, v] of Object.entries(s.properties)) {
    if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) continue;
    if (k === 'first_name' || k === 'last_name') values[k] = String(v).trim().slice(0, 200);
    else values.properties[k] = v;
  }
  await checkSignupValues(readsOf(ctx.db), form.teamId, values);
  const now = ctx.clock.now();
  await ctx.db.transaction(async (trx) => {
    const formRow = await findForm(trx, form.teamId, form.id);
    const { row: contact, created } = await contactForSignup(trx, now, form.teamId, email, values, pending);
    if (!pending) {
      await joinAudience(trx, now, contact, form.segment_id, form.topic_ids);
      return;
    }
    // A pending signup of this form and contact asked again lately: no second email.
    // (Its email sent, or its job still waiting to send it; one whose email the send path refused may ask again.)
    const recent = await trx<SignupRow>('signups').where({ form_pk: formRow.pk, contact_pk: contact.pk, status: 'pending' }).orderBy('pk', 'desc').first();
    if (recent && now.getTime() - Date.parse(recent.created_at) < RESEND_AFTER_MS && (recent.email_id !== null || (await ctx.jobs.waiting(trx, confirmJobKey(recent.pk))))) return;
    const [pk] = (await trx('signups').insert({
      form_pk: formRow.pk,
      contact_pk: contact.pk,
      properties: JSON.stringify(values),
      status: 'pending',
      created_contact: created || (recent?.created_contact ?? 0) ? 1 : 0,
      email_id: null,
      created_at: now.toISOString(),
      confirmed_at: null,
    })) as number[];
    await ctx.jobs.enqueue(trx, SIGNUP_CONFIRM_JOB, { signupPk: pk! }, { dedupeKey: confirmJobKey(pk!) });
  });
  return { kind: 'stored', pending, form };
}

/**
 * The SIGNUP_CONFIRM_JOB handler: the confirmation email of one signup, unless it was sent already, confirmed
 * meanwhile, or its form or contact is gone. A refusal the send path may lift soon (429, 503) is tried again.
 */
export async function sendSignupConfirmation(ctx: AppContext, job: Job): Promise<JobOutcome> {
  const { signupPk } = job.payload as { signupPk: number };
  const signup = await ctx.db<SignupRow>('signups').where('pk', signupPk).first();
  if (!signup || signup.status !== 'pending' || signup.email_id !== null) return;
  const [form, contact] = await Promise.all([
    ctx.db<FormRow>('signup_forms').where('pk', signup.form_pk).first(),
    ctx.db<{ id: string; email: string }>('contacts').where('pk', signup.contact_pk).first('id', 'email'),
  ]);
  if (!form || !contact) return;
  const view = { ...toForm(ctx, form), teamId: form.team_id };
  if (view.double_opt_in === null) return; // double opt-in turned off since
  const refused = await sendConfirmation(ctx, view, contact.email, signupPk, contact.id, form.mode, new Date(Date.parse(signup.created_at)));
  if (refused && (refused.status === 429 || refused.status >= 500) && job.attempts < 5) return { retryAt: new Date(ctx.clock.now().getTime() + 5 * 60_000 * job.attempts), error: refused.message };
}

/** Registers the signup forms' job (the appliance, at start). */
export function registerSignupJobs(ctx: AppContext): void {
  ctx.jobs.register(SIGNUP_CONFIRM_JOB, (job) => sendSignupConfirmation(ctx, job));
}

/**
 * Deletes at most `limit` contacts still `pending` whose every signup's link expired more than
 * UNCONFIRMED_KEEP_DAYS ago and that have no other data (see above), with their signups; returns how many.
 */
export async function pruneUnconfirmedSignups(ctx: AppContext, limit: number): Promise<number> {
  const before = new Date(ctx.clock.now().getTime() - (CONFIRM_LIFETIME_DAYS + UNCONFIRMED_KEEP_DAYS) * DAY).toISOString();
  return ctx.db.transaction(async (trx) => {
    const rows = (await trx.raw(
      `SELECT c.pk FROM contacts AS c
        WHERE c.opt_in_status = 'pending'
          AND EXISTS (SELECT 1 FROM signups AS s WHERE s.contact_pk = c.pk)
          AND NOT EXISTS (SELECT 1 FROM signups AS s WHERE s.contact_pk = c.pk AND (s.status <> 'pending' OR s.created_at >= ?))
          AND NOT EXISTS (SELECT 1 FROM workflow_runs AS r WHERE r.contact_pk = c.pk)
        ORDER BY c.pk LIMIT ?`,
      [before, limit],
    )) as Array<{ pk: number }>;
    if (rows.length === 0) return 0;
    return deleteUnconfirmedContacts(trx, rows.map((r) => r.pk));
  });
}

/** The confirmation email through the one send path; the signup row learns its id in the same transaction. Answers the send path's refusal, if any. */
async function sendConfirmation(ctx: AppContext, form: SignupForm & { teamId: string }, email: string, signupPk: number, contactId: string, mode: KeyMode, now: Date): Promise<AppError | null> {
  const d = form.double_opt_in!;
  const url = `${publicBaseUrl(ctx)}${FORM_PAGE_PATH}/confirm/${signConfirmToken(ctx, { signupPk, formId: form.id, contactId }, now)}`;
  const input: SendEmailInput = { from: d.from, to: [email], idempotency_key: `signup:${signupPk}` };
  if (d.template_id !== undefined) {
    input.template_id = d.template_id;
    input.variables = { confirm_url: url, email, form_name: form.name };
  }
  const fill = (s: string, html: boolean) => s.replace(/\{\{\s*confirm_url\s*\}\}/g, html ? escapeHtml(url) : url).replace(/\{\{\s*email\s*\}\}/g, html ? escapeHtml(email) : email);
  if (d.subject !== undefined) input.subject = fill(d.subject, false);
  if (d.html !== undefined) input.html = fill(d.html, true);
  const [result] = await sendEmails(ctx, { teamId: form.teamId, apiKeyId: null, mode }, [input], {
    afterWrite: () => async (trx, sent) => {
      await trx('signups').where('pk', signupPk).update({ email_id: sent.publicId });
    },
  });
  if (result instanceof AppError) {
    ctx.log.warn({ form: form.id, code: result.code, err: result.message }, 'signup confirmation email refused by the send path');
    return result;
  }
  return null;
}

// Confirmation tokens (the house style of unsubscribe-tokens.ts): version (1) · signup key (6) · hour issued (4)
// · MAC (16), lower-case base32; MAC = HMAC-SHA256 under a key derived from the master key, truncated, over the
// first 11 bytes and the form's and contact's public ids (a row key reused later does not name the new row).
const TOKEN_VERSION = 1;
const SIGNED = 11;
const MAC_LEN = 16;
const keys = new WeakMap<AppContext, Buffer>();
const keyOf = (ctx: AppContext) => {
  let k = keys.get(ctx);
  if (!k) keys.set(ctx, (k = ctx.secrets.deriveKey('signup-confirmations')));
  return k;
};
const macOf = (ctx: AppContext, signed: Uint8Array, formId: string, contactId: string) =>
  createHmac('sha256', keyOf(ctx)).update(signed).update(`\0${formId}\0${contactId}`).digest().subarray(0, MAC_LEN);

export function signConfirmToken(ctx: AppContext, c: { signupPk: number; formId: string; contactId: string }, at: Date): string {
  const b = Buffer.alloc(SIGNED + MAC_LEN);
  b.writeUInt8(TOKEN_VERSION, 0);
  b.writeUIntBE(c.signupPk, 1, 6);
  b.writeUInt32BE(Math.floor(at.getTime() / HOUR), 7);
  macOf(ctx, b.subarray(0, SIGNED), c.formId, c.contactId).copy(b, SIGNED);
  return base32Encode(b);
}

export type ConfirmCheck =
  | { ok: true; form: SignupForm; email: string; already: boolean; signupPk: number; teamId: string }
  | { ok: false; reason: 'invalid' | 'expired' };

/** Reads a confirmation token: invalid (altered, unknown, its form or contact gone) or expired; never throws for bad input. */
export async function readConfirmToken(ctx: AppContext, q: Queryable, token: string): Promise<ConfirmCheck> {
  const b = token.length === Math.ceil(((SIGNED + MAC_LEN) * 8) / 5) ? base32Decode(token.toLowerCase()) : null;
  if (!b || b.length !== SIGNED + MAC_LEN || b.readUInt8(0) !== TOKEN_VERSION) return { ok: false, reason: 'invalid' };
  const signupPk = b.readUIntBE(1, 6);
  const hour = b.readUInt32BE(7);
  const signup = await q<SignupRow>('signups').where('pk', signupPk).first();
  if (!signup) return { ok: false, reason: 'invalid' };
  const [form, contact] = await Promise.all([
    q<FormRow>('signup_forms').where('pk', signup.form_pk).first(),
    q<{ id: string; email: string }>('contacts').where('pk', signup.contact_pk).first('id', 'email'),
  ]);
  if (!form || !contact) return { ok: false, reason: 'invalid' };
  if (!timingSafeEqual(macOf(ctx, b.subarray(0, SIGNED), form.id, contact.id), b.subarray(SIGNED))) return { ok: false, reason: 'invalid' };
  if (ctx.clock.now().getTime() - hour * HOUR > CONFIRM_LIFETIME_DAYS * DAY) return { ok: false, reason: 'expired' };
  return { ok: true, form: toForm(ctx, form), email: contact.email, already: signup.status === 'confirmed', signupPk, teamId: form.team_id };
}

/** Confirms the signup a token names (idempotent: a second confirmation changes nothing). */
export async function confirmSignup(ctx: AppContext, token: string): Promise<ConfirmCheck> {
  const check = await readConfirmToken(ctx, readsOf(ctx.db), token);
  if (!check.ok || check.already) return check;
  return ctx.db.transaction(async (trx) => {
    const signup = await trx<SignupRow>('signups').where('pk', check.signupPk).first();
    if (!signup) return { ok: false, reason: 'invalid' } as const;
    if (signup.status === 'confirmed') return { ...check, already: true };
    const now = ctx.clock.now();
    const values = JSON.parse(signup.properties) as { properties: Record<string, unknown>; first_name?: string; last_name?: string };
    const contact = await confirmSignupContact(trx, now, signup.contact_pk, values, signup.created_contact === 1);
    await joinAudience(trx, now, contact, check.form.segment_id, check.form.topic_ids);
    // Every pending signup of this contact and form is answered by this one.
    await trx('signups').where({ form_pk: signup.form_pk, contact_pk: signup.contact_pk, status: 'pending' }).update({ status: 'confirmed', confirmed_at: now.toISOString() });
    return check;
  });
}

