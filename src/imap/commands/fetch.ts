// tag [UID] FETCH set items [(CHANGEDSINCE n [VANISHED])] (RFC 3501 §6.4.5, §6.4.8; RFC 7162 §3.1.4, §3.2.6;
// EMAILID/THREADID RFC 8474, SAVEDATE RFC 8514). Streams in
// batches of FETCH_BATCH messages: each batch's rows (flags, MODSEQ, the stored header summary for ENVELOPE)
// in one range scan, ENVELOPE/BODYSTRUCTURE text cached by content, raw sources read one message at a time
// (one ahead of need: beside the rows' read and the \Seen write) and only when an item needs them; output in
// ~64 KiB writes, each awaited (backpressure). BINARY (RFC 3516): a part's decoded content, sent as a literal8
// `~{n}` when it holds NUL octets; a part whose encoding cannot be undone leaves its message out and the FETCH
// ends NO [UNKNOWN-CTE].
import type { MessageMeta, MessageState, MessageSummary } from '../../mailstore/types.js';
import { binaryContent } from '../mime/binary.js';
import { parseMessage, type MimeNode } from '../mime/parse.js';
import { sectionBytes } from '../mime/section.js';
import { envelopeFromSummary, summarize } from '../mime/structure.js';
import type { FetchItem } from '../protocol/fetch-items.js';
import { FETCH_BATCH, RESPONSE_WRITE_BYTES } from '../protocol/limits.js';
import { seqOutOfRange } from '../protocol/sequence.js';
import { formatInternalDate } from '../protocol/writer.js';
import type { SelectedMailbox, Session } from '../session.js';
import type { CachedSummary } from '../summary-cache.js';
import { threadId } from '../thread-id.js';
import { vanishedEarlier } from './qresync.js';
import { bad, no, ok, SELECTED, type CommandSpec } from './types.js';

interface Needs {
  raw: boolean;
  envelope: boolean;
  structure: boolean;
  setSeen: boolean;
}

function needsOf(items: FetchItem[], readOnly: boolean): Needs {
  const n: Needs = { raw: false, envelope: false, structure: false, setSeen: false };
  for (const it of items) {
    if (it.kind === 'section' || it.kind === 'binary') {
      n.raw = true;
      if (!it.peek) n.setSeen = true;
    } else if (it.name === 'ENVELOPE') n.envelope = true;
    else if (it.name === 'BODY' || it.name === 'BODYSTRUCTURE') n.structure = true;
    else if (it.name === 'RFC822' || it.name === 'RFC822.HEADER' || it.name === 'RFC822.TEXT') {
      n.raw = true;
      if (it.name !== 'RFC822.HEADER') n.setSeen = true;
    }
  }
  if (readOnly) n.setSeen = false;
  return n;
}

/** Items without repeats (a client may name one twice; it is answered once). */
function dedupe(items: FetchItem[]): FetchItem[] {
  const seen = new Set<string>();
  return items.filter((it) => {
    const key = it.kind === 'simple' ? it.name : `${it.kind === 'binary' ? (it.size ? 'BS' : 'B') : ''}${it.peek ? 'P' : ''}${it.label}<${it.partial?.start ?? ''}>`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Output of one FETCH, gathered into writes of about 64 KiB (one TLS record per message would cost more
 *  than building the response); each write waits for the socket to drain, so memory stays bounded. */
class FetchOutput {
  private text = '';
  private chunks: Buffer[] = [];
  private bytes = 0;
  constructor(private readonly s: Session) {}

  addText(t: string): void {
    this.text += t;
    this.bytes += t.length;
  }

  addBytes(b: Buffer): void {
    if (this.text) this.chunks.push(Buffer.from(this.text, 'utf8'));
    this.text = '';
    this.chunks.push(b);
    this.bytes += b.length;
  }

  get full(): boolean {
    return this.bytes >= RESPONSE_WRITE_BYTES;
  }

  async flush(): Promise<void> {
    if (!this.bytes) return;
    if (this.text) this.chunks.push(Buffer.from(this.text, 'utf8'));
    const data = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    this.text = '';
    this.chunks = [];
    this.bytes = 0;
    await this.s.client.write(data);
  }
}

/**
 * The raw sources of a batch's messages, each read once, started ahead of need (`ahead(i)`) so that a read
 * overlaps the work before it: the rows' read, the implicit \Seen write, the message answered before. A read
 * nobody takes (a message left out) fails or finishes unobserved.
 */
class SourceReads {
  private readonly reads = new Map<number, Promise<Buffer | null>>();
  /** Which messages are answered (known once the rows are read): no read ahead for the others. */
  wanted: (uid: number) => boolean = () => true;
  constructor(
    private readonly s: Session,
    private readonly folderId: number,
    private readonly uids: readonly number[],
  ) {}

  ahead(i: number): void {
    if (i >= this.uids.length || this.reads.has(i) || !this.wanted(this.uids[i]!)) return;
    const read = this.s.store.readMessage(this.folderId, this.uids[i]!);
    read.catch(() => {}); // observed when taken; an untaken one must not be an unhandled rejection
    this.reads.set(i, read);
  }

  take(i: number): Promise<Buffer | null> {
    const read = this.reads.get(i) ?? this.s.store.readMessage(this.folderId, this.uids[i]!);
    this.reads.delete(i);
    return read;
  }
}

/**
 * The store's rows of these messages (UIDs ascending): one range scan when they are dense in the folder
 * (FETCH 1:* and the like), else a list of UIDs. Messages no longer in the store are missing.
 */
export async function readRows(s: Session, uids: number[], read: 'state'): Promise<Map<number, MessageState>>;
export async function readRows(s: Session, uids: number[], read: ReadMode): Promise<Map<number, Row>>;
export async function readRows(s: Session, uids: number[], read: ReadMode): Promise<Map<number, Row>> {
  const rows = new Map<number, Row>();
  if (uids.length === 0) return rows;
  const which = uidSelection(uids);
  const folderId = s.selected!.folderId;
  // 'state': flags, MODSEQ, size and content address from an index; 'summary': the same, then the header
  // summaries of the contents whose ENVELOPE is not cached; 'meta' (and 'meta+summary'): whole rows.
  const list = read === 'state' || read === 'summary' ? await s.store.listStates(folderId, which) : await s.store.listMessages(folderId, { ...which, withSummary: read === 'meta+summary' });
  for (const m of list) rows.set(m.uid, m);
  if (read === 'summary') {
    const missing = list.filter((m) => !s.deps.summaries.get(m.blobId)?.envelope).map((m) => m.uid);
    if (missing.length) {
      for (const r of await s.store.listSummaries(folderId, uidSelection(missing))) {
        const row = rows.get(r.uid);
        if (row) row.summaryJson = r.summaryJson;
      }
    }
  }
  return rows;
}

/** Ascending UIDs as the store reads them: one range scan when they are dense in the folder, else the list. */
function uidSelection(uids: number[]): { uidRange: [number, number] } | { uids: number[] } {
  const first = uids[0]!;
  const last = uids[uids.length - 1]!;
  return last - first + 1 <= uids.length * 2 ? { uidRange: [first, last] } : { uids };
}

/** A message's row as FETCH reads it: its state always, the rest when an item needs it. */
type Row = MessageState & Partial<MessageMeta> & { summaryJson?: string };

type ReadMode = 'state' | 'summary' | 'meta' | 'meta+summary';

const STATE_ITEMS = new Set(['UID', 'FLAGS', 'MODSEQ', 'RFC822.SIZE', 'EMAILID', 'THREADID']);

/**
 * RFC 8474 EMAILID: from the content address of the source, so a message keeps it through COPY, MOVE and RENAME,
 * and a source stored twice (the same bytes delivered again) has one EMAILID, as in Cyrus.
 */
export function emailId(blobId: string): string {
  return `M${blobId.slice(0, 24)}`;
}

/** The THREADIDs (RFC 8474) of these rows' messages, from their stored sort keys: one read for the batch. */
export async function threadIdsOf(s: Session, folderId: number, rows: Map<number, { uid: number; blobId: string }>): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  if (rows.size === 0) return out;
  const uids = [...rows.keys()].sort((a, b) => a - b);
  const first = uids[0]!;
  const last = uids[uids.length - 1]!;
  const keys = await s.store.listSortKeys(folderId, last - first + 1 <= uids.length * 2 ? { uidRange: [first, last] } : { uids });
  for (const k of keys) {
    const row = rows.get(k.uid);
    if (row) out.set(k.uid, threadId(k.keys, row.blobId));
  }
  return out;
}

/** The cheapest read that answers these items. */
function readModeOf(items: FetchItem[], needs: Needs): ReadMode {
  const simple = (names: Set<string>) => items.every((i) => i.kind === 'simple' && names.has(i.name));
  if (simple(STATE_ITEMS)) return 'state';
  if (simple(new Set([...STATE_ITEMS, 'ENVELOPE']))) return 'summary';
  return needs.envelope && !needs.raw && !needs.structure ? 'meta+summary' : 'meta';
}

/** Appends `* seq FETCH (...)` for one message. */
function renderMessage(
  out: FetchOutput,
  view: SelectedMailbox,
  seq: number,
  meta: Row,
  items: FetchItem[],
  summary: CachedSummary | undefined,
  raw: Buffer | null,
  tree: MimeNode | null,
  flagsChanged: boolean,
  decoded: Map<FetchItem, Buffer | null> | null = null,
  threadIds: Map<number, string> | null = null,
): void {
  let text = `* ${seq} FETCH (`;
  let flagsSent = false;
  for (let i = 0; i < items.length; i++) {
    const it = items[i]!;
    if (i) text += ' ';
    let label: string;
    let data: Buffer | null;
    if (it.kind === 'simple') {
      switch (it.name) {
        case 'UID':
          text += `UID ${meta.uid}`;
          continue;
        case 'FLAGS':
          text += `FLAGS (${view.flagsText(meta)})`;
          flagsSent = true;
          continue;
        case 'INTERNALDATE':
          text += `INTERNALDATE ${formatInternalDate(meta.internalDate!, meta.internalDateZone ?? 0)}`;
          continue;
        case 'RFC822.SIZE':
          text += `RFC822.SIZE ${meta.size}`;
          continue;
        case 'MODSEQ':
          text += `MODSEQ (${meta.modseq})`;
          continue;
        case 'EMAILID':
          text += `EMAILID (${emailId(meta.blobId)})`;
          continue;
        case 'THREADID':
          // RFC 8474 §5.2 (thread-id.ts); NIL only for a message expunged meanwhile.
          text += `THREADID ${threadIds?.has(meta.uid) ? `(${threadIds.get(meta.uid)!})` : 'NIL'}`;
          continue;
        case 'SAVEDATE':
          // RFC 8514 §4.1; a message stored before save dates were kept answers its internal date.
          text += `SAVEDATE ${formatInternalDate(meta.savedDate ?? meta.internalDate!, 0)}`;
          continue;
        case 'ENVELOPE':
          text += `ENVELOPE ${summary?.envelope ?? 'NIL'}`;
          continue;
        case 'BODY':
          text += `BODY ${summary?.body ?? 'NIL'}`;
          continue;
        case 'BODYSTRUCTURE':
          text += `BODYSTRUCTURE ${summary?.bodystructure ?? 'NIL'}`;
          continue;
        case 'RFC822':
          label = 'RFC822';
          data = raw;
          break;
        case 'RFC822.HEADER':
          label = 'RFC822.HEADER';
          data = raw && tree ? raw.subarray(tree.start, tree.bodyStart) : null;
          break;
        case 'RFC822.TEXT':
          label = 'RFC822.TEXT';
          data = raw && tree ? raw.subarray(tree.bodyStart, tree.end) : null;
          break;
      }
    } else if (it.kind === 'binary') {
      data = decoded?.get(it) ?? null;
      if (it.size) {
        text += `BINARY.SIZE[${it.label}] ${data?.length ?? 0}`;
        continue;
      }
      label = `BINARY[${it.label}]`;
      if (it.partial && data) {
        label += `<${it.partial.start}>`;
        data = it.partial.start >= data.length ? Buffer.alloc(0) : data.subarray(it.partial.start, it.partial.start + it.partial.length);
      }
      // RFC 3516 §4.3: content with NUL octets goes as a literal8.
      if (data && data.includes(0)) {
        out.addText(`${text}${label} ~{${data.length}}\r\n`);
        out.addBytes(data);
        text = '';
        continue;
      }
    } else {
      data = raw && tree ? (sectionBytes(raw, tree, it.section) ?? Buffer.alloc(0)) : null;
      label = `BODY[${it.label}]`;
      if (it.partial && data) {
        label += `<${it.partial.start}>`;
        data = it.partial.start >= data.length ? Buffer.alloc(0) : data.subarray(it.partial.start, it.partial.start + it.partial.length);
      }
    }
    if (data === null) {
      text += `${label} NIL`;
    } else {
      out.addText(`${text}${label} {${data.length}}\r\n`);
      out.addBytes(data);
      text = '';
    }
  }
  // RFC 3501 §6.4.5: an implicit \Seen change is reported in the same response.
  if (flagsChanged && !flagsSent) text += ` FLAGS (${view.flagsText(meta)})`;
  out.addText(text + ')\r\n');
}

/**
 * The summary stored beside the message, unless it was stored before 8-bit header bytes that are not UTF-8
 * were read as Windows-1252 (mailstore/headers.ts) and so holds U+FFFD: then the ENVELOPE is built from the
 * source (and cached), which reads them right.
 */
/** The stored summary, unless ENVELOPE must come from the source (U+FFFD of an old decoding, or group syntax). */
function storedSummary(meta: { summary?: MessageSummary | undefined; summaryJson?: string | null | undefined }): MessageSummary | null {
  if (meta.summaryJson) return meta.summaryJson.includes('\ufffd') || meta.summaryJson.includes('"groups":true') ? null : (JSON.parse(meta.summaryJson) as MessageSummary);
  if (!meta.summary) return null;
  return meta.summary.groups || JSON.stringify(meta.summary).includes('\ufffd') ? null : meta.summary;
}

export const FETCH: CommandSpec<'FETCH'> = {
  states: SELECTED,
  updates: 'no-expunge',
  async handle(s, cmd) {
    await s.sync(false);
    const view = s.selected!;
    if (!cmd.uid && seqOutOfRange(cmd.set, view.count)) return bad('Invalid message sequence number');
    let items = [...cmd.items];
    if (cmd.uid && !items.some((i) => i.kind === 'simple' && i.name === 'UID')) items.unshift({ kind: 'simple', name: 'UID' });
    if (cmd.changedSince !== null || items.some((i) => i.kind === 'simple' && i.name === 'MODSEQ')) {
      s.condstore = true;
      if (!items.some((i) => i.kind === 'simple' && i.name === 'MODSEQ')) items.push({ kind: 'simple', name: 'MODSEQ' });
    }
    items = dedupe(items);
    if (cmd.vanished) {
      // RFC 7162 §3.2.6: VANISHED (EARLIER) for the UIDs of the set expunged since CHANGEDSINCE, before the FETCHes.
      if (!s.qresync) return bad('VANISHED needs ENABLE QRESYNC');
      await vanishedEarlier(s, view, cmd.set, cmd.changedSince!);
    }
    const needs = needsOf(items, view.readOnly);
    const positions = view.positions(cmd.set, cmd.uid);
    const cache = s.deps.summaries;
    const out = new FetchOutput(s);
    const sendsFlags = items.some((i) => i.kind === 'simple' && i.name === 'FLAGS');
    const knownOnly = items.every((i) => i.kind === 'simple' && (i.name === 'UID' || i.name === 'MODSEQ'));
    let gone = false;
    let unknownCte: string | null = null;
    const binaryItems = items.filter((i) => i.kind === 'binary');
    const read = readModeOf(items, needs);
    const wantThreadId = items.some((i) => i.kind === 'simple' && i.name === 'THREADID');
    // Per batch: the messages' rows (flags, MODSEQ, sizes, and the header summary when ENVELOPE is asked) in
    // one range scan; raw sources one message at a time and only when an item needs them.
    for (let b = 0; b < positions.length && s.state !== 'logout' && s.selected === view; b += FETCH_BATCH) {
      const batch: number[] = [];
      for (let i = b; i < Math.min(positions.length, b + FETCH_BATCH); i++) batch.push(view.uid(positions[i]!));
      // A source is read one message ahead (content-addressed, so it cannot change under us): the first one
      // beside the batch's rows and the implicit \Seen write, each next one while the one before is answered.
      const sources = needs.raw ? new SourceReads(s, view.folderId, batch) : null;
      if (cmd.changedSince === null) sources?.ahead(0);
      const rows = await readRows(s, batch, read);
      const threadIds = wantThreadId ? await threadIdsOf(s, view.folderId, rows) : null;
      if (sources) sources.wanted = (uid) => rows.has(uid) && (cmd.changedSince === null || rows.get(uid)!.modseq > cmd.changedSince);
      // Implicit \Seen for non-PEEK body fetches.
      const changedFlags = new Set<number>();
      if (needs.setSeen) {
        const unseen = batch.filter((uid) => rows.has(uid) && !rows.get(uid)!.flags.includes('\\Seen'));
        if (unseen.length) {
          const res = await s.ownChange(() => s.store.setFlags(view.folderId, unseen, 'add', ['\\Seen']));
          for (const m of res.updated) {
            rows.set(m.uid, m);
            changedFlags.add(m.uid);
          }
        }
      }
      for (const [i, uid] of batch.entries()) {
        sources?.ahead(i + 1);
        const meta = rows.get(uid);
        if (!meta) {
          // Expunged elsewhere, not yet announced: it keeps its number; what the session knows (UID,
          // MODSEQ) is answered, anything else ends the command with NO [EXPUNGEISSUED] (RFC 2180 §4.1.2).
          if (!knownOnly) {
            gone = true;
            continue;
          }
          const seq = view.seqOf(uid);
          const known: Row = { uid, modseq: view.modseqAt(seq - 1), flags: [], size: 0, blobId: '' };
          if (cmd.changedSince === null || known.modseq > cmd.changedSince) renderMessage(out, view, seq, known, items, undefined, null, null, false);
          continue;
        }
        if (cmd.changedSince !== null && meta.modseq <= cmd.changedSince) continue;
        const blobId = meta.blobId ?? '';
        let summary = read === 'state' ? undefined : cache.get(blobId);
        const stored = needs.envelope && !summary?.envelope ? storedSummary(meta) : null;
        if (stored) {
          const envelope = envelopeFromSummary(stored);
          summary = { ...summary, envelope };
          cache.set(blobId, summary);
        }
        let raw: Buffer | null = null;
        let tree: MimeNode | null = null;
        const wantStructure = needs.structure && !summary?.bodystructure;
        const wantEnvelope = needs.envelope && !summary?.envelope;
        if (needs.raw || wantStructure || wantEnvelope) {
          raw = sources ? await sources.take(i) : await s.store.readMessage(view.folderId, uid);
          if (raw) {
            tree = parseMessage(raw);
            if (wantStructure || wantEnvelope) {
              summary = summarize(raw, tree);
              cache.set(blobId, summary);
            }
          }
        }
        let decoded: Map<FetchItem, Buffer | null> | null = null;
        if (binaryItems.length && raw && tree) {
          decoded = new Map();
          let undecodable = false;
          for (const it of binaryItems) {
            const content = binaryContent(raw, tree, it.path);
            if (content && 'unknownCte' in content) {
              unknownCte = content.unknownCte;
              undecodable = true;
            }
            decoded.set(it, content && 'data' in content ? content.data : null);
          }
          // RFC 3516 §4.2: an encoding the server cannot undo fails the request; this message is not answered.
          if (undecodable) continue;
        }
        // The client now knows these flags: a later sync need not report them again.
        if (sendsFlags || changedFlags.has(uid)) view.update(meta);
        renderMessage(out, view, view.seqOf(uid), meta, items, summary, raw, tree, changedFlags.has(uid), decoded, threadIds);
        if (out.full) await out.flush();
      }
    }
    await out.flush();
    if (unknownCte !== null) return no(`Cannot decode the content transfer encoding "${unknownCte.slice(0, 40)}"`, 'UNKNOWN-CTE');
    if (gone) {
      // UID FETCH names UIDs, and a UID that no longer exists is ignored without an error (RFC 3501 §6.4.8):
      // what is gone is left out and the command succeeds, saying why (RFC 5530). A NO here made mbsync
      // abandon the folder when another client expunged between its SELECT and its UID FETCH 1:N (UID FLAGS).
      if (cmd.uid) return ok('UID FETCH completed; some messages were expunged meanwhile', 'EXPUNGEISSUED');
      return no('Some of the requested messages no longer exist', 'EXPUNGEISSUED');
    }
    return ok(`${cmd.uid ? 'UID ' : ''}FETCH completed`);
  },
};
