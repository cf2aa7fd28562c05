// Test mode (sk_test_ keys): everything runs — validation, MIME, DKIM signing, timeline, events — but
// nothing leaves the box. The outcome is chosen by the recipient's local part (before any +tag):
//   bounced@…, bounce@…               hard bounce 550 5.1.1 (invalid_mailbox)
//   bounced+<category>@…              hard bounce of that category, e.g. bounced+mailbox_full@…
//   deferred@…, softbounce@…          deferred 451 4.3.0 on the first attempt, delivered on the next
//   complained@…                      delivered, then a spam complaint
//   anything else                     delivered (250)
import { BOUNCE_CATEGORIES, type BounceCategory } from '../../mta/bounce.js';
import type { DeliveryResult, RecipientOutcome } from '../../mta/types.js';

const SAMPLE_REPLIES: Record<BounceCategory, [code: number, enhanced: string, text: string]> = {
  invalid_mailbox: [550, '5.1.1', 'The email account that you tried to reach does not exist'],
  mailbox_full: [552, '5.2.2', 'The recipient mailbox is full'],
  spam_block: [550, '5.7.1', 'Message rejected as spam'],
  message_too_large: [552, '5.3.4', 'Message size exceeds fixed limit'],
  auth_failure: [550, '5.7.26', 'Unauthenticated email is not accepted from this domain'],
  rate_limited: [550, '5.7.28', 'Sending rate too high'],
  dns_failure: [550, '5.1.2', 'Bad destination system address'],
  connection_failed: [554, '5.4.0', 'Connection failed'],
  content_rejected: [554, '5.6.0', 'Message content rejected'],
  policy: [550, '5.7.0', 'Rejected by local policy'],
  unknown: [550, '5.0.0', 'Rejected'],
};

export interface SimulatedResult extends DeliveryResult {
  /** Recipients who accepted and then complained. */
  complained: string[];
}

function outcomeFor(recipient: string, attempt: number): [RecipientOutcome, boolean] {
  const local = recipient.slice(0, recipient.lastIndexOf('@')).toLowerCase();
  const [base, tag] = local.split('+', 2) as [string, string | undefined];
  const delivered: RecipientOutcome = { recipient, status: 'delivered', reply: { code: 250, enhanced: '2.0.0', message: '2.0.0 OK (test mode: not sent)' }, code: '2.0.0' };
  if (base === 'bounced' || base === 'bounce') {
    const category = tag && (BOUNCE_CATEGORIES as readonly string[]).includes(tag) ? (tag as BounceCategory) : 'invalid_mailbox';
    const [code, enhanced, text] = SAMPLE_REPLIES[category];
    return [{ recipient, status: 'bounced', reply: { code, enhanced, message: `${code} ${enhanced} ${text}` }, code: enhanced, category }, false];
  }
  if ((base === 'deferred' || base === 'softbounce') && attempt === 1) {
    return [{ recipient, status: 'deferred', reply: { code: 451, enhanced: '4.3.0', message: '451 4.3.0 Temporary failure, try again later' }, code: '4.3.0', category: 'rate_limited' }, false];
  }
  return [delivered, base === 'complained'];
}

export async function simulateDelivery(recipients: string[], attempt: number): Promise<SimulatedResult> {
  const results = recipients.map((r) => outcomeFor(r, attempt));
  return {
    route: { kind: 'direct', name: 'test-mode', tls: false },
    outcomes: results.map(([o]) => o),
    complained: results.filter(([, c]) => c).map(([o]) => o.recipient),
  };
}
