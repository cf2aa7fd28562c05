// CSV for the audience's imports and exports (suppressions; contacts keep their own in contacts-csv.ts). In:
// csv-parse does the quoting, embedded commas and line breaks, a BOM and any line ending; each record keeps
// the line it starts on, so that a bad row is reported where the person sees it in their editor. Out: RFC 4180
// lines, a cell quoted when it holds a quote, a comma or a line break.
import { parse } from 'csv-parse/sync';
import { badRequest } from '../../core/errors.js';

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
  let records: Parsed[];
  try {
    records = parse(text, { bom: true, relax_column_count: true, skip_empty_lines: true, info: true, record_delimiter: ['\r\n', '\n', '\r'] }) as unknown as Parsed[];
  } catch (err) {
    throw badRequest(`csv: ${(err as { message?: string }).message?.replace(/^[A-Za-z ]+: /, '') ?? 'cannot be read'}`);
  }
  // Lines counted here from the records' byte offsets: csv-parse's own count takes a CRLF inside a quoted cell
  // for two lines. A CRLF, a lone CR and a LF each end one line.
  const bytes = Buffer.from(text, 'utf8');
  let at = 0;
  let line = 1;
  const advance = (to: number) => {
    for (; at < to; at++) {
      const c = bytes[at];
      if (c === 0x0a || (c === 0x0d && bytes[at + 1] !== 0x0a)) line++;
    }
  };
  return records.map((r) => {
    let start = at;
    while (bytes[start] === 0x0a || bytes[start] === 0x0d) start++; // skipped empty lines
    advance(start);
    const here = line;
    advance(r.info.bytes);
    return { cells: r.record, line: here };
  });
}

/** One CSV line (with its LF) of `cells`. */
export function csvLine(cells: readonly string[]): string {
  return cells.map((c) => (/[",\r\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c)).join(',') + '\n';
}
