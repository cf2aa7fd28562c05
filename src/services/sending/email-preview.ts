// Previews that send nothing: the message as it would go out, and a content score.
import type { AppContext } from '../../context.js';
import { composeMessage } from '../../mta/compose.js';
import { signMessage } from '../../mta/dkim.js';
import { deriveText, formatMailbox, findSenderDomain, prepareInput, resolveTemplate, type EmailContentView, type SendEmailInput, type Sender } from './emails.js';
import { scoreContent, type SpamVerdict } from './spam-score.js';

export interface EmailPreview extends EmailContentView {
  /** The message's header fields in order, unfolded (the DKIM signature included when the domain can sign). */
  headers: Array<{ name: string; value: string }>;
  /** Size of the whole RFC 5322 message in bytes, as it would be transmitted. */
  size: number;
  attachments: Array<{ filename: string; content_type: string; size: number }>;
  /** The domain is verified: the preview is signed exactly as the real send would be. */
  signed: boolean;
  warnings: string[];
}

function headerFields(raw: Buffer): Array<{ name: string; value: string }> {
  const end = raw.indexOf('\r\n\r\n');
  const block = raw.subarray(0, end < 0 ? raw.length : end).toString('utf8').replace(/\r\n[ \t]+/g, ' ');
  return block.split('\r\n').map((line) => {
    const colon = line.indexOf(':');
    return { name: line.slice(0, colon), value: line.slice(colon + 1).trim() };
  });
}

export async function previewEmail(ctx: AppContext, sender: Sender, asked: SendEmailInput): Promise<EmailPreview> {
  const { input } = await resolveTemplate(ctx, sender.teamId, asked);
  const p = prepareInput(input);
  const at = ctx.clock.now();
  const warnings: string[] = [];
  const domain = await findSenderDomain(ctx, sender.teamId, p.fromDomain);
  if (!domain) warnings.push(`Domain '${p.fromDomain}' not found for this team: sending would answer 422`);
  else if (domain.status !== 'verified') warnings.push(`Domain '${p.fromDomain}' is not verified: sending would answer 422`);
  const text = (await deriveText(ctx, input)) ?? undefined; // off the event loop, as for a send
  let raw = await composeMessage({
    from: p.from,
    to: p.to,
    cc: p.cc,
    replyTo: p.replyTo,
    subject: input.subject ?? '',
    html: input.html,
    text,
    headers: input.headers ?? {},
    attachments: p.attachments.map((a) => ({ filename: a.filename, contentType: a.content_type, content: a.content })),
    messageId: `<em_preview@${ctx.config.hostname}>`,
    date: at,
  });
  let signed = false;
  if (domain?.status === 'verified') {
    // As delivery signs (delivery.ts): every active key, RSA first.
    const keys = await ctx.db('dkim_keys').where({ domain_id: domain.id, state: 'active' }).orderByRaw(`algorithm <> 'rsa'`).select<Array<{ selector: string; private_key_sealed: string }>>('selector', 'private_key_sealed');
    if (keys.length > 0) {
      raw = await signMessage(raw, keys.map((k) => ({ domain: p.fromDomain, selector: k.selector, privateKey: ctx.secrets.open(k.private_key_sealed) })), at);
      signed = true;
    }
  }
  return {
    from: formatMailbox(p.from),
    to: p.to.map(formatMailbox),
    cc: p.cc.map(formatMailbox),
    bcc: p.bcc.map(formatMailbox),
    reply_to: p.replyTo.map(formatMailbox),
    subject: input.subject ?? '',
    html: input.html ?? null,
    text: text ?? null,
    headers: headerFields(raw),
    size: raw.length,
    attachments: p.attachments.map((a) => ({ filename: a.filename, content_type: a.content_type, size: a.size })),
    signed,
    warnings,
  };
}

export async function spamPreview(ctx: AppContext, sender: Sender, asked: SendEmailInput): Promise<SpamVerdict> {
  const { input } = await resolveTemplate(ctx, sender.teamId, asked);
  const p = prepareInput(input);
  const domain = await findSenderDomain(ctx, sender.teamId, p.fromDomain);
  return scoreContent({
    subject: input.subject ?? '',
    html: input.html,
    text: input.text,
    headers: input.headers ?? {},
    tags: input.tags ?? [],
    recipientCount: p.to.length + p.cc.length + p.bcc.length,
    fromVerified: domain?.status === 'verified',
  });
}
