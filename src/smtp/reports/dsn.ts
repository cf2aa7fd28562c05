// Bounces that come back by mail. RFC 3464 delivery status notifications (multipart/report with a
// message/delivery-status part: per-message fields, then one group per recipient with Final-Recipient,
// Action, Status, Diagnostic-Code), and the common non-standard texts: qmail (`<addr>:` then the remote's
// reply), Exim (indented address, then `SMTP error from remote mail server … 550 …`), and any line that
// pairs an address with an SMTP reply code. Pure: a parsed MIME tree in, a BounceNotice out.
import type { BounceNotice, BounceRecipient } from '../../services/feedback.js';
import { addressesIn, addressFrom, header, parseFieldGroups, parseHeaderBlock, walk, type Header, type MimePart } from './mime.js';

const ACTIONS = ['failed', 'delayed', 'delivered', 'relayed', 'expanded'] as const;
const STATUS_RE = /^([245])\.(\d{1,3})\.(\d{1,3})$/;
const ENHANCED_IN_TEXT = /(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?![\d.])/;

/** Headers of the returned original: a message/rfc822 part, text/rfc822-headers, or message/global-headers. */
export function originalHeaders(root: MimePart): Header[] {
  const part = walk(root).find((p) => p !== root && ['message/rfc822', 'text/rfc822-headers', 'message/global-headers', 'message/global'].includes(p.contentType));
  if (!part) return [];
  const text = part.body.toString('utf8');
  const end = text.search(/\r?\n\r?\n/);
  return parseHeaderBlock(end < 0 ? text : text.slice(0, end));
}

function originalOf(root: MimePart): Pick<BounceNotice, 'originalMessageId' | 'originalTo'> {
  const headers = originalHeaders(root);
  return { originalMessageId: header(headers, 'message-id')?.trim() ?? null, originalTo: [...addressesIn(header(headers, 'to')), ...addressesIn(header(headers, 'cc'))] };
}

/** RFC 3464 §2.3.4 status, or one derived from a diagnostic's codes. */
function statusOf(status: string | undefined, diagnostic: string | null, action: string): string {
  const s = status?.trim().split(/\s/)[0];
  if (s && STATUS_RE.test(s)) return s;
  const fromText = diagnostic ? ENHANCED_IN_TEXT.exec(diagnostic) : null;
  if (fromText) return `${fromText[1]}.${fromText[2]}.${fromText[3]}`;
  const basic = diagnostic ? /\b([245])\d\d\b/.exec(diagnostic) : null;
  if (basic) return `${basic[1]}.0.0`;
  return action === 'delayed' ? '4.0.0' : '5.0.0';
}

/** `smtp; 550 5.1.1 …` → `550 5.1.1 …` (RFC 3464 §2.3.6 diagnostic-type prefix removed). */
const stripType = (v: string | undefined) => (v ? v.replace(/^\s*[\w-]+\s*;\s*/, '').trim() : null);

function parseStandard(root: MimePart): BounceNotice | null {
  const part = walk(root).find((p) => p.contentType === 'message/delivery-status' || p.contentType === 'message/global-delivery-status');
  if (!part) return null;
  const groups = parseFieldGroups(part.body.toString('utf8'));
  const perMessage = groups[0] ?? [];
  const recipients: BounceRecipient[] = [];
  for (const g of groups.slice(1).length ? groups.slice(1) : groups) {
    const final = header(g, 'final-recipient');
    if (!final) continue;
    const rawAction = (header(g, 'action') ?? '').trim().toLowerCase().split(/\s/)[0] ?? '';
    const action = (ACTIONS as readonly string[]).includes(rawAction) ? (rawAction as BounceRecipient['action']) : 'failed';
    const diagnostic = stripType(header(g, 'diagnostic-code'));
    recipients.push({
      address: addressFrom(final),
      originalAddress: addressFrom(header(g, 'original-recipient')),
      action,
      status: statusOf(header(g, 'status'), diagnostic, action),
      diagnostic,
      remoteMta: stripType(header(g, 'remote-mta')),
    });
  }
  return { format: 'dsn', reportingMta: stripType(header(perMessage, 'reporting-mta')), recipients, ...originalOf(root) };
}

/** The first text/plain part (or the root's own body) as text. */
function bodyText(root: MimePart): string {
  const part = walk(root).find((p) => p.contentType === 'text/plain' && p.parts.length === 0) ?? root;
  return part.body.toString('utf8').replace(/\r\n/g, '\n');
}

const isDelayNotice = (subject: string) => /\b(delay(ed)?|still being retried|warning: could not send|not yet been delivered)\b/i.test(subject);

/** Non-standard bounce texts: qmail, Exim, then any address paired with an SMTP code. */
function parseText(root: MimePart, ignore: (address: string) => boolean): BounceNotice | null {
  const text = bodyText(root).slice(0, 64 * 1024);
  const delayed = isDelayNotice(header(root.headers, 'subject') ?? '');
  const found = new Map<string, string>();
  const add = (address: string, diagnostic: string) => {
    const a = address.replace(/^<|>$/g, '').replace(/\.$/, '');
    if (!a.includes('@') || ignore(a) || found.has(a.toLowerCase())) return;
    found.set(a.toLowerCase(), diagnostic.replace(/\s+/g, ' ').trim());
  };

  // qmail-send: "<user@example.net>:\n1.2.3.4 does not like recipient.\nRemote host said: 550 5.1.1 …"
  for (const m of text.matchAll(/^<([^>\s]+@[^>\s]+)>:\n((?:.+\n?)+)/gm)) add(m[1]!, m[2]!);
  // Exim: "  user@example.net\n    host mx.example.net [1.2.3.4]\n    SMTP error from remote mail server after RCPT TO:<…>:\n    550 5.1.1 …"
  for (const m of text.matchAll(/^ {2}(\S+@\S+)\n((?: {4}.*\n?)+)/gm)) add(m[1]!, m[2]!);
  // Postfix without a DSN part, Sendmail and friends: a line with an address and a reply code.
  if (found.size === 0) {
    for (const line of text.split('\n')) {
      const m = /<?([^\s<>:;"]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})>?.*?\b([45]\d\d)\b(.*)$/.exec(line);
      if (m) add(m[1]!, line);
    }
  }
  // X-Failed-Recipients (Exim, Gmail) names the address even when the text does not pair it with a code.
  for (const a of addressesIn(header(root.headers, 'x-failed-recipients'))) add(a, text.split('\n').find((l) => /\b[45]\d\d\b/.test(l)) ?? 'delivery failed');
  if (found.size === 0) return null;
  const recipients: BounceRecipient[] = [...found].map(([address, diagnostic]) => {
    const status = statusOf(undefined, diagnostic, delayed ? 'delayed' : 'failed');
    return { address, originalAddress: null, action: delayed || status.startsWith('4') ? 'delayed' : 'failed', status, diagnostic, remoteMta: null };
  });
  const original = originalOf(root);
  // Exim and qmail return the original inline, below the text.
  original.originalMessageId ??= /^message-id:[ \t]*(<[^>\s]+>)/im.exec(text)?.[1] ?? null;
  return { format: 'text', reportingMta: null, recipients, ...original };
}

/**
 * A bounce notice from a message that came back to a return path, or null when it is none (an auto-reply,
 * a human answer). `ignore` names addresses that are ours (the return path itself) and must not be taken
 * for failed recipients of a text bounce.
 */
export function parseBounce(root: MimePart, ignore: (address: string) => boolean = () => false): BounceNotice | null {
  return parseStandard(root) ?? parseText(root, ignore);
}
