// Bounces that come back by mail. RFC 3464 delivery status notifications (multipart/report with a
// message/delivery-status part: per-message fields, then one group per recipient with Final-Recipient,
// Action, Status, Diagnostic-Code), and the common non-standard texts: qmail (`<addr>:` then the remote's
// reply), GMX/WEB.DE (`"addr":` then the reply), Exim (indented address, then `SMTP error from remote mail
// server … 550 …`), and any line that pairs an address with an SMTP reply code. The texts are read only
// from a message that presents itself as a delivery report (sender, subject, X-Failed-Recipients): an
// out-of-office or a person answering to the return path is no bounce, whatever numbers it quotes.
// Pure: a parsed MIME tree in, a BounceNotice out.
import type { BounceNotice, BounceRecipient } from '../../services/inbound/index.js';
import { enhancedCodeOf } from '../../mta/bounce.js';
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

/**
 * RFC 3464 §2.3.4 status, or one derived from a diagnostic's codes. Exim and Courier put X.0.0 ("other or
 * undefined") in Status for every failure and the remote server's own code only in Diagnostic-Code
 * (`Status: 5.0.0` beside `smtp; 550 5.1.1 … User unknown`): a detailed code of the same class there is
 * the one reported.
 */
function statusOf(status: string | undefined, diagnostic: string | null, action: string): string {
  const s = status?.trim().split(/\s/)[0];
  const inDiagnostic = diagnostic ? enhancedCodeOf(diagnostic) : undefined;
  if (s && STATUS_RE.test(s)) {
    if (s.endsWith('.0.0') && inDiagnostic && inDiagnostic[0] === s[0] && !inDiagnostic.endsWith('.0.0')) return inDiagnostic;
    return s;
  }
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
  let explained: Map<string, string> | undefined;
  for (const g of groups.slice(1).length ? groups.slice(1) : groups) {
    const final = header(g, 'final-recipient');
    if (!final) continue;
    const rawAction = (header(g, 'action') ?? '').trim().toLowerCase().split(/\s/)[0] ?? '';
    const action = (ACTIONS as readonly string[]).includes(rawAction) ? (rawAction as BounceRecipient['action']) : 'failed';
    const address = addressFrom(final);
    // Diagnostic-Code is optional (RFC 3464 §2.3.6): Exim leaves it out for its own failures ("mailbox is
    // full: retry timeout exceeded") and says why only in the human-readable part, under the address.
    let diagnostic = stripType(header(g, 'diagnostic-code'));
    if (!diagnostic && address) {
      explained ??= recipientBlocks(bodyText(root));
      diagnostic = explained.get(address.toLowerCase()) ?? null;
    }
    recipients.push({
      address,
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
/** What the delay warnings of Exim, Sendmail, Postfix and Gmail say in their text; a failure says none of it. */
const DELAY_TEXT = /warning (message )?only|do not need to resend|has not yet been delivered|delivery attempts will continue|will (continue to )?(be )?retr(y|ied)|still (being )?(retried|trying)/i;

/** The report's own words, without the returned original that Exim, qmail and Gmail append inline. */
const reportPart = (text: string) => text.split(/^-{2,}.*(?:copy of|original message|below this line|header of the original)/im)[0] ?? text;

/**
 * The longest line read as "address … reply code" (RFC 5321's 1,000-octet line, with room). The address patterns
 * keep `@` out of the local part: a line of `a@a@a@…` made them quadratic or worse, and a report to the box's
 * feedback-loop address can come from anyone (found by review: 10 KB took 24 s of the event loop).
 */
const MAX_REPLY_LINE = 2000;
/** Addresses read from X-Failed-Recipients, at most (an email of ours has at most 50 recipients). */
const MAX_FAILED_RECIPIENTS = 100;

/** Who sends delivery reports: the null-sender daemons of every MTA (RFC 3464 §2 / RFC 5321 §4.5.5 bounces). */
const REPORT_SENDER = /mailer-?daemon|postmaster|mail ?delivery (system|subsystem)|\bmdaemon\b/i;
const REPORT_SUBJECT =
  /undeliver|returned mail|delivery (status|failure|failed|notification|report|has failed|incomplete)|failure notice|mail delivery failed|non-?delivery|could not be delivered|returning message to sender|unzustellbar|nicht zustellbar|non remis|no entregado/i;
/** RFC 3834 answers that are no reports: out-of-office, vacation, "automatic reply". */
const AUTO_REPLY_SUBJECT = /^\s*(automatic reply|auto(matic)?[- ]?(reply|response|antwort)|out of (the )?office|abwesenheit|r[ée]ponse automatique|risposta automatica|respuesta autom[aá]tica|vacation|auto:)/i;

/** A message that presents itself as a delivery report; only those are read as text bounces. */
function looksLikeReport(root: MimePart): boolean {
  const subject = header(root.headers, 'subject') ?? '';
  if (AUTO_REPLY_SUBJECT.test(subject)) return false;
  if (header(root.headers, 'x-failed-recipients')) return true;
  return REPORT_SENDER.test(header(root.headers, 'from') ?? '') || REPORT_SUBJECT.test(subject);
}

/**
 * Per-address explanations in a report's text: qmail-send ("<user@example.net>:" then the remote's
 * reply), GMX/WEB.DE ('"user@example.net":' then the reply) and Exim (the address indented by two, the
 * explanation by four). Keys lower-cased; the first block of an address wins.
 */
function recipientBlocks(text: string): Map<string, string> {
  const found = new Map<string, string>();
  const add = (address: string, diagnostic: string) => {
    const a = address.replace(/\.$/, '').toLowerCase();
    if (!a.includes('@') || found.has(a)) return;
    found.set(a, diagnostic.replace(/\s+/g, ' ').trim());
  };
  // qmail-send: "<user@example.net>:\n1.2.3.4 does not like recipient.\nRemote host said: 550 5.1.1 …"
  // GMX: "\"user@example.net\":\nSMTP error from remote server after RCPT command:\nhost: …\n5.1.1 … User Unknown"
  for (const m of text.matchAll(/^(?:<([^>\s@]{1,64}@[^>\s]{1,255})>|"([^"\s@]{1,64}@[^"\s]{1,255})"):[ \t]*\n((?:.+\n?)+)/gm)) add((m[1] ?? m[2])!, m[3]!);
  // Exim: "  user@example.net\n    host mx.example.net [1.2.3.4]\n    SMTP error from remote mail server after RCPT TO:<…>:\n    550 5.1.1 …"
  for (const m of text.matchAll(/^ {2}([^\s@]{1,64}@\S{1,255})\n((?: {4}.*\n?)+)/gm)) add(m[1]!.replace(/^<|>$/g, ''), m[2]!);
  return found;
}

/** Non-standard bounce texts: qmail, GMX, Exim, then any address paired with an SMTP code. */
function parseText(root: MimePart, ignore: (address: string) => boolean): BounceNotice | null {
  if (!looksLikeReport(root)) return null;
  const text = bodyText(root).slice(0, 64 * 1024);
  // A text report is a failure unless it says it is a warning: qmail never warns ("I'm not going to try
  // again"), and a 4xx reply in a failure report is the last one before the MTA gave up (RFC 3464 §2.3.3
  // "failed" with a persistent transient status, e.g. 4.4.7).
  const delayed = isDelayNotice(header(root.headers, 'subject') ?? '') || DELAY_TEXT.test(reportPart(text));
  const found = new Map<string, string>();
  const add = (address: string, diagnostic: string) => {
    const a = address.replace(/^<|>$/g, '').replace(/\.$/, '');
    if (!a.includes('@') || ignore(a) || found.has(a.toLowerCase())) return;
    found.set(a.toLowerCase(), diagnostic.replace(/\s+/g, ' ').trim());
  };

  for (const [address, diagnostic] of recipientBlocks(text)) add(address, diagnostic);
  // Postfix without a DSN part, Sendmail and friends: a line with an address and a reply code.
  if (found.size === 0) {
    for (const line of text.split('\n')) {
      // Lines of a report are short; a long one is no reply line (and the match would be slow on it).
      if (line.length > MAX_REPLY_LINE) continue;
      const address = /<?([^\s<>:;"@]{1,64}@[A-Za-z0-9.-]{1,255}\.[A-Za-z]{2,63})>?/.exec(line);
      if (address && /\b[45]\d\d\b/.test(line.slice(address.index + address[0].length))) add(address[1]!, line);
    }
  }
  // X-Failed-Recipients (Exim, Gmail) names the address even when the text does not pair it with a code.
  const failedRecipients = addressesIn(header(root.headers, 'x-failed-recipients')).slice(0, MAX_FAILED_RECIPIENTS);
  if (failedRecipients.length > 0) {
    const why = text.split('\n').find((l) => /\b[45]\d\d\b/.test(l)) ?? 'delivery failed';
    for (const a of failedRecipients) add(a, why);
  }
  if (found.size === 0) return null;
  const recipients: BounceRecipient[] = [...found].map(([address, diagnostic]) => {
    const status = statusOf(undefined, diagnostic, delayed ? 'delayed' : 'failed');
    return { address, originalAddress: null, action: delayed ? 'delayed' : 'failed', status, diagnostic, remoteMta: null };
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
