// RFC 4648 §6 base32, lower-case and unpadded: a token that survives case-folding (an e-mail address's local
// part, a URL typed by hand) and needs no escaping in a URL or an address.
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const VALUES = new Map([...ALPHABET].map((c, i) => [c, i]));

export function base32Encode(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

/** The bytes of `text` (any case), or null when it is not unpadded base32 of whole bytes. */
export function base32Decode(text: string): Buffer | null {
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const c of text.toLowerCase()) {
    const v = VALUES.get(c);
    if (v === undefined) return null;
    value = (value << 5) | v;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
    value &= (1 << bits) - 1;
  }
  // Leftover bits must be fewer than a character's and zero (a canonical encoding).
  if (bits >= 5 || value !== 0) return null;
  return Buffer.from(out);
}
