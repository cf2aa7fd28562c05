// From what a server (or the network) said to a RecipientOutcome: status, reply, RFC 3463 code, category.
import { bounceCode, classifyBounce, enhancedCodeOf, type BounceCategory } from './bounce.js';
import type { SmtpError } from './transport-pool.js';
import type { RecipientOutcome, SmtpReplyInfo } from './types.js';

/**
 * A server reply as one line: "550-5.1.1 The email account…\n550-5.1.1 double-checking…" becomes code 550,
 * enhanced 5.1.1 and message "550 5.1.1 The email account… double-checking…" (continuation prefixes dropped).
 */
export function parseReply(response: string): SmtpReplyInfo {
  const lines = response
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  const basic = /^(\d{3})(?=[ -]|$)/.exec(lines[0] ?? '')?.[1];
  const code = basic ? Number(basic) : undefined;
  const enhanced = enhancedCodeOf(response);
  const prefix = new RegExp(`^(?:\\d{3}[ -]?)?\\s*${enhanced ? `(?:${enhanced.replace(/\./g, '\\.')}\\s*)?` : ''}`);
  const text = lines
    .map((l) => l.replace(prefix, ''))
    .filter(Boolean)
    .join(' ');
  return { code, enhanced, message: [basic, enhanced, text].filter(Boolean).join(' ') };
}

/** 2xx from the server for this recipient. */
export function deliveredOutcome(recipient: string, reply: SmtpReplyInfo): RecipientOutcome {
  return { recipient, status: 'delivered', reply, code: bounceCode(reply, false) };
}

/**
 * The server's limit of recipients per transaction was reached: RFC 5321 §4.5.3.1.10 names 452 for it (RFC 821
 * listed 552, which clients SHOULD treat as temporary); RFC 3463 X.5.3. Postfix: "452 4.5.3 Error: too many
 * recipients". It says nothing about the recipient, who goes in another transaction (§4.5.3.1.8: a client
 * "SHOULD be prepared to transmit in … chunks").
 */
export function isRecipientLimit(reply: SmtpReplyInfo): boolean {
  if (reply.code !== 452 && reply.code !== 552) return false;
  return reply.enhanced?.endsWith('.5.3') === true || /too many recipients/i.test(reply.message);
}

/**
 * The server refused: 5xx bounces, anything else defers. 503 (bad sequence of commands) defers too: it says
 * the session was in the wrong state, not that the recipient or message is unacceptable; so does a 552 for
 * the recipient limit (isRecipientLimit).
 */
export function refusedOutcome(recipient: string, reply: SmtpReplyInfo, refusedSender = false): RecipientOutcome {
  const permanent = reply.code !== undefined && reply.code >= 500 && reply.code < 600 && reply.code !== 503 && !isRecipientLimit(reply);
  const code = permanent ? bounceCode(reply, true) : transientCode(bounceCode(reply, false));
  let category = classifyBounce(reply);
  // A refused MAIL FROM is about our sender, never about the recipient's mailbox (which a hard bounce
  // would put on the suppression list).
  if (refusedSender && category === 'invalid_mailbox') category = 'policy';
  return { recipient, status: permanent ? 'bounced' : 'deferred', reply, code, category };
}

/** Our own finding (DNS, network, TLS policy), not a server's reply to this message. */
export function localOutcome(
  recipient: string,
  status: 'deferred' | 'bounced',
  message: string,
  code: string,
  category: BounceCategory,
  serverReply?: SmtpReplyInfo,
): RecipientOutcome {
  const reply: SmtpReplyInfo = serverReply ? { ...serverReply, message } : { message };
  return { recipient, status, reply, code, category };
}

/** A deferral reported with a 5.x.x (or 2.x.x) code would contradict itself: keep the subject and detail, class 4. */
export function transientCode(code: string): string {
  return code.replace(/^[25]\./, '4.');
}

/** The reply carried by an error from nodemailer, if the server sent one. */
export function replyOf(err: SmtpError): SmtpReplyInfo | undefined {
  return err.response ? parseReply(err.response) : undefined;
}
