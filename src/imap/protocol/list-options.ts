// LIST's arguments (RFC 3501 §6.3.8 extended by RFC 5258 §3): `LIST [(selection-options)] reference
// (pattern | (patterns)) [RETURN (return-options)]`. Selection options: SUBSCRIBED, REMOTE, RECURSIVEMATCH
// (RFC 5258 §3.1), SPECIAL-USE (RFC 6154 §5.3); return options: SUBSCRIBED, CHILDREN (RFC 5258 §3.2),
// SPECIAL-USE (RFC 6154 §5.2), STATUS (items) (RFC 5819). An option this server does not know is BAD
// (RFC 5258 §3: "MUST reject ... with a tagged BAD"), as is RECURSIVEMATCH with no selection option it could
// recurse on (§3.1). No I/O.
import { decodeMailboxName } from './mutf7.js';
import { ParseError, type Token, type Tokens } from './tokens.js';

export interface ListSelection {
  subscribed: boolean;
  /** No remote mailboxes here (RFC 2193): accepted, changes nothing. */
  remote: boolean;
  recursiveMatch: boolean;
  specialUse: boolean;
}

export interface ListReturn {
  subscribed: boolean;
  children: boolean;
  specialUse: boolean;
  /** RFC 5819: STATUS items to answer after each selectable mailbox listed; null when not asked. */
  status: string[] | null;
}

export interface ListArguments {
  reference: string;
  patterns: string[];
  select: ListSelection;
  return: ListReturn;
  /**
   * Written in RFC 5258's extended syntax (a selection list, even `()`, a pattern list, or RETURN): the answer
   * then speaks LIST-EXTENDED (`\NonExistent` for a name that is no mailbox, rather than RFC 3501's `\Noselect`).
   */
  extended: boolean;
}

export const noSelection = (): ListSelection => ({ subscribed: false, remote: false, recursiveMatch: false, specialUse: false });
export const noReturn = (): ListReturn => ({ subscribed: false, children: false, specialUse: false, status: null });

function option(t: Token | undefined, what: string): string {
  if (t?.type !== 'atom') throw new ParseError(`Bad ${what}`);
  return t.value.toUpperCase();
}

/** The reference and pattern(s) (LSUB's arguments, and LIST's after its selection options). */
export function parseListNames(ts: Tokens, decode: (raw: string) => string = decodeMailboxName): { reference: string; patterns: string[]; patternList: boolean } {
  const reference = decode(ts.astring('reference'));
  const patTok = ts.next('mailbox pattern');
  if (patTok.type !== 'list') return { reference, patterns: [decode(patTok.value)], patternList: false };
  if (patTok.items.length === 0) throw new ParseError('Empty pattern list');
  const patterns = patTok.items.map((p) => {
    if (p.type === 'list') throw new ParseError('Bad pattern');
    return decode(p.value);
  });
  return { reference, patterns, patternList: true };
}

/**
 * LIST's arguments; `statusItems` are the STATUS data items the server knows, `decode` reads a name (modified
 * UTF-7, or UTF-8 as sent in an IMAP4rev2 session).
 */
export function parseListArguments(ts: Tokens, statusItems: readonly string[], decode: (raw: string) => string = decodeMailboxName): ListArguments {
  const select = noSelection();
  const ret = noReturn();
  const sel = ts.optionalList();
  for (const t of sel ?? []) {
    const o = option(t, 'selection option');
    if (o === 'SUBSCRIBED') select.subscribed = true;
    else if (o === 'REMOTE') select.remote = true;
    else if (o === 'RECURSIVEMATCH') select.recursiveMatch = true;
    else if (o === 'SPECIAL-USE') select.specialUse = true;
    else throw new ParseError(`Unknown selection option ${o}`);
  }
  // RFC 5258 §3.1: RECURSIVEMATCH alone (or with REMOTE only) "MUST" be BAD.
  if (select.recursiveMatch && !select.subscribed && !select.specialUse) throw new ParseError('RECURSIVEMATCH needs another selection option');
  // §3.1: the SUBSCRIBED selection option implies the SUBSCRIBED return option.
  if (select.subscribed) ret.subscribed = true;
  const { reference, patterns, patternList } = parseListNames(ts, decode);
  let returns = false;
  if (ts.accept('RETURN')) {
    returns = true;
    const opts = ts.list('return options');
    for (let i = 0; i < opts.length; i++) {
      const o = option(opts[i], 'return option');
      if (o === 'SUBSCRIBED') ret.subscribed = true;
      else if (o === 'CHILDREN') ret.children = true;
      else if (o === 'SPECIAL-USE') ret.specialUse = true;
      else if (o === 'STATUS') {
        // RFC 5819: STATUS (items) asks for a STATUS response after each selectable mailbox listed.
        const list = opts[++i];
        if (list?.type !== 'list') throw new ParseError('STATUS needs a list of status items');
        const items = list.items.map((x) => option(x, 'status item'));
        for (const item of items) if (!statusItems.includes(item)) throw new ParseError(`Unknown status item ${item}`);
        ret.status = items;
      } else throw new ParseError(`Unknown return option ${o}`);
    }
  }
  ts.end();
  return { reference, patterns, select, return: ret, extended: sel !== null || patternList || returns };
}
