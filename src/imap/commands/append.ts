// tag APPEND mailbox [(flags)] [date-time] literal (RFC 3501 §6.3.11; APPENDUID per RFC 4315)
import type { CommandOf } from '../protocol/commands.js';
import type { MailboxTarget, Session } from '../session.js';
import { storeFailure } from './errors.js';
import { AUTH, no, ok, type CommandSpec, type Result } from './types.js';

/** The mailbox an APPEND stores into, or why it cannot. */
async function appendTarget(s: Session, mailbox: string): Promise<MailboxTarget | Result> {
  const target = await s.resolve(mailbox);
  const folder = target ? await s.store.getFolder(target.mailboxId, target.path) : null;
  if (!target || !folder) return no('No such mailbox', 'TRYCREATE');
  if (target.access === 'read') return no('Shared mailbox is read-only', 'NOPERM');
  return target;
}

/**
 * What can be said of an APPEND before its literal is read (RFC 3501 §7.5: a tagged NO instead of the `+`): no
 * such mailbox, no right to it, or a message of `size` octets cannot fit its quota (RFC 9208 §5.2). The store
 * checks the quota again when it stores (this is a look, not a reservation). Null when the literal may come.
 */
export async function beforeAppendLiteral(s: Session, cmd: CommandOf<'APPEND'>, size: number): Promise<Result | null> {
  const target = await appendTarget(s, cmd.mailbox);
  if ('status' in target) return target;
  if (!(await s.store.fitsQuota(target.mailboxId, size))) return no('Mailbox is over quota', 'OVERQUOTA');
  return null;
}

export const APPEND: CommandSpec<'APPEND'> = {
  states: AUTH,
  updates: 'full',
  async handle(s, cmd) {
    const target = await appendTarget(s, cmd.mailbox);
    if ('status' in target) return target;
    if (cmd.message.length === 0) return no('Empty message', 'CANNOT');
    try {
      const stored = await s.store.append(target.mailboxId, target.path, cmd.message, cmd.flags, cmd.date ? { at: cmd.date, zone: cmd.zone ?? 0 } : undefined);
      return ok('Append completed', `APPENDUID ${stored.uidValidity} ${stored.uid}`);
    } catch (err) {
      return storeFailure(err);
    }
  },
};
