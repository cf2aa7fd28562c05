// POP3 wire format (RFC 1939, CAPA RFC 2449, STLS RFC 2595, AUTH RFC 5034), pure: a command line in, a
// typed command out; responses and multi-line bodies out as bytes. No I/O, no store.

/** Limits of the protocol (RFC 2449 §4: a command line is at most 255 octets; AUTH responses may be longer). */
export const POP3_LIMITS = {
  /** A line longer than this (without its CRLF) closes the connection. */
  maxLineBytes: 2048,
  /** Unknown, malformed or out-of-state commands tolerated per connection before it is closed. */
  maxBadCommands: 10,
  /** RFC 1939 §3: an autologout timer of at least 10 minutes. */
  idleTimeoutMs: 10 * 60_000,
  /** Commands read ahead (pipelining) before the connection stops reading until they are answered. */
  maxQueuedLines: 64,
  /** Connections at once, both listeners together (Dovecot's default pop3 process_limit is 1024). */
  maxConnections: 1024,
  /** Connections at once from one client address (an IPv6 /64): one abusive peer cannot take them all. */
  maxConnectionsPerClient: 50,
  /** An implicit-TLS handshake that has not finished this long after the connection closes it (nginx's default). */
  tlsHandshakeTimeoutMs: 60_000,
} as const;

export type Pop3Command =
  | { verb: 'USER'; name: string }
  | { verb: 'PASS'; password: string }
  | { verb: 'AUTH'; mechanism: string | null; initial: string | null }
  | { verb: 'CAPA' }
  | { verb: 'STLS' }
  | { verb: 'STAT' }
  | { verb: 'LIST'; msg: number | null }
  | { verb: 'RETR'; msg: number }
  | { verb: 'DELE'; msg: number }
  | { verb: 'NOOP' }
  | { verb: 'RSET' }
  | { verb: 'QUIT' }
  | { verb: 'TOP'; msg: number; lines: number }
  | { verb: 'UIDL'; msg: number | null };

export type Pop3Verb = Pop3Command['verb'];

export type ParseResult = { ok: true; command: Pop3Command } | { ok: false; error: string };

const bad = (error: string): ParseResult => ({ ok: false, error });
const ok = (command: Pop3Command): ParseResult => ({ ok: true, command });

/** A message number or line count: decimal digits only, within 32 bits. */
function number(arg: string | undefined, min: number): number | null {
  if (arg === undefined || !/^\d{1,10}$/.test(arg)) return null;
  const n = Number(arg);
  return n >= min && n <= 0xffffffff ? n : null;
}

/**
 * Text of a command argument: the line is read as latin1 (one character per byte, so limits count bytes),
 * but clients send user names and passwords in UTF-8, as SASL PLAIN carries them and as they were set.
 */
function utf8(latin1: string): string {
  return /[\x80-\xff]/.test(latin1) ? Buffer.from(latin1, 'latin1').toString('utf8') : latin1;
}

/** Parses one command line (without its CRLF, one character per byte). Keywords are case-insensitive (RFC 1939 §3). */
export function parseCommand(line: string): ParseResult {
  if (line.length === 0) return bad('Empty command');
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(line)) return bad('Control characters in command');
  const space = line.indexOf(' ');
  const verb = (space < 0 ? line : line.slice(0, space)).toUpperCase();
  const rest = space < 0 ? '' : line.slice(space + 1);
  const args = rest.length ? rest.split(' ') : [];
  const none = (command: Pop3Command) => (args.length === 0 ? ok(command) : bad(`${verb} takes no argument`));
  const optionalMsg = (make: (msg: number | null) => Pop3Command) => {
    if (args.length === 0) return ok(make(null));
    const msg = number(args[0], 1);
    return args.length === 1 && msg !== null ? ok(make(msg)) : bad(`Syntax: ${verb} [msg]`);
  };
  const msgArg = (make: (msg: number) => Pop3Command) => {
    const msg = number(args[0], 1);
    return args.length === 1 && msg !== null ? ok(make(msg)) : bad(`Syntax: ${verb} msg`);
  };
  switch (verb) {
    case 'USER':
      return rest.length > 0 && rest.length <= 320 ? ok({ verb: 'USER', name: utf8(rest) }) : bad('Syntax: USER name');
    case 'PASS':
      // The password is the rest of the line: passwords may contain spaces (as most servers allow).
      return rest.length > 0 ? ok({ verb: 'PASS', password: utf8(rest) }) : bad('Syntax: PASS password');
    case 'AUTH':
      if (args.length > 2) return bad('Syntax: AUTH [mechanism [initial-response]]');
      return ok({ verb: 'AUTH', mechanism: args[0] ? args[0].toUpperCase() : null, initial: args[1] ?? null });
    case 'CAPA':
    case 'STLS':
    case 'STAT':
    case 'NOOP':
    case 'RSET':
    case 'QUIT':
      return none({ verb });
    case 'LIST':
      return optionalMsg((msg) => ({ verb: 'LIST', msg }));
    case 'UIDL':
      return optionalMsg((msg) => ({ verb: 'UIDL', msg }));
    case 'RETR':
      return msgArg((msg) => ({ verb: 'RETR', msg }));
    case 'DELE':
      return msgArg((msg) => ({ verb: 'DELE', msg }));
    case 'TOP': {
      const msg = number(args[0], 1);
      const lines = number(args[1], 0);
      return args.length === 2 && msg !== null && lines !== null ? ok({ verb: 'TOP', msg, lines }) : bad('Syntax: TOP msg n');
    }
    default:
      return bad('Unknown command');
  }
}

/** The credentials of a SASL PLAIN response (RFC 4616), or null when malformed. authzid must be empty or the same user. */
export function decodeSaslPlain(base64: string): { username: string; password: string } | null {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64) || base64.length % 4 !== 0) return null;
  const parts = Buffer.from(base64, 'base64').toString('utf8').split('\0');
  if (parts.length !== 3) return null;
  const [authzid, username, password] = parts as [string, string, string];
  if (!username || !password || (authzid && authzid !== username)) return null;
  return { username, password };
}

export const okLine = (text: string) => `+OK${text ? ` ${text}` : ''}\r\n`;
export const errLine = (text: string) => `-ERR ${text}\r\n`;

/** A multi-line response (RFC 1939 §3): first line, then each line byte-stuffed, then the terminating ".". */
export function multiLine(first: string, lines: string[]): string {
  return okLine(first) + lines.map((l) => `${l.startsWith('.') ? '.' : ''}${l}\r\n`).join('') + '.\r\n';
}

/**
 * A message as a multi-line body: line ends normalised to CRLF, lines starting with "." stuffed with another
 * ".", ending in CRLF, then the terminating ".". Bytes other than line ends pass unchanged (latin1 is 1:1).
 * With `bodyLines`, only the header, the empty line and that many body lines (TOP).
 */
export function messageBody(raw: Buffer, bodyLines?: number): Buffer {
  let text = raw.toString('latin1');
  if (text.length > 0 && !text.endsWith('\n') && !text.endsWith('\r')) text += '\r\n';
  let lines = text.split(/\r\n|\r|\n/);
  lines.pop(); // the empty string after the final line end
  if (bodyLines !== undefined) {
    const blank = lines.indexOf('');
    if (blank >= 0) lines = lines.slice(0, blank + 1 + bodyLines);
  }
  const out = lines.map((l) => (l.startsWith('.') ? `.${l}\r\n` : `${l}\r\n`)).join('') + '.\r\n';
  return Buffer.from(out, 'latin1');
}
