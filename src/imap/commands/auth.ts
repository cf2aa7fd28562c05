// tag STARTTLS (RFC 3501 §6.2.1) | tag LOGIN user pass (§6.2.3) | tag AUTHENTICATE PLAIN [initial] (§6.2.2,
// RFC 4616, SASL-IR RFC 4959). Credentials are accepted only over TLS (or in clear from MAIL_TRUSTED_NETWORKS); failed logins count against the
// IP and the user name in the guard shared with SMTP submission.
import { bad, no, NOT_AUTH, ok, type CommandSpec, type Result } from './types.js';
import { MAX_AUTH_FAILURES } from '../protocol/limits.js';
import type { Session } from '../session.js';
import { capabilities, passwordsAllowed } from '../capabilities.js';

export const STARTTLS: CommandSpec<'STARTTLS'> = {
  states: NOT_AUTH,
  updates: 'none',
  async handle(s) {
    if (s.client.secure) return bad('TLS is already active');
    return { ...ok('Begin TLS negotiation now'), effect: 'starttls' };
  },
};

async function tryLogin(s: Session, user: string, password: string): Promise<Result> {
  const ip = s.client.remoteAddress;
  const name = user.trim().toLowerCase();
  if (s.deps.guard.loginBlocked(ip, name)) {
    return no('Too many failed logins; try again later', 'UNAVAILABLE');
  }
  const account = name && password ? await s.store.authenticate(name, password) : null;
  if (!account) {
    s.deps.guard.loginFailed(ip, name);
    s.authFailures++;
    const result = no('Invalid credentials', 'AUTHENTICATIONFAILED');
    return s.authFailures >= MAX_AUTH_FAILURES ? { ...result, effect: 'logout' } : result;
  }
  s.login(account);
  s.deps.log.info({ mailbox: account.id, ip }, 'imap login');
  return ok('Logged in', `CAPABILITY ${capabilities(s).join(' ')}`);
}

export const LOGIN: CommandSpec<'LOGIN'> = {
  states: NOT_AUTH,
  updates: 'none',
  async handle(s, cmd) {
    if (!passwordsAllowed(s.client)) return no('Use STARTTLS first', 'PRIVACYREQUIRED');
    return tryLogin(s, cmd.user, cmd.password);
  },
};

/** RFC 4616 message: [authzid] NUL authcid NUL passwd. */
function decodePlain(b64: string): { user: string; password: string } | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) return null;
  const parts = Buffer.from(b64, 'base64').toString('utf8').split('\x00');
  if (parts.length !== 3) return null;
  const [authz, user, password] = parts as [string, string, string];
  if (authz && authz.toLowerCase() !== user.toLowerCase()) return null;
  return { user, password };
}

export const AUTHENTICATE: CommandSpec<'AUTHENTICATE'> = {
  states: NOT_AUTH,
  updates: 'none',
  async handle(s, cmd) {
    if (cmd.mechanism !== 'PLAIN') return no(`Unsupported mechanism ${cmd.mechanism}`, 'CANNOT');
    if (!passwordsAllowed(s.client)) return no('Use STARTTLS first', 'PRIVACYREQUIRED');
    let response = cmd.initial;
    if (response === null) {
      response = await s.client.continuation('');
      if (response === null) return bad('Connection closed');
    }
    if (response === '*') return bad('Authentication cancelled');
    const creds = decodePlain(response === '=' ? '' : response);
    if (!creds) return bad('Malformed PLAIN response');
    return tryLogin(s, creds.user, creds.password);
  },
};
