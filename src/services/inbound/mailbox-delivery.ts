// Delivering an accepted message to mailboxes: each mailbox's filters (src/mailstore/filters.ts
// `planDelivery`) decide folder, flags, discard and forwards; every copy is stored by one `store.deliver`
// (the source once, one transaction); forwards then go out through the send path as the mailbox.
//   - DMARC junk (MAIL_INBOUND_DMARC_REJECT=junk, or p=quarantine): copies go to Junk whatever the filters say.
//   - A mailbox over its quota refuses the whole message (452 4.2.2, the sender retries later): nothing is
//     stored for anyone, so a retry makes no duplicates. Full mailboxes are refused at RCPT already.
//   - Forward loops: a forward's X-Forwarded-By lists every mailbox of ours that forwarded it so far (those of
//     the message it carries, then its own), and a message that lists the mailbox is not forwarded again: A to B
//     to A stops at A (before, each forward named only its own mailbox, so A→B→A went round for ever, each turn
//     wrapping the last). A chain too long for one header value (MAX_FORWARD_CHAIN characters) is not
//     forwarded further either: dropping its oldest entries would drop the mailbox that began the ring.
import type { AppContext } from '../../context.js';
import { AppError } from '../../core/errors.js';
import { parseHeaders } from '../../mailstore/headers.js';
import { planDelivery } from '../../mailstore/filters.js';
import { MailStoreError, type DeliveryTarget, type MailStore, type MailboxAccount } from '../../mailstore/types.js';
import { sendEmails, type SendEmailInput } from '../sending/index.js';
import type { MailboxDelivery } from './receiver.js';
import { directoryOf } from './directory.js';

export const FORWARDED_BY_HEADER = 'X-Forwarded-By';
/** Longest X-Forwarded-By a forward carries (a header value is at most 1,024 characters on the send path). */
const MAX_FORWARD_CHAIN = 1000;

/** The store refused for quota: the adapter answers 452 4.2.2. */
export class MailboxFullError extends Error {
  override name = 'MailboxFullError';
}

/** True when the mailbox cannot take `size` more bytes (0 = unlimited). */
export const isFull = (a: MailboxAccount, size = 1) => a.quotaBytes > 0 && a.usedBytes + size > a.quotaBytes;

export function createMailboxDelivery(ctx: AppContext, store: MailStore): MailboxDelivery {
  const log = ctx.log.child({ component: 'mx' });
  const directory = directoryOf(ctx);

  async function forward(account: MailboxAccount, to: string[], raw: Buffer, headers: Map<string, string[]>): Promise<void> {
    const forwardedBy = (headers.get(FORWARDED_BY_HEADER.toLowerCase()) ?? []).flatMap((v) => v.split(',')).map((v) => v.trim().toLowerCase()).filter(Boolean);
    if (forwardedBy.includes(account.address.toLowerCase())) {
      log.warn({ mailbox: account.id }, 'filter forward skipped: the message was already forwarded by this mailbox (loop)');
      return;
    }
    const chain = [...forwardedBy, account.address.toLowerCase()].join(', ');
    if (chain.length > MAX_FORWARD_CHAIN) {
      log.warn({ mailbox: account.id, forwards: forwardedBy.length }, 'filter forward skipped: forwarded by too many mailboxes already (a loop?)');
      return;
    }
    const subject = headers.get('subject')?.[0] ?? '';
    const from = headers.get('from')?.[0] ?? '(unknown sender)';
    const messageId = headers.get('message-id')?.[0];
    const inputs: SendEmailInput[] = to.map((address) => ({
      from: account.address,
      to: [address],
      subject: /^fwd?:/i.test(subject) ? subject : `Fwd: ${subject}`.trim(),
      text: `Forwarded by a filter of ${account.address}.\n\nFrom: ${from}\nSubject: ${subject}\n\nThe original message is attached.`,
      headers: { [FORWARDED_BY_HEADER]: chain, ...(messageId ? { References: messageId.slice(0, 1024) } : {}) },
      attachments: [{ filename: 'forwarded-message.eml', content: raw.toString('base64'), content_type: 'message/rfc822' }],
    }));
    const results = await sendEmails(ctx, { teamId: account.teamId, apiKeyId: null, mode: 'live' }, inputs);
    results.forEach((r, i) => {
      if (r instanceof AppError) log.warn({ mailbox: account.id, to: to[i], error: r.message }, 'filter forward refused by the send path');
    });
  }

  return async (raw, routes, opts) => {
    // The accounts were read at RCPT; a mailbox deleted since then fails the delivery (not_found) and retries.
    const accounts = new Map(routes.flatMap((r) => r.accounts).map((a) => [a.id, a]));
    // The header block is parsed only when a rule needs it (most mailboxes have none).
    let parsed: Map<string, string[]> | undefined;
    const headers = () => (parsed ??= parseHeaders(raw));
    const targets: DeliveryTarget[] = [];
    const forwards: Array<{ account: MailboxAccount; to: string[] }> = [];
    for (const [id, account] of accounts) {
      const rules = await directory.filterRules(id, () => store.getFilters(id));
      const plan = rules.length === 0 ? { targets: [{ mailboxId: id, folder: opts.junk ? 'Junk' : 'INBOX' }], forwards: [] as string[] } : planDelivery(rules, { headers: headers(), size: raw.length }, { mailboxId: id, folder: opts.junk ? 'Junk' : 'INBOX' });
      targets.push(...plan.targets.map((t) => (opts.junk ? { ...t, folder: 'Junk' } : t)));
      if (plan.forwards.length > 0) forwards.push({ account, to: plan.forwards });
    }
    if (targets.length > 0) {
      try {
        await store.deliver(raw, targets);
      } catch (err) {
        if (err instanceof MailStoreError && err.code === 'quota_exceeded') throw new MailboxFullError(err.message);
        throw err;
      }
    }
    // After the copies are stored: a forward the send path refuses (quota, unverified domain) is logged.
    if (!opts.junk) for (const f of forwards) await forward(f.account, f.to, raw, headers());
  };
}
