// A render thread: composes and DKIM-signs messages for the delivery handler (see render-pool.ts), so that
// MIME building, canonicalisation and hashing run beside the main thread's event loop rather than on it.
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import { renderMessage, type RenderReply, type RenderRequest } from './render-pool.js';

const keys = new Map<string, KeyObject>();
function keyFor(pem: string): KeyObject {
  let key = keys.get(pem);
  if (!key) {
    if (keys.size > 1000) keys.clear();
    keys.set(pem, (key = createPrivateKey(pem)));
  }
  return key;
}

parentPort!.on('message', (req: RenderRequest) => {
  void (async (): Promise<RenderReply> => {
    try {
      const key = req.key && { domain: req.key.domain, selector: req.key.selector, privateKey: keyFor(req.key.pem) };
      const signed = await renderMessage(req.message, key, new Date(req.at));
      return { id: req.id, raw: signed };
    } catch (err) {
      return { id: req.id, error: err instanceof Error ? err.message : String(err) };
    }
  })().then((reply) => parentPort!.postMessage(reply)); // copied, not transferred: a small Buffer shares Node's pool
});
