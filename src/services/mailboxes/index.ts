// The mailboxes area: hosted mailboxes, aliases, shares and filters through the API, and mail-client
// autoconfiguration. Imports the platform and inbound areas.
// What other areas, the adapters and appliance.ts may call; a file of another area imports this index only.
export { autodiscoverRequestAddress, autodiscoverResponse, clientAddress, thunderbirdConfig } from './autoconfig.js';
export {
  addShare, createAlias, createMailbox, deleteAlias, deleteMailbox, getFilters, getMailbox, listAliases,
  listMailboxes, listShares, putFilters, removeShare, setMailboxPassword, updateMailbox
} from './mailboxes.js';
