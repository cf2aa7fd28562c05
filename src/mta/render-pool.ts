// Render threads: a small pool of worker threads that compose and DKIM-sign outgoing messages. The delivery
// handler asks the pool and awaits the signed bytes; the main thread keeps to I/O (HTTP, SQL, SMTP). With
// `threads: 0` rendering runs inline (same code, same result), which is what the preview endpoint does.
//
// Given an MTA configuration, each thread also owns an MTA (createMta: resolver, routes, SMTP connection
// pool) and `renderAndDeliver` runs the whole attempt there — build, sign, SMTP — returning the outcomes
// only: the SMTP sessions' stream handling and TLS then stay off the main thread too. The threads share
// connectionsPerHost between them (thread i holds ⌊c/n⌋, one more for the first c mod n; at least one), so
// the configured limit per destination holds for the box.
import type { Worker } from 'node:worker_threads';
import type { LogLevel } from '../config.js';
import type { Logger } from '../core/logger.js';
import { startWorkerBeside, WORKER_OLD_GENERATION_MB } from '../core/worker-thread.js';
import type { MtaSettings } from './deliver.js';
import { composeMessage, htmlToText, type ComposeInput } from './compose.js';
import { signMessage, type DkimKey } from './dkim.js';
import type { DeliveryRequest, DeliveryResult } from './types.js';

/** What a thread needs to build its own MTA: the config's MTA settings (deliver.ts's mtaOptions) and log level; structured-cloneable. */
export interface MtaThreadConfig {
  /** connectionsPerHost is the whole box's: each thread gets its share. */
  settings: MtaSettings;
  logLevel: LogLevel;
}

export interface RenderWorkerData {
  mta?: MtaThreadConfig;
  /** The thread lowers its CPU priority to this nice value (core/worker-thread.ts niceThisThread). */
  nice?: number;
  /** The thread's place in the pool: its name (mail-render-<index>) and its log lines' `thread`. */
  index: number;
}

/** One destination domain's transaction, as the MTA takes it, without the message (the thread builds it). */
export type ThreadDelivery = Omit<DeliveryRequest, 'raw'>;

/** A finished message to sign as it is (a raw send: SMTP submission). A Buffer arrives in a thread as a Uint8Array. */
export interface RawMessage {
  raw: Uint8Array;
}

/** Compose (unless the message is finished already), then sign with each of `keys` (none: unsigned). What a render thread runs, and the inline path. */
export async function renderMessage(message: ComposeInput | RawMessage, keys: readonly DkimKey[], at: Date): Promise<Buffer> {
  const raw = 'raw' in message ? Buffer.from(message.raw.buffer, message.raw.byteOffset, message.raw.byteLength) : await composeMessage(message);
  return keys.length > 0 ? signMessage(raw, keys, at) : raw;
}

/** A signing key as a render request carries it (structured-cloneable). */
export interface SigningKey {
  domain: string;
  selector: string;
  /** PKCS#8 PEM, RSA or Ed25519. */
  pem: string;
}

/** The keys of a request as dkim.ts takes them. */
export const dkimKeysOf = (keys: readonly SigningKey[]): DkimKey[] => keys.map((k) => ({ domain: k.domain, selector: k.selector, privateKey: k.pem }));

export interface RenderRequest {
  id: number;
  message: ComposeInput | RawMessage;
  /**
   * The DKIM keys, each signing the message once (a domain on Ed25519 signs with RSA beside it); none renders
   * an unsigned message (the box's own system mail).
   */
  keys: SigningKey[];
  /** Signature time, epoch ms. */
  at: number;
  /** Deliver the message to these destinations in the thread and answer the results rather than the message. */
  deliveries?: ThreadDelivery[];
  /** The caller's clock, epoch ms (the thread's DNS cache runs on it). */
  now?: number;
}

/** The text part derived from an html body (compose.ts's htmlToText), off the caller's thread. */
export interface TextRequest {
  id: number;
  htmlToText: string;
}

/** A thread's V8 heap figures, asked for by /metrics. */
export interface HeapRequest {
  id: number;
  heap: true;
}

export interface RenderReply {
  id: number;
  heap?: { used: number; total: number; external: number };
  text?: string;
  raw?: Uint8Array;
  results?: DeliveryResult[];
  error?: string;
  /** The error is the thread's, not the message's (the delivery should be retried). */
  threadError?: boolean;
}

/** The thread died or the pool closed: nothing was wrong with the message, so the delivery should be retried. */
export class RenderThreadError extends Error {}

interface Thread {
  worker: Worker;
  /** Its slot in the pool (its name, its share of connectionsPerHost). */
  index: number;
  /** When it last finished its work (performance.now()); retired once idle for the pool's idleMs. */
  idleSince: number;
  pending: Map<number, { resolve(reply: RenderReply): void; reject(err: Error): void }>;
  /** Deliveries under way in this thread, per destination domain. */
  destinations: Map<string, number>;
  closed?: () => void;
}

/** How long close() lets a thread say QUIT on its SMTP sessions before it is terminated. */
const CLOSE_GRACE_MS = 3_000;

/**
 * A thread with nothing to do for this long is let go (its V8 heap, code and SMTP sessions: ~10–25 MiB each);
 * the next request starts one again (~50 ms). docs/PERFORMANCE.md "Memory".
 */
export const RENDER_THREAD_IDLE_MS = 60_000;

export class RenderPool {
  /** The started threads (at most `size`); they start on demand and retire when idle. */
  private threads: Thread[] = [];
  private retireTimer: NodeJS.Timeout | undefined;
  private nextId = 1;
  private closed = false;

  private readonly mtaConfig: MtaThreadConfig | undefined;

  /**
   * `nice`: the threads' CPU priority (Linux nice, 0 = as the process): message building and SMTP are the
   * background work of a box whose main thread answers the API and the SMTP listeners.
   */
  constructor(
    private readonly size: number,
    private readonly log: Logger,
    mta?: MtaThreadConfig,
    private readonly nice = 0,
    private readonly idleMs = RENDER_THREAD_IDLE_MS,
  ) {
    this.mtaConfig = mta && size > 0 ? mta : undefined;
  }

  /** Threads running now (they start with the first request and retire after idleMs without one). */
  get running(): number {
    return this.threads.length;
  }

  /** Each running thread's V8 heap (asked of the thread; a busy thread answers after its current turn). */
  async heapStatistics(): Promise<Array<{ thread: string; used: number; total: number; external: number }>> {
    return Promise.all(
      this.threads.map(async (t) => {
        const reply = await this.send(t, { id: 0, heap: true });
        return { thread: `render-${t.index}`, used: reply.heap!.used, total: reply.heap!.total, external: reply.heap!.external };
      }),
    ).catch(() => []);
  }

  /** The threads run SMTP as well (renderAndDeliver may be used). */
  get delivers(): boolean {
    return this.mtaConfig !== undefined;
  }

  /**
   * Builds and signs the message in a thread and delivers it there to every destination; the results in
   * order. Rejects with RenderThreadError when the thread died (the attempt should be retried), with another
   * error when the message could not be built or signed (nothing was sent).
   */
  async renderAndDeliver(message: ComposeInput | RawMessage, keys: SigningKey[], at: Date, deliveries: ThreadDelivery[], now: Date): Promise<DeliveryResult[]> {
    if (!this.mtaConfig) throw new Error('this render pool does not deliver');
    const reply = await this.request({ id: 0, message, keys, at: at.getTime(), deliveries, now: now.getTime() });
    return reply.results!;
  }

  /** The message composed and signed; rejects when it cannot be built or signed. */
  render(message: ComposeInput | RawMessage, keys: SigningKey[], at: Date): Promise<Buffer> {
    if (this.closed) return Promise.reject(new RenderThreadError('render pool closed'));
    if (this.size === 0) return renderMessage(message, dkimKeysOf(keys), at);
    return this.request({ id: 0, message, keys, at: at.getTime() }).then((reply) => Buffer.from(reply.raw!.buffer, reply.raw!.byteOffset, reply.raw!.byteLength));
  }

  /** compose.ts's htmlToText in a thread (inline without threads): the send path's derived text part. */
  async htmlToText(html: string): Promise<string> {
    if (this.size === 0 || this.closed) return htmlToText(html);
    return (await this.request({ id: 0, htmlToText: html })).text!;
  }

  /** To the least busy thread; resolves with a reply that has no error. */
  private request(req: RenderRequest | TextRequest): Promise<RenderReply> {
    if (this.closed) return Promise.reject(new RenderThreadError('render pool closed'));
    // On demand: a thread starts when none runs, or when every running one is busy and a slot is free.
    if (this.threads.length < this.size && this.threads.every((t) => t.pending.size > 0)) this.threads.push(this.spawn(this.freeIndex()));
    // A delivery goes to the thread with the fewest deliveries under way to its destinations (each thread
    // holds only its share of connectionsPerHost: a thread whose share is busy would make it wait while
    // another has a free session); otherwise, and on ties, to the least busy thread.
    const domains = 'deliveries' in req && req.deliveries ? req.deliveries.map((d) => d.domain) : [];
    const load = (t: Thread) => domains.reduce((n, d) => n + (t.destinations.get(d) ?? 0), 0);
    const thread = this.threads.reduce((a, b) => {
      const la = load(a);
      const lb = load(b);
      return lb < la || (lb === la && b.pending.size < a.pending.size) ? b : a;
    });
    for (const d of domains) thread.destinations.set(d, (thread.destinations.get(d) ?? 0) + 1);
    return this.send(thread, req).finally(() => {
      for (const d of domains) {
        const n = (thread.destinations.get(d) ?? 1) - 1;
        if (n > 0) thread.destinations.set(d, n);
        else thread.destinations.delete(d);
      }
    });
  }

  /** Posts `req` to `thread`; resolves with its reply (or rejects). */
  private send(thread: Thread, req: RenderRequest | TextRequest | HeapRequest): Promise<RenderReply> {
    const id = this.nextId++;
    return new Promise<RenderReply>((resolve, reject) => {
      // A metrics scrape's heap question is not work: it does not keep an idle thread from retiring.
      const settled = () => {
        if (thread.pending.size === 0 && !('heap' in req)) thread.idleSince = performance.now();
      };
      thread.pending.set(id, {
        resolve: (reply) => {
          settled();
          resolve(reply);
        },
        reject: (err) => {
          settled();
          reject(err);
        },
      });
      thread.worker.postMessage({ ...req, id } satisfies RenderRequest | TextRequest | HeapRequest);
    });
  }

  /** The lowest slot no running thread holds. */
  private freeIndex(): number {
    let i = 0;
    while (this.threads.some((t) => t.index === i)) i++;
    return i;
  }

  /** Lets go of the threads idle for idleMs (checked every idleMs / 4 while any runs). */
  private retireIdle(): void {
    const now = performance.now();
    for (const t of [...this.threads]) {
      if (t.pending.size > 0 || now - t.idleSince < this.idleMs) continue;
      this.threads.splice(this.threads.indexOf(t), 1);
      void this.stopThread(t);
    }
    if (this.threads.length === 0 && this.retireTimer) {
      clearInterval(this.retireTimer);
      this.retireTimer = undefined;
    }
  }

  /** Asks the thread to say QUIT on its SMTP sessions (within CLOSE_GRACE_MS), then ends it. */
  private async stopThread(t: Thread): Promise<void> {
    if (this.mtaConfig) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, CLOSE_GRACE_MS);
        t.closed = () => {
          clearTimeout(timer);
          resolve();
        };
        t.worker.postMessage({ close: true });
      });
    }
    await t.worker.terminate();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.retireTimer);
    const threads = this.threads;
    this.threads = [];
    // Each thread's SMTP pool finishes its transactions and says QUIT, within a grace period.
    await Promise.all(threads.map((t) => this.stopThread(t)));
    for (const t of threads) for (const w of t.pending.values()) w.reject(new RenderThreadError('render pool closed'));
  }

  private spawn(index: number): Thread {
    const mta = this.mtaConfig;
    const c = mta?.settings.connectionsPerHost ?? 0;
    const share = Math.max(1, Math.floor(c / this.size) + (index < c % this.size ? 1 : 0));
    const workerData: RenderWorkerData = { nice: this.nice, index, ...(mta ? { mta: { ...mta, settings: { ...mta.settings, connectionsPerHost: share } } } : {}) };
    const worker = startWorkerBeside(import.meta.url, 'render-worker', workerData, { maxOldGenerationSizeMb: WORKER_OLD_GENERATION_MB });
    const thread: Thread = { worker, index, idleSince: performance.now(), pending: new Map(), destinations: new Map() };
    this.retireTimer ??= setInterval(() => this.retireIdle(), Math.max(10, this.idleMs / 4)).unref();
    worker.on('message', (reply: RenderReply | { closed: true }) => {
      if ('closed' in reply) return thread.closed?.();
      const waiting = thread.pending.get(reply.id);
      if (!waiting) return;
      thread.pending.delete(reply.id);
      if (reply.raw || reply.results || reply.text !== undefined || reply.heap) waiting.resolve(reply);
      else if (reply.threadError) waiting.reject(new RenderThreadError(reply.error ?? 'render thread failed'));
      else waiting.reject(new Error(reply.error ?? 'render failed'));
    });
    let dead = false;
    const fail = (err: Error) => {
      if (dead) return;
      dead = true;
      for (const w of thread.pending.values()) w.reject(new RenderThreadError(err.message));
      thread.pending.clear();
      const i = this.threads.indexOf(thread);
      if (this.closed || i < 0) return; // closed, or retired when idle
      // A thread that died is replaced; what it held was rejected and the delivery job retries it.
      this.log.error({ err }, 'render thread exited; starting another');
      this.threads[i] = this.spawn(index);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`render thread exited with code ${code}`)));
    return thread;
  }
}
