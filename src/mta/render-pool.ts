// Render threads: a small pool of worker threads that compose and DKIM-sign outgoing messages. The delivery
// handler asks the pool and awaits the signed bytes; the main thread keeps to I/O (HTTP, SQL, SMTP). With
// `threads: 0` rendering runs inline (same code, same result), which is what the preview endpoint does.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../core/logger.js';
import { composeMessage, type ComposeInput } from './compose.js';
import { signMessage, type DkimKey } from './dkim.js';

/** A finished message to sign as it is (a raw send: SMTP submission). A Buffer arrives in a thread as a Uint8Array. */
export interface RawMessage {
  raw: Uint8Array;
}

/** Compose (unless the message is finished already), then sign unless `key` is null. What a render thread runs, and the inline path. */
export async function renderMessage(message: ComposeInput | RawMessage, key: DkimKey | null, at: Date): Promise<Buffer> {
  const raw = 'raw' in message ? Buffer.from(message.raw.buffer, message.raw.byteOffset, message.raw.byteLength) : await composeMessage(message);
  return key ? signMessage(raw, key, at) : raw;
}

export interface RenderRequest {
  id: number;
  message: ComposeInput | RawMessage;
  /** The DKIM key; null renders an unsigned message (the box's own system mail). */
  key: { domain: string; selector: string; /** PKCS#8 PEM */ pem: string } | null;
  /** Signature time, epoch ms. */
  at: number;
}

export interface RenderReply {
  id: number;
  raw?: Uint8Array;
  error?: string;
}

/** The thread died or the pool closed: nothing was wrong with the message, so the delivery should be retried. */
export class RenderThreadError extends Error {}

interface Thread {
  worker: Worker;
  pending: Map<number, { resolve(raw: Buffer): void; reject(err: Error): void }>;
}

export class RenderPool {
  private threads: Thread[] = [];
  private nextId = 1;
  private closed = false;

  constructor(
    size: number,
    private readonly log: Logger,
  ) {
    for (let i = 0; i < size; i++) this.threads.push(this.spawn());
  }

  /** The message composed and signed; rejects when it cannot be built or signed. */
  render(message: ComposeInput | RawMessage, key: RenderRequest['key'], at: Date): Promise<Buffer> {
    if (this.closed) return Promise.reject(new RenderThreadError('render pool closed'));
    if (this.threads.length === 0) return renderMessage(message, key && { domain: key.domain, selector: key.selector, privateKey: key.pem }, at);
    // The least busy thread.
    const thread = this.threads.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
    const id = this.nextId++;
    return new Promise<Buffer>((resolve, reject) => {
      thread.pending.set(id, { resolve, reject });
      thread.worker.postMessage({ id, message, key, at: at.getTime() } satisfies RenderRequest);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const threads = this.threads;
    this.threads = [];
    await Promise.all(threads.map((t) => t.worker.terminate()));
    for (const t of threads) for (const w of t.pending.values()) w.reject(new RenderThreadError('render pool closed'));
  }

  private spawn(): Thread {
    // Beside this file: render-worker.ts under tsx (tests), render-worker.js in dist.
    const ext = extname(fileURLToPath(import.meta.url));
    const url = new URL(`./render-worker${ext}`, import.meta.url).href;
    // A worker does not inherit tsx's loader hooks on Node 20: under tsx, the worker registers them first.
    const worker =
      ext === '.ts'
        ? new Worker(`import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(url)}); });`, { eval: true })
        : new Worker(new URL(url));
    worker.unref();
    const thread: Thread = { worker, pending: new Map() };
    worker.on('message', (reply: RenderReply) => {
      const waiting = thread.pending.get(reply.id);
      if (!waiting) return;
      thread.pending.delete(reply.id);
      if (reply.raw) waiting.resolve(Buffer.from(reply.raw.buffer, reply.raw.byteOffset, reply.raw.byteLength));
      else waiting.reject(new Error(reply.error ?? 'render failed'));
    });
    let dead = false;
    const fail = (err: Error) => {
      if (dead) return;
      dead = true;
      for (const w of thread.pending.values()) w.reject(new RenderThreadError(err.message));
      thread.pending.clear();
      if (this.closed) return;
      // A thread that died is replaced; what it held was rejected and the delivery job retries it.
      this.log.error({ err }, 'render thread exited; starting another');
      const i = this.threads.indexOf(thread);
      if (i >= 0) this.threads[i] = this.spawn();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`render thread exited with code ${code}`)));
    return thread;
  }
}
