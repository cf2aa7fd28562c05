// tag APPEND mailbox [(flags)] [date-time] literal (RFC 3501 §6.3.11; APPENDUID per RFC 4315)
import { storeFailure } from './errors.js';
import { AUTH, no, ok, type CommandSpec } from './types.js';

export const APPEND: CommandSpec<'APPEND'> = {
  states: AUTH,
  updates: 'full',
  async handle(s, cmd) {
    const target = await s.resolve(cmd.mailbox);
    const folder = target ? await s.store.getFolder(target.mailboxId, target.path) : null;
    if (!target || !folder) return no('No such mailbox', 'TRYCREATE');
    if (target.access === 'read') return no('Shared mailbox is read-only', 'NOPERM');
    if (cmd.message.length === 0) return no('Empty message', 'CANNOT');
    try {
      const stored = await s.store.append(target.mailboxId, target.path, cmd.message, cmd.flags, cmd.date ?? undefined);
      return ok('Append completed', `APPENDUID ${stored.uidValidity} ${stored.uid}`);
    } catch (err) {
      return storeFailure(err);
    }
  },
};
