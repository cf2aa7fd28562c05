// Bounce classification: an SMTP reply (basic code, RFC 3463 enhanced status, text) to one of the
// spec's categories. Three tables, read in order; the first matching row wins:
//   1. enhanced codes whose meaning is unambiguous (5.1.1 no such mailbox, 4.7.28 rate limited, …);
//   2. the reply text, because providers often send a generic code with a telling text
//      ("550 5.7.1 … blocked using Spamhaus");
//   3. the generic enhanced codes (X.7.1 "delivery not authorized", X.4.x network, …).
export const BOUNCE_CATEGORIES = [
  'invalid_mailbox',
  'mailbox_full',
  'spam_block',
  'message_too_large',
  'auth_failure',
  'rate_limited',
  'dns_failure',
  'connection_failed',
  'content_rejected',
  'policy',
  'unknown',
] as const;
export type BounceCategory = (typeof BOUNCE_CATEGORIES)[number];

export interface SmtpReply {
  /** Basic reply code (RFC 5321 §4.2), e.g. 550; absent for connection-level failures. */
  code?: number | undefined;
  /** Enhanced status code (RFC 3463), e.g. "5.1.1"; absent when the server sent none. */
  enhanced?: string | undefined;
  /** The server's text, or our description of a connection failure. */
  message: string;
}

interface EnhancedRule {
  category: BounceCategory;
  /** subject.detail of the enhanced code, e.g. "1.1" matches 5.1.1 and 4.1.1. */
  details: string[];
  /** Only for this class (4 or 5): a 4.2.1 is "try later", a 5.2.1 a disabled mailbox. */
  class?: 4 | 5;
}

interface TextRule {
  category: BounceCategory;
  text: RegExp;
  /** Only for these basic codes. */
  codes?: number[];
  /** Only for our own descriptions of a failure (no server reply code): "connection refused" from a
   *  server is a policy decision, from the socket layer it is a connection failure. */
  localOnly?: boolean;
}

const SPECIFIC: EnhancedRule[] = [
  // Gmail 4.7.28 "unusual rate of unsolicited mail … rate limited"; X.4.5 mail system congestion.
  { category: 'rate_limited', details: ['7.28', '4.5'] },
  // RFC 7372 / RFC 8601 registry: X.7.20-X.7.27 DKIM, SPF, DMARC and reverse-DNS failures; X.7.7 integrity.
  { category: 'auth_failure', details: ['7.20', '7.21', '7.22', '7.23', '7.24', '7.25', '7.26', '7.27', '7.7'] },
  // Microsoft's IP and sender block codes (banned sender, banned IP, IP reputation).
  { category: 'spam_block', details: ['7.511', '7.606', '7.708'] },
  { category: 'invalid_mailbox', details: ['1.1', '1.3', '1.6', '2.1'], class: 5 },
  { category: 'mailbox_full', details: ['2.2'] },
  { category: 'message_too_large', details: ['2.3', '3.4'] },
];

const SPAM_TEXT =
  /spam|junk|block ?list|black ?list|deny ?list|blocked using|(black|block|deny)listed|listed (on|in|at|by) |spamhaus|spamcop|barracuda|sorbs|uceprotect|abuseat|\bcbl\b|\b[psx]bl\b|\brbl\b|\bdnsbl\b|reputation|unsolicited|banned|delist/i;

// A full mailbox said in words wins over the "try again later" a server appends to it ("452 Mailbox full,
// try again later" is no rate limit); a sending or rate quota is not a mailbox.
const MAILBOX_FULL_TEXT = /\b(mail ?box|inbox|disk|storage|user'?s? quota)\b.{0,40}\b(full|exceeded)\b|\bover ?quota\b/i;
// The recipient's domain does not exist (OpenSMTPD "Domain does not exist", Postfix "Domain not found"): a
// DNS verdict on the destination, not an unknown mailbox at it, whatever "does not exist" says below.
const NO_DOMAIN_TEXT = /\bdomain( name)?( [^\s,;:]+)? (does not exist|doesn't exist|not found|is unknown)\b|\b(no such|unknown|non-?existent) domain\b/i;

const TEXT: TextRule[] = [
  { category: 'spam_block', text: SPAM_TEXT },
  { category: 'mailbox_full', text: MAILBOX_FULL_TEXT },
  {
    category: 'rate_limited',
    text: /rate limit|too many (messages|connections|recipients|emails)|throttl|try again later|slow down|unexpected volume|receiving mail (at a rate|too quickly)|greylist|graylist/i,
    codes: [421, 450, 451, 452],
  },
  { category: 'auth_failure', text: /\bdkim\b|\bspf\b|\bdmarc\b|authenticat/i },
  { category: 'dns_failure', text: NO_DOMAIN_TEXT },
  {
    category: 'invalid_mailbox',
    text: /user unknown|unknown user|unknown recipient|recipient unknown|recipient ?not ?found|no such (user|recipient|mailbox|address)|mailbox (is )?unavailable|mailbox not found|does not exist|doesn't exist|recipient (address )?rejected|invalid (recipient|mailbox|address)|(?<!sender )address rejected|doesn't have an? .* account|account (is )?(disabled|inactive)/i,
  },
  {
    category: 'mailbox_full',
    text: /(mailbox|quota|storage|inbox).{0,40}(full|exceeded)|over ?quota|exceeded (its |the |their )?(storage|quota)|storage allocation|insufficient (system )?storage/i,
  },
  { category: 'message_too_large', text: /too (big|large)|size (limit|exceeded|exceeds)|message size|exceeds (the )?(maximum|size)/i },
  {
    category: 'dns_failure',
    text: /\bdns\b|\bno mx\b|\bmx\b.*(not found|lookup)|domain (not found|does not exist)|null mx|host not found|host or domain name not found|nxdomain/i,
  },
  { category: 'connection_failed', text: /connect|timed? ?out|timeout|unreachable|refused|reset by peer|socket|closed|\btls\b|starttls|lost/i, localOnly: true },
  { category: 'content_rejected', text: /content|virus|malware|attachment|message (was )?rejected/i },
  { category: 'policy', text: /policy|relay(ing)? (access )?denied|not permitted|prohibited|administrative/i },
];

const GENERIC: EnhancedRule[] = [
  { category: 'invalid_mailbox', details: ['1.0', '1.1', '1.3', '1.6', '2.1'] },
  { category: 'mailbox_full', details: ['3.1'] },
  // X.1.2 "bad destination system address": the domain does not exist or takes no mail (RFC 3463 §3.2).
  { category: 'dns_failure', details: ['4.3', '4.4', '1.2', '1.8', '1.10'] },
  { category: 'connection_failed', details: ['4.1', '4.2', '4.7'] },
  { category: 'auth_failure', details: ['7.8', '7.9'] },
  { category: 'content_rejected', details: ['6.0', '6.1', '6.2', '6.3', '6.4', '6.5', '6.6', '7.12', '7.15', '7.16', '7.17', '7.18'] },
  {
    category: 'policy',
    details: ['7.0', '7.1', '7.2', '7.3', '7.4', '7.5', '7.6', '7.10', '7.11', '7.13', '7.14', '7.19', '3.2', '3.3', '3.5'],
  },
];

// RFC 3463 §2: class.subject.detail, class 2, 4 or 5, subject and detail up to three digits. Per RFC 2034
// it opens the reply text, right after the basic code; anywhere else it must not be part of a longer
// dotted number (an IP address such as 192.5.1.1 is not an enhanced code).
const LEADING_ENHANCED_RE = /^\s*(?:\d{3}[ -])?\s*([245])\.(\d{1,3})\.(\d{1,3})(?![\d.])/;
const ENHANCED_RE = /(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?![\d.])/;

/** The enhanced status code in a reply text, e.g. "5.1.1" from "550 5.1.1 <x@y>: user unknown". */
export function enhancedCodeOf(text: string): string | undefined {
  const m = LEADING_ENHANCED_RE.exec(text) ?? ENHANCED_RE.exec(text);
  return m ? `${m[1]}.${m[2]}.${m[3]}` : undefined;
}

function matchEnhanced(rules: EnhancedRule[], enhanced: string | undefined): BounceCategory | undefined {
  if (!enhanced) return undefined;
  const [cls, ...rest] = enhanced.split('.');
  const detail = rest.join('.');
  return rules.find((r) => r.details.includes(detail) && (r.class === undefined || String(r.class) === cls))?.category;
}

// Postfix's restriction replies name the stage that refused, then the reason:
// "554 5.7.1 <rcpt>: Recipient address rejected: Access denied" (a check_recipient_access REJECT),
// "450 4.7.1 <rcpt>: Recipient address rejected: Greylisted", "550 5.1.1 <rcpt>: Recipient address
// rejected: User unknown in virtual mailbox table". The label says where, not why: the reason after it is
// what is classified, or every policy refusal would read as an unknown mailbox (and be suppressed).
// Exchange's bare "Recipient address rejected: Access denied" (no "<address>:" before it) is its
// directory-based edge blocking, an unknown recipient, and keeps its text.
const POSTFIX_STAGE_RE = /<[^<>\s]*>: (?:Recipient address|Sender address|Client host|Helo command|Data command|End-of-data) rejected: /gi;

// A refusal of our envelope sender, not of the recipient: X.1.7 (bad sender's mailbox address) and X.1.8
// (bad sender's system address) (RFC 3463 §3.2), or Postfix's "Sender address rejected:" label, whose reason
// may quote the server's own probe of the sender ("… said: 550 5.1.1 <probe@…>: … User unknown").
const SENDER_ENHANCED_RE = /^[45]\.1\.[78]$/;
const SENDER_STAGE_RE = /\bSender address rejected\b/i;

export function classifyBounce(reply: SmtpReply): BounceCategory {
  const category = classifyReply(reply);
  // Never a verdict on the recipient's mailbox (which would suppress a good address): the sender's policy.
  if (category === 'invalid_mailbox' && refusesSender(reply)) return 'policy';
  return category;
}

function refusesSender(reply: SmtpReply): boolean {
  const enhanced = reply.enhanced ?? enhancedCodeOf(reply.message);
  return (enhanced !== undefined && SENDER_ENHANCED_RE.test(enhanced)) || SENDER_STAGE_RE.test(reply.message);
}

function classifyReply(reply: SmtpReply): BounceCategory {
  const enhanced = reply.enhanced ?? enhancedCodeOf(reply.message);
  const specific = matchEnhanced(SPECIFIC, enhanced);
  if (specific) return specific;
  const text = reply.message.replace(POSTFIX_STAGE_RE, '');
  for (const rule of TEXT) {
    if (!rule.text.test(text)) continue;
    if (rule.localOnly && reply.code !== undefined) continue;
    // A text rule restricted to codes only fires for those codes.
    if (rule.codes && (reply.code === undefined || !rule.codes.includes(reply.code))) continue;
    return rule.category;
  }
  return matchEnhanced(GENERIC, enhanced) ?? 'unknown';
}

/** The RFC 3463 code to report: the server's, or one derived from the basic code's class. */
export function bounceCode(reply: SmtpReply, permanent: boolean): string {
  const enhanced = reply.enhanced ?? enhancedCodeOf(reply.message);
  if (enhanced) return enhanced;
  // RFC 3463 classes: 2 success, 4 persistent transient failure, 5 permanent failure.
  const cls = reply.code ? Math.floor(reply.code / 100) : 0;
  if (cls === 2 || cls === 4 || cls === 5) return `${cls}.0.0`;
  return permanent ? '5.0.0' : '4.0.0';
}
