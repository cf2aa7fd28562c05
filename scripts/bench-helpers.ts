// What several benchmarks share: the messages they seed or send, percentiles, and the memory of a process as
// Linux counts it. Pure helpers (no appliance, no sockets), imported by scripts/bench-*.ts.
import { readFileSync } from 'node:fs';

/** The value at percentile `p` (0..100) of ascending `sorted` (0 when empty). */
export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * Message `i` of `n` for a mailbox (`to`), mixed like a real one: 13 in 20 plain text of 0.5–4 KB, 6 in 20
 * multipart/alternative of 6–20 KB, 1 in 20 with an attachment of 20–80 KB. Deterministic.
 */
export function mailboxMessage(i: number, n: number, to: string): Buffer {
  const id = `<bench.${i}@remote.test>`;
  const head = [`From: "Sender ${i % 97}" <sender${i % 97}@remote.test>`, `To: ${to}`, `Cc: team${i % 7}@remote.test`, `Subject: Benchmark message ${i} of ${n}`, `Date: ${new Date(Date.UTC(2026, 0, 1) + i * 60_000).toUTCString()}`, `Message-ID: ${id}`, 'MIME-Version: 1.0'];
  const text = (bytes: number) => ('Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(Math.ceil(bytes / 57)).slice(0, bytes).match(/.{1,76}/g) ?? []).join('\r\n');
  const kind = i % 20;
  if (kind < 13) return Buffer.from([...head, 'Content-Type: text/plain; charset=utf-8', '', text(500 + ((i * 37) % 3500)), ''].join('\r\n'));
  if (kind < 19)
    return Buffer.from(
      [...head, 'Content-Type: multipart/alternative; boundary="alt"', '', '--alt', 'Content-Type: text/plain; charset=utf-8', '', text(2000 + ((i * 13) % 6000)), '--alt', 'Content-Type: text/html; charset=utf-8', '', `<p>${text(4000 + ((i * 7) % 8000))}</p>`, '--alt--', ''].join('\r\n'),
    );
  const attachment = Buffer.alloc(20_000 + ((i * 101) % 60_000), i % 251).toString('base64').match(/.{1,76}/g)!.join('\r\n');
  return Buffer.from(
    [...head, 'Content-Type: multipart/mixed; boundary="mix"', '', '--mix', 'Content-Type: text/plain; charset=utf-8', '', text(1500), '--mix', 'Content-Type: application/pdf; name="report.pdf"', 'Content-Disposition: attachment; filename="report.pdf"', 'Content-Transfer-Encoding: base64', '', attachment, '--mix--', ''].join('\r\n'),
  );
}

/** An inbound newsletter of `size` bytes from `news@<sender>` to `to`, as DATA carries it (CRLF, no final dot). */
export function inboundMessage(i: number, sender: string, to: string, size: number): string {
  const head = [
    `From: News <news@${sender}>`,
    `To: ${to}`,
    `Subject: Bench message ${i}`,
    'Date: Sun, 1 Mar 2026 10:00:00 +0000',
    `Message-ID: <bench-${i}@${sender}>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    '',
  ].join('\r\n');
  const line = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.\r\n';
  let body = '';
  while (head.length + body.length < size) body += line;
  return head + body.slice(0, Math.max(0, size - head.length - 2));
}

/** Anonymous (heap, malloc arenas), file-backed (mapped code, sqlite's shared memory) and shared RSS, from /proc (Linux). */
export function rssKinds(pid: number | 'self' = 'self'): string {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return ['RssAnon', 'RssFile', 'RssShmem'].map((k) => `${k} ${(Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024).toFixed(0)} MB`).join(', ');
  } catch {
    return 'n/a';
  }
}

/** A process's resident and proportional set sizes in bytes (/proc/<pid>/smaps_rollup; null off Linux). */
export function residentMemory(pid: number | 'self' = 'self'): { rss: number; pss: number } | null {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? NaN) * 1024;
    return { rss: kb('Rss'), pss: kb('Pss') };
  } catch {
    return null;
  }
}
