// CAPABILITY by state (RFC 3501 §6.1.1, §7.2.1): STARTTLS and LOGINDISABLED before TLS, AUTH=PLAIN after
// (or at once for a client on MAIL_TRUSTED_NETWORKS, which may log in without TLS, as Dovecot's
// login_trusted_networks);
// APPENDLIMIT once logged in (RFC 7889 §2: the limit APPEND has then; before login no APPEND is possible).
import { MAX_APPEND_LITERAL_BYTES } from './protocol/limits.js';
import type { ClientChannel, Session } from './session.js';

export const EXTENSIONS = [
  'IMAP4rev2', // RFC 9051, after ENABLE IMAP4rev2 (Session.imap4rev2)
  'LITERAL+', // RFC 7888
  'SASL-IR', // RFC 4959
  'ID', // RFC 2971
  'ENABLE', // RFC 5161
  'IDLE', // RFC 2177
  'NAMESPACE', // RFC 2342
  'UIDPLUS', // RFC 4315
  'MOVE', // RFC 6851
  'UNSELECT', // RFC 3691
  'CHILDREN', // RFC 3348
  'SPECIAL-USE', // RFC 6154
  'CONDSTORE', // RFC 7162
  'QUOTA', // RFC 9208
  'QUOTA=RES-STORAGE',
  'LIST-STATUS', // RFC 5819
  'STATUS=SIZE', // RFC 8438
  'LIST-EXTENDED', // RFC 5258
  'MULTIAPPEND', // RFC 3502
  'BINARY', // RFC 3516
  'SORT', // RFC 5256
  'SORT=DISPLAY', // RFC 5957
  'THREAD=ORDEREDSUBJECT', // RFC 5256
  'THREAD=REFERENCES',
  'ESEARCH', // RFC 4731
  'SEARCHRES', // RFC 5182
  'QRESYNC', // RFC 7162 §3.2
  'OBJECTID', // RFC 8474
  'SAVEDATE', // RFC 8514
];

export function capabilities(session: Session): string[] {
  const caps = ['IMAP4rev1', ...EXTENSIONS];
  if (session.state === 'not-authenticated') {
    if (!session.client.secure) caps.push('STARTTLS');
    caps.push(passwordsAllowed(session.client) ? 'AUTH=PLAIN' : 'LOGINDISABLED');
  } else {
    caps.push(`APPENDLIMIT=${MAX_APPEND_LITERAL_BYTES}`);
    // RFC 4978 §3: once logged in (compression before the password invites CRIME-style guessing); not once active.
    if (!session.client.compressed) caps.push('COMPRESS=DEFLATE');
  }
  return caps;
}

/** Whether LOGIN and AUTHENTICATE PLAIN are accepted: over TLS, or in clear from a trusted network. */
export function passwordsAllowed(client: ClientChannel): boolean {
  return client.secure || client.trusted;
}
