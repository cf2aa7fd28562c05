// The automation area: email validation, workflows (later: signup forms; issue 31). Imports the audience,
// templates and sending areas, through their indexes.
// What other areas, the adapters and appliance.ts may call; a file of another area imports this index only.
export { BIG_PROVIDERS, ROLE_ACCOUNTS, TLD_TYPOS } from './address-checks.js';
export { MX_STATUSES, ROUTE_TTL_MS } from './mail-routes.js';
export {
  type EmailValidation, MAX_VALIDATION_BATCH, validateEmail, validateEmails, VALIDATION_REASONS, VALIDATION_RESULTS,
  type ValidationReason, type ValidationResult
} from './validation.js';
export {
  CONDITION_OPERATORS, MAX_STEPS, MAX_WAIT_DAYS, STEP_TYPES, TRIGGER_TYPES, type Graph, type Step, type Trigger
} from './workflow-graph.js';
export { workflowMachinery } from './workflow-intake.js';
export { pruneFinishedRuns } from './workflow-runs.js';
export {
  acceptWorkflowEvent, activateWorkflow, createWorkflow, deleteWorkflow, getWorkflow, listRuns, listWorkflows, MAX_WORKFLOWS, pauseWorkflow,
  RUN_STATES, setGraph, triggerWorkflow, WORKFLOW_STATUSES, type RunView, type Workflow
} from './workflows.js';
export {
  CONFIRM_LIFETIME_DAYS, confirmSignup, createSignupForm, deleteSignupForm, embedHtml, FORM_PAGE_PATH, getSignupForm, HONEYPOT_FIELD, listSignupForms, MAX_FORM_FIELDS, originAllowed,
  publicForm, pruneUnconfirmedSignups, readConfirmToken, registerSignupJobs, SIGNUP_CONFIRM_JOB, submitSignup, UNCONFIRMED_KEEP_DAYS, updateSignupForm, type ConfirmCheck, type FormField, type SignupForm, type SignupFormInput, type SubmitOutcome
} from './signup-forms.js';
