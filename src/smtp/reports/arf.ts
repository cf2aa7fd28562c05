// Complaints: RFC 5965 Abuse Reporting Format. A multipart/report; report-type=feedback-report with a
// human-readable part, a message/feedback-report part (Feedback-Type, User-Agent, Version, and optional
// Original-Mail-From, Original-Rcpt-To, Arrival-Date, Source-IP, Reported-Domain), and the original message
// or its headers. Also Microsoft's JMRP (Hotmail/Outlook.com) reports, which are no ARF: a multipart/mixed
// "complaint about message from <ip>" from staff@hotmail.com whose only part is the complained-of message,
// with the complaining mailbox in its X-HmXmrOriginalRecipient header.
// Pure: a parsed MIME tree in, a ComplaintNotice out.
import type { ComplaintNotice } from '../../services/inbound/index.js';
import { originalHeaders } from './dsn.js';
import { addressesIn, addressFrom, header, parseHeaderBlock, walk, type Header, type MimePart } from './mime.js';

/** The JMRP marker: the Hotmail mailbox that pressed "junk", in the enclosed copy's headers. */
const JMRP_RECIPIENT = 'x-hmxmroriginalrecipient';

function isJmrpReport(root: MimePart): boolean {
  return walk(root).some((p) => p !== root && p.contentType === 'message/rfc822') && header(originalHeaders(root), JMRP_RECIPIENT) !== undefined;
}

export function isFeedbackReport(root: MimePart): boolean {
  return walk(root).some((p) => p.contentType === 'message/feedback-report' || (p.contentType === 'multipart/report' && p.params['report-type']?.toLowerCase() === 'feedback-report')) || isJmrpReport(root);
}

/** "for <user@example.net>" clauses of Received headers: where the reporting provider delivered the copy. */
function receivedFor(original: Header[]): string[] {
  return original.filter((h) => h.name.toLowerCase() === 'received').flatMap((h) => [...h.value.slice(0, 16 * 1024).matchAll(/\bfor\s+<?([^\s<>;@]{1,64}@[^\s<>;@]{1,255}?)>?\s*;/gi)].map((m) => m[1]!));
}

export function parseComplaint(root: MimePart): ComplaintNotice | null {
  const original = originalHeaders(root);
  const part = walk(root).find((p) => p.contentType === 'message/feedback-report');
  if (!part) {
    const jmrp = isJmrpReport(root) ? addressFrom(header(original, JMRP_RECIPIENT)) : null;
    if (!jmrp) return null;
    return {
      feedbackType: 'abuse',
      userAgent: 'Microsoft JMRP',
      originalMailFrom: null,
      originalRcptTo: [jmrp],
      arrivalDate: header(root.headers, 'date') ?? null,
      sourceIp: null,
      originalMessageId: header(original, 'message-id')?.trim() ?? null,
      originalTo: addressesIn(header(original, 'to')),
      receivedFor: receivedFor(original),
    };
  }
  const fields = parseHeaderBlock(part.body.toString('utf8').replace(/\r?\n\r?\n/g, '\n'));
  const feedbackType = header(fields, 'feedback-type')?.trim().toLowerCase();
  if (!feedbackType) return null;
  return {
    feedbackType,
    userAgent: header(fields, 'user-agent') ?? null,
    originalMailFrom: addressFrom(header(fields, 'original-mail-from')),
    // RFC 5965 §3.2: Original-Rcpt-To may appear more than once.
    originalRcptTo: fields.filter((f) => f.name.toLowerCase() === 'original-rcpt-to').map((f) => addressFrom(f.value)).filter((a): a is string => a !== null),
    arrivalDate: header(fields, 'arrival-date') ?? header(fields, 'received-date') ?? null,
    sourceIp: header(fields, 'source-ip') ?? null,
    originalMessageId: header(original, 'message-id')?.trim() ?? null,
    originalTo: addressesIn(header(original, 'to')),
    receivedFor: receivedFor(original),
  };
}
