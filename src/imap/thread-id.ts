// RFC 8474 §5 THREADID: the same for the messages of one thread, stable for the life of a message, the same in
// every mailbox of the account. Here: the root of the message's own References chain (its first msg-id, else the
// In-Reply-To), or the message's own Message-ID when it starts a thread, hashed; computed from the sort keys
// stored with each message (migration 029), so it never changes once stored and costs no parse. Threads are
// not joined afterwards: a reply that names its parent by In-Reply-To alone, or with References cut short of
// the root, starts a thread id of its own (THREAD REFERENCES, which also joins by subject, may join them).
import { createHash } from 'node:crypto';
import type { SortKeys } from '../mailstore/types.js';

/** The THREADID of a message from its stored sort keys (`blobId` names it when it has no msg-id at all). */
export function threadId(keys: SortKeys | null, blobId: string): string {
  const root = keys ? (keys.x[0] ?? keys.m) : null;
  if (!root) return `T${blobId.slice(0, 24)}`;
  return `T${createHash('sha256').update(root).digest('hex').slice(0, 24)}`;
}
