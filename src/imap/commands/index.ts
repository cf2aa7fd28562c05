// The command table: every command of the union mapped to its spec (the mapped type makes it exhaustive).
import type { CommandName } from '../protocol/commands.js';
import { CAPABILITY, ID, LOGOUT, NOOP } from './any-state.js';
import { APPEND } from './append.js';
import { COMPRESS } from './compress.js';
import { AUTHENTICATE, LOGIN, STARTTLS } from './auth.js';
import { COPY, MOVE } from './copy.js';
import { ENABLE, GETQUOTA, GETQUOTAROOT, IDLE, SETQUOTA } from './extensions.js';
import { FETCH } from './fetch.js';
import { LIST, LSUB } from './list.js';
import { CREATE, DELETE, NAMESPACE, RENAME, STATUS, SUBSCRIBE, UNSUBSCRIBE } from './mailboxes.js';
import { SEARCH } from './search.js';
import { CHECK, CLOSE, EXAMINE, EXPUNGE, SELECT, UNSELECT } from './select.js';
import { SORT, THREAD } from './sort.js';
import { STORE } from './store.js';
import type { CommandSpec } from './types.js';

export const COMMANDS: { [N in CommandName]: CommandSpec<N> } = {
  CAPABILITY,
  NOOP,
  LOGOUT,
  ID,
  STARTTLS,
  LOGIN,
  AUTHENTICATE,
  SELECT,
  EXAMINE,
  CREATE,
  DELETE,
  RENAME,
  SUBSCRIBE,
  UNSUBSCRIBE,
  LIST,
  LSUB,
  STATUS,
  NAMESPACE,
  APPEND,
  CHECK,
  CLOSE,
  UNSELECT,
  EXPUNGE,
  SEARCH,
  FETCH,
  STORE,
  COPY,
  MOVE,
  IDLE,
  ENABLE,
  GETQUOTA,
  GETQUOTAROOT,
  SETQUOTA,
  SORT,
  THREAD,
  COMPRESS,
};
