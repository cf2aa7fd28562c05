// ENVELOPE/BODY/BODYSTRUCTURE text per message content (blob id), so repeated FETCHes do no MIME parsing.
// One per server (made by the composition root), bounded by entries and by bytes (a BODYSTRUCTURE grows with
// the message's MIME parts): the oldest entry is dropped first (insertion order; a lookup does not reorder, so a
// FETCH of 10,000 messages costs 10,000 plain map reads). A summary larger than an eighth of the ceiling is not
// kept (its FETCH parses it again).
import { SUMMARY_CACHE_BYTES, SUMMARY_CACHE_ENTRIES } from './protocol/limits.js';
import type { FetchSummary } from './mime/structure.js';

/** What is known of one content: ENVELOPE alone (from the store's header summary) or all three. */
export type CachedSummary = Partial<FetchSummary>;

/** An entry's bytes: its strings (one byte a character as V8 keeps ASCII) and the map's and objects' slots. */
function summaryBytes(blobId: string, s: CachedSummary): number {
  return 160 + blobId.length + (s.envelope?.length ?? 0) + (s.body?.length ?? 0) + (s.bodystructure?.length ?? 0);
}

export class SummaryCache {
  private readonly map = new Map<string, { summary: CachedSummary; bytes: number }>();
  private held = 0;
  constructor(
    private readonly capacity = SUMMARY_CACHE_ENTRIES,
    private readonly maxBytes = SUMMARY_CACHE_BYTES,
  ) {}

  /** Entries and bytes kept now. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.map.size, bytes: this.held };
  }

  get(blobId: string): CachedSummary | undefined {
    return this.map.get(blobId)?.summary;
  }

  set(blobId: string, summary: CachedSummary): void {
    this.drop(blobId);
    const bytes = summaryBytes(blobId, summary);
    if (bytes > this.maxBytes / 8) return;
    this.map.set(blobId, { summary, bytes });
    this.held += bytes;
    while (this.map.size > this.capacity || this.held > this.maxBytes) this.drop(this.map.keys().next().value!);
  }

  private drop(blobId: string): void {
    const old = this.map.get(blobId);
    if (!old) return;
    this.map.delete(blobId);
    this.held -= old.bytes;
  }
}
