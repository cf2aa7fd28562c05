// Who sends and who reads, as the send path sees a caller of the API or of MCP: one mapping for every adapter.
import type { Principal } from '../platform/index.js';
import type { Reader, Sender } from './emails.js';

export const senderOf = (p: Principal): Sender => ({ teamId: p.teamId, apiKeyId: p.keyId, mode: p.mode });

/** sending_access keys read back only the emails they sent themselves; test-mode keys change only test-mode emails. */
export const readerOf = (p: Principal): Reader => ({ teamId: p.teamId, apiKeyId: p.keyId, ownOnly: p.permission !== 'full_access', mode: p.mode });
