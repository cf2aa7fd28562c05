// The SecretBox: AES-256-GCM seal/open, tampering refused, opened values remembered by their sealed text.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/core/secrets.js';

t.test('seal and open; a tampered or foreign value does not open', async (t) => {
  const box = new SecretBox(randomBytes(32));
  const sealed = box.seal('-----BEGIN PRIVATE KEY-----');
  t.not(box.seal('-----BEGIN PRIVATE KEY-----'), sealed, 'a fresh IV per seal');
  t.equal(box.open(sealed), '-----BEGIN PRIVATE KEY-----');
  t.equal(box.open(sealed), '-----BEGIN PRIVATE KEY-----', 'opened again (remembered)');
  const [v, iv, tag, ct] = sealed.split('.');
  const flipped = `${v}.${iv}.${tag}.${ct!.slice(0, -2)}${ct!.slice(-2) === 'AA' ? 'AB' : 'AA'}`;
  t.throws(() => box.open(flipped), 'a changed ciphertext fails authentication');
  t.throws(() => new SecretBox(randomBytes(32)).open(sealed), 'another master key cannot open it');
  t.throws(() => box.open('not sealed'), /not a sealed value/);
});

t.test('deriveKey: 32 bytes per purpose, stable, independent of other purposes and other master keys', async (t) => {
  const master = randomBytes(32);
  const box = new SecretBox(master);
  const a = box.deriveKey('unsubscribe-links');
  t.equal(a.length, 32);
  t.same(new SecretBox(master).deriveKey('unsubscribe-links'), a, 'the same master key and purpose give the same key');
  t.notSame(box.deriveKey('other-purpose'), a, 'another purpose, another key');
  t.notSame(new SecretBox(randomBytes(32)).deriveKey('unsubscribe-links'), a, 'another box, another key');
  t.notSame(a, master, 'not the master key itself');
});
