// A render thread: composes and DKIM-signs messages for the delivery handler (see render-pool.ts), so that
// MIME building, canonicalisation and hashing run beside the main thread's event loop rather than on it.
// When the pool was started with an MTA configuration (`workerData.mta`), the thread also owns an MTA — its
// own resolver, route rules and SMTP connection pool — and runs the SMTP transactions of the message it
// built: only the outcomes go back to the main thread, never the message.
import { getHeapStatistics } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { createLogger } from '../core/logger.js';
import { nameThisThread, niceThisThread } from '../core/worker-thread.js';
import { htmlToText } from './compose.js';
import { createResolver } from '../dns/resolver.js';
import { createMta } from './deliver.js';
import { dkimKeysOf, renderMessage, type HeapRequest, type RenderReply, type RenderRequest, type RenderWorkerData, type TextRequest } from './render-pool.js';
import type { DeliveryResult } from './types.js';

const data = workerData as RenderWorkerData | undefined;
const config = data?.mta;
niceThisThread(data?.nice ?? 0);
nameThisThread(`mail-render-${data?.index ?? 0}`);
// The caller's clock (a fake one in tests) as of its last request, moved on by real time since: MX answers
// are kept for `dnsCacheMs` on that clock, as they are when the MTA runs on the main thread.
let clock = { at: Date.now(), received: Date.now() };
const mta = config
  ? createMta({
      ...config.settings,
      dns: createResolver(config.settings.resolver.servers, config.settings.resolver.timeoutMs),
      now: () => clock.at + (Date.now() - clock.received),
      log: createLogger(config.logLevel).child({ component: 'mta', thread: data?.index ?? 0 }),
    })
  : undefined;

parentPort!.on('message', (req: RenderRequest | TextRequest | HeapRequest | { close: true }) => {
  if ('heap' in req) {
    const h = getHeapStatistics();
    parentPort!.postMessage({ id: req.id, heap: { used: h.used_heap_size, total: h.total_heap_size, external: h.external_memory } } satisfies RenderReply);
    return;
  }
  if ('htmlToText' in req) {
    let reply: RenderReply;
    try {
      reply = { id: req.id, text: htmlToText(req.htmlToText) };
    } catch (err) {
      reply = { id: req.id, error: err instanceof Error ? err.message : String(err), threadError: true };
    }
    parentPort!.postMessage(reply);
    return;
  }
  if ('close' in req) {
    // Idle sessions say QUIT; the pool is gone once they have.
    void (mta?.close() ?? Promise.resolve()).finally(() => parentPort!.postMessage({ closed: true }));
    return;
  }
  void (async (): Promise<RenderReply> => {
    let signed: Buffer;
    try {
      signed = await renderMessage(req.message, dkimKeysOf(req.keys), new Date(req.at));
    } catch (err) {
      return { id: req.id, error: err instanceof Error ? err.message : String(err) };
    }
    if (!req.deliveries) return { id: req.id, raw: signed };
    if (!mta) return { id: req.id, error: 'this render thread does not deliver' };
    if (req.now !== undefined) clock = { at: req.now, received: Date.now() };
    // The MTA never throws for remote trouble; anything else is a programming error, reported as a failed
    // thread (the job retries) rather than as a broken message.
    const results: DeliveryResult[] = await Promise.all(req.deliveries.map((d) => mta.deliver({ ...d, raw: signed })));
    return { id: req.id, results };
  })().then(
    (reply) => parentPort!.postMessage(reply), // copied, not transferred: a small Buffer shares Node's pool
    (err: unknown) => parentPort!.postMessage({ id: req.id, error: String(err), threadError: true } satisfies RenderReply),
  );
});
