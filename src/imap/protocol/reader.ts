// Frames the bytes of an IMAP connection into commands: a command is its text lines plus the literals
// announced at their ends (`{n}` synchronizing, `{n+}` non-synchronizing per RFC 7888). Pure: no socket;
// the session feeds it chunks and acts on what it reports.
import { MAX_APPEND_LITERAL_BYTES, MAX_LINE_BYTES, MAX_LITERALS_PER_COMMAND, MAX_OTHER_LITERAL_BYTES } from './limits.js';

export type Part = { kind: 'text'; text: string } | { kind: 'literal'; data: Buffer };

export interface RawCommand {
  parts: Part[];
}

export interface ReaderHandlers {
  command(cmd: RawCommand): void;
  /** A synchronizing literal of acceptable size was announced: the server answers `+`. */
  continueLiteral(): void;
  /** A command that cannot be accepted (over a limit): answered BAD with its tag; the reader resynchronizes. */
  reject(tag: string, reason: string): void;
  /** A state the connection cannot recover from (a non-synchronizing literal over the limit): answered BYE, closed. */
  fatal(reason: string): void;
  /**
   * Whether an APPEND may carry a message-sized literal now: only once logged in, so that a client that never
   * logs in cannot make the server hold 50 MB per connection (without it: always).
   */
  appendAllowed?(): boolean;
}

const LITERAL_AT_END = /\{(\d{1,20})(\+?)\}$/;

/** The literal limit for a command, from its first line (APPEND carries a message, when `appendAllowed`). */
export function literalLimit(firstLine: string, appendAllowed = true): number {
  const words = firstLine.split(' ', 3);
  return appendAllowed && (words[1] ?? '').toUpperCase() === 'APPEND' ? MAX_APPEND_LITERAL_BYTES : MAX_OTHER_LITERAL_BYTES;
}

export class CommandReader {
  private lineChunks: Buffer[] = [];
  private lineBytes = 0;
  /** Skipping the rest of an over-long line. */
  private skipping = false;
  private parts: Part[] = [];
  private textBytes = 0;
  private literals = 0;
  private literalRemaining = 0;
  private literalChunks: Buffer[] = [];
  private closed = false;

  constructor(private readonly handlers: ReaderHandlers) {}

  /** Drops everything buffered (after STARTTLS, RFC 3501 §6.2.1: no plaintext injection). */
  reset(): void {
    this.lineChunks = [];
    this.lineBytes = 0;
    this.skipping = false;
    this.resetCommand();
  }

  close(): void {
    this.closed = true;
  }

  /** True while a command is partly received (a client that hangs up now loses only that command). */
  get midCommand(): boolean {
    return this.parts.length > 0 || this.literalRemaining > 0 || this.lineBytes > 0;
  }

  push(chunk: Buffer): void {
    let pos = 0;
    while (pos < chunk.length && !this.closed) {
      if (this.literalRemaining > 0) {
        const take = Math.min(this.literalRemaining, chunk.length - pos);
        this.literalChunks.push(chunk.subarray(pos, pos + take));
        this.literalRemaining -= take;
        pos += take;
        if (this.literalRemaining === 0) {
          this.parts.push({ kind: 'literal', data: Buffer.concat(this.literalChunks) });
          this.literalChunks = [];
        }
        continue;
      }
      const nl = chunk.indexOf(0x0a, pos);
      if (nl === -1) {
        this.addLineBytes(chunk.subarray(pos));
        return;
      }
      this.addLineBytes(chunk.subarray(pos, nl));
      pos = nl + 1;
      this.endLine();
    }
  }

  private addLineBytes(bytes: Buffer): void {
    if (this.skipping || bytes.length === 0) return;
    if (this.lineBytes + bytes.length > MAX_LINE_BYTES) {
      const head = Buffer.concat([...this.lineChunks, bytes]).subarray(0, 64).toString('latin1');
      const tag = this.parts.length ? this.tagOfCommand() : head.split(' ')[0] ?? '*';
      this.lineChunks = [];
      this.lineBytes = 0;
      this.skipping = true;
      this.resetCommand();
      this.handlers.reject(tag || '*', 'Line too long');
      return;
    }
    // Copy: the socket may reuse its buffer.
    this.lineChunks.push(Buffer.from(bytes));
    this.lineBytes += bytes.length;
  }

  private endLine(): void {
    if (this.skipping) {
      this.skipping = false;
      return;
    }
    let line = Buffer.concat(this.lineChunks).toString('utf8');
    this.lineChunks = [];
    this.lineBytes = 0;
    if (line.endsWith('\r')) line = line.slice(0, -1);
    this.textBytes += line.length;
    if (this.textBytes > MAX_LINE_BYTES) {
      const tag = this.tagOfCommand() || line.split(' ')[0] || '*';
      this.resetCommand();
      this.handlers.reject(tag, 'Command too long');
      return;
    }
    const m = LITERAL_AT_END.exec(line);
    if (!m) {
      this.parts.push({ kind: 'text', text: line });
      const cmd = { parts: this.parts };
      this.resetCommand();
      this.handlers.command(cmd);
      return;
    }
    const size = Number(m[1]);
    const sync = m[2] !== '+';
    this.parts.push({ kind: 'text', text: line.slice(0, m.index) });
    const first = this.parts[0]!.kind === 'text' ? (this.parts[0] as { text: string }).text : '';
    const tag = this.tagOfCommand();
    this.literals++;
    if (size > literalLimit(first, this.handlers.appendAllowed?.() ?? true) || this.literals > MAX_LITERALS_PER_COMMAND) {
      this.resetCommand();
      const reason = this.literals > MAX_LITERALS_PER_COMMAND ? 'Too many literals' : 'Literal too large';
      if (sync) this.handlers.reject(tag || '*', reason);
      else this.handlers.fatal(reason);
      return;
    }
    if (size === 0) {
      this.parts.push({ kind: 'literal', data: Buffer.alloc(0) });
    } else {
      this.literalRemaining = size;
    }
    if (sync) this.handlers.continueLiteral();
  }

  private tagOfCommand(): string {
    const p = this.parts[0];
    return p && p.kind === 'text' ? (p.text.split(' ')[0] ?? '') : '';
  }

  private resetCommand(): void {
    this.parts = [];
    this.textBytes = 0;
    this.literals = 0;
    this.literalRemaining = 0;
    this.literalChunks = [];
  }
}
