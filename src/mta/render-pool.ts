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
import { startWorkerBeside } from '../core/worker-thread.js';
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

export interface RenderReply {
  id: number;
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
  pending: Map<number, { resolve(reply: RenderReply): void; reject(err: Error): void }>;
  /** Deliveries under way in this thread, per destination domain. */
  destinations: Map<string, number>;
  closed?: () => void;
}

/** How long close() lets a thread say QUIT on its SMTP sessions before it is terminated. */
const CLOSE_GRACE_MS = 3_000;

export class RenderPool {
  private threads: Thread[] = [];
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
  ) {
    this.mtaConfig = mta && size > 0 ? mta : undefined;
    for (let i = 0; i < size; i++) this.threads.push(this.spawn(i));
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
    if (this.threads.length === 0) return renderMessage(message, dkimKeysOf(keys), at);
    return this.request({ id: 0, message, keys, at: at.getTime() }).then((reply) => Buffer.from(reply.raw!.buffer, reply.raw!.byteOffset, reply.raw!.byteLength));
  }

  /** compose.ts's htmlToText in a thread (inline without threads): the send path's derived text part. */
  async htmlToText(html: string): Promise<string> {
    if (this.threads.length === 0 || this.closed) return htmlToText(html);
    return (await this.request({ id: 0, htmlToText: html })).text!;
  }

  /** To the least busy thread; resolves with a reply that has no error. */
  private request(req: RenderRequest | TextRequest): Promise<RenderReply> {
    if (this.closed) return Promise.reject(new RenderThreadError('render pool closed'));
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
    const id = this.nextId++;
    for (const d of domains) thread.destinations.set(d, (thread.destinations.get(d) ?? 0) + 1);
    const release = () => {
      for (const d of domains) {
        const n = (thread.destinations.get(d) ?? 1) - 1;
        if (n > 0) thread.destinations.set(d, n);
        else thread.destinations.delete(d);
      }
    };
    return new Promise<RenderReply>((resolve, reject) => {
      thread.pending.set(id, {
        resolve: (reply) => {
          release();
          resolve(reply);
        },
        reject: (err) => {
          release();
          reject(err);
        },
      });
      thread.worker.postMessage({ ...req, id } satisfies RenderRequest | TextRequest);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const threads = this.threads;
    this.threads = [];
    await Promise.all(
      threads.map(async (t) => {
        if (this.mtaConfig) {
          // Let the thread's SMTP pool finish its transactions and say QUIT, within a grace period.
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
      }),
    );
    for (const t of threads) for (const w of t.pending.values()) w.reject(new RenderThreadError('render pool closed'));
  }

  private spawn(index: number): Thread {
    const mta = this.mtaConfig;
    const c = mta?.settings.connectionsPerHost ?? 0;
    const share = Math.max(1, Math.floor(c / this.size) + (index < c % this.size ? 1 : 0));
    const workerData: RenderWorkerData = { nice: this.nice, index, ...(mta ? { mta: { ...mta, settings: { ...mta.settings, connectionsPerHost: share } } } : {}) };
    const worker = startWorkerBeside(import.meta.url, 'render-worker', workerData);
    const thread: Thread = { worker, pending: new Map(), destinations: new Map() };
    worker.on('message', (reply: RenderReply | { closed: true }) => {
      if ('closed' in reply) return thread.closed?.();
      const waiting = thread.pending.get(reply.id);
      if (!waiting) return;
      thread.pending.delete(reply.id);
      if (reply.raw || reply.results || reply.text !== undefined) waiting.resolve(reply);
      else if (reply.threadError) waiting.reject(new RenderThreadError(reply.error ?? 'render thread failed'));
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
      if (i >= 0) this.threads[i] = this.spawn(index);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`render thread exited with code ${code}`)));
    return thread;
  }
}
