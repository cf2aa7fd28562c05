// tag [UID] FETCH set items [(CHANGEDSINCE n)] (RFC 3501 §6.4.5, §6.4.8; RFC 7162 §3.1.4). Streams in
// batches: metadata from the session's view, ENVELOPE from the store's header summaries (cached by content),
// raw sources read one message at a time and only when an item needs them.
import type { MessageMeta } from '../../mailstore/types.js';
import { parseMessage, type MimeNode } from '../mime/parse.js';
import { sectionBytes } from '../mime/section.js';
import { envelopeFromSummary, summarize } from '../mime/structure.js';
import type { FetchItem } from '../protocol/fetch-items.js';
import { FETCH_BATCH } from '../protocol/limits.js';
import { seqOutOfRange } from '../protocol/sequence.js';
import { formatInternalDate } from '../protocol/writer.js';
import type { SelectedMailbox, Session } from '../session.js';
import type { CachedSummary } from '../summary-cache.js';
import { bad, ok, SELECTED, type CommandSpec } from './types.js';

interface Needs {
  raw: boolean;
  envelope: boolean;
  structure: boolean;
  setSeen: boolean;
}

function needsOf(items: FetchItem[], readOnly: boolean): Needs {
  const n: Needs = { raw: false, envelope: false, structure: false, setSeen: false };
  for (const it of items) {
    if (it.kind === 'section') {
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

function literal(data: Buffer): Buffer[] {
  return [Buffer.from(`{${data.length}}\r\n`), data];
}

/** Writes `* n FETCH (...)` for one message as one unit. */
function renderMessage(s: Session, view: SelectedMailbox, meta: MessageMeta, items: FetchItem[], summary: CachedSummary | undefined, raw: Buffer | null, tree: MimeNode | null, flagsChanged: boolean): Buffer {
  const out: Buffer[] = [];
  let text = `* ${view.seqOf(meta.uid)} FETCH (`;
  let first = true;
  const sep = () => {
    if (!first) text += ' ';
    first = false;
  };
  const push = (s2: string) => {
    sep();
    text += s2;
  };
  const pushLiteral = (label: string, data: Buffer | null) => {
    sep();
    text += label + ' ';
    if (data === null) {
      text += 'NIL';
      return;
    }
    out.push(Buffer.from(text, 'utf8'));
    text = '';
    out.push(...literal(data));
  };
  const seen = new Set<string>();
  let flagsSent = false;
  for (const it of items) {
    const key = it.kind === 'simple' ? it.name : `${it.section.path.join('.')}${it.label}${it.partial?.start ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (it.kind === 'simple') {
      switch (it.name) {
        case 'UID':
          push(`UID ${meta.uid}`);
          break;
        case 'FLAGS':
          push(`FLAGS (${meta.flags.join(' ')})`);
          flagsSent = true;
          break;
        case 'INTERNALDATE':
          push(`INTERNALDATE ${formatInternalDate(meta.internalDate)}`);
          break;
        case 'RFC822.SIZE':
          push(`RFC822.SIZE ${meta.size}`);
          break;
        case 'MODSEQ':
          push(`MODSEQ (${meta.modseq})`);
          break;
        case 'ENVELOPE':
          push(`ENVELOPE ${summary?.envelope ?? 'NIL'}`);
          break;
        case 'BODY':
          push(`BODY ${summary?.body ?? 'NIL'}`);
          break;
        case 'BODYSTRUCTURE':
          push(`BODYSTRUCTURE ${summary?.bodystructure ?? 'NIL'}`);
          break;
        case 'RFC822':
          pushLiteral('RFC822', raw);
          break;
        case 'RFC822.HEADER':
          pushLiteral('RFC822.HEADER', raw && tree ? raw.subarray(tree.start, tree.bodyStart) : null);
          break;
        case 'RFC822.TEXT':
          pushLiteral('RFC822.TEXT', raw && tree ? raw.subarray(tree.bodyStart, tree.end) : null);
          break;
      }
    } else {
      let data = raw && tree ? (sectionBytes(raw, tree, it.section) ?? Buffer.alloc(0)) : null;
      let label = `BODY[${it.label}]`;
      if (it.partial && data) {
        label += `<${it.partial.start}>`;
        data = it.partial.start >= data.length ? Buffer.alloc(0) : data.subarray(it.partial.start, it.partial.start + it.partial.length);
      }
      pushLiteral(label, data);
    }
  }
  // RFC 3501 §6.4.5: an implicit \Seen change is reported in the same response.
  if (flagsChanged && !flagsSent) push(`FLAGS (${meta.flags.join(' ')})`);
  text += ')\r\n';
  out.push(Buffer.from(text, 'utf8'));
  void s;
  return Buffer.concat(out);
}

export const FETCH: CommandSpec<'FETCH'> = {
  states: SELECTED,
  updates: 'no-expunge',
  async handle(s, cmd) {
    await s.sync(false);
    const view = s.selected!;
    if (!cmd.uid && seqOutOfRange(cmd.set, view.count)) return bad('Invalid message sequence number');
    const items = [...cmd.items];
    if (cmd.uid && !items.some((i) => i.kind === 'simple' && i.name === 'UID')) items.unshift({ kind: 'simple', name: 'UID' });
    if (cmd.changedSince !== null || items.some((i) => i.kind === 'simple' && i.name === 'MODSEQ')) {
      s.condstore = true;
      if (!items.some((i) => i.kind === 'simple' && i.name === 'MODSEQ')) items.push({ kind: 'simple', name: 'MODSEQ' });
    }
    const needs = needsOf(items, view.readOnly);
    let positions = view.positions(cmd.set, cmd.uid);
    if (cmd.changedSince !== null) positions = positions.filter((p) => view.meta(p).modseq > cmd.changedSince!);
    const cache = s.deps.summaries;
    // Responses are gathered into writes of about 64 KiB: one TLS record per message would cost more than
    // building the response. Each write waits for the socket to drain (bounded memory per connection).
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const flush = async () => {
      if (!pendingBytes) return;
      const data = pending.length === 1 ? pending[0]! : Buffer.concat(pending);
      pending = [];
      pendingBytes = 0;
      await s.client.write(data);
    };
    // ENVELOPE without raw parsing: the store's header summaries for what the cache lacks, read once for the
    // command (one range scan of the folder when most of it is asked for).
    const envelopes = new Map<number, string>();
    if (needs.envelope && !needs.structure && !needs.raw) {
      const missing: number[] = [];
      for (const p of positions) {
        const uid = view.uids[p]!;
        const meta = view.metas.get(uid);
        if (meta && !cache.get(meta.blobId)?.envelope) missing.push(uid);
      }
      if (missing.length) {
        const whole = missing.length > 1000 && missing.length * 2 > view.count;
        const metas = await s.store.listMessages(view.folderId, whole ? { withSummary: true } : { uids: missing, withSummary: true });
        for (const m of metas) {
          if (!m.summary) continue;
          const envelope = envelopeFromSummary(m.summary);
          envelopes.set(m.uid, envelope);
          cache.set(m.blobId, { ...cache.get(m.blobId), envelope });
        }
      }
    }
    for (let b = 0; b < positions.length; b += FETCH_BATCH) {
      const batch = positions.map((p) => view.uids[p]!).slice(b, b + FETCH_BATCH).filter((uid) => view.metas.has(uid));
      // Implicit \Seen for non-PEEK body fetches.
      const changedFlags = new Set<number>();
      if (needs.setSeen) {
        const unseen = batch.filter((uid) => !view.metas.get(uid)!.flags.includes('\\Seen'));
        if (unseen.length) {
          const res = await s.store.setFlags(view.folderId, unseen, 'add', ['\\Seen']);
          for (const m of res.updated) {
            view.update(m);
            changedFlags.add(m.uid);
          }
        }
      }
      for (const uid of batch) {
        const meta = view.metas.get(uid);
        if (!meta) continue;
        let summary = cache.get(meta.blobId);
        const fresh = envelopes.get(uid);
        if (fresh && !summary?.envelope) summary = { ...summary, envelope: fresh };
        let raw: Buffer | null = null;
        let tree: MimeNode | null = null;
        const wantStructure = needs.structure && !summary?.bodystructure;
        const wantEnvelope = needs.envelope && !summary?.envelope;
        if (needs.raw || wantStructure || wantEnvelope) {
          raw = await s.store.readMessage(view.folderId, uid);
          if (raw) {
            tree = parseMessage(raw);
            if (wantStructure || wantEnvelope) {
              summary = summarize(raw, tree);
              cache.set(meta.blobId, summary);
            }
          }
        }
        const response = renderMessage(s, view, meta, items, summary, raw, tree, changedFlags.has(uid));
        pending.push(response);
        pendingBytes += response.length;
        if (pendingBytes >= 65536) await flush();
      }
    }
    await flush();
    return ok(`${cmd.uid ? 'UID ' : ''}FETCH completed`);
  },
};
