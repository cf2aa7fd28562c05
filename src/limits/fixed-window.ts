// Fixed-window counters in memory: the per-credential request limits and the SMTP guards count with them.
// A window starts with its first hit and resets fully at its end; time comes from the injected clock.
// Held by an object the composition root makes (one per HTTP app or listener): a restart resets windows.
import type { Clock } from '../core/clock.js';

interface Window {
  endsAt: number;
  count: number;
}

export interface Hit {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Epoch ms when the window ends. */
  resetAt: number;
  /** Whole seconds until then (at least 1). */
  retryAfter: number;
}

/** Fixed windows keyed by string; a window starts with its first hit and resets fully at its end. */
export class FixedWindowCounter {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly clock: Clock) {}

  /** Counts one request (refused ones too) and says whether it is within `limit`. */
  hit(key: string, limit: number, windowMs: number): Hit {
    const now = this.clock.now().getTime();
    let w = this.windows.get(key);
    if (!w || w.endsAt <= now) {
      if (this.windows.size >= 50_000) this.sweep(now);
      w = { endsAt: now + windowMs, count: 0 };
      this.windows.set(key, w);
    }
    w.count += 1;
    const retryAfter = Math.max(1, Math.ceil((w.endsAt - now) / 1000));
    return { allowed: w.count <= limit, limit, remaining: Math.max(0, limit - w.count), resetAt: w.endsAt, retryAfter };
  }

  /** The count of a window without adding to it: 0 when none is open. */
  peek(key: string): { count: number; resetAt: number | null } {
    const w = this.windows.get(key);
    if (!w || w.endsAt <= this.clock.now().getTime()) return { count: 0, resetAt: null };
    return { count: w.count, resetAt: w.endsAt };
  }

  private sweep(now: number): void {
    for (const [k, w] of this.windows) if (w.endsAt <= now) this.windows.delete(k);
  }
}
