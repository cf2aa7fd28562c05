// Identifiers and random tokens.
import { randomFillSync, randomUUID } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Random bytes are drawn from a pool refilled 4 KB at a time (as crypto.randomUUID does): one call into the
// CSPRNG per ~3,000 characters rather than one per identifier.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomByte(): number {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  return pool[poolOffset++]!;
}

/** `length` characters of [0-9A-Za-z], uniformly distributed (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

/** `bytes` random bytes as lower-case hex (from the same pool). */
export function randomHex(bytes: number): string {
  let out = '';
  for (let i = 0; i < bytes; i++) out += randomByte().toString(16).padStart(2, '0');
  return out;
}

/** Opaque resource id (teams, domains, API keys). */
export function newId(): string {
  return randomUUID();
}

/** Characters of a public id that give its creation time: base62 milliseconds, enough until the year 8800. */
const TIME_CHARS = 8;

/** `ms` as TIME_CHARS base62 digits; BASE62 is in ASCII order, so the strings sort as the times do. */
function timeBase62(ms: number): string {
  let out = '';
  for (let i = 0, n = Math.max(0, Math.floor(ms)); i < TIME_CHARS; i++, n = Math.floor(n / 62)) out = BASE62[n % 62]! + out;
  return out;
}

/**
 * Public id with a type prefix, e.g. `em_…`, `wf_…`: 24 base62 characters, the first 8 the creation time in
 * milliseconds and the other 16 random (95 bits). Ids made later sort later, so the unique index on them
 * grows at its end: with wholly random ids every accepted email wrote a leaf page of its own somewhere in
 * `emails.public_id`'s index (into the WAL, and again at the checkpoint), ~20 pages per group commit.
 */
export function newPublicId(prefix: string, now = Date.now()): string {
  return `${prefix}_${timeBase62(now)}${randomBase62(24 - TIME_CHARS)}`;
}

/** The shape of an API key value: `sk_live_…` or `sk_test_…` (the box issues 32 base62 characters; operators may bring their own). */
export const API_KEY_PATTERN = /^sk_(live|test)_[A-Za-z0-9_-]{16,128}$/;
