// Authenticating a received message: mailauth (SPF, DKIM, DMARC, ARC) with the box's resolver, reduced to
// the verdict services/inbound/receiver.ts acts on (the Authentication-Results/Received-SPF fields and each check's
// result). mailauth reads every byte of the message in JavaScript (body hashes, line-break scanning), so it
// runs on MAIL_INBOUND_AUTH_THREADS worker threads (auth-worker.ts) beside the MX's event loop; with
// 0 threads it runs inline — same code, same verdict.
//
// DNS: each thread builds the resolver from the same configuration (MAIL_DNS_SERVERS, MAIL_DNS_TIMEOUT_MS)
// and keeps its own short-lived answer cache (dns/cached-lookups.ts) on the caller's clock, passed with each
// request. A thread that dies is replaced; the messages it held are checked again inline, so every message
// is checked.
import type { Worker } from 'node:worker_threads';
import type { AuthenticateResult } from 'mailauth';

/** mailauth, loaded with the first message checked (its code and tables stay out of a box that receives none). */
let mailauth: Promise<typeof import('mailauth')> | undefined;
/** Loads mailauth now (an authentication thread does, before its first message: it exists for nothing else). */
export const loadMailauth = () => (mailauth ??= import('mailauth'));
import type { DnsServer } from '../../config.js';
import type { Logger } from '../../core/logger.js';
import { startWorkerBeside, WORKER_OLD_GENERATION_MB } from '../../core/worker-thread.js';
import type { RawLookup } from '../../dns/cached-lookups.js';

/** What is checked: the message as received and its SMTP envelope. */
export interface AuthInput {
  raw: Uint8Array;
  ip: string;
  helo: string;
  /** Envelope sender; '' for the null reverse path. */
  sender: string;
  /** Our host name: the authserv-id of Authentication-Results. */
  mta: string;
}

/** mailauth's answer as the inbound service uses it (structured-cloneable). */
export interface AuthVerdict {
  /** Authentication-Results (and Received-SPF, ARC) fields as mailauth folds them. */
  headers: string;
  spf: string | null;
  /** One result per DKIM signature (none: empty). */
  dkim: string[];
  dmarc: { result: string; policy: string | null; domain: string | null } | null;
  arc: string | null;
  /**
   * A look-up the DNS did not answer (an SPF temperror, a DKIM key not fetched) was about an identifier that could
   * align with the From domain: had it been answered, DMARC might have passed, so its failure is no verdict.
   * A temperror of an unaligned identifier (a third party's signature, another domain's return path) is not.
   */
  unansweredMayAlign: boolean;
}

/** Whether `domain` has `org` as its organisational domain (RFC 7489 §3.2), i.e. may align with it under relaxed mode. */
function underOrg(domain: string | undefined, org: string | null | undefined): boolean {
  if (!domain || !org) return false;
  const d = domain.toLowerCase().replace(/\.$/, '');
  const o = org.toLowerCase();
  return d === o || d.endsWith(`.${o}`);
}

export function verdictOf(auth: AuthenticateResult): AuthVerdict {
  const dmarc = auth.dmarc;
  // mailauth's DMARC domain is the From domain's organisational domain.
  const org = dmarc ? dmarc.domain : null;
  const spfUnanswered = auth.spf && auth.spf.status.result === 'temperror' && underOrg(auth.spf.domain, org);
  const dkimUnanswered = (auth.dkim.results ?? []).some((r) => r.status.result === 'temperror' && underOrg(r.signingDomain, org));
  return {
    headers: auth.headers,
    spf: auth.spf ? auth.spf.status.result : null,
    dkim: (auth.dkim.results ?? []).map((r) => r.status.result as string),
    dmarc: dmarc ? { result: dmarc.status.result, policy: dmarc.policy ?? null, domain: dmarc.domain ?? null } : null,
    arc: auth.arc ? auth.arc.status.result : null,
    unansweredMayAlign: Boolean(spfUnanswered || dkimUnanswered),
  };
}

/** The check itself, wherever it runs. */
export async function checkMessage(input: AuthInput, lookup: RawLookup): Promise<AuthVerdict> {
  const raw = Buffer.from(input.raw.buffer, input.raw.byteOffset, input.raw.byteLength);
  const { authenticate } = await loadMailauth();
  const auth = await authenticate(raw, {
    ip: input.ip,
    helo: input.helo,
    sender: input.sender,
    mta: input.mta,
    resolver: (name: string, rrtype: string) => lookup(name, rrtype) as Promise<string[] | string[][]>,
    disableBimi: true,
  });
  return verdictOf(auth);
}

/** What a thread needs to build its resolver (structured-cloneable). */
export interface AuthWorkerData {
  dnsServers: DnsServer[];
  dnsTimeoutMs: number;
}

/** Posted to a thread in arrays: the requests of one turn of the caller's event loop; answered likewise. */
export interface AuthRequest {
  id: number;
  input: AuthInput;
  /** The caller's clock, epoch ms: the thread's DNS cache runs on it. */
  now: number;
}

export type AuthReply = { id: number; verdict: AuthVerdict } | { id: number; error: string };

/** mailauth could not check the message (it threw): the caller records "could not be checked". */
export class AuthCheckError extends Error {
  override name = 'AuthCheckError';
}

interface Thread {
  worker: Worker;
  /** When it last answered its last message (performance.now()); retired once idle for the pool's idleMs. */
  idleSince: number;
  pending: Map<number, { request: AuthRequest; resolve(v: AuthVerdict): void; reject(err: Error): void }>;
  /** Requests made in this turn of the event loop, posted together at its end (one wake-up of the thread). */
  outbox: AuthRequest[];
}

/**
 * An authentication thread with no message for this long is let go (its V8 heap, mailauth's code, its DNS
 * cache: ~15–25 MiB); the next message starts one again. docs/PERFORMANCE.md "Memory".
 */
export const AUTH_THREAD_IDLE_MS = 60_000;

export class InboundAuthPool {
  /** The started threads (at most `size`): they start with the first message and retire when idle. */
  private threads: Thread[] = [];
  private nextId = 1;
  private closed = false;
  private retireTimer: NodeJS.Timeout | undefined;

  /**
   * `inline` runs a check on this thread: with no threads, after close, and for the messages a thread held
   * when it died.
   */
  constructor(
    private readonly size: number,
    private readonly data: AuthWorkerData,
    private readonly inline: (input: AuthInput) => Promise<AuthVerdict>,
    private readonly log: Logger,
    private readonly idleMs = AUTH_THREAD_IDLE_MS,
  ) {}

  /** Threads running now. */
  get running(): number {
    return this.threads.length;
  }

  /** Each running thread's V8 heap (asked of the thread). */
  async heapStatistics(): Promise<Array<{ thread: string; used: number; total: number; external: number }>> {
    return Promise.all(
      this.threads.map(
        (t, i) =>
          new Promise<{ thread: string; used: number; total: number; external: number }>((resolve, reject) => {
            const onExit = () => reject(new Error('thread exited'));
            const onMessage = (m: unknown) => {
              if (!m || typeof m !== 'object' || !('heap' in m)) return;
              t.worker.off('message', onMessage);
              t.worker.off('exit', onExit);
              const h = (m as { heap: { used: number; total: number; external: number } }).heap;
              resolve({ thread: `auth-${i}`, ...h });
            };
            t.worker.on('message', onMessage);
            t.worker.once('exit', onExit);
            t.worker.postMessage({ heap: true });
          }),
      ),
    ).catch(() => []);
  }

  /** The verdict; rejects with AuthCheckError when mailauth could not check the message. */
  check(input: AuthInput, now: Date): Promise<AuthVerdict> {
    if (this.closed || this.size === 0) return this.inline(input);
    // On demand: a thread starts when none runs, or when every running one is busy and there is room.
    if (this.threads.length < this.size && this.threads.every((t) => t.pending.size > 0)) this.threads.push(this.spawn());
    const thread = this.threads.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
    const request: AuthRequest = { id: this.nextId++, input, now: now.getTime() };
    return new Promise<AuthVerdict>((resolve, reject) => {
      thread.pending.set(request.id, { request, resolve, reject });
      if (thread.outbox.push(request) === 1) setImmediate(() => thread.worker.postMessage(thread.outbox.splice(0)));
    });
  }

  /** Lets go of the threads idle for idleMs (checked every idleMs / 4 while any runs). */
  private retireIdle(): void {
    const now = performance.now();
    for (const t of [...this.threads]) {
      if (t.pending.size > 0 || now - t.idleSince < this.idleMs) continue;
      this.threads.splice(this.threads.indexOf(t), 1);
      void t.worker.terminate();
    }
    if (this.threads.length === 0 && this.retireTimer) {
      clearInterval(this.retireTimer);
      this.retireTimer = undefined;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.retireTimer);
    const threads = this.threads;
    this.threads = [];
    await Promise.all(threads.map((t) => t.worker.terminate()));
    for (const t of threads) this.rescue(t);
  }

  /** A thread's unanswered messages, checked here instead. */
  private rescue(thread: Thread): void {
    const held = [...thread.pending.values()];
    thread.pending.clear();
    for (const w of held) this.inline(w.request.input).then(w.resolve, w.reject);
  }

  private spawn(): Thread {
    const worker = startWorkerBeside(import.meta.url, 'auth-worker', this.data, { maxOldGenerationSizeMb: WORKER_OLD_GENERATION_MB });
    const thread: Thread = { worker, idleSince: performance.now(), pending: new Map(), outbox: [] };
    this.retireTimer ??= setInterval(() => this.retireIdle(), Math.max(10, this.idleMs / 4)).unref();
    worker.on('message', (replies: AuthReply[] | { heap: unknown }) => {
      if (!Array.isArray(replies)) return; // heapStatistics() takes its own answer
      for (const reply of replies) {
        const waiting = thread.pending.get(reply.id);
        if (!waiting) continue;
        thread.pending.delete(reply.id);
        if (thread.pending.size === 0) thread.idleSince = performance.now();
        if ('verdict' in reply) waiting.resolve(reply.verdict);
        else waiting.reject(new AuthCheckError(reply.error));
      }
    });
    let dead = false;
    const fail = (err: Error) => {
      if (dead) return;
      dead = true;
      const i = this.threads.indexOf(thread);
      if (i >= 0) {
        this.log.error({ err }, 'inbound authentication thread exited; starting another');
        this.threads[i] = this.spawn();
      }
      this.rescue(thread);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`inbound authentication thread exited with code ${code}`)));
    return thread;
  }
}
