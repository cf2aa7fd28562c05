// What a cached value holds, in bytes, estimated from its shape: the in-memory caches are bounded by bytes
// (docs/PERFORMANCE.md, "Caches and their ceilings"), not only by entries, because one entry's size follows its
// input (a DNS TXT answer, a message's BODYSTRUCTURE, a template's source).
//
// The estimate follows V8's layout closely enough to bound memory, not to account it exactly: a string is its
// length (one byte a character; two for one outside Latin-1 would at most double it) plus a header, an object or
// array a header plus a slot per property or element, a Buffer/typed array its bytes. Shared sub-objects are
// counted once; the walk stops at `limit` (a value past it is treated as `limit`, i.e. too large to keep).

const HEADER = 16;
const SLOT = 8;

export function approxBytes(value: unknown, limit = Number.MAX_SAFE_INTEGER): number {
  const seen = new Set<object>();
  const stack: unknown[] = [value];
  let total = 0;
  while (stack.length > 0) {
    if (total >= limit) return limit;
    const v = stack.pop();
    switch (typeof v) {
      case 'string':
        total += HEADER + v.length;
        continue;
      case 'number':
      case 'boolean':
      case 'bigint':
      case 'undefined':
      case 'symbol':
        total += SLOT;
        continue;
      case 'function':
        total += HEADER * 4; // a closure: its context is not walked
        continue;
    }
    if (v === null) {
      total += SLOT;
      continue;
    }
    const o = v as object;
    if (seen.has(o)) continue;
    seen.add(o);
    if (ArrayBuffer.isView(o)) {
      total += HEADER * 4 + o.byteLength;
    } else if (o instanceof ArrayBuffer) {
      total += HEADER * 2 + o.byteLength;
    } else if (o instanceof Map) {
      total += HEADER * 2;
      for (const [k, x] of o) {
        total += 3 * SLOT;
        stack.push(k, x);
      }
    } else if (o instanceof Set) {
      total += HEADER * 2;
      for (const x of o) {
        total += 2 * SLOT;
        stack.push(x);
      }
    } else if (Array.isArray(o)) {
      total += HEADER + o.length * SLOT;
      for (const x of o) if (x !== null && (typeof x === 'object' || typeof x === 'string')) stack.push(x);
    } else if (o instanceof Date || o instanceof RegExp) {
      total += HEADER * 2;
    } else {
      const keys = Object.keys(o);
      total += HEADER + keys.length * SLOT;
      for (const k of keys) {
        const x = (o as Record<string, unknown>)[k];
        if (x !== null && (typeof x === 'object' || typeof x === 'string' || typeof x === 'function')) stack.push(x);
      }
    }
  }
  return Math.min(total, limit);
}
