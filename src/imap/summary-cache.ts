// ENVELOPE/BODY/BODYSTRUCTURE text per message content (blob id), so repeated FETCHes do no MIME parsing.
// One per server (made by the composition root), bounded: the oldest entry is dropped first (insertion
// order; a lookup does not reorder, so a FETCH of 10,000 messages costs 10,000 plain map reads).
import { SUMMARY_CACHE_ENTRIES } from './protocol/limits.js';
import type { FetchSummary } from './mime/structure.js';

/** What is known of one content: ENVELOPE alone (from the store's header summary) or all three. */
export type CachedSummary = Partial<FetchSummary>;

export class SummaryCache {
  private readonly map = new Map<string, CachedSummary>();
  constructor(private readonly capacity = SUMMARY_CACHE_ENTRIES) {}

  get(blobId: string): CachedSummary | undefined {
    return this.map.get(blobId);
  }

  set(blobId: string, summary: CachedSummary): void {
    this.map.delete(blobId);
    this.map.set(blobId, summary);
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value!);
  }
}
