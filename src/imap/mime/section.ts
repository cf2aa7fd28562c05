// BODY[section] (RFC 3501 §6.4.5): the bytes a section names, from a raw message and its MIME tree.
import type { Section } from '../protocol/fetch-items.js';
import type { MimeNode } from './parse.js';

function subparts(node: MimeNode): MimeNode[] {
  if (node.children.length) return node.children;
  if (node.message) return node.message.children.length ? node.message.children : [node.message];
  return [];
}

/** The part a path names; for the root of a single-part message, part 1 is the message itself. */
export function findPart(root: MimeNode, path: number[]): MimeNode | null {
  if (path.length === 0) return root;
  let list = root.children.length ? root.children : [root];
  let node: MimeNode | null = null;
  for (let i = 0; i < path.length; i++) {
    node = list[path[i]! - 1] ?? null;
    if (!node) return null;
    if (i + 1 < path.length) list = subparts(node);
  }
  return node;
}

/** Whether the header block ends with the blank line that separates it from the body. */
function hasBlankLine(raw: Buffer, node: MimeNode): boolean {
  const i = node.bodyStart - 1; // the blank line's LF, when there is one
  if (i < node.start || raw[i] !== 0x0a) return false;
  const j = raw[i - 1] === 0x0d && i - 1 >= node.start ? i - 2 : i - 1;
  return j < node.start || raw[j] === 0x0a;
}

/**
 * The named fields' lines as they are in the source (bytes, not re-encoded text), CRLF-terminated, then the
 * blank line, "except in the case of a message which has no body and no blank line" (RFC 3501 §6.4.5).
 */
function headerFields(raw: Buffer, node: MimeNode, fields: string[], not: boolean): Buffer {
  const wanted = new Set(fields.map((f) => f.toLowerCase()));
  const out: Buffer[] = [];
  for (const h of node.headers) {
    if (wanted.has(h.key) === not) continue;
    let end = h.rawEnd;
    if (raw[end - 1] === 0x0a) end -= raw[end - 2] === 0x0d ? 2 : 1;
    out.push(raw.subarray(h.rawStart, end), CRLF);
  }
  if (hasBlankLine(raw, node)) out.push(CRLF);
  return Buffer.concat(out);
}

const CRLF = Buffer.from('\r\n');

/** The section's bytes, or null when the message has no such part (answered as an empty string). */
export function sectionBytes(raw: Buffer, root: MimeNode, section: Section): Buffer | null {
  const part = findPart(root, section.path);
  if (!part) return null;
  const spec = section.specifier;
  if (spec === null) return section.path.length === 0 ? raw : raw.subarray(part.bodyStart, part.end);
  if (spec === 'MIME') return raw.subarray(part.start, part.bodyStart);
  // HEADER, HEADER.FIELDS, TEXT of a part number address the message embedded in a message/rfc822 part.
  const msg = section.path.length === 0 ? root : part.message;
  if (!msg) return null;
  if (spec === 'HEADER') return raw.subarray(msg.start, msg.bodyStart);
  if (spec === 'TEXT') return raw.subarray(msg.bodyStart, msg.end);
  return headerFields(raw, msg, section.fields, spec === 'HEADER.FIELDS.NOT');
}
