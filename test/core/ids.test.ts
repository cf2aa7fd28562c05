// Random identifiers: the right length and alphabet, every character used, no two alike across pool refills.
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
