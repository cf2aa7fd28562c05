// The platform area: the account a request acts for and what it owns — teams, API keys, plans and their
// limits, sending domains with their DNS records, the event log, health. The lowest area: it imports no other.
// What other areas, the adapters and appliance.ts may call; a file of another area imports this index only.
export {
  apiKeyIdOf, authenticate, createApiKey, deleteApiKey, type IssuedKey, KEY_MODES, type KeyMode, listApiKeys, modeOfToken,
  newToken, type Permission, PERMISSIONS, type Principal, rotateApiKey
} from './api-keys.js';
export {
  assignDedicatedIp, createDomain, deleteDomain, getDomain, INBOUND_MODES, type InboundMode, listDomains, normaliseDomainName,
  REGIONS, releaseDedicatedIp, TLS_MODES, trustDomain, trustLocalDomains, updateDomain, verifyDomain
} from './domains.js';
export { DKIM_KEY_TYPES, type DkimKeyType } from './dkim-keys.js';
export {
  abortDkimRotation, activateDkimRotation, DKIM_RETIRE_JOB, type DkimRotation, retireDkimKeys, RETIRE_AFTER_DAYS, rotateDkim
} from './dkim-rotation.js';
export {
  acknowledgeAlert, type Alert, alertInsert, ALERT_KINDS, type AlertKind, listAlerts, listAllAlerts, pageAlerts, raiseAlert, toAlert
} from './alerts.js';
export { checkDomainDns, DNS_CHECK_JOB, scheduleDnsChecks, startDnsCheckRound } from './dns-drift.js';
export { listTeamEvents } from './events.js';
export {
  ACCESS_TOKEN_TTL_MS, approveAuthorization, type AuthorizationCheck, type AuthorizationRequest, checkAuthorizationRequest, checkLogin,
  type ClientCredentials, CODE_TTL_MS, createOAuthUser, deleteClient, deleteOAuthUser, exchangeCode, findClient, listClients,
  listOAuthUsers, type OAuthClient, OAuthError, type OAuthUser, redirectUriProblem, refreshTokens, REFRESH_TOKEN_TTL_MS, registerClient,
  resetOAuthUserPassword, revokeToken, type TokenResponse, OAUTH_EXPIRED_KEEP_MS, pruneExpiredOAuth
} from './oauth.js';
export { isScope, parseScope, type Scope, SCOPE_WORDS, SCOPES } from './oauth-scopes.js';
export { checkHealth } from './health.js';
export { limitsFor, PLAN_LIMITS } from './limits.js';
export {
  createTeamWithKey, getTeam, insertTeamWithKey, listTeams, setTeamPlan, type Team, type TeamWithKey
} from './teams.js';
export { publicBaseUrl } from './public-url.js';
