// tag CAPABILITY | tag NOOP | tag LOGOUT (RFC 3501 §6.1) | tag ID (params | NIL) (RFC 2971)
import { capabilities } from '../capabilities.js';
import { formatValue } from '../protocol/writer.js';
import { ANY, ok, type CommandSpec } from './types.js';

export const CAPABILITY: CommandSpec<'CAPABILITY'> = {
  states: ANY,
  updates: 'full',
  async handle(s) {
    await s.untagged(`CAPABILITY ${capabilities(s).join(' ')}`);
    return ok('Capability completed');
  },
};

/** NOOP is how clients poll: the update policy after it sends what changed (RFC 3501 §6.1.2). */
export const NOOP: CommandSpec<'NOOP'> = {
  states: ANY,
  updates: 'full',
  async handle() {
    return ok('NOOP completed');
  },
};

export const LOGOUT: CommandSpec<'LOGOUT'> = {
  states: ANY,
  updates: 'none',
  async handle(s) {
    await s.untagged('BYE Logging out');
    s.close();
    return { ...ok('Logout completed'), effect: 'logout' };
  },
};

export const ID: CommandSpec<'ID'> = {
  states: ANY,
  updates: 'full',
  async handle(s, cmd) {
    s.clientId = cmd.params;
    await s.untagged(`ID ${formatValue(['name', 'mail-appliance', 'version', s.deps.version])}`);
    return ok('ID completed');
  },
};
