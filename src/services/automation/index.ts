// The automation area: email validation (later: signup forms and workflows, issue 31). Imports the sending
// area (its suppression list), through its index.
// What other areas, the adapters and appliance.ts may call; a file of another area imports this index only.
export { BIG_PROVIDERS, ROLE_ACCOUNTS, TLD_TYPOS } from './address-checks.js';
export { MX_STATUSES, ROUTE_TTL_MS } from './mail-routes.js';
export {
  type EmailValidation, MAX_VALIDATION_BATCH, validateEmail, validateEmails, VALIDATION_REASONS, VALIDATION_RESULTS,
  type ValidationReason, type ValidationResult
} from './validation.js';
