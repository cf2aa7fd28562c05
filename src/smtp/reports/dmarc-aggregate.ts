// DMARC aggregate reports (RFC 7489 §7.2 and Appendix C): an XML <feedback> document, sent plain,
// gzip-compressed or zipped, as an attachment or as the whole body. XML is read with fast-xml-parser
// (entity processing off: no DOCTYPE games; the five predefined entities are decoded here), gzip with
// node:zlib, zip with ./zip.ts. Pure: a parsed MIME tree in, a report out, or a ReportError saying why not.
import { gunzipSync } from 'node:zlib';
import { createRequire } from 'node:module';

/** fast-xml-parser, loaded with the first DMARC report read. */
let fxp: typeof import('fast-xml-parser') | undefined;
import type { DmarcAggregateReport, DmarcRecord } from '../../services/inbound/index.js';
import { walk, type MimePart } from './mime.js';
import { readZip } from './zip.js';

/** Largest XML document accepted once decompressed. */
export const MAX_REPORT_XML_BYTES = 20 * 1024 * 1024;
const MAX_RECORDS = 50_000;

export class ReportError extends Error {
  override name = 'ReportError';
}

const GZIP = (b: Buffer) => b.length > 2 && b[0] === 0x1f && b[1] === 0x8b;
const ZIP = (b: Buffer) => b.length > 4 && b.readUInt32LE(0) === 0x04034b50;
const XMLISH = (b: Buffer) => /^\s*(<\?xml|<feedback)/i.test(b.subarray(0, 512).toString('utf8').replace(/^\uFEFF/, ''));

/** The XML bytes of the report: from the first part that is (or decompresses to) XML. */
export function reportXml(root: MimePart): Buffer {
  const candidates = walk(root).filter((p) => p.parts.length === 0 && p.body.length > 0);
  for (const part of candidates) {
    const body = part.body;
    try {
      if (GZIP(body)) return gunzipSync(body, { maxOutputLength: MAX_REPORT_XML_BYTES });
      if (ZIP(body)) {
        const entry = readZip(body, MAX_REPORT_XML_BYTES).find((e) => /\.xml$/i.test(e.name) || XMLISH(e.data));
        if (entry) return entry.data;
        continue;
      }
    } catch (err) {
      throw new ReportError(`the report attachment could not be decompressed: ${(err as Error).message}`);
    }
    if (XMLISH(body)) return body;
  }
  throw new ReportError('no DMARC aggregate report (XML, gzip or zip) found in the message');
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const decodeEntities = (s: string) =>
  s.replace(/&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-f]+);/gi, (m, e: string) =>
    e[0] === '#' ? String.fromCodePoint(e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)) : (ENTITIES[e.toLowerCase()] ?? m),
  );

type Node = Record<string, unknown>;

function str(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'object') return str((v as Node)['#text']);
  const s = decodeEntities(String(v)).trim();
  return s === '' ? null : s;
}
const obj = (v: unknown): Node => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Node) : {});
const arr = (v: unknown): Node[] => (Array.isArray(v) ? v.map(obj) : v === undefined ? [] : [obj(v)]);

function epoch(v: unknown, what: string): string {
  const s = str(v);
  if (!s || !/^\d{1,12}$/.test(s)) throw new ReportError(`report_metadata.date_range.${what} is not a UNIX time`);
  return new Date(Number(s) * 1000).toISOString();
}

export function parseAggregateXml(xml: Buffer): DmarcAggregateReport {
  let doc: Node;
  try {
    fxp ??= createRequire(import.meta.url)('fast-xml-parser') as typeof import('fast-xml-parser');
    const parser = new fxp.XMLParser({ ignoreAttributes: true, processEntities: false, parseTagValue: false, trimValues: true, removeNSPrefix: true });
    doc = obj(parser.parse(xml.toString('utf8').replace(/^\uFEFF/, '')));
  } catch (err) {
    throw new ReportError(`the report is not well-formed XML: ${(err as Error).message}`);
  }
  const feedback = obj(doc.feedback);
  const meta = obj(feedback.report_metadata);
  const published = obj(feedback.policy_published);
  const orgName = str(meta.org_name);
  const reportId = str(meta.report_id);
  const domain = str(published.domain)?.toLowerCase();
  if (!orgName || !reportId || !domain) throw new ReportError('the report lacks org_name, report_id or policy_published/domain');
  const range = obj(meta.date_range);
  const rows = arr(feedback.record);
  if (rows.length > MAX_RECORDS) throw new ReportError(`the report has more than ${MAX_RECORDS} records`);
  const records: DmarcRecord[] = rows.map((r) => {
    const row = obj(r.row);
    const evaluated = obj(row.policy_evaluated);
    const ids = obj(r.identifiers);
    const auth = obj(r.auth_results);
    const count = Number(str(row.count) ?? '0');
    return {
      source_ip: str(row.source_ip) ?? '',
      count: Number.isSafeInteger(count) && count >= 0 ? count : 0,
      disposition: str(evaluated.disposition) ?? 'none',
      dkim: str(evaluated.dkim) ?? 'none',
      spf: str(evaluated.spf) ?? 'none',
      reasons: arr(evaluated.reason).map((x) => ({ type: str(x.type) ?? '', comment: str(x.comment) })),
      header_from: str(ids.header_from),
      envelope_from: str(ids.envelope_from),
      envelope_to: str(ids.envelope_to),
      auth_results: {
        dkim: arr(auth.dkim).map((x) => ({ domain: str(x.domain) ?? '', selector: str(x.selector), result: str(x.result) ?? 'none' })),
        spf: arr(auth.spf).map((x) => ({ domain: str(x.domain) ?? '', scope: str(x.scope), result: str(x.result) ?? 'none' })),
      },
    };
  });
  const pct = str(published.pct);
  return {
    orgName,
    orgEmail: str(meta.email),
    reportId,
    dateBegin: epoch(range.begin, 'begin'),
    dateEnd: epoch(range.end, 'end'),
    policy: {
      domain,
      adkim: str(published.adkim),
      aspf: str(published.aspf),
      p: str(published.p),
      sp: str(published.sp),
      pct: pct !== null && /^\d+$/.test(pct) ? Number(pct) : null,
    },
    records,
  };
}

export function parseAggregateReport(root: MimePart): DmarcAggregateReport {
  return parseAggregateXml(reportXml(root));
}
