// Just enough of the ZIP format (PKWARE APPNOTE 6.3) to open a DMARC aggregate report: the central
// directory is read from the end record, each entry's data from its local header, stored (0) or deflated
// (8) entries only, no ZIP64, no encryption. Bounded: entry count and inflated size are capped.
import { inflateRawSync } from 'node:zlib';

export interface ZipEntry {
  name: string;
  data: Buffer;
}

const EOCD_SIG = 0x06054b50;
const CEN_SIG = 0x02014b50;
const LOC_SIG = 0x04034b50;
const MAX_ENTRIES = 64;

export class ZipError extends Error {
  override name = 'ZipError';
}

/** The files of a ZIP archive (directories skipped). Throws ZipError on anything it cannot read. */
export function readZip(buf: Buffer, maxBytes: number): ZipEntry[] {
  // End of central directory: 22 bytes plus a comment of up to 65,535 bytes, searched from the end.
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 65535); i--) {
    if (buf.readUInt32LE(i) === EOCD_SIG) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new ZipError('not a ZIP archive (no end of central directory)');
  const count = buf.readUInt16LE(eocd + 10);
  let pos = buf.readUInt32LE(eocd + 16);
  if (count > MAX_ENTRIES) throw new ZipError(`too many entries (${count})`);
  const entries: ZipEntry[] = [];
  let total = 0;
  for (let n = 0; n < count; n++) {
    if (pos + 46 > buf.length || buf.readUInt32LE(pos) !== CEN_SIG) throw new ZipError('damaged central directory');
    const flags = buf.readUInt16LE(pos + 8);
    const method = buf.readUInt16LE(pos + 10);
    const compressedSize = buf.readUInt32LE(pos + 20);
    const nameLen = buf.readUInt16LE(pos + 28);
    const extraLen = buf.readUInt16LE(pos + 30);
    const commentLen = buf.readUInt16LE(pos + 32);
    const localOffset = buf.readUInt32LE(pos + 42);
    const name = buf.subarray(pos + 46, pos + 46 + nameLen).toString('utf8');
    pos += 46 + nameLen + extraLen + commentLen;
    if (name.endsWith('/')) continue;
    if (flags & 1) throw new ZipError(`${name} is encrypted`);
    if (localOffset + 30 > buf.length || buf.readUInt32LE(localOffset) !== LOC_SIG) throw new ZipError(`damaged local header for ${name}`);
    const start = localOffset + 30 + buf.readUInt16LE(localOffset + 26) + buf.readUInt16LE(localOffset + 28);
    const raw = buf.subarray(start, start + compressedSize);
    if (raw.length !== compressedSize) throw new ZipError(`${name} is truncated`);
    let data: Buffer;
    if (method === 0) data = Buffer.from(raw);
    else if (method === 8) {
      try {
        data = inflateRawSync(raw, { maxOutputLength: maxBytes });
      } catch (err) {
        throw new ZipError(`${name}: ${(err as Error).message}`);
      }
    } else throw new ZipError(`${name}: compression method ${method} is not supported`);
    total += data.length;
    if (total > maxBytes) throw new ZipError('archive too large when inflated');
    entries.push({ name, data });
  }
  return entries;
}
