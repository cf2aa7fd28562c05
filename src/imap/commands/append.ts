// tag APPEND mailbox [(flags)] [date-time] literal (RFC 3501 §6.3.11; APPENDUID per RFC 4315), several messages
// in one command (MULTIAPPEND, RFC 3502: all stored or none, one APPENDUID with their UIDs), a message sent as a
// literal8 `~{n}` (BINARY, RFC 3516 §4.4: stored as sent).
import type { CommandOf } from '../protocol/commands.js';
import type { MailboxTarget, Session } from '../session.js';
import { storeFailure } from './errors.js';
import { AUTH, no, ok, type CommandSpec, type Result } from './types.js';

/** The mailbox an APPEND stores into, or why it cannot. */
async function appendTarget(s: Session, mailbox: string): Promise<MailboxTarget | Result> {
  const target = await s.resolve(mailbox);
  const folder = target ? await s.store.getFolder(target.mailboxId, target.path, { counts: false }) : null;
  if (!target || !folder) return no('No such mailbox', 'TRYCREATE');
  if (target.access === 'read') return no('Shared mailbox is read-only', 'NOPERM');
  return target;
}

/**
 * What can be said of an APPEND before a literal of it is read (RFC 3501 §7.5: a tagged NO instead of the `+`): no
 * such mailbox, no right to it, or a message of `size` octets cannot fit its quota (RFC 9208 §5.2) together with
 * the messages before it in the same MULTIAPPEND (`cmd.messages` but the last, which stands for this one). The
 * store checks the quota again when it stores (this is a look, not a reservation). Null when the literal may come.
 */
export async function beforeAppendLiteral(s: Session, cmd: CommandOf<'APPEND'>, size: number): Promise<Result | null> {
  const target = await appendTarget(s, cmd.mailbox);
  if ('status' in target) return target;
  const before = cmd.messages.slice(0, -1).reduce((sum, m) => sum + m.message.length, 0);
  if (!(await s.store.fitsQuota(target.mailboxId, before + size))) return no('Mailbox is over quota', 'OVERQUOTA');
  return null;
}

/** `1,2,3,7` → `1:3,7` (RFC 4315 uid-set). */
function uidSet(uids: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < uids.length; ) {
    let j = i;
    while (j + 1 < uids.length && uids[j + 1] === uids[j]! + 1) j++;
    out.push(j > i ? `${uids[i]}:${uids[j]}` : String(uids[i]));
    i = j + 1;
  }
  return out.join(',');
}

export const APPEND: CommandSpec<'APPEND'> = {
  states: AUTH,
  updates: 'full',
  async handle(s, cmd) {
    const target = await appendTarget(s, cmd.mailbox);
    if ('status' in target) return target;
    if (cmd.messages.some((m) => m.message.length === 0)) return no('Empty message', 'CANNOT');
    try {
      const inputs = cmd.messages.map((m) => ({ raw: m.message, flags: m.flags, ...(m.date ? { internalDate: { at: m.date, zone: m.zone ?? 0 } } : {}) }));
      const stored = inputs.length === 1 ? [await s.store.append(target.mailboxId, target.path, inputs[0]!.raw, inputs[0]!.flags, inputs[0]!.internalDate)] : await s.store.appendAll(target.mailboxId, target.path, inputs);
      return ok('Append completed', `APPENDUID ${stored[0]!.uidValidity} ${uidSet(stored.map((c) => c.uid))}`);
    } catch (err) {
      return storeFailure(err);
    }
  },
};
