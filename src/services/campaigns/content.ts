// What a broadcast sends to one contact: its subject, html and text (or an A/B variant's), with the contact's
// merge tags filled in. Liquid through the templates area: `{{ contact.first_name }}`, `{{ contact.email }}`,
// `{{ contact.<property> }}` (a custom property), `{{ unsubscribe_url }}` (the page of the contact's own signed
// link), with `| default: "…"` for a missing value. A broadcast by `template_id` renders the template's
// published version with the same values for the parts the broadcast does not give itself.
import type { AppContext } from '../../context.js';
import { parsePart, renderPart, templateForSend, type ParsedPart, type SendTemplate } from '../templates/index.js';
import { signUnsubscribeToken, unsubscribeUrl } from '../audience/index.js';

export interface VariantContent {
  name: string;
  subject: string;
  weight: number;
  html?: string | null | undefined;
  text?: string | null | undefined;
}

/** The parts one broadcast (or one of its variants) is rendered from. */
export interface ParsedContent {
  subject: ParsedPart;
  html: ParsedPart | null;
  text: ParsedPart | null;
  /** The template giving the parts the broadcast leaves out, if any. */
  template: SendTemplate | null;
}

export interface ContentSource {
  subject: string;
  html: string | null;
  text: string | null;
}

/** Parses the parts (a syntax error is a 400 naming the part). */
export function parseContent(src: ContentSource, template: SendTemplate | null = null): ParsedContent {
  return {
    subject: parsePart('subject', src.subject),
    html: src.html === null ? null : parsePart('html', src.html),
    text: src.text === null ? null : parsePart('text', src.text),
    template,
  };
}

/** The content of a variant: its subject, and its html and text where it gives them (else the broadcast's). */
export function variantSource(base: ContentSource, v: VariantContent): ContentSource {
  return { subject: v.subject, html: v.html ?? base.html, text: v.text ?? base.text };
}

export async function loadTemplate(ctx: AppContext, teamId: string, templateId: string | null): Promise<SendTemplate | null> {
  return templateId === null ? null : templateForSend(ctx, teamId, templateId);
}

/** A contact as merge tags see it. */
export interface MergeContact {
  pk: number;
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  /** JSON object text (contacts.properties). */
  properties: string;
}

/** The values a recipient's copy is rendered with. `unsubscribeUrl`: null for a test send to a non-contact. */
export function mergeScope(contact: Omit<MergeContact, 'pk'>, unsubscribe: string | null): Record<string, unknown> {
  let props: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(contact.properties) as unknown;
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) props = parsed as Record<string, unknown>;
  } catch {
    props = {};
  }
  return {
    contact: { ...props, properties: props, id: contact.id, email: contact.email, first_name: contact.first_name, last_name: contact.last_name },
    unsubscribe_url: unsubscribe ?? '',
  };
}

/** The contact's unsubscribe page (its signed token names the contact and the broadcast's topic). */
export function contactUnsubscribeUrl(ctx: AppContext, contact: Pick<MergeContact, 'pk' | 'id'>, topic: { pk: number; id: string } | null, at: Date): string {
  return unsubscribeUrl(ctx, signUnsubscribeToken(ctx, { contact, topic, emailKey: null }, at));
}

export interface RenderedCopy {
  subject: string;
  html?: string;
  text?: string;
}

/** One recipient's copy. Throws a 4xx AppError when the content cannot be rendered (a template variable missing). */
export function renderCopy(content: ParsedContent, scope: Record<string, unknown>): RenderedCopy {
  const subject = renderPart(content.subject, scope).trim();
  let html = content.html ? renderPart(content.html, scope) : undefined;
  let text = content.text ? renderPart(content.text, scope) : undefined;
  if (content.template && html === undefined) {
    const r = content.template.render(scope);
    html = r.html;
    if (text === undefined && r.text !== null) text = r.text;
  }
  return { subject, ...(html !== undefined ? { html } : {}), ...(text !== undefined ? { text } : {}) };
}
