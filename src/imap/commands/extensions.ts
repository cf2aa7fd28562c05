// tag IDLE … DONE (RFC 2177) | tag ENABLE caps (RFC 5161) | tag GETQUOTA root | tag GETQUOTAROOT mailbox |
// tag SETQUOTA root (limits) (RFC 9208; quotas are the store's, set through the Mailboxes API)
import { IDLE_PUSH_DELAY_MS } from '../protocol/limits.js';
import { formatMailboxName } from '../protocol/mutf7.js';
import { AUTH, bad, no, ok, type CommandSpec } from './types.js';
import type { Session } from '../session.js';

export const IDLE: CommandSpec<'IDLE'> = {
  states: AUTH,
  updates: 'full',
  async handle(s) {
    if (s.selected) await s.sync(true);
    let timer: NodeJS.Timeout | null = null;
    let pushing: Promise<void> | null = null;
    let again = false;
    // Changes are gathered for a moment, then pushed (EXPUNGE included: RFC 2177 allows every update). One
    // push at a time: changes arriving meanwhile are picked up by one more pass, so a client that stops
    // reading holds at most one pending push, not one per change.
    const push = async () => {
      do {
        again = false;
        await s.sync(true);
      } while (again && s.onDirty);
    };
    s.onDirty = () => {
      if (pushing) {
        again = true;
        return;
      }
      if (timer) return;
      timer = setTimeout(() => {
        timer = null;
        pushing = push()
          .catch((err: unknown) => s.deps.log.warn({ err }, 'imap idle push failed'))
          .finally(() => (pushing = null));
      }, IDLE_PUSH_DELAY_MS);
    };
    if (s.hasChanges) s.onDirty();
    const line = await s.client.continuation('idling');
    s.onDirty = null;
    if (timer) clearTimeout(timer);
    if (pushing) await pushing;
    if (line === null) return bad('Connection closed');
    if (line.trim().toUpperCase() !== 'DONE') return bad('Expected DONE');
    return ok('IDLE terminated');
  },
};

export const ENABLE: CommandSpec<'ENABLE'> = {
  states: AUTH,
  updates: 'full',
  async handle(s, cmd) {
    const enabled: string[] = [];
    for (const cap of cmd.capabilities) {
      if (cap === 'CONDSTORE') {
        s.condstore = true;
        enabled.push(cap);
      } else if (cap === 'IMAP4REV2' && !s.imap4rev2) {
        enableImap4rev2(s);
        enabled.push('IMAP4rev2');
      } else if (cap === 'QRESYNC') {
        // RFC 7162 §3.2.3: QRESYNC implies CONDSTORE.
        s.qresync = true;
        s.condstore = true;
        enabled.push(cap);
      }
    }
    await s.untagged(enabled.length ? `ENABLED ${enabled.join(' ')}` : 'ENABLED');
    return ok('Enable completed');
  },
};

/** RFC 9208 §5.1: one quota root per account, named "" (STORAGE in KiB). */
async function quotaLine(s: Session): Promise<string | null> {
  const account = await s.store.getAccount(s.account!.id);
  if (!account || account.quotaBytes === 0) return null;
  return `QUOTA "" (STORAGE ${Math.ceil(account.usedBytes / 1024)} ${Math.floor(account.quotaBytes / 1024)})`;
}

export const GETQUOTAROOT: CommandSpec<'GETQUOTAROOT'> = {
  states: AUTH,
  updates: 'full',
  async handle(s, cmd) {
    const target = await s.resolve(cmd.mailbox);
    const folder = target ? await s.store.getFolder(target.mailboxId, target.path) : null;
    if (!target || !folder) return no('No such mailbox', 'NONEXISTENT');
    const name = formatMailboxName(cmd.mailbox, s.utf8Names);
    const line = target.access === 'owner' ? await quotaLine(s) : null;
    await s.untagged(line ? `QUOTAROOT ${name} ""` : `QUOTAROOT ${name}`);
    if (line) await s.untagged(line);
    return ok('Getquotaroot completed');
  },
};

export const GETQUOTA: CommandSpec<'GETQUOTA'> = {
  states: AUTH,
  updates: 'full',
  async handle(s, cmd) {
    const line = cmd.root === '' ? await quotaLine(s) : null;
    if (!line) return no('No such quota root', 'NONEXISTENT');
    await s.untagged(line);
    return ok('Getquota completed');
  },
};

export const SETQUOTA: CommandSpec<'SETQUOTA'> = {
  states: AUTH,
  updates: 'full',
  async handle() {
    return no('Quotas are set by the administrator', 'NOPERM');
  },
};

/** RFC 9051: from now on no message is \Recent here (those this session claimed stay claimed: no other session sees them so). */
function enableImap4rev2(s: Session): void {
  s.imap4rev2 = true;
  s.selected?.recent.clear();
}
