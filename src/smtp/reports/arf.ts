// Complaints: RFC 5965 Abuse Reporting Format. A multipart/report; report-type=feedback-report with a
// human-readable part, a message/feedback-report part (Feedback-Type, User-Agent, Version, and optional
// Original-Mail-From, Original-Rcpt-To, Arrival-Date, Source-IP, Reported-Domain), and the original message
// or its headers. Pure: a parsed MIME tree in, a ComplaintNotice out.
import type { ComplaintNotice } from '../../services/feedback.js';
import { originalHeaders } from './dsn.js';
import { addressesIn, addressFrom, header, parseHeaderBlock, walk, type MimePart } from './mime.js';

export function isFeedbackReport(root: MimePart): boolean {
  return walk(root).some((p) => p.contentType === 'message/feedback-report' || (p.contentType === 'multipart/report' && p.params['report-type']?.toLowerCase() === 'feedback-report'));
}

export function parseComplaint(root: MimePart): ComplaintNotice | null {
  const part = walk(root).find((p) => p.contentType === 'message/feedback-report');
  if (!part) return null;
  const fields = parseHeaderBlock(part.body.toString('utf8').replace(/\r?\n\r?\n/g, '\n'));
  const feedbackType = header(fields, 'feedback-type')?.trim().toLowerCase();
  if (!feedbackType) return null;
  const original = originalHeaders(root);
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
  };
}
