// The shape every command handler has: the states it runs in, which unsolicited updates may follow it,
// and `handle(session, command) → tagged result`.
import type { CommandName, CommandOf } from '../protocol/commands.js';
import type { Session, SessionState } from '../session.js';

export interface Result {
  status: 'OK' | 'NO' | 'BAD';
  /** Response code without brackets, e.g. `TRYCREATE`, `APPENDUID 38505 3955`. */
  code?: string;
  text: string;
  /** What the connection does after writing the tagged response. */
  effect?: 'starttls' | 'logout' | 'compress';
}

export const ok = (text = 'Completed', code?: string): Result => ({ status: 'OK', text, ...(code ? { code } : {}) });
export const no = (text: string, code?: string): Result => ({ status: 'NO', text, ...(code ? { code } : {}) });
export const bad = (text: string, code?: string): Result => ({ status: 'BAD', text, ...(code ? { code } : {}) });

/**
 * Which untagged updates may be sent before the tagged response (RFC 3501 §7.4.1, §5.5):
 * `full` = EXISTS, FETCH FLAGS and EXPUNGE; `no-expunge` = not EXPUNGE (FETCH, STORE, SEARCH and UID
 * forms); `none` = nothing (the command leaves the mailbox or handles updates itself).
 */
export type UpdatePolicy = 'full' | 'no-expunge' | 'none';

export interface CommandSpec<N extends CommandName> {
  states: readonly SessionState[];
  updates: UpdatePolicy;
  handle(session: Session, command: CommandOf<N>): Promise<Result>;
}

export const ANY: readonly SessionState[] = ['not-authenticated', 'authenticated', 'selected'];
export const NOT_AUTH: readonly SessionState[] = ['not-authenticated'];
export const AUTH: readonly SessionState[] = ['authenticated', 'selected'];
export const SELECTED: readonly SessionState[] = ['selected'];
