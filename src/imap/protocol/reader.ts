// Frames the bytes of an IMAP connection into commands: a command is its text lines plus the literals
// announced at their ends (`{n}` synchronizing, `{n+}` non-synchronizing per RFC 7888). Pure: no socket;
// the session feeds it chunks and acts on what it reports.
//
// Before a literal is read the server may say no (RFC 3501 §7.5): a literal within the size limits is put to
// `admit` (quota, memory budget), which may take its time (the reader then holds what arrives and asks the
// connection to stop reading). A refused synchronizing literal is answered at once and never sent; a refused
// non-synchronizing one comes all the same and is read and dropped as it arrives, never held. An APPEND's size
// is judged once `admit` has answered, since the commands ahead of it (a pipelined LOGIN) change its limit.
import { MAX_APPEND_LITERAL_BYTES, MAX_LINE_BYTES, MAX_LITERALS_PER_COMMAND, MAX_OTHER_LITERAL_BYTES } from './limits.js';

export type Part = { kind: 'text'; text: string } | { kind: 'literal'; data: Buffer };

/** A tagged NO given instead of reading a literal: response code (RFC 5530) and text. */
export interface Refusal {
  code: string;
  text: string;
}

export interface RawCommand {
  parts: Part[];
  /** Set when a literal of the command was refused and dropped: the command is answered NO with it, not run. */
  refused?: Refusal;
  /** Bytes `admit` reserved for the command's literals: the connection gives them back once done with it. */
  reserved?: number;
}

/** A literal the client announced, put to `admit` before it is read. */
export interface LiteralAnnouncement {
  tag: string;
  /** The command's text so far (up to the `{n}`), and its literals before this one. */
  parts: readonly Part[];
  size: number;
  sync: boolean;
}

/** `admit`'s answer: read it (with the bytes reserved for it, if any), or refuse it. */
export type Admission = { reserved: number } | { refused: Refusal };

/** What becomes of a literal: an admission, or over a limit (BAD when synchronizing, else BYE). */
type Verdict = Admission | { rejected: string };

export interface ReaderHandlers {
  command(cmd: RawCommand): void;
  /** A synchronizing literal of acceptable size was announced: the server answers `+`. */
  continueLiteral(): void;
  /**
   * A synchronizing literal was read to its last byte and nothing after it has come yet. A client that writes the
   * literal and the rest of its line in two sends with Nagle on (Python's imaplib) holds that rest until the
   * literal is ACKed, which the kernel delays ~40 ms: a write of the server's now carries the ACK at once.
   */
  literalEnded?(): void;
  /** A command that cannot be accepted (over a limit): answered BAD with its tag; the reader resynchronizes. */
  reject(tag: string, reason: string): void;
  /** A synchronizing literal refused before it is sent: answered NO with its tag; the command is over. */
  refuse?(tag: string, refusal: Refusal): void;
  /** A state the connection cannot recover from (a non-synchronizing literal over the limit): answered BYE, closed. */
  fatal(reason: string): void;
  /**
   * Whether an APPEND may carry a message-sized literal now: only once logged in, so that a client that never
   * logs in cannot make the server hold 50 MB per connection (without it: always).
   */
  appendAllowed?(): boolean;
  /**
   * Decides on a literal before it is read (without it: every one within the size limits is read). An APPEND's
   * comes here whatever its size: the reader judges the size against `appendAllowed` once this has answered, so
   * an answer that waits for the commands ahead of the APPEND (a pipelined LOGIN) lets those count. It should
   * reserve nothing for a literal over MAX_APPEND_LITERAL_BYTES.
   */
  admit?(literal: LiteralAnnouncement): Admission | Promise<Admission>;
  /** Gives back bytes `admit` reserved for a command that is dropped before it is handed over. */
  release?(bytes: number): void;
  /** True while an `admit` answer is awaited: stop reading the socket (false: read again). */
  hold?(on: boolean): void;
}

const LITERAL_AT_END = /\{(\d{1,20})(\+?)\}$/;

/** Whether a command is an APPEND, from its first line. */
export function isAppend(firstLine: string): boolean {
  return (firstLine.split(' ', 3)[1] ?? '').toUpperCase() === 'APPEND';
}

/** The literal limit for a command, from its first line (APPEND carries a message, when `appendAllowed`). */
export function literalLimit(firstLine: string, appendAllowed = true): number {
  return appendAllowed && isAppend(firstLine) ? MAX_APPEND_LITERAL_BYTES : MAX_OTHER_LITERAL_BYTES;
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
  /** The literal being read, allocated once at its announced size (null while one is dropped). */
  private literal: Buffer | null = null;
  private literalFill = 0;
  /** Whether the literal being read was announced synchronizing (the client waited for `+`). */
  private literalSync = false;
  private refused: Refusal | null = null;
  private reserved = 0;
  /** Input that arrived while an `admit` answer was awaited, in order. */
  private held: Buffer[] | null = null;
  /** Bumped by reset/close: an `admit` answer for an earlier command is ignored. */
  private generation = 0;
  private closed = false;

  constructor(private readonly handlers: ReaderHandlers) {}

  /** Drops everything buffered (after STARTTLS, RFC 3501 §6.2.1: no plaintext injection). */
  reset(): void {
    this.lineChunks = [];
    this.lineBytes = 0;
    this.skipping = false;
    this.stopHolding();
    this.resetCommand();
  }

  close(): void {
    this.closed = true;
    this.stopHolding();
    this.resetCommand();
  }

  /** True while a command is partly received (a client that hangs up now loses only that command). */
  get midCommand(): boolean {
    return this.parts.length > 0 || this.literalRemaining > 0 || this.lineBytes > 0;
  }

  push(chunk: Buffer): void {
    if (this.held) {
      // Copy: the socket may reuse its buffer.
      if (!this.closed) this.held.push(Buffer.from(chunk));
      return;
    }
    let pos = 0;
    while (pos < chunk.length && !this.closed) {
      if (this.literalRemaining > 0) {
        const take = Math.min(this.literalRemaining, chunk.length - pos);
        if (this.literal) chunk.copy(this.literal, this.literalFill, pos, pos + take);
        this.literalFill += take;
        this.literalRemaining -= take;
        pos += take;
        if (this.literalRemaining === 0) {
          const kept = this.literal !== null;
          this.endLiteral();
          if (pos === chunk.length && kept && this.literalSync) this.handlers.literalEnded?.();
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
      // Waiting for `admit` now (TypeScript cannot see endLine set it): the rest is read once it has answered.
      const held = this.held as Buffer[] | null;
      if (held) {
        if (pos < chunk.length) held.push(Buffer.from(chunk.subarray(pos)));
        return;
      }
    }
  }

  private endLiteral(): void {
    // A dropped literal leaves an empty one in its place (the command is answered NO, not parsed).
    this.parts.push({ kind: 'literal', data: this.literal ?? Buffer.alloc(0) });
    this.literal = null;
    this.literalFill = 0;
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
      const cmd: RawCommand = { parts: this.parts };
      if (this.refused) cmd.refused = this.refused;
      if (this.reserved) cmd.reserved = this.reserved;
      this.reserved = 0; // handed over with the command
      this.resetCommand();
      this.handlers.command(cmd);
      return;
    }
    const size = Number(m[1]);
    const sync = m[2] !== '+';
    this.parts.push({ kind: 'text', text: line.slice(0, m.index) });
    const first = this.parts[0]!.kind === 'text' ? (this.parts[0] as { text: string }).text : '';
    const tag = this.tagOfCommand() || '*';
    this.literals++;
    if (this.literals > MAX_LITERALS_PER_COMMAND) {
      this.decide({ rejected: 'Too many literals' }, tag, size, sync);
      return;
    }
    // An APPEND's size waits for `admit`, which waits for the commands ahead of it: after a pipelined LOGIN its
    // limit is APPENDLIMIT, and a NO [TOOBIG] comes after their answers, in tag order.
    const later = isAppend(first) && !this.refused && this.handlers.admit !== undefined;
    const oversize = later ? null : this.sizeVerdict(first, size, sync);
    if (oversize) {
      this.decide(oversize, tag, size, sync);
      return;
    }
    if (this.refused) {
      // The command is refused already: a later synchronizing literal is where the client hears of it.
      if (sync) this.refuseNow(tag, this.refused);
      else this.startLiteral(size, false, false);
      return;
    }
    const admission = this.handlers.admit?.({ tag, parts: this.parts, size, sync }) ?? { reserved: 0 };
    if (!(admission instanceof Promise)) {
      this.admitted(admission, tag, first, size, sync, later);
      return;
    }
    // Hold whatever arrives (the connection stops reading) until `admit` answers.
    const generation = this.generation;
    this.held = [];
    this.handlers.hold?.(true);
    const fallback: Admission = { reserved: 0 };
    admission.then(
      (a) => this.resume(generation, a, () => this.admitted(a, tag, first, size, sync, later)),
      () => this.resume(generation, fallback, () => this.admitted(fallback, tag, first, size, sync, later)),
    );
  }

  /** A literal over its size limit: NO [TOOBIG] or a rejection (null: within it). */
  private sizeVerdict(first: string, size: number, sync: boolean): Verdict | null {
    const appendAllowed = this.handlers.appendAllowed?.() ?? true;
    if (size <= literalLimit(first, appendAllowed)) return null;
    // RFC 7889 §3: a logged-in APPEND over the advertised APPENDLIMIT is refused with TOOBIG, before it is sent.
    if (sync && appendAllowed && isAppend(first) && this.handlers.refuse) {
      return { refused: { code: 'TOOBIG', text: `Message too large (the limit is ${MAX_APPEND_LITERAL_BYTES} octets)` } };
    }
    return { rejected: 'Literal too large' };
  }

  private resume(generation: number, admission: Admission, decide: () => void): void {
    if (generation !== this.generation || this.closed) {
      // The command was dropped meanwhile: what was reserved for it goes back at once.
      if ('reserved' in admission && admission.reserved) this.handlers.release?.(admission.reserved);
      return;
    }
    const held = this.held ?? [];
    this.held = null;
    decide();
    for (const chunk of held) this.push(chunk);
    // Unless a held line announced another literal that waits for its own answer.
    if (!this.held) this.handlers.hold?.(false);
  }

  /** `admit` has answered; an APPEND's size is judged now (`judgeSize`), the commands ahead of it having run. */
  private admitted(admission: Admission, tag: string, first: string, size: number, sync: boolean, judgeSize: boolean): void {
    const oversize = judgeSize ? this.sizeVerdict(first, size, sync) : null;
    if (oversize && 'reserved' in admission && admission.reserved) this.handlers.release?.(admission.reserved);
    this.decide(oversize ?? admission, tag, size, sync);
  }

  private decide(verdict: Verdict, tag: string, size: number, sync: boolean): void {
    if ('rejected' in verdict) {
      this.resetCommand();
      if (sync) this.handlers.reject(tag, verdict.rejected);
      else {
        // Its bytes are on their way and cannot be told from commands: nothing more is read.
        this.close();
        this.handlers.fatal(verdict.rejected);
      }
      return;
    }
    if ('refused' in verdict) {
      if (sync) this.refuseNow(tag, verdict.refused);
      else {
        this.refused = verdict.refused;
        this.startLiteral(size, false, false);
      }
      return;
    }
    this.reserved += verdict.reserved;
    this.startLiteral(size, true, sync);
  }

  private startLiteral(size: number, keep: boolean, sync: boolean): void {
    this.literal = keep ? Buffer.allocUnsafe(size) : null;
    this.literalFill = 0;
    this.literalRemaining = size;
    this.literalSync = sync;
    if (size === 0) this.endLiteral();
    if (sync) this.handlers.continueLiteral();
  }

  /** Answers a synchronizing literal NO before it is sent: the command is over (RFC 3501 §7.5). */
  private refuseNow(tag: string, refusal: Refusal): void {
    this.resetCommand();
    this.handlers.refuse?.(tag, refusal);
  }

  private stopHolding(): void {
    this.generation++;
    if (this.held) {
      this.held = null;
      this.handlers.hold?.(false);
    }
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
    this.literal = null;
    this.literalFill = 0;
    this.refused = null;
    if (this.reserved) this.handlers.release?.(this.reserved);
    this.reserved = 0;
  }
}
