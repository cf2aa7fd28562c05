// Mailbox passwords: scrypt (node:crypto) with a per-account random salt, compared in constant time.
// Stored as `scrypt$N$r$p$<salt b64>$<hash b64>` so the cost can be raised later without a migration.
import { createHmac, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const N = 16384;
const R = 8;
const P = 1;
const KEY_LEN = 32;

function derive(password: string, salt: Buffer, opts: ScryptOptions, keyLen: number): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password.normalize('NFC'), salt, keyLen, opts, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, { N, r: R, p: P }, KEY_LEN);
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [n, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const salt = Buffer.from(parts[4]!, 'base64');
  const expected = Buffer.from(parts[5]!, 'base64');
  const key = await derive(password, salt, { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 }, expected.length);
  return timingSafeEqual(key, expected);
}

/** Spends the same time as a real check, for unknown logins (no timing oracle for which addresses exist). */
let dummy: Promise<string> | null = null;
export async function burnPasswordCheck(password: string): Promise<void> {
  dummy ??= hashPassword('not-a-password');
  await verifyPassword(password, await dummy);
}

/**
 * Logins verified lately, so that a client that logs in again and again (a phone's every sync, a webmail's every
 * page, a stress tester's every loop) costs one scrypt per `ttlMs`, not one per login: scrypt (~50 ms of CPU,
 * 16 MB, on the thread pool that SQLite's queries share) bounded IMAP to ~20 logins/s on two cores and delayed
 * every other session's reads behind it. The authentication cache of Dovecot (auth_cache_ttl) and others.
 * An entry is an HMAC, under a key of this process only, of the stored hash and the password: a changed password
 * (a new hash) misses, a wrong password misses and pays the full check, and nothing in memory is the password.
 * The account's row is still read at every login (a deleted account fails at once).
 */
export class VerifiedLogins {
  private readonly key = randomBytes(32);
  private readonly entries = new Map<string, number>();

  constructor(
    private readonly now: () => number,
    private readonly ttlMs = 10 * 60_000,
    private readonly max = 10_000,
  ) {}

  private entry(stored: string, password: string): string {
    return createHmac('sha256', this.key).update(stored).update('\u0000').update(password.normalize('NFC')).digest('base64');
  }

  /** Whether `password` matches `stored` (scrypt, or a match remembered for this pair). */
  async verify(password: string, stored: string): Promise<boolean> {
    const key = this.entry(stored, password);
    const until = this.entries.get(key);
    if (until !== undefined && until > this.now()) return true;
    if (until !== undefined) this.entries.delete(key);
    if (!(await verifyPassword(password, stored))) return false;
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, this.now() + this.ttlMs);
    return true;
  }
}
