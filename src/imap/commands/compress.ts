// tag COMPRESS DEFLATE (RFC 4978): after the tagged OK (sent uncompressed), both directions are raw DEFLATE
// (RFC 1951); the connection does the work (connection.ts). Once logged in, over TLS or not.
import { AUTH, bad, no, ok, type CommandSpec } from './types.js';

export const COMPRESS: CommandSpec<'COMPRESS'> = {
  states: AUTH,
  updates: 'none',
  async handle(s, cmd) {
    // §3: an unknown mechanism is a BAD command; a second COMPRESS is refused with COMPRESSIONACTIVE.
    if (cmd.mechanism !== 'DEFLATE') return bad(`Unknown compression mechanism ${cmd.mechanism}`);
    if (s.client.compressed) return no('DEFLATE active via COMPRESS', 'COMPRESSIONACTIVE');
    return { ...ok('DEFLATE active'), effect: 'compress' };
  },
};
