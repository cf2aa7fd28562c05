// An inbound authentication thread (see auth.ts): runs mailauth on the messages the MX hands it,
// with its own resolver built from the box's DNS configuration and its own answer cache, and answers the
// verdict only.
import { getHeapStatistics } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { cachedLookups } from '../../dns/cached-lookups.js';
import { createResolver } from '../../dns/resolver.js';
import { checkMessage, loadMailauth, type AuthReply, type AuthRequest, type AuthWorkerData } from './auth.js';

// mailauth before the first message (messages wait in the port until the listener below is attached), so a
// check's DNS answers are timed from its request, not from the library's load.
await loadMailauth();

const data = workerData as AuthWorkerData;
// The caller's clock (a fake one in tests) as of its last request, moved on by real time since: answers are
// kept for the cache's time on that clock, as they are when the check runs on the main thread.
let clock = { at: Date.now(), received: Date.now() };
const lookup = cachedLookups(createResolver(data.dnsServers, data.dnsTimeoutMs), () => clock.at + (Date.now() - clock.received));

// Answers finished in one turn of this thread's event loop go back together (one wake-up of the caller).
const outbox: AuthReply[] = [];
const answer = (reply: AuthReply) => {
  if (outbox.push(reply) === 1) setImmediate(() => parentPort!.postMessage(outbox.splice(0)));
};

parentPort!.on('message', (requests: AuthRequest[] | { heap: true }) => {
  if (!Array.isArray(requests)) {
    const h = getHeapStatistics();
    parentPort!.postMessage({ heap: { used: h.used_heap_size, total: h.total_heap_size, external: h.external_memory } });
    return;
  }
  for (const req of requests) {
    clock = { at: req.now, received: Date.now() };
    checkMessage(req.input, lookup).then(
      (verdict) => answer({ id: req.id, verdict }),
      (err: unknown) => answer({ id: req.id, error: err instanceof Error ? err.message : String(err) }),
    );
  }
});
