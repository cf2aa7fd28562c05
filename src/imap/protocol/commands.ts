// A framed command → a typed command (a discriminated union). Grammar per RFC 3501 §6 and the extensions'
// sections named beside each case. No I/O, no storage.
import { parseReturnOptions, type ReturnOption } from './esearch.js';
import { parseFetchItems, type FetchItem } from './fetch-items.js';
import { parseListArguments, parseListNames, type ListArguments } from './list-options.js';
import { decodeMailboxName, isModifiedUtf7 } from './mutf7.js';
import type { RawCommand } from './reader.js';
import { parseSearchKeys, type SearchKey } from './search.js';
import { parseSequenceSet, type SequenceSet } from './sequence.js';
import { parseSortCriteria, parseThreadAlgorithm, type SortCriterion, type ThreadAlgorithm } from './sort.js';
import { ParseError, parseNumber, tokenize, Tokens, type Token } from './tokens.js';

export type StoreMode = 'add' | 'remove' | 'set';

export type Command =
  | { name: 'CAPABILITY' | 'NOOP' | 'LOGOUT' | 'STARTTLS' | 'CHECK' | 'CLOSE' | 'UNSELECT' | 'IDLE' | 'NAMESPACE' }
  | { name: 'AUTHENTICATE'; mechanism: string; initial: string | null }
  | { name: 'LOGIN'; user: string; password: string }
  | { name: 'SELECT' | 'EXAMINE'; mailbox: string; condstore: boolean; qresync?: QresyncParams | null }
  | { name: 'CREATE' | 'DELETE' | 'SUBSCRIBE' | 'UNSUBSCRIBE'; mailbox: string }
  | { name: 'RENAME'; from: string; to: string }
  | ({ name: 'LIST' } & ListArguments)
  | { name: 'LSUB'; reference: string; patterns: string[] }
  | { name: 'STATUS'; mailbox: string; items: string[] }
  | { name: 'APPEND'; mailbox: string; /** One, or several (MULTIAPPEND, RFC 3502). */ messages: AppendMessage[] }
  | { name: 'COMPRESS'; mechanism: string }
  | { name: 'EXPUNGE'; uids: SequenceSet | null }
  | { name: 'SEARCH'; uid: boolean; charset: string | null; key: SearchKey; /** ESEARCH `RETURN (…)` (RFC 4731), null without one. */ ret: ReturnOption[] | null; tag: string }
  | { name: 'FETCH'; uid: boolean; set: SequenceSet; items: FetchItem[]; changedSince: number | null; vanished?: boolean }
  | { name: 'STORE'; uid: boolean; set: SequenceSet; mode: StoreMode; silent: boolean; flags: string[]; unchangedSince: number | null }
  | { name: 'COPY' | 'MOVE'; uid: boolean; set: SequenceSet; mailbox: string }
  | { name: 'ID'; params: Record<string, string | null> | null }
  | { name: 'ENABLE'; capabilities: string[] }
  | { name: 'GETQUOTA'; root: string }
  | { name: 'GETQUOTAROOT'; mailbox: string }
  | { name: 'SETQUOTA'; root: string }
  | { name: 'SORT'; uid: boolean; criteria: SortCriterion[]; charset: string; key: SearchKey }
  | { name: 'THREAD'; uid: boolean; algorithm: ThreadAlgorithm; charset: string; key: SearchKey };

export type CommandName = Command['name'];

/** SELECT/EXAMINE's `QRESYNC (uidvalidity modseq [known-uids [(seq-set uid-set)]])` (RFC 7162 §3.2.5). */
export interface QresyncParams {
  uidValidity: number;
  modseq: number;
  knownUids: SequenceSet | null;
  /** Message sequence match data: known sequence numbers and their UIDs. */
  seqMatch: { seqs: SequenceSet; uids: SequenceSet } | null;
}

/** The QRESYNC parameter's list. */
function parseQresync(items: Token[]): QresyncParams {
  const m = new Tokens(items);
  const uidValidity = m.number('UIDVALIDITY');
  const modseq = m.number('mod-sequence');
  if (uidValidity === 0 || modseq === 0) throw new ParseError('QRESYNC needs a non-zero UIDVALIDITY and mod-sequence');
  let knownUids: SequenceSet | null = null;
  let seqMatch: QresyncParams['seqMatch'] = null;
  const next = m.peek();
  if (next && next.type === 'atom') knownUids = parseSequenceSet(m.atom('known UIDs'));
  if (!m.done) {
    const pair = new Tokens(m.list('sequence match data'));
    seqMatch = { seqs: parseSequenceSet(pair.atom('known sequence set')), uids: parseSequenceSet(pair.atom('known UID set')) };
    pair.end();
  }
  m.end();
  return { uidValidity, modseq, knownUids, seqMatch };
}

/** One message of an APPEND (RFC 3501 §6.3.11; several in one command: RFC 3502 MULTIAPPEND). */
export interface AppendMessage {
  flags: string[];
  date: Date | null;
  /** Minutes east of UTC `date` was written in. */
  zone: number | null;
  message: Buffer;
  /** Sent as a literal8 `~{n}` (RFC 3516 §4.4): it may hold NUL octets. */
  binary: boolean;
}

type Named<C, N> = C extends { name: infer M } ? (N extends M ? C : never) : never;
/** The command type(s) of one name (a union member may cover several names, e.g. SELECT and EXAMINE). */
export type CommandOf<N extends CommandName> = Named<Command, N>;

export interface ParsedCommand {
  tag: string;
  command: Command;
}

/** Why a line could not become a command, with the tag when one was readable (else `*`). */
export class CommandError extends Error {
  constructor(
    readonly tag: string,
    message: string,
  ) {
    super(message);
  }
}

/** RFC 3501 §9 tag: ASTRING-CHARs but "+" — no list-wildcards, quoted-specials, "(", ")", "{" (so never "*"). */
const TAG = /^[^\x00-\x20\x7f-\uffff(){%*"\\+]+$/;

/** How a session reads arguments: `utf8` = mailbox names are UTF-8 as sent, not modified UTF-7 (IMAP4rev2, RFC 9051 §5.1). */
export interface ParseOptions {
  utf8?: boolean;
}

/** Mailbox argument: modified UTF-7 decoded (UTF-8 taken as sent when `utf8`), INBOX (any case) spelled `INBOX`. */
export function mailboxName(raw: string, utf8 = false): string {
  const name = utf8 ? raw : decodeMailboxName(raw);
  if (/^inbox$/i.test(name)) return 'INBOX';
  if (/^inbox\//i.test(name)) return 'INBOX' + name.slice(5);
  return name;
}

/**
 * A name a command creates (CREATE, RENAME's new name): only modified UTF-7, so that LIST shows it as sent; in UTF-8
 * mode any text without control characters (RFC 9051 §5.1).
 */
function newMailboxName(raw: string, utf8 = false): string {
  if (utf8 ? /[\x00-\x1f\x7f]/.test(raw) : !isModifiedUtf7(raw)) throw new ParseError(utf8 ? 'Mailbox name has control characters' : 'Mailbox name is not valid modified UTF-7 (RFC 3501 section 5.1.3)');
  return mailboxName(raw, utf8);
}

function flagList(tokens: Token[]): string[] {
  return tokens.map((t) => {
    if (t.type !== 'atom' || t.value === '' || /[\s(){%*"\]]/.test(t.value)) throw new ParseError('Bad flag');
    if (t.value.startsWith('\\') && !/^\\(Seen|Answered|Flagged|Deleted|Draft)$/i.test(t.value)) {
      throw new ParseError(`Flag ${t.value} cannot be stored`);
    }
    return normalizeFlag(t.value);
  });
}

export function normalizeFlag(flag: string): string {
  if (!flag.startsWith('\\')) return flag;
  return '\\' + flag.charAt(1).toUpperCase() + flag.slice(2).toLowerCase();
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** date-time: `"17-Jul-1996 02:44:25 -0700"` (day may be space-padded). */
export function parseDateTime(text: string): Date {
  return parseZonedDateTime(text).date;
}

/** A date-time and the zone it is written in (minutes east of UTC: -0700 is -420). */
export function parseZonedDateTime(text: string): { date: Date; zone: number } {
  const m = /^ ?(\d{1,2})-([A-Za-z]{3})-(\d{4}) (\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})$/.exec(text);
  const month = m ? MONTHS.findIndex((x) => x.toLowerCase() === m[2]!.toLowerCase()) : -1;
  if (!m || month < 0) throw new ParseError(`Bad date-time "${text}"`);
  // Date.UTC rolls "31-Feb" over into March and 25:00 into the next day: such a date-time is not one (RFC 3501 §9).
  const day = Number(m[1]);
  if (new Date(Date.UTC(Number(m[3]), month, day)).getUTCDate() !== day || Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6]) > 60) {
    throw new ParseError(`Bad date-time "${text}"`);
  }
  const offset = (m[7] === '-' ? -1 : 1) * (Number(m[8]) * 60 + Number(m[9]));
  const ms = Date.UTC(Number(m[3]), month, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6])) - offset * 60000;
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) throw new ParseError(`Bad date-time "${text}"`);
  // A zone no clock shows ("+9999") is taken as before (the instant) and kept as UTC.
  return { date: d, zone: Number(m[9]) < 60 && Math.abs(offset) < 24 * 60 ? offset : 0 };
}

/** STATUS data items (RFC 3501 §6.3.10; HIGHESTMODSEQ RFC 7162, DELETED/DELETED-STORAGE RFC 9208, SIZE RFC 8438, MAILBOXID RFC 8474). */
export const STATUS_ITEMS = ['MESSAGES', 'RECENT', 'UIDNEXT', 'UIDVALIDITY', 'UNSEEN', 'HIGHESTMODSEQ', 'DELETED', 'DELETED-STORAGE', 'SIZE', 'MAILBOXID'];

function atoms(tokens: Token[], what: string): string[] {
  return tokens.map((t) => {
    if (t.type !== 'atom') throw new ParseError(`Bad ${what}`);
    return t.value.toUpperCase();
  });
}

function parseArgs(name: string, ts: Tokens, uid: boolean, tag: string, opts: ParseOptions): Command {
  const utf8 = opts.utf8 === true;
  const decodeName = (raw: string) => (utf8 ? raw : decodeMailboxName(raw));
  switch (name) {
    case 'CAPABILITY':
    case 'NOOP':
    case 'LOGOUT':
    case 'STARTTLS':
    case 'CHECK':
    case 'CLOSE':
    case 'UNSELECT':
    case 'IDLE':
    case 'NAMESPACE':
      ts.end();
      return { name };
    case 'AUTHENTICATE': {
      const mechanism = ts.atom('mechanism').toUpperCase();
      const initial = ts.done ? null : ts.astring('initial response'); // SASL-IR (RFC 4959)
      ts.end();
      return { name, mechanism, initial };
    }
    case 'LOGIN': {
      const user = ts.astring('user name');
      const password = ts.astring('password');
      ts.end();
      return { name, user, password };
    }
    case 'SELECT':
    case 'EXAMINE': {
      const mailbox = mailboxName(ts.astring('mailbox'), utf8);
      let condstore = false;
      let qresync: QresyncParams | null = null;
      const params = ts.optionalList();
      if (params) {
        for (let i = 0; i < params.length; i++) {
          const t = params[i]!;
          const p = t.type === 'atom' ? t.value.toUpperCase() : '';
          if (p === 'CONDSTORE') condstore = true; // RFC 7162 §3.1.8
          else if (p === 'QRESYNC') {
            // RFC 7162 §3.2.5
            const list = params[++i];
            if (list?.type !== 'list') throw new ParseError('QRESYNC needs its parameters');
            qresync = parseQresync(list.items);
          } else throw new ParseError(`Unknown select parameter ${p || 'in list'}`);
        }
      }
      ts.end();
      return qresync ? { name, mailbox, condstore, qresync } : { name, mailbox, condstore };
    }
    case 'CREATE':
    case 'DELETE':
    case 'SUBSCRIBE':
    case 'UNSUBSCRIBE': {
      const raw = ts.astring('mailbox');
      const mailbox = name === 'CREATE' ? newMailboxName(raw, utf8) : mailboxName(raw, utf8);
      if (name === 'CREATE') ts.optionalList(); // RFC 4466 create params (USE): ignored
      ts.end();
      return { name, mailbox };
    }
    case 'RENAME': {
      const from = mailboxName(ts.astring('mailbox'), utf8);
      const to = newMailboxName(ts.astring('new name'), utf8);
      ts.end();
      return { name, from, to };
    }
    case 'LIST':
      // RFC 5258 extended LIST: [(select-options)] reference (pattern | (patterns)) [RETURN (options)]
      return { name, ...parseListArguments(ts, STATUS_ITEMS, decodeName) };
    case 'LSUB': {
      const { reference, patterns } = parseListNames(ts, decodeName);
      ts.end();
      return { name, reference, patterns };
    }
    case 'STATUS': {
      const mailbox = mailboxName(ts.astring('mailbox'), utf8);
      const items = atoms(ts.list('status items'), 'status item');
      for (const i of items) if (!STATUS_ITEMS.includes(i)) throw new ParseError(`Unknown status item ${i}`);
      ts.end();
      return { name, mailbox, items };
    }
    case 'APPEND': {
      // RFC 3502: append-message *(SP append-message) after the mailbox.
      const mailbox = mailboxName(ts.astring('mailbox'), utf8);
      const messages: AppendMessage[] = [];
      do {
        const flagsTok = ts.optionalList();
        let date: Date | null = null;
        let zone: number | null = null;
        const maybeDate = ts.peek();
        if (maybeDate?.type === 'string' && !maybeDate.data) {
          ts.next('date');
          ({ date, zone } = parseZonedDateTime(maybeDate.value));
        }
        const msg = ts.next('message literal');
        if (msg.type !== 'string' || !msg.data) throw new ParseError('APPEND needs the message as a literal');
        messages.push({ flags: flagsTok ? flagList(flagsTok) : [], date, zone, message: msg.data, binary: msg.binary === true });
      } while (!ts.done);
      return { name, mailbox, messages };
    }
    case 'COMPRESS': {
      const mechanism = ts.atom('compression mechanism').toUpperCase(); // RFC 4978 §3
      ts.end();
      return { name, mechanism };
    }
    case 'EXPUNGE': {
      const uids = uid ? parseSequenceSet(ts.atom('UID set')) : null; // UID EXPUNGE, RFC 4315 §2.1
      ts.end();
      return { name, uids };
    }
    case 'SEARCH': {
      // RFC 4466 §2.6: SEARCH [RETURN (options)] [CHARSET c] keys (ESEARCH, RFC 4731; SAVE, RFC 5182).
      const ret = ts.accept('RETURN') ? parseReturnOptions(ts.list('search return options')) : null;
      let charset: string | null = null;
      if (ts.accept('CHARSET')) charset = ts.astring('charset').toUpperCase();
      const rest: Token[] = [];
      while (!ts.done) rest.push(ts.next('search key'));
      return { name, uid, charset, key: parseSearchKeys(rest), ret, tag };
    }
    case 'FETCH': {
      const set = parseSequenceSet(ts.atom('sequence set'));
      const items = parseFetchItems(ts.next('fetch attributes'));
      let changedSince: number | null = null;
      let vanished = false;
      const mods = ts.optionalList();
      if (mods) {
        const m = new Tokens(mods);
        while (!m.done) {
          const key = m.atom('fetch modifier').toUpperCase();
          if (key === 'CHANGEDSINCE') changedSince = m.number('CHANGEDSINCE'); // RFC 7162 §3.1.4
          else if (key === 'VANISHED') vanished = true; // RFC 7162 §3.2.6
          else throw new ParseError(`Unknown fetch modifier ${key}`);
        }
      }
      ts.end();
      // RFC 7162 §3.2.6: VANISHED only in UID FETCH, and only beside CHANGEDSINCE.
      if (vanished && !uid) throw new ParseError('VANISHED is a UID FETCH modifier');
      if (vanished && changedSince === null) throw new ParseError('VANISHED needs CHANGEDSINCE');
      return vanished ? { name, uid, set, items, changedSince, vanished } : { name, uid, set, items, changedSince };
    }
    case 'STORE': {
      const set = parseSequenceSet(ts.atom('sequence set'));
      let unchangedSince: number | null = null;
      const mods = ts.optionalList();
      if (mods) {
        const m = new Tokens(mods);
        const key = m.atom('store modifier').toUpperCase();
        if (key !== 'UNCHANGEDSINCE') throw new ParseError(`Unknown store modifier ${key}`);
        unchangedSince = m.number('UNCHANGEDSINCE'); // RFC 7162 §3.1.3
        m.end();
      }
      const item = ts.atom('store item').toUpperCase();
      const im = /^([+-]?)FLAGS(\.SILENT)?$/.exec(item);
      if (!im) throw new ParseError(`Bad store item ${item}`);
      const list = ts.optionalList();
      let flags: string[];
      if (list) {
        flags = flagList(list);
      } else {
        const rest: Token[] = [];
        while (!ts.done) rest.push(ts.next('flag'));
        flags = flagList(rest);
      }
      ts.end();
      const mode: StoreMode = im[1] === '+' ? 'add' : im[1] === '-' ? 'remove' : 'set';
      return { name, uid, set, mode, silent: Boolean(im[2]), flags, unchangedSince };
    }
    case 'COPY':
    case 'MOVE': {
      const set = parseSequenceSet(ts.atom('sequence set'));
      const mailbox = mailboxName(ts.astring('mailbox'), utf8);
      ts.end();
      return { name, uid, set, mailbox };
    }
    case 'ID': {
      // RFC 2971: ID ("key" "value" ...) | ID NIL
      const t = ts.next('ID parameters');
      ts.end();
      if (t.type === 'atom' && t.value.toUpperCase() === 'NIL') return { name, params: null };
      if (t.type !== 'list' || t.items.length % 2 !== 0 || t.items.length > 60) throw new ParseError('Bad ID parameters');
      const params: Record<string, string | null> = {};
      for (let i = 0; i < t.items.length; i += 2) {
        const k = t.items[i]!;
        const v = t.items[i + 1]!;
        if (k.type !== 'string' || v.type === 'list') throw new ParseError('Bad ID parameters');
        params[k.value.slice(0, 30)] = v.type === 'atom' && v.value.toUpperCase() === 'NIL' ? null : v.value.slice(0, 1024);
      }
      return { name, params };
    }
    case 'ENABLE': {
      const capabilities: string[] = [];
      while (!ts.done) capabilities.push(ts.atom('capability').toUpperCase());
      if (capabilities.length === 0) throw new ParseError('ENABLE needs a capability');
      return { name, capabilities };
    }
    case 'GETQUOTA':
    case 'SETQUOTA': {
      const root = ts.astring('quota root');
      if (name === 'SETQUOTA') ts.list('resource limits');
      ts.end();
      return { name, root };
    }
    case 'GETQUOTAROOT': {
      const mailbox = mailboxName(ts.astring('mailbox'), utf8);
      ts.end();
      return { name, mailbox };
    }
    case 'SORT': {
      // RFC 5256 §4: SORT (sort-criteria) charset search-key…
      const criteria = parseSortCriteria(ts.list('sort criteria'));
      const charset = ts.astring('charset').toUpperCase();
      const rest: Token[] = [];
      while (!ts.done) rest.push(ts.next('search key'));
      return { name, uid, criteria, charset, key: parseSearchKeys(rest) };
    }
    case 'THREAD': {
      // RFC 5256 §4: THREAD thread-alg charset search-key…
      const algorithm = parseThreadAlgorithm(ts.atom('thread algorithm'));
      const charset = ts.astring('charset').toUpperCase();
      const rest: Token[] = [];
      while (!ts.done) rest.push(ts.next('search key'));
      return { name, uid, algorithm, charset, key: parseSearchKeys(rest) };
    }
    default:
      throw new ParseError(`Unknown command ${name}`);
  }
}

const UID_COMMANDS = new Set(['FETCH', 'STORE', 'COPY', 'MOVE', 'SEARCH', 'EXPUNGE', 'SORT', 'THREAD']);

export function parseCommand(raw: RawCommand, opts: ParseOptions = {}): ParsedCommand {
  const first = raw.parts[0];
  const firstText = first?.kind === 'text' ? first.text : '';
  const guessTag = firstText.split(' ')[0] || '*';
  let tokens: Token[];
  try {
    tokens = tokenize(raw.parts);
  } catch (err) {
    throw new CommandError(TAG.test(guessTag) ? guessTag : '*', (err as Error).message);
  }
  const tagTok = tokens[0];
  if (!tagTok || tagTok.type !== 'atom' || !TAG.test(tagTok.value)) {
    throw new CommandError('*', 'Missing or bad tag');
  }
  const tag = tagTok.value;
  try {
    const ts = new Tokens(tokens.slice(1));
    let name = ts.atom('command').toUpperCase();
    let uid = false;
    if (name === 'UID') {
      name = ts.atom('UID command').toUpperCase();
      if (!UID_COMMANDS.has(name)) throw new ParseError(`Unknown UID command ${name}`);
      uid = true;
    }
    return { tag, command: parseArgs(name, ts, uid, tag, opts) };
  } catch (err) {
    if (err instanceof ParseError) throw new CommandError(tag, err.message);
    // A grammar that recursed too deep on some input the nesting limits missed: still a tagged BAD.
    if (err instanceof RangeError) throw new CommandError(tag, 'Command too complex');
    throw err;
  }
}

export { parseNumber };
