// The checks of an address that need nothing but the address: its syntax (RFC 5321/5322, with internationalised
// domains and SMTPUTF8 local parts, RFC 6531), whether it names a role rather than a person, whether its domain
// is a disposable-mail provider, and whether the domain looks like a typo of a big mailbox provider.
import { domainToASCII } from 'node:url';
import { disposableEmailBlocklist } from 'disposable-email-domains-js';
import { normaliseAddress } from '../../core/address.js';

// ------------------------------------------------------------------------------------------------- syntax

export interface SyntaxCheck {
  valid: boolean;
  /** Why the address is not valid; null when it is. */
  message: string | null;
  /** The address as the box writes it: the local part as given, the domain lower-cased and in ASCII (IDNA). */
  address: string | null;
  local: string | null;
  domain: string | null;
  /** The local part has characters outside ASCII: every hop must speak SMTPUTF8 (RFC 6531). */
  smtputf8: boolean;
  /** The domain is internationalised (an `xn--` label, whether written in Unicode or in ASCII). */
  idn: boolean;
}

/** RFC 5321 §4.5.3.1.1: a local part is at most 64 octets. */
export const MAX_LOCAL_OCTETS = 64;
/** RFC 1035 §2.3.4: 255 octets on the wire, 253 written out. */
export const MAX_DOMAIN_OCTETS = 253;
/** RFC 5321 §4.5.3.1.3: a path is at most 256 octets with its angle brackets, so an address at most 254. */
export const MAX_ADDRESS_OCTETS = 254;

const invalid = (message: string, smtputf8 = false): SyntaxCheck => ({ valid: false, message, address: null, local: null, domain: null, smtputf8, idn: false });

/** Why `domain` is not a domain the box can send to (the part after the @, as given). */
function domainProblem(domain: string): string {
  if (domain.startsWith('[')) return 'has an address literal for a domain, which the box does not send to';
  const ascii = domainToASCII(domain.toLowerCase());
  if (!ascii) return 'has a domain that is not a valid domain name (IDNA)';
  if (ascii.length > MAX_DOMAIN_OCTETS) return `has a domain longer than ${MAX_DOMAIN_OCTETS} octets (RFC 1035)`;
  if (!domain.includes('.')) return 'has a domain without a top-level domain';
  return 'has a domain that is not a valid host name (RFC 1035 labels: letters, digits and inner hyphens; a top-level label not all digits)';
}

/**
 * The syntax of a bare address (no display name). The rules are the send path's (`core/address.ts`: a dot-atom
 * or quoted local part, or a UTF-8 one; a domain of host-name labels after IDNA), so an address valid here is
 * one the box accepts as a recipient; the octet limits of RFC 5321 are checked on top.
 */
export function checkSyntax(input: string): SyntaxCheck {
  const at = input.lastIndexOf('@');
  if (input === '') return invalid('is empty');
  if (at < 0) return invalid('has no @');
  const local = input.slice(0, at);
  const smtputf8 = /[^\x00-\x7f]/.test(local);
  if (at === 0) return invalid('has an empty local part');
  if (at === input.length - 1) return invalid('has no domain after the @', smtputf8);
  if (Buffer.byteLength(local) > MAX_LOCAL_OCTETS) return invalid(`has a local part longer than ${MAX_LOCAL_OCTETS} octets (RFC 5321 §4.5.3.1.1)`, smtputf8);
  const address = normaliseAddress(input);
  if (!address) {
    // Which half is wrong: each tried beside a half known to be good, through the same rules.
    if (!normaliseAddress(`${local}@example.com`)) {
      return invalid('has a local part that is neither a dot-atom nor a quoted string (RFC 5322 §3.4.1) nor UTF-8 without specials (RFC 6531)', smtputf8);
    }
    return invalid(domainProblem(input.slice(at + 1)), smtputf8);
  }
  if (Buffer.byteLength(address) > MAX_ADDRESS_OCTETS) return invalid(`is longer than ${MAX_ADDRESS_OCTETS} octets (RFC 5321 §4.5.3.1.3)`, smtputf8);
  const domain = address.slice(address.lastIndexOf('@') + 1);
  return { valid: true, message: null, address, local, domain, smtputf8, idn: domain.split('.').some((l) => l.startsWith('xn--')) };
}

// -------------------------------------------------------------------------------------------- role accounts

/**
 * Local parts that name a function, not a person (RFC 2142's mailbox names and the common ones since): mail to
 * them reaches a shared inbox or a list, is seldom opted in, and draws more complaints. Compared lower-cased,
 * without a `+tag` and without `.`, `-` and `_` (`no-reply`, `no.reply` and `noreply` are one).
 */
export const ROLE_ACCOUNTS: readonly string[] = [
  'abuse', 'accounting', 'accounts', 'admin', 'administrator', 'all', 'billing', 'careers', 'contact', 'customerservice',
  'do-not-reply', 'donotreply', 'enquiries', 'everyone', 'feedback', 'finance', 'help', 'helpdesk', 'hello', 'hostmaster',
  'hr', 'info', 'inquiries', 'it', 'jobs', 'legal', 'list', 'mailer-daemon', 'marketing', 'media', 'news', 'newsletter',
  'no-reply', 'noc', 'noreply', 'office', 'orders', 'postmaster', 'press', 'privacy', 'root', 'sales', 'security',
  'service', 'staff', 'support', 'team', 'webmaster',
];

const roleKey = (local: string) => local.toLowerCase().replace(/\+.*$/, '').replace(/[.\-_]/g, '');
const ROLE_KEYS = new Set(ROLE_ACCOUNTS.map(roleKey));

export const isRoleAccount = (local: string): boolean => ROLE_KEYS.has(roleKey(local));

// ------------------------------------------------------------------------------------- disposable domains

// The disposable-email-domains list (its npm package: updated with the package, never edited here), read once.
let disposable: ReadonlySet<string> | undefined;

/** Whether `domain` (ASCII, lower case) or a domain it belongs to (`x.mailinator.com`) is on the disposable list. */
export function isDisposableDomain(domain: string): boolean {
  disposable ??= new Set(disposableEmailBlocklist());
  for (let d = domain; d.includes('.'); d = d.slice(d.indexOf('.') + 1)) if (disposable.has(d)) return true;
  return false;
}

// ------------------------------------------------------------------------------------------------- typos

/**
 * The big mailbox providers whose names people mistype. Every provider's own domain is here, so that one is never
 * taken for a typo of another (`mail.com` is not `gmail.com`, nor `ymail.com` `gmail.com`).
 */
export const BIG_PROVIDERS: readonly string[] = [
  'gmail.com', 'googlemail.com',
  'yahoo.com', 'yahoo.co.uk', 'yahoo.co.jp', 'yahoo.fr', 'yahoo.de', 'yahoo.es', 'yahoo.it', 'ymail.com', 'rocketmail.com',
  'outlook.com', 'outlook.fr', 'outlook.de', 'hotmail.com', 'hotmail.co.uk', 'hotmail.fr', 'hotmail.de', 'hotmail.it', 'hotmail.es', 'live.com', 'live.fr', 'live.co.uk', 'msn.com',
  'icloud.com', 'me.com', 'mac.com',
  'aol.com', 'aim.com',
  'protonmail.com', 'proton.me', 'pm.me',
  'gmx.com', 'gmx.de', 'gmx.net', 'gmx.at', 'web.de', 't-online.de', 'freenet.de',
  'mail.com', 'email.com', 'zoho.com', 'fastmail.com', 'hey.com', 'tutanota.com', 'tuta.io',
  'yandex.ru', 'yandex.com', 'mail.ru', 'bk.ru', 'list.ru', 'inbox.ru', 'rambler.ru',
  'orange.fr', 'wanadoo.fr', 'free.fr', 'sfr.fr', 'laposte.net', 'libero.it', 'virgilio.it',
  'btinternet.com', 'sky.com', 'virginmedia.com', 'comcast.net', 'verizon.net', 'att.net', 'sbcglobal.net', 'cox.net', 'charter.net',
  'qq.com', '163.com', '126.com', 'naver.com', 'daum.net', 'seznam.cz', 'wp.pl', 'o2.pl', 'interia.pl', 'ukr.net', 'uol.com.br', 'bol.com.br',
];

/** Top-level domains as they are mistyped, and what was meant. None of the typos is a delegated TLD. */
export const TLD_TYPOS: Readonly<Record<string, string>> = {
  con: 'com', cmo: 'com', ocm: 'com', vom: 'com', xom: 'com', cpm: 'com', comm: 'com', coom: 'com', copm: 'com', cim: 'com', clm: 'com', vcom: 'com',
  nte: 'net', ner: 'net', nett: 'net', met: 'net',
  ogr: 'org', orgg: 'org', rog: 'org', prg: 'org',
};

const PROVIDERS = new Set(BIG_PROVIDERS);

/**
 * Edits a provider's name tolerates: none for short names (`msn`, `aol`, `me`: one edit away are many real
 * domains), one from five characters (`gmial`), two from seven (`hotmial` with another slip).
 */
function editsAllowed(provider: string): number {
  const name = provider.slice(0, provider.indexOf('.'));
  return name.length >= 7 ? 2 : name.length >= 5 ? 1 : 0;
}

/**
 * Optimal-string-alignment distance (Levenshtein plus the transposition of two neighbours, the commonest slip),
 * or `max + 1` as soon as it is known to exceed `max`.
 */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let before = new Array<number>(b.length + 1).fill(0);
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  let row = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    row[0] = i;
    let least = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row[j] = d;
      least = Math.min(least, d);
    }
    if (least > max) return max + 1;
    [before, prev, row] = [prev, row, before];
  }
  return Math.min(prev[b.length]!, max + 1);
}

/**
 * The domain that was probably meant, when `domain` (ASCII, lower case) looks like a slip: a mistyped
 * top-level domain (`.con`) and/or a big provider's name a small edit away (`gmial.com` → `gmail.com`). Null
 * for a provider's own domain, and when two providers are equally close.
 */
export function suggestDomain(domain: string): string | null {
  if (PROVIDERS.has(domain)) return null;
  const dot = domain.lastIndexOf('.');
  const tld = TLD_TYPOS[domain.slice(dot + 1)];
  const fixed = tld ? `${domain.slice(0, dot + 1)}${tld}` : domain;
  if (PROVIDERS.has(fixed)) return fixed;
  let best: string | null = null;
  let bestDistance = Infinity;
  let tie = false;
  for (const provider of BIG_PROVIDERS) {
    const max = editsAllowed(provider);
    if (max === 0) continue;
    const d = editDistance(fixed, provider, max);
    if (d > max) continue;
    if (d < bestDistance) [best, bestDistance, tie] = [provider, d, false];
    else if (d === bestDistance) tie = true;
  }
  if (best && !tie) return best;
  return tld ? fixed : null;
}
