// Lower-case unpadded base32 (RFC 4648 §6): the RFC's test vectors, round trips of every length, any case
// read back, and what is refused (foreign characters, leftover bits that are not zero or not a whole byte).
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { base32Decode, base32Encode } from '../../src/core/base32.js';

t.test('RFC 4648 §10 vectors, lower-cased and without padding', async (t) => {
  const vectors: Array<[string, string]> = [
    ['', ''],
    ['f', 'my'],
    ['fo', 'mzxq'],
    ['foo', 'mzxw6'],
    ['foob', 'mzxw6yq'],
    ['fooba', 'mzxw6ytb'],
    ['foobar', 'mzxw6ytboi'],
  ];
  for (const [plain, encoded] of vectors) {
    t.equal(base32Encode(Buffer.from(plain)), encoded, `encode ${JSON.stringify(plain)}`);
    t.equal(base32Decode(encoded)?.toString(), plain, `decode ${encoded}`);
    t.equal(base32Decode(encoded.toUpperCase())?.toString(), plain, `decode ${encoded.toUpperCase()} (any case)`);
  }
});

t.test('round trips', async (t) => {
  for (let n = 0; n <= 40; n++) {
    const bytes = randomBytes(n);
    const text = base32Encode(bytes);
    t.equal(text.length, Math.ceil((n * 8) / 5), `${n} bytes → ${Math.ceil((n * 8) / 5)} characters`);
    t.match(text, /^[a-z2-7]*$/);
    t.same(base32Decode(text), bytes);
  }
});

t.test('refused', async (t) => {
  for (const bad of ['mzxw6=', 'mzx!', 'mzxw1', 'm', 'mzz', 'mzxw7']) t.equal(base32Decode(bad), null, bad);
});
