// Who sends and who reads, as the send path sees a caller of the API or of MCP: one mapping for every adapter.
import { apiKeyIdOf, type Principal } from '../platform/index.js';
import type { Reader, Sender } from './emails.js';

/** An OAuth token is no API key: its sends record none (emails.api_key_id references api_keys). */
export const senderOf = (p: Principal): Sender => ({ teamId: p.teamId, apiKeyId: apiKeyIdOf(p), mode: p.mode });

/** sending_access keys read back only the emails they sent themselves; test-mode keys change only test-mode emails. */
export const readerOf = (p: Principal): Reader => ({ teamId: p.teamId, apiKeyId: p.keyId, ownOnly: p.permission !== 'full_access', mode: p.mode });
