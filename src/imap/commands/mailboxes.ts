// tag CREATE / DELETE / RENAME / SUBSCRIBE / UNSUBSCRIBE / STATUS (RFC 3501 §6.3), tag NAMESPACE (RFC 2342),
// and the mailbox names LIST and LSUB answer with (list.ts).
import { FOLDER_DELIMITER, type Folder } from '../../mailstore/types.js';
import { formatMailboxName } from '../protocol/mutf7.js';
import { SHARED_PREFIX, type MailboxTarget, type Session } from '../session.js';
import { storeFailure } from './errors.js';
import { AUTH, bad, no, ok, type CommandSpec, type Result } from './types.js';

/**
 * A name LIST can answer: a folder of the account or shared with it, or a parent that is no folder; with the
 * subscriptions, also a subscribed name that is no folder and the parents of such a name (`onlySubscribed`:
 * known from the subscription list alone, so never listed by a LIST that does not select SUBSCRIBED).
 */
export interface Entry {
  name: string;
  noselect: boolean;
  subscribed: boolean;
  specialUse: string | null;
  onlySubscribed: boolean;
}

async function ownTarget(s: Session, name: string): Promise<MailboxTarget | Result> {
  const target = await s.resolve(name);
  if (!target) return no('No such mailbox', 'NONEXISTENT');
  if (target.access !== 'owner') return no('Shared mailboxes are managed by their owner', 'NOPERM');
  return target;
}

const isTarget = (v: MailboxTarget | Result): v is MailboxTarget => 'mailboxId' in v;

/**
 * Every name the account can see: its folders, the folders shared with it, and their \Noselect parents; with
 * `withSubscriptions` (LSUB, LIST (SUBSCRIBED)) also the subscribed names that are no folder (RFC 3501 §6.3.6:
 * a subscription outlives its mailbox; RFC 5258 §5 lists it as \NonExistent) and their parents.
 */
export async function allEntries(s: Session, withSubscriptions = false): Promise<Entry[]> {
  const account = s.account!;
  const subscriptions = new Set(await s.store.listSubscriptions(account.id));
  const byName = new Map<string, Entry>();
  const add = (name: string, f: Folder | null, shared: boolean, onlySubscribed = false) => {
    byName.set(name, { name, noselect: !f, subscribed: shared || subscriptions.has(name), specialUse: f && !shared ? f.specialUse : null, onlySubscribed });
  };
  const addParents = (onlySubscribed: boolean) => {
    for (const name of [...byName.keys()]) {
      const parts = name.split(FOLDER_DELIMITER);
      for (let i = 1; i < parts.length; i++) {
        const parent = parts.slice(0, i).join(FOLDER_DELIMITER);
        if (!byName.has(parent)) add(parent, null, false, onlySubscribed);
      }
    }
  };
  for (const f of await s.store.listFolders(account.id)) add(f.path, f, false);
  for (const share of await s.store.sharedWith(account.id)) {
    const base = `${SHARED_PREFIX}${FOLDER_DELIMITER}${share.owner.address}`;
    for (const f of await s.store.listFolders(share.owner.id)) add(`${base}${FOLDER_DELIMITER}${f.path}`, f, true);
  }
  // Parents that are not folders themselves (e.g. `Shared`, or `a` of `a/b`) are listed as \Noselect.
  addParents(false);
  if (withSubscriptions) {
    for (const name of subscriptions) if (!byName.has(name)) add(name, null, false, true);
    addParents(true);
  }
  return [...byName.values()].sort((a, b) => (a.name === 'INBOX' ? -1 : b.name === 'INBOX' ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** LIST pattern → RegExp over full names: `*` matches anything, `%` anything but the delimiter. */
export function patternToRegExp(reference: string, pattern: string): RegExp {
  let full = reference && !pattern.startsWith(FOLDER_DELIMITER) ? reference + pattern : pattern;
  if (/^inbox(?=\/|$)/i.test(full)) full = 'INBOX' + full.slice(5);
  let re = '';
  for (const ch of full) {
    if (ch === '*') re += '.*';
    else if (ch === '%') re += '[^/]*';
    else re += ch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, 's');
}

/** A mailbox name as this session writes it: modified UTF-7, or UTF-8 once IMAP4rev2 is enabled (RFC 9051 §5.1). */
export const listName = (s: Session, name: string) => formatMailboxName(name, s.utf8Names);

export const NAMESPACE: CommandSpec<'NAMESPACE'> = {
  states: AUTH,
  updates: 'full',
  async handle(s) {
    await s.untagged(`NAMESPACE (("" "${FOLDER_DELIMITER}")) NIL (("${SHARED_PREFIX}${FOLDER_DELIMITER}" "${FOLDER_DELIMITER}"))`);
    return ok('Namespace completed');
  },
};

export const CREATE: CommandSpec<'CREATE'> = {
  states: AUTH,
  updates: 'full',
  async handle(s, cmd) {
    const name = cmd.mailbox.endsWith(FOLDER_DELIMITER) ? cmd.mailbox.slice(0, -1) : cmd.mailbox;
    if (!name || name.split(FOLDER_DELIMITER).some((p) => p === '')) return no('Invalid mailbox name', 'CANNOT');
    if (name === SHARED_PREFIX || name.startsWith(SHARED_PREFIX + FOLDER_DELIMITER)) return no('Reserved for shared mailboxes', 'NOPERM');
    if (name === 'INBOX') return no('INBOX exists', 'ALREADYEXISTS');
    try {
      const id = s.account!.id;
      if (await s.store.getFolder(id, name)) return no('Mailbox exists', 'ALREADYEXISTS');
      const parts = name.split(FOLDER_DELIMITER);
      // RFC 3501 §6.3.3: superior names are created as needed. Subscribing is SUBSCRIBE's (§6.3.6).
      for (let i = 1; i < parts.length; i++) {
        const parent = parts.slice(0, i).join(FOLDER_DELIMITER);
        if (!(await s.store.getFolder(id, parent))) await s.store.createFolder(id, parent, { subscribed: false });
      }
      await s.store.createFolder(id, name, { subscribed: false });
    } catch (err) {
      return storeFailure(err);
    }
    return ok('Create completed');
  },
};

export const DELETE: CommandSpec<'DELETE'> = {
  states: AUTH,
  updates: 'full',
  async handle(s, cmd) {
    const target = await ownTarget(s, cmd.mailbox);
    if (!isTarget(target)) return target;
    if (target.path === 'INBOX') return no('INBOX cannot be deleted', 'CANNOT');
    try {
      if (!(await s.store.getFolder(target.mailboxId, target.path))) return no('No such mailbox', 'NONEXISTENT');
      if (s.selected && s.selected.target.mailboxId === target.mailboxId && s.selected.target.path === target.path) s.deselect();
      await s.store.deleteFolder(target.mailboxId, target.path);
    } catch (err) {
      return storeFailure(err);
    }
    return ok('Delete completed');
  },
};

export const RENAME: CommandSpec<'RENAME'> = {
  states: AUTH,
  updates: 'full',
  async handle(s, cmd) {
    const from = await ownTarget(s, cmd.from);
    if (!isTarget(from)) return from;
    const to = await ownTarget(s, cmd.to.endsWith(FOLDER_DELIMITER) ? cmd.to.slice(0, -1) : cmd.to);
    if (!isTarget(to)) return to;
    if (to.path === SHARED_PREFIX || to.path.startsWith(SHARED_PREFIX + FOLDER_DELIMITER)) return no('Reserved for shared mailboxes', 'NOPERM');
    try {
      if (!(await s.store.getFolder(from.mailboxId, from.path))) return no('No such mailbox', 'NONEXISTENT');
      if (await s.store.getFolder(to.mailboxId, to.path)) return no('Mailbox exists', 'ALREADYEXISTS');
      await s.store.renameFolder(from.mailboxId, from.path, to.path);
    } catch (err) {
      return storeFailure(err);
    }
    return ok('Rename completed');
  },
};

function subscription(subscribed: boolean): CommandSpec<'SUBSCRIBE' | 'UNSUBSCRIBE'> {
  return {
    states: AUTH,
    updates: 'full',
    async handle(s, cmd) {
      // A name, not a mailbox (RFC 3501 §6.3.6): a name that is no folder can be subscribed, and unsubscribed
      // after its folder is gone; unsubscribing a name that is not subscribed is no error.
      const target = await s.resolve(cmd.mailbox);
      if (!target) return no('No such mailbox', 'NONEXISTENT');
      // Shared mailboxes are always listed as subscribed; their owner's subscriptions are not ours to change.
      if (target.access !== 'owner') return ok(`${subscribed ? 'Subscribe' : 'Unsubscribe'} completed`);
      try {
        await s.store.setSubscribed(target.mailboxId, target.path, subscribed);
      } catch (err) {
        return storeFailure(err);
      }
      return ok(`${subscribed ? 'Subscribe' : 'Unsubscribe'} completed`);
    },
  };
}
export const SUBSCRIBE = subscription(true) as CommandSpec<'SUBSCRIBE'>;
export const UNSUBSCRIBE = subscription(false) as CommandSpec<'UNSUBSCRIBE'>;

/** The `STATUS name (items)` response of a folder (STATUS, and LIST's RETURN (STATUS …), RFC 5819). */
export async function statusLine(s: Session, name: string, folder: Folder, items: readonly string[], formatName = (n: string) => listName(s, n)): Promise<string> {
  const values: Record<string, number> = {
    MESSAGES: folder.messages,
    RECENT: s.imap4rev2 ? 0 : folder.recent, // IMAP4rev2 has no \Recent (RFC 9051 Appendix E)
    UIDNEXT: folder.uidNext,
    UIDVALIDITY: folder.uidValidity,
    UNSEEN: folder.unseen,
    HIGHESTMODSEQ: folder.highestModseq,
    SIZE: folder.size,
  };
  if (items.includes('HIGHESTMODSEQ')) s.condstore = true;
  // RFC 9208 §4.2 (required with the STORAGE resource): what an EXPUNGE would remove, in messages and KiB.
  if (items.includes('DELETED') || items.includes('DELETED-STORAGE')) {
    let deleted = 0;
    let bytes = 0;
    for (const m of await s.store.listStates(folder.id, {})) {
      if (!m.flags.includes('\\Deleted')) continue;
      deleted++;
      bytes += m.size;
    }
    values.DELETED = deleted;
    values['DELETED-STORAGE'] = Math.ceil(bytes / 1024);
  }
  const out = items.filter((i) => i in values || i === 'MAILBOXID').map((i) => (i === 'MAILBOXID' ? `MAILBOXID (${folder.objectId})` : `${i} ${values[i]}`)); // RFC 8474 §4.2
  return `STATUS ${formatName(name)} (${out.join(' ')})`;
}

export const STATUS: CommandSpec<'STATUS'> = {
  states: AUTH,
  updates: 'full',
  async handle(s, cmd) {
    if (s.imap4rev2 && cmd.items.includes('RECENT')) return bad('RECENT is not an IMAP4rev2 status item');
    const target = await s.resolve(cmd.mailbox);
    const folder = target ? await s.store.getFolder(target.mailboxId, target.path) : null;
    if (!folder) return no('No such mailbox', 'NONEXISTENT');
    await s.untagged(await statusLine(s, cmd.mailbox, folder, cmd.items));
    return ok('Status completed');
  },
};
