// Hashing of bearer secrets and authenticated encryption of stored private material.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

/** SHA-256 of a high-entropy secret (API keys): fast lookup by hash, nothing reversible stored. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Constant-time comparison of two strings, length checked first. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

/** Opened values kept by a SecretBox (DKIM keys and webhook secrets in use: a few per domain and endpoint)… */
const OPENED_MAX = 1024;
/** …and their bytes, sealed and opened text (a DKIM key ~5 KiB both; one over an eighth of this is not kept). */
export const OPENED_MAX_BYTES = 2 * 1024 * 1024;

/**
 * AES-256-GCM with the box's master key. Sealed values look like `v1.<iv>.<tag>.<ciphertext>` (base64url).
 * `open` remembers what it opened, keyed by the sealed text (each seal has its own random IV, and a value
 * that opened once is authentic), so the send path and webhook delivery do not decrypt per message.
 */
export class SecretBox {
  private readonly key: Buffer;
  private readonly opened = new Map<string, string>();
  private openedBytes = 0;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('master key must be 32 bytes');
    this.key = key;
  }

  /**
   * A 32-byte key for one purpose (e.g. signing unsubscribe links), derived from the master key with HKDF-SHA256
   * (RFC 5869), the purpose as its info: keys of different purposes are independent, and none reveals the
   * master key. Stable for as long as the master key is.
   */
  deriveKey(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.key, Buffer.alloc(0), `mail-appliance/${purpose}`, 32));
  }

  /** What the opened values held now take (entries, bytes). */
  get openedSize(): { entries: number; bytes: number } {
    return { entries: this.opened.size, bytes: this.openedBytes };
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }

  open(sealed: string): string {
    const known = this.opened.get(sealed);
    if (known !== undefined) return known;
    const plain = this.decrypt(sealed);
    const bytes = 64 + sealed.length + plain.length;
    if (bytes > OPENED_MAX_BYTES / 8) return plain;
    if (this.opened.size >= OPENED_MAX || this.openedBytes + bytes > OPENED_MAX_BYTES) {
      this.opened.clear();
      this.openedBytes = 0;
    }
    this.opened.set(sealed, plain);
    this.openedBytes += bytes;
    return plain;
  }

  private decrypt(sealed: string): string {
    const [version, iv, tag, ct] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || ct === undefined) throw new Error('not a sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }
}
