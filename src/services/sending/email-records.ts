// The stored shape of an email and the two ways its history is written: the timeline (EmailEvent,
// GET /emails/{id}/events) and the webhook event log (events table). Shared by the send path and the
// delivery handler so both write the same records.
import type { Queryable } from '../../db/index.js';
import { eventRow, recordEvent, type EventRow } from '../../events/recorder.js';
import type { EventType } from '../../events/types.js';
import type { EmailStatus, RecipientStatus } from './email-status.js';

export const TIMELINE_TYPES = ['queued', 'sending', 'sent', 'delivered', 'bounced', 'complained', 'opened', 'clicked', 'failed', 'cancelled'] as const;
export type TimelineType = (typeof TIMELINE_TYPES)[number];

export interface EmailRow {
  id: number;
  public_id: string;
  team_id: string;
  api_key_id: string | null;
  domain_id: string | null;
  mode: 'live' | 'test';
  from_header: string;
  from_address: string;
  from_domain: string;
  to_addrs: string;
  cc_addrs: string;
  bcc_addrs: string;
  reply_to: string;
  subject: string;
  headers: string;
  tags: string;
  status: EmailStatus;
  message_id: string;
  idempotency_key: string | null;
  request_hash: string | null;
  job_id: number | null;
  attempts: number;
  scheduled_at: string | null;
  sent_at: string | null;
  delivered_at: string | null;
  /** The template and version it was rendered from (migration 017); null for a send without one. */
  template_id: string | null;
  template_version: number | null;
  /** The broadcast it was sent for (`bc_…`, migration 019); null for any other send. */
  broadcast_id: string | null;
  created_at: string;
  updated_at: string;
}

/** An email's bodies (table email_bodies, migration 012), apart from the row its status changes rewrite; no row when it has neither. */
export interface EmailBodyRow {
  email_id: number;
  html: string | null;
  text: string | null;
}

export interface RecipientRow {
  id: number;
  email_id: number;
  kind: 'to' | 'cc' | 'bcc';
  address: string;
  domain: string;
  status: RecipientStatus;
  last_code: string | null;
  last_message: string | null;
  bounce_category: string | null;
  updated_at: string;
}

export interface AttachmentRow {
  id: number;
  email_id: number;
  position: number;
  filename: string;
  content_type: string;
  size: number;
  /** Empty for a raw send (SMTP submission): the bytes are inside its stored source (`email_sources`). */
  content: Buffer;
}

export const json = <T>(text: string): T => JSON.parse(text) as T;

/** The `data` every email webhook event carries (spec: Events, Payload). */
/** What an email's webhook events say of it. */
export type EmailEventSubject = Pick<EmailRow, 'team_id' | 'public_id' | 'from_header' | 'to_addrs' | 'subject'>;

export function emailEventData(email: EmailEventSubject, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { email_id: email.public_id, from: email.from_header, to: json<string[]>(email.to_addrs), subject: email.subject, ...extra };
}

export async function addTimeline(q: Queryable, email: Pick<EmailRow, 'id'>, at: Date, type: TimelineType, data: Record<string, unknown> = {}): Promise<void> {
  await q('email_events').insert(timelineRow(email, at, type, data));
}

/** A webhook event about an email, in the caller's transaction. */
export async function emitEmailEvent(q: Queryable, email: EmailRow, at: Date, type: EventType, extra: Record<string, unknown> = {}): Promise<void> {
  await recordEvent(q, at, email.team_id, type, emailEventData(email, extra));
}

export type TimelineRow = { email_id: number; type: TimelineType; data: string; created_at: string };

/** The row `addTimeline` writes, for callers that write many at once. */
export function timelineRow(email: Pick<EmailRow, 'id'>, at: Date, type: TimelineType, data: Record<string, unknown> = {}): TimelineRow {
  return { email_id: email.id, type, data: JSON.stringify(data), created_at: at.toISOString() };
}

/** The row `emitEmailEvent` writes, for callers that write many at once. */
export function emailEventRow(email: EmailEventSubject, at: Date, type: EventType, extra: Record<string, unknown> = {}): Omit<EventRow, 'id'> {
  return eventRow(at, email.team_id, type, emailEventData(email, extra));
}

/** The local part of every email's return path starts with this (delivery.ts `returnPath`; feedback.ts reads the id after it). */
export const RETURN_PATH_PREFIX = 'bounces+';
