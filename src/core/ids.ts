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

/** Public id with a type prefix, e.g. `em_…`, `wf_…`. */
export function newPublicId(prefix: string): string {
  return `${prefix}_${randomBase62(24)}`;
}

/** The shape of an API key value: `sk_live_…` or `sk_test_…` (the box issues 32 base62 characters; operators may bring their own). */
export const API_KEY_PATTERN = /^sk_(live|test)_[A-Za-z0-9_-]{16,128}$/;
