// DKIM signing (RFC 6376): rsa-sha256 and ed25519-sha256 (RFC 8463), relaxed/relaxed. Written here rather than through mailauth's signer
// because that one parses the PEM key and streams the message through a parser on every call (about 1.5 ms
// of main-thread CPU per message); here the key is a parsed KeyObject the caller keeps, the canonicalisation
// is a few string passes, and the RSA operation runs where it costs least: in a render thread (render-pool.ts)
// inline, on the main thread on libuv's thread pool (async crypto.sign). mailauth verifies what this produces
// in the tests. Several keys sign one message side by side (a domain on Ed25519 also signs with RSA, for the
// receivers that know only RSA: RFC 8463 §4): each signature is computed over the message as it was, and a
// verifier that does not know an algorithm ignores that signature (RFC 6376 §6.1.1).
import { createHash, createPrivateKey, hash, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { isMainThread } from 'node:worker_threads';

export interface DkimKey {
  domain: string;
  selector: string;
  /** A parsed private key, or PKCS#8 PEM (parsed once: privateKeyOf): RSA or Ed25519; the key says which. */
  privateKey: KeyObject | string;
}

/** The signing algorithms (RFC 6376 §3.3, RFC 8463 §3), by the key's type. */
const ALGORITHMS: Record<string, string> = { rsa: 'rsa-sha256', ed25519: 'ed25519-sha256' };

// Parsed keys by PEM: parsing one costs more CPU than the signature itself. A box has a few keys per domain.
const parsedKeys = new Map<string, KeyObject>();
const MAX_PARSED_KEYS = 1000;

/** The parsed key of a PEM, parsed once per thread (throws if it is not a private key). */
export function privateKeyOf(pem: string): KeyObject {
  let key = parsedKeys.get(pem);
  if (!key) {
    key = createPrivateKey(pem);
    if (parsedKeys.size >= MAX_PARSED_KEYS) parsedKeys.clear();
    parsedKeys.set(pem, key);
  }
  return key;
}

/**
 * The header fields signed when present, each instance (RFC 6376 §5.4.1's recommendations plus the MIME
 * and List-* fields). `From` is signed once more than it occurs, so that a From added in transit breaks the
 * signature (§8.15).
 */
const SIGNED_FIELDS = [
  'from', 'sender', 'reply-to', 'subject', 'date', 'message-id', 'to', 'cc', 'mime-version', 'content-type',
  'content-transfer-encoding', 'content-id', 'content-description', 'resent-date', 'resent-from', 'resent-sender',
  'resent-to', 'resent-cc', 'resent-message-id', 'in-reply-to', 'references', 'list-id', 'list-help',
  'list-unsubscribe', 'list-unsubscribe-post', 'list-subscribe', 'list-post', 'list-owner', 'list-archive',
];
const OVERSIGNED = new Set(['from']);

interface HeaderField {
  /** Lower-cased name. */
  name: string;
  /** The whole field as it appears, folds included, without its final CRLF. */
  raw: string;
}

function splitMessage(raw: Buffer): { header: string; body: Buffer } {
  let end = raw.indexOf('\r\n\r\n');
  let sep = 4;
  if (end < 0) {
    const lf = raw.indexOf('\n\n');
    if (lf >= 0) [end, sep] = [lf, 2];
  }
  if (end < 0) return { header: raw.toString('latin1'), body: Buffer.alloc(0) };
  // latin1 maps bytes 1:1, so 8-bit header bytes are canonicalised and hashed unchanged.
  return { header: raw.subarray(0, end).toString('latin1'), body: raw.subarray(end + sep) };
}

function parseFields(header: string): HeaderField[] {
  const fields: HeaderField[] = [];
  for (const line of header.split(/\r?\n/)) {
    if ((line.startsWith(' ') || line.startsWith('\t')) && fields.length > 0) fields[fields.length - 1]!.raw += `\r\n${line}`;
    else if (line.length > 0) fields.push({ name: line.slice(0, Math.max(0, line.indexOf(':'))).trim().toLowerCase(), raw: line });
  }
  return fields;
}

/** Relaxed header canonicalisation (§3.4.2), with the trailing CRLF. */
export function relaxedHeader(raw: string): string {
  const colon = raw.indexOf(':');
  const name = raw.slice(0, colon).trim().toLowerCase();
  const value = raw
    .slice(colon + 1)
    .replace(/\r?\n/g, '')
    .replace(/[ \t]+/g, ' ')
    .trim();
  return `${name}:${value}\r\n`;
}

/**
 * The body with CRLF line ends (a bare LF becomes CRLF, as on the wire), when that is its relaxed canonical
 * form up to trailing empty lines: no tab, no run of spaces, no space at a line end. Null otherwise. What
 * compose.ts builds always qualifies (QP and base64 leave no such whitespace; a text part may have bare LFs).
 */
function relaxedAsIs(body: Buffer): Buffer | null {
  const n = body.length;
  let bareLf = 0;
  for (let i = 0; i < n; i++) {
    const c = body[i];
    if (c === 0x09) return null;
    if (c === 0x20) {
      const d = body[i + 1];
      if (i + 1 === n || d === 0x20 || d === 0x0d || d === 0x0a) return null;
    } else if (c === 0x0a && (i === 0 || body[i - 1] !== 0x0d)) bareLf++;
  }
  if (bareLf === 0) return body;
  const out = Buffer.allocUnsafe(n + bareLf);
  let o = 0;
  let from = 0;
  for (let i = body.indexOf(0x0a); i >= 0; i = body.indexOf(0x0a, i + 1)) {
    if (i > 0 && body[i - 1] === 0x0d) continue;
    o += body.copy(out, o, from, i);
    out[o++] = 0x0d;
    from = i; // the LF itself is copied with the next stretch
  }
  body.copy(out, o, from, n);
  return out;
}

const CRLF = Buffer.from('\r\n');

/** The line length the DKIM-Signature field is folded to (RFC 5322 §2.1.1's SHOULD). */
const MAX_LINE = 78;

/** sha256 of the relaxed body canonicalisation (§3.4.4), base64. */
export function relaxedBodyHash(body: Buffer): string {
  const asIs = relaxedAsIs(body);
  if (asIs) {
    // Only the trailing empty lines go: the bytes are hashed as they are.
    let end = asIs.length;
    while (end >= 2 && asIs[end - 2] === 0x0d && asIs[end - 1] === 0x0a) end -= 2;
    if (end === 0) return hash('sha256', '', 'base64');
    if (end < asIs.length) return hash('sha256', asIs.subarray(0, end + 2), 'base64');
    return createHash('sha256').update(asIs).update(CRLF).digest('base64');
  }
  const lines = body.toString('latin1').split(/\r?\n/);
  const out: string[] = lines.map((l) => l.replace(/[ \t]+/g, ' ').replace(/ $/, ''));
  while (out.length > 0 && out[out.length - 1] === '') out.pop();
  const canon = out.length === 0 ? '' : `${out.join('\r\n')}\r\n`;
  return createHash('sha256').update(canon, 'latin1').digest('base64');
}

/**
 * The signature of the header hash input: RSA (~0.25 ms for 2048 bits) over the data with SHA-256; Ed25519 over
 * the SHA-256 of the data (RFC 8463 §3: PureEdDSA of the hash, not of the data itself). On the main thread it
 * goes to libuv's pool so that the event loop keeps serving. A render thread exists for this work: there it
 * signs inline, because a pool job would add two thread hand-offs per message and queue SQLite's statements
 * (the same 4 pool threads) behind the signature.
 */
function signature(data: string, key: KeyObject): Buffer | Promise<Buffer> {
  const bytes = Buffer.from(data, 'latin1');
  const [algorithm, input] = key.asymmetricKeyType === 'ed25519' ? [null, createHash('sha256').update(bytes).digest()] : ['sha256', bytes];
  if (!isMainThread) return cryptoSign(algorithm, input, key);
  return new Promise((resolve, reject) => cryptoSign(algorithm, input, key, (err, sig) => (err ? reject(err) : resolve(sig))));
}

/**
 * Returns the message with a DKIM-Signature header for each key prepended, in the order of `keys` (the first
 * on top). Throws if a key cannot sign (neither RSA nor Ed25519).
 */
export async function signMessage(raw: Buffer, keys: DkimKey | readonly DkimKey[], at: Date): Promise<Buffer> {
  const list = Array.isArray(keys) ? (keys as readonly DkimKey[]) : [keys as DkimKey];
  const privateKeys = list.map((key) => {
    const privateKey = typeof key.privateKey === 'string' ? privateKeyOf(key.privateKey) : key.privateKey;
    if (!ALGORITHMS[privateKey.asymmetricKeyType ?? '']) {
      throw new Error(`DKIM signing failed: expected an RSA or Ed25519 key, got ${privateKey.asymmetricKeyType ?? 'none'}`);
    }
    return privateKey;
  });
  const { header, body } = splitMessage(raw);
  const fields = parseFields(header);

  // Each signed name takes that field's instances from the bottom up (§5.4.2).
  const names: string[] = [];
  const canon: string[] = [];
  for (const name of SIGNED_FIELDS) {
    const present = fields.filter((f) => f.name === name);
    for (let i = present.length - 1; i >= 0; i--) {
      names.push(name);
      canon.push(relaxedHeader(present[i]!.raw));
    }
    if (OVERSIGNED.has(name)) names.push(name); // a non-existent instance signs as empty (§5.4)
  }
  const signedHeaders = canon.join('');
  const bodyHash = relaxedBodyHash(body);
  const fieldsOut = await Promise.all(list.map((key, i) => signatureField(key, privateKeys[i]!, names, signedHeaders, bodyHash, at)));
  return Buffer.concat([...fieldsOut.map((f) => Buffer.from(f, 'latin1')), raw]);
}

/** One DKIM-Signature field, folded, with its CRLF. */
async function signatureField(key: DkimKey, privateKey: KeyObject, names: string[], signedHeaders: string, bodyHash: string, at: Date): Promise<string> {
  const tags = [
    'v=1',
    `a=${ALGORITHMS[privateKey.asymmetricKeyType!]}`,
    'c=relaxed/relaxed',
    `d=${key.domain}`,
    `s=${key.selector}`,
    `t=${Math.floor(at.getTime() / 1000)}`,
    `bh=${bodyHash}`,
  ];
  // Folded to lines of at most 78 characters (RFC 5322 §2.1.1): between tags, inside h= after a colon and
  // inside b= (§3.5 allows FWS there); relaxed canonicalisation ignores the folds. A fold only between tags
  // left the h= of a message with Reply-To, Cc and List-Unsubscribe at 95 characters, and put the first 72
  // characters of b= after it (141).
  const hTag = `h=${names.join(':')};`;
  let unsigned = 'DKIM-Signature:';
  let line = unsigned.length;
  const append = (atom: string, separator: string) => {
    if (line + separator.length + atom.length > MAX_LINE) {
      unsigned += `\r\n\t${atom}`;
      line = 1 + atom.length;
    } else {
      unsigned += `${separator}${atom}`;
      line += separator.length + atom.length;
    }
  };
  for (const tag of tags) append(`${tag};`, ' ');
  // The list is split after its colons only when it does not fit on a line of its own.
  if (1 + hTag.length <= MAX_LINE) append(hTag, ' ');
  else hTag.split(/(?<=:)/).forEach((atom, i) => append(atom, i === 0 ? ' ' : ''));
  append('b=', ' ');
  const data = signedHeaders + relaxedHeader(unsigned).slice(0, -2); // the signature field itself, without CRLF
  const b = (await signature(data, privateKey)).toString('base64');
  // The rest of the line after "b=", then continuation lines of "\t " and 72 characters (74 columns).
  const first = b.slice(0, Math.max(0, MAX_LINE - line));
  const folded = first + (b.slice(first.length).match(/.{1,72}/g) ?? []).map((chunk) => `\r\n\t ${chunk}`).join('');
  return `${unsigned}${folded}\r\n`;
}
