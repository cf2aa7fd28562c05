// tag LIST (RFC 3501 §6.3.8 with LIST-EXTENDED, RFC 5258; SPECIAL-USE, RFC 6154; LIST-STATUS, RFC 5819) and
// tag LSUB (RFC 3501 §6.3.9). `listResponses` computes a LIST's untagged responses from its parsed arguments,
// for LIST itself and for any session mode that answers LIST the same way (IMAP4rev2 requires LIST-EXTENDED).
//
// Which names are listed (RFC 5258 §3): the names matching a pattern (every folder of the account, the folders
// shared with it, and the parents that are no folder of their own) that satisfy the selection options
// (SUBSCRIBED: subscribed; SPECIAL-USE: a special-use folder); with RECURSIVEMATCH also a matching name that does
// not satisfy them but has a descendant that does and is not listed itself (§3.5: redundant CHILDINFO is
// suppressed), marked with `("CHILDINFO" (criteria))`, as is a listed name with such a descendant.
// Attributes: `\NonExistent` (extended syntax) or `\Noselect` (RFC 3501 syntax) for a name that is no folder,
// `\HasChildren`/`\HasNoChildren` always (RFC 5258 §4 lets a server send them unasked; clients rely on them),
// the special-use attribute always, `\Subscribed` when the SUBSCRIBED return (or selection) option asks.
import { FOLDER_DELIMITER } from '../../mailstore/types.js';
import type { ListArguments } from '../protocol/list-options.js';
import type { Session } from '../session.js';
import { allEntries, listName, patternToRegExp, statusLine, type Entry } from './mailboxes.js';
import { AUTH, ok, type CommandSpec } from './types.js';

export interface ListResponseOptions {
  /** How a mailbox name is written (default: modified UTF-7, as a quoted string or literal). */
  formatName?: (name: string) => string;
}

/**
 * The untagged responses (without `* `) a LIST with these arguments answers, in order: each LIST response,
 * followed by its STATUS response when RETURN (STATUS …) asks (selectable mailboxes only, RFC 5819 §2).
 */
export async function listResponses(s: Session, args: ListArguments, opts: ListResponseOptions = {}): Promise<string[]> {
  const formatName = opts.formatName ?? ((n: string) => listName(s, n));
  // RFC 3501 §6.3.8: an empty pattern asks for the hierarchy delimiter and the root.
  if (args.patterns.every((p) => p === '')) return [`LIST (\\Noselect) "${FOLDER_DELIMITER}" ""`];
  const { select } = args;
  const all = await allEntries(s, select.subscribed);
  const res = args.patterns.map((p) => patternToRegExp(args.reference, p));
  const matches = (name: string) => res.some((re) => re.test(name));
  const satisfies = (e: Entry) => (!select.subscribed || e.subscribed) && (!select.specialUse || e.specialUse !== null);
  const criteria = [...(select.subscribed ? ['"SUBSCRIBED"'] : []), ...(select.specialUse ? ['"SPECIAL-USE"'] : [])];
  const out: string[] = [];
  for (const e of all) {
    if (!matches(e.name)) continue;
    const prefix = e.name + FOLDER_DELIMITER;
    let listed = satisfies(e);
    let childInfo = false;
    if (select.recursiveMatch) {
      const descendants = all.filter((d) => d.name.startsWith(prefix) && satisfies(d));
      if (listed) childInfo = descendants.length > 0;
      else if (descendants.some((d) => !matches(d.name))) listed = childInfo = true;
    }
    if (!listed) continue;
    const attrs: string[] = [];
    if (e.noselect) attrs.push(args.extended ? '\\NonExistent' : '\\Noselect');
    // Children are mailboxes (or their parents); a name known from the subscriptions alone is none. Such a name
    // with no children of that kind says neither (RFC 5258 §5 example 2: `(\Subscribed \NonExistent)`).
    const hasChildren = all.some((o) => !o.onlySubscribed && o.name.startsWith(prefix));
    if (hasChildren || !e.onlySubscribed) attrs.push(hasChildren ? '\\HasChildren' : '\\HasNoChildren');
    if (e.specialUse) attrs.push(e.specialUse);
    if (args.return.subscribed && e.subscribed) attrs.push('\\Subscribed');
    const extra = childInfo ? ` ("CHILDINFO" (${criteria.join(' ')}))` : '';
    out.push(`LIST (${attrs.join(' ')}) "${FOLDER_DELIMITER}" ${formatName(e.name)}${extra}`);
    if (args.return.status && !e.noselect) {
      const target = await s.resolve(e.name);
      const folder = target ? await s.store.getFolder(target.mailboxId, target.path) : null;
      if (folder) out.push(await statusLine(s, e.name, folder, args.return.status, formatName));
    }
  }
  return out;
}

export const LIST: CommandSpec<'LIST'> = {
  states: AUTH,
  updates: 'full',
  async handle(s, cmd) {
    // IMAP4rev2 (RFC 9051 §6.3.9) answers in LIST-EXTENDED's terms: a name that is no mailbox is \NonExistent.
    for (const line of await listResponses(s, s.imap4rev2 ? { ...cmd, extended: true } : cmd)) await s.untagged(line);
    return ok('List completed');
  },
};

export const LSUB: CommandSpec<'LSUB'> = {
  states: AUTH,
  updates: 'full',
  async handle(s, cmd) {
    const all = await allEntries(s, true);
    const res = cmd.patterns.map((p) => patternToRegExp(cmd.reference, p));
    const matches = (name: string) => res.some((re) => re.test(name));
    const subscribed = all.filter((e) => e.subscribed);
    for (const e of all) {
      if (!matches(e.name)) continue;
      if (e.subscribed) {
        // A subscribed name that is no mailbox (its folder deleted, or never made) stays listed (RFC 3501
        // §6.3.6), \Noselect as it cannot be selected.
        await s.untagged(`LSUB (${e.noselect ? '\\Noselect' : ''}) "${FOLDER_DELIMITER}" ${listName(s, e.name)}`);
        continue;
      }
      // RFC 3501 §6.3.9: "foo/bar" subscribed, "foo" not: a "%" that reaches foo but not foo/bar returns foo,
      // marked \Noselect (= not subscribed). Clients that browse subscriptions level by level (neomutt's
      // browser with $imap_list_subscribed sends LSUB "" "%") never found a subscribed folder otherwise.
      const prefix = e.name + FOLDER_DELIMITER;
      if (subscribed.some((d) => d.name.startsWith(prefix) && !matches(d.name))) {
        await s.untagged(`LSUB (\\Noselect) "${FOLDER_DELIMITER}" ${listName(s, e.name)}`);
      }
    }
    return ok('Lsub completed');
  },
};
