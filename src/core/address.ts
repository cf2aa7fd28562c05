// Email addresses as customers write them: `addr@example.com` or `Display Name <addr@example.com>`.
// The domain is normalised (case, IDN to punycode); the local part is kept as written.
import { domainToASCII } from 'node:url';

export interface Mailbox {
  name?: string;
  address: string;
}

// RFC 5321 §4.1.2 dot-atom local part, or a quoted string without control characters.
const LOCAL_RE = /^(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*|"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*")$/;
const UTF8_LOCAL_RE = /^[^\s\p{Cc}@<>()[\]\\,;:".]+(?:\.[^\s\p{Cc}@<>()[\]\\,;:".]+)*$/u;
const LABEL_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** A bare address with its domain normalised, or null when it is not a deliverable address. */
export function normaliseAddress(input: string): string | null {
  const at = input.lastIndexOf('@');
  if (at <= 0 || at === input.length - 1) return null;
  const local = input.slice(0, at);
  // The second form: an internationalised local part (RFC 6531 §3.3 adds UTF-8 to atext; the dot-atom's dots stay
  // where they were: not first, not last, not two together), without specials or controls.
  if (local.length > 64 || !(LOCAL_RE.test(local) || UTF8_LOCAL_RE.test(local))) return null;
  const domain = domainToASCII(input.slice(at + 1).toLowerCase());
  if (!domain || domain.length > 253) return null;
  const labels = domain.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL_RE.test(l)) || /^\d+$/.test(labels[labels.length - 1]!)) return null;
  return `${local}@${domain}`;
}

/**
 * The address with its domain in ASCII (IDNA: `bücher.example` → `xn--bcher-kva.example`), the form domain
 * names are stored in; the local part as given. An address without a domain, or one IDNA refuses, is unchanged.
 */
export function asciiDomainAddress(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 0) return address;
  const domain = domainToASCII(address.slice(at + 1));
  return domain ? `${address.slice(0, at)}@${domain}` : address;
}

/**
 * Whether a display name is one phrase (RFC 5322 §3.2.5: words, each an atom or a quoted string): outside
 * its quoted strings no `<`, `>`, `,` or `;`, and every quote closed. `A <a@x>, B <b@x>` is two addresses,
 * not the name `A <a@x>, B` of the last one; `"Smith, John" <j@x>` is one.
 */
function isPhrase(name: string): boolean {
  let quoted = false;
  for (let i = 0; i < name.length; i++) {
    const c = name[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '<' || c === '>' || c === ',' || c === ';') return false;
  }
  return !quoted;
}

/** Parses `addr` or `Name <addr>` (the name may be quoted): one mailbox. Null when malformed or more than one. */
export function parseMailbox(input: string): Mailbox | null {
  const s = input.trim();
  // No control characters but the tab (a display name may hold one): NUL, CR, LF and the rest never reach a header.
  if (!s || /[\x00-\x08\x0a-\x1f\x7f-\x9f]/.test(s)) return null;
  const angle = /^(.*?)\s*<([^<>]+)>$/.exec(s);
  if (angle) {
    const address = normaliseAddress(angle[2]!.trim());
    let name = angle[1]!.trim();
    if (!address || !isPhrase(name)) return null;
    if (/^"(?:[^"\\]|\\.)*"$/.test(name)) name = name.slice(1, -1).replace(/\\(.)/g, '$1');
    return name ? { name, address } : { address };
  }
  const address = normaliseAddress(s);
  return address ? { address } : null;
}

export const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1);

/** The form used to compare addresses (suppressions, filters): the whole address lower-cased. */
export const addressKey = (address: string) => address.toLowerCase();
