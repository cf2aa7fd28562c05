// An email's status is derived from its recipients' statuses (one SMTP outcome each):
//   queued     nothing attempted yet (waiting, or scheduled)
//   sending    attempted, and some recipient still waits for a (re)try
//   then, once every recipient is final, the strongest outcome wins:
//   complained > delivered > sent (accepted by a relay, final as far as the box can know) > bounced > failed
//   cancelled  cancelled before anything was attempted
export const EMAIL_STATUSES = ['queued', 'sending', 'sent', 'delivered', 'bounced', 'complained', 'failed', 'cancelled'] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

export const RECIPIENT_STATUSES = ['queued', 'deferred', 'sent', 'delivered', 'bounced', 'failed', 'suppressed', 'cancelled', 'complained'] as const;
export type RecipientStatus = (typeof RECIPIENT_STATUSES)[number];

const PENDING: ReadonlySet<RecipientStatus> = new Set(['queued', 'deferred']);
const PRECEDENCE: Array<[RecipientStatus, EmailStatus]> = [
  ['complained', 'complained'],
  ['delivered', 'delivered'],
  ['sent', 'sent'],
  ['bounced', 'bounced'],
];

export const isPending = (s: RecipientStatus) => PENDING.has(s);

export function deriveEmailStatus(recipients: readonly RecipientStatus[], attempted: boolean): EmailStatus {
  if (recipients.some(isPending)) return attempted ? 'sending' : 'queued';
  for (const [recipient, email] of PRECEDENCE) if (recipients.includes(recipient)) return email;
  if (recipients.length > 0 && recipients.every((s) => s === 'cancelled')) return 'cancelled';
  return 'failed';
}
