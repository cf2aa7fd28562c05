// Every limit of the IMAP server in one place (tested in test/imap/robustness.test.ts and test/imap/abuse.test.ts).

/** Longest command line, literals excluded (RFC 7162 §4 asks servers to accept at least 8192 octets). */
export const MAX_LINE_BYTES = 100 * 1024;
/** Largest literal in an APPEND (the message size cap) once logged in; a bigger one is refused before it is sent. */
export const MAX_APPEND_LITERAL_BYTES = 50 * 1024 * 1024;
/**
 * APPEND literals held in memory at once, all connections of both listeners together, and per client address
 * (src/core/listener-limits.ts ByteBudget, as SMTP DATA): reserved at the literal's announced size before it is
 * read; one that does not fit is refused (NO [LIMIT]) before its `+`, or dropped as it comes (non-synchronizing).
 * Per client, two messages of the largest size fit.
 */
export const MAX_APPEND_BUFFERED_BYTES = 256 * 1024 * 1024;
export const MAX_APPEND_BUFFERED_BYTES_PER_CLIENT = 2 * MAX_APPEND_LITERAL_BYTES;
/** Largest literal anywhere else (a password, a search string, a mailbox name), and any literal before login. */
export const MAX_OTHER_LITERAL_BYTES = 64 * 1024;
/** Literals in one command (a command with more is answered BAD). */
export const MAX_LITERALS_PER_COMMAND = 64;
/** Commands read ahead of the one running; past this the socket is paused (backpressure). */
export const MAX_QUEUED_COMMANDS = 16;
/** Consecutive BAD answers after which the connection is closed. */
export const MAX_BAD_COMMANDS = 20;
/** Failed authentications on one connection after which it is closed. */
export const MAX_AUTH_FAILURES = 3;
/** Autologout timer (RFC 3501 §5.4: at least 30 minutes), also while IDLE (RFC 2177). */
export const IDLE_TIMEOUT_MS = 30 * 60 * 1000;
/**
 * A connection that has not logged in this long after it was accepted is closed, whatever it sends meanwhile
 * (RFC 9051 §5.4 leaves the pre-authentication timer to the server; Dovecot's login processes close after the
 * same 3 minutes). It bounds idle pre-login floods and a STARTTLS whose handshake never comes.
 */
export const LOGIN_TIMEOUT_MS = 3 * 60 * 1000;
/** An implicit-TLS handshake that has not finished this long after the connection closes it (nginx's default). */
export const TLS_HANDSHAKE_TIMEOUT_MS = 60 * 1000;
/** Connections at once, both listeners together (Dovecot's default imap process_limit is 1024). */
export const MAX_CONNECTIONS = 4096;
/** Connections at once from one client address (an IPv6 /64); a NAT'ed office of mail clients fits. */
export const MAX_CONNECTIONS_PER_CLIENT = 200;
/** Parenthesised lists (and NOT/OR chains of SEARCH keys) nested deeper than this are a BAD command. */
export const MAX_NESTING_DEPTH = 256;
/** How long changes are gathered before an IDLE push (well under the one-second target). */
export const IDLE_PUSH_DELAY_MS = 50;
/**
 * Output of one command gathered before it is written (about this many bytes): a command's untagged responses and
 * its tagged line go out in one write, so that a client with Nagle's algorithm and delayed ACKs does not wait
 * ~40 ms for the second of two writes; past this, a large FETCH is written in pieces of this size, each awaited
 * (backpressure).
 */
export const RESPONSE_WRITE_BYTES = 64 * 1024;
/** Messages handled per batch when FETCH/SEARCH stream over a large set (one store read each, ~1 MB of rows at most). */
export const FETCH_BATCH = 1000;
/** Parsed message summaries (ENVELOPE, BODYSTRUCTURE) kept per process, by content address. */
export const SUMMARY_CACHE_ENTRIES = 50_000;
/** …and at most this many bytes (a typical summary is 0.5–1.5 KiB: 50,000 of them fit; one of 4 MiB is not kept). */
export const SUMMARY_CACHE_BYTES = 32 * 1024 * 1024;
