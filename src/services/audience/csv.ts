// CSV for the audience's imports and exports (contacts and suppressions). In:
// csv-parse does the quoting, embedded commas and line breaks, a BOM and any line ending; each record keeps
// the line it starts on, so that a bad row is reported where the person sees it in their editor. Out: RFC 4180
// lines, a cell quoted when it holds a quote, a comma or a line break.
import { createRequire } from 'node:module';
import { badRequest } from '../../core/errors.js';

/** csv-parse, loaded with the first import read. */
let csvParse: typeof import('csv-parse/sync').parse | undefined;

export interface CsvLine {
  /** The cells of one record. */
  cells: string[];
  /** The line of the text the record starts on (the header is line 1 when nothing precedes it). */
  line: number;
}

interface Parsed {
  record: string[];
  /** `bytes`: the UTF-8 offset just past the record and its line break (csv-parse counts a BOM in it). */
  info: { bytes: number };
}

/** Every record of `text` (empty lines skipped), or 400 `csv: …` for text that is not CSV (a quote never closed). */
export function readCsvLines(text: string): CsvLine[] {
  // Lines counted here from the records' byte offsets: csv-parse's own count takes a CRLF inside a quoted cell
  // for two lines. A CRLF, a lone CR and a LF each end one line.
  const bytes = Buffer.from(text, 'utf8');
  let at = 0;
  let line = 1;
  /** The line of the first byte at or after `offset` that does not end a line (offsets asked in increasing order). */
  const lineAt = (offset: number): number => {
    let start = Math.max(offset, at);
    while (bytes[start] === 0x0a || bytes[start] === 0x0d) start++; // skipped empty lines
    for (; at < start; at++) {
      const c = bytes[at];
      if (c === 0x0a || (c === 0x0d && bytes[at + 1] !== 0x0a)) line++;
    }
    return line;
  };
  let records: Parsed[];
  try {
    csvParse ??= (createRequire(import.meta.url)('csv-parse/sync') as typeof import('csv-parse/sync')).parse;
    records = csvParse(text, { bom: true, relax_column_count: true, skip_empty_lines: true, info: true, record_delimiter: ['\r\n', '\n', '\r'] }) as unknown as Parsed[];
  } catch (err) {
    const e = err as { code?: string; message?: string; bytes?: number };
    if (e.code === 'CSV_QUOTE_NOT_CLOSED') throw badRequest(`csv: a quoted field opened on line ${lineAt(e.bytes ?? 0)} is never closed`);
    throw badRequest(`csv: ${e.message?.replace(/^[A-Za-z ]+: /, '') ?? 'cannot be read'}`);
  }
  let end = 0;
  return records.map((r) => {
    const here = lineAt(end);
    end = r.info.bytes;
    return { cells: r.record, line: here };
  });
}

/** One CSV line (with its LF) of `cells`. */
export function csvLine(cells: readonly string[]): string {
  return cells.map((c) => (/[",\r\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c)).join(',') + '\n';
}
