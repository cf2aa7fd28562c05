// Random identifiers: the right length and alphabet, every character used, no two alike across pool refills;
// public ids sort by their creation time.
import t from 'tap';
import { newPublicId, randomBase62, randomHex } from '../../src/core/ids.js';

t.test('randomBase62 draws uniformly from [0-9A-Za-z] across pool refills', async (t) => {
  const seen = new Set<string>();
  const counts = new Map<string, number>();
  for (let i = 0; i < 2_000; i++) {
    const id = randomBase62(32); // 64,000 characters: ~16 refills of the 4 KB pool
    if (!/^[0-9A-Za-z]{32}$/.test(id)) t.fail(`length or alphabet: ${id}`);
    seen.add(id);
    for (const c of id) counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  t.equal(seen.size, 2_000, 'no repeats');
  t.equal(counts.size, 62, 'every character occurs');
  // Expected ~1,032 per character; a modulo bias or a stuck pool would push some far off.
  const values = [...counts.values()];
  t.ok(Math.min(...values) > 800 && Math.max(...values) < 1_270, `spread ${Math.min(...values)}..${Math.max(...values)}`);
  t.match(newPublicId('em'), /^em_[0-9A-Za-z]{24}$/);
  t.match(randomHex(8), /^[0-9a-f]{16}$/);
  t.not(randomHex(8), randomHex(8));
});

t.test('public ids sort as they were made, and differ within a millisecond', async (t) => {
  const times = [0, 61, 62, 1_000, 1_795_000_000_000, 1_795_000_000_001, 1_795_000_086_400, 4_000_000_000_000];
  const ids = times.map((ms) => newPublicId('em', ms));
  for (const id of ids) t.match(id, /^em_[0-9A-Za-z]{24}$/);
  t.same([...ids].sort(), ids, 'string order is time order');
  const sameMs = new Set(Array.from({ length: 1_000 }, () => newPublicId('em', 1_795_000_000_000)));
  t.equal(sameMs.size, 1_000, 'the random part tells apart ids of one millisecond');
  t.equal(newPublicId('em', 1_795_000_000_000).slice(0, 11), newPublicId('em', 1_795_000_000_000).slice(0, 11), 'the time part is the same for one millisecond');
});
