// SMTP submission's rules (the listener in src/smtp/submission.ts is a thin adapter over these): who may
// submit (a mailbox login, or an API key under the username `apikey`), as whom, and what happens to a
// submitted message (the raw send path, then a copy in the mailbox's Sent folder).
import type { AppContext } from '../../context.js';
import { addressKey } from '../../core/address.js';
import type { MailboxAccount, MailStore } from '../../mailstore/types.js';
import { authenticate as authenticateApiKey, type Principal } from '../platform/index.js';
import { sendRawEmail, type RawSendResult } from './raw-emails.js';

/** The SMTP AUTH username that means "the password is an API key". */
export const API_KEY_USERNAME = 'apikey';

/** Who authenticated on a submission connection. */
export type Submitter = { kind: 'mailbox'; account: MailboxAccount } | { kind: 'apikey'; principal: Principal };

/** What submission needs of the mail store. */
export type SubmissionStore = Pick<MailStore, 'authenticate' | 'listFolders' | 'append'>;

/** The submitter for a username and password, or null when they do not match (a failed login). */
export async function authenticateSubmitter(ctx: AppContext, store: SubmissionStore, username: string, password: string): Promise<Submitter | null> {
  if (!username || !password) return null;
  if (username.toLowerCase() === API_KEY_USERNAME) {
    // Both permissions (full_access, sending_access) may send; an sk_test_ key sends in test mode.
    const principal = await authenticateApiKey(ctx, password);
    return principal ? { kind: 'apikey', principal } : null;
  }
  const account = await store.authenticate(addressKey(username), password);
  return account ? { kind: 'mailbox', account } : null;
}

export interface SubmittedMessage {
  /** Envelope recipients (RCPT TO). */
  recipients: string[];
  raw: Buffer;
}

/**
 * Sends a submitted message through the raw send path. A mailbox sends as itself only (From must be its
 * address) and gets a copy in its Sent folder, flagged \Seen; a key sends as any verified domain of its team.
 * Throws the send path's AppError (checks, quotas). A failed Sent copy is logged, not thrown: the message was accepted.
 */
export async function submitMessage(ctx: AppContext, store: SubmissionStore, who: Submitter, message: SubmittedMessage): Promise<RawSendResult> {
  if (who.kind === 'apikey') {
    const { teamId, keyId, mode } = who.principal;
    return sendRawEmail(ctx, { teamId, apiKeyId: keyId, mode }, { recipients: message.recipients, raw: message.raw });
  }
  const { account } = who;
  const result = await sendRawEmail(ctx, { teamId: account.teamId, apiKeyId: null, mode: 'live' }, { recipients: message.recipients, raw: message.raw, requireFrom: account.address });
  try {
    const sent = (await store.listFolders(account.id)).find((f) => f.specialUse === '\\Sent')?.path ?? 'Sent';
    await store.append(account.id, sent, result.sentCopy, ['\\Seen'], ctx.clock.now());
  } catch (err) {
    ctx.log.warn({ err, mailbox: account.id, email: result.id }, 'submission: the Sent copy could not be stored');
  }
  return result;
}
