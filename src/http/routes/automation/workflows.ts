// Workflows: management with a full_access key; custom events (POST /workflows/events) with any key, as an
// application's backend posts them.
import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { paged, Success } from '../../schemas/common.js';
import { CreateWorkflow, RunsQuery, SetGraph, TriggerWorkflow, Workflow, WorkflowDetail, WorkflowEvent, WorkflowRun } from '../../schemas/automation/workflows.js';
import {
  acceptWorkflowEvent, activateWorkflow, createWorkflow, deleteWorkflow, getWorkflow, listRuns, listWorkflows, pauseWorkflow, setGraph, triggerWorkflow
} from '../../../services/automation/index.js';

const tag = 'Workflows';
const withWorkflow = z.object({ success: z.literal(true), workflow: Workflow });

export const workflowRoutes = [
  defineRoute({
    method: 'POST',
    path: '/workflows/events',
    summary:
      'A custom event for one contact (`name`, `contact_id` or `email`, `data`): every active workflow whose trigger is `{ type: "event", name }` starts a run for the contact (202: taken, runs start within moments). 404 for an unknown contact',
    tag,
    access: 'sending_access',
    body: WorkflowEvent,
    status: 202,
    response: Success,
    async handle({ app, principal, body }) {
      await acceptWorkflowEvent(app, principal.teamId, body);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/workflows',
    summary: 'Create a draft workflow (`name`, optional `timezone`, `allow_concurrent_runs`, `graph`); answers it with the secret that signs its webhook steps (shown once)',
    tag,
    access: 'full_access',
    body: CreateWorkflow,
    status: 201,
    response: z.object({ success: z.literal(true), workflow: Workflow, signing_secret: z.string() }),
    async handle({ app, principal, body }) {
      const { signing_secret, ...workflow } = await createWorkflow(app, principal.teamId, principal.mode, body);
      return { success: true, workflow, signing_secret };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/workflows',
    summary: "The team's workflows, oldest first (`{ data }`, no meta)",
    tag,
    access: 'full_access',
    response: z.object({ data: z.array(Workflow) }),
    async handle({ app, principal }) {
      return { data: await listWorkflows(app, principal.teamId) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/workflows/{id}',
    summary: 'A workflow with its graph and the count of its runs by state',
    tag,
    access: 'full_access',
    response: WorkflowDetail,
    async handle({ app, principal, params }) {
      return getWorkflow(app, principal.teamId, params.id!);
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/workflows/{id}/graph',
    summary:
      'Replace the graph (not while active: 409). Checked as a whole: one trigger, steps of known types with their fields, every reference a step, every step reachable, no loop without a wait, every branch ending at an exit step; a 400 names the step',
    tag,
    access: 'full_access',
    body: SetGraph,
    response: withWorkflow,
    async handle({ app, principal, params, body }) {
      return { success: true, workflow: await setGraph(app, principal.teamId, params.id!, body) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/workflows/{id}/activate',
    summary: 'Start (or resume) the workflow: its trigger starts runs from now on, paused runs go on (422 without a graph)',
    tag,
    access: 'full_access',
    response: withWorkflow,
    async handle({ app, principal, params }) {
      return { success: true, workflow: await activateWorkflow(app, principal.teamId, params.id!) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/workflows/{id}/pause',
    summary: 'Pause the workflow: no new runs; runs in flight stop at their next step (a wait runs out first) until it is activated again (422 for a draft)',
    tag,
    access: 'full_access',
    response: withWorkflow,
    async handle({ app, principal, params }) {
      return { success: true, workflow: await pauseWorkflow(app, principal.teamId, params.id!) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/workflows/{id}/trigger',
    summary: 'Start a run now for one contact (`contact_id` or `email`, optional `data`); 422 unless active, 409 when the contact is already in a run',
    tag,
    access: 'full_access',
    body: TriggerWorkflow,
    status: 201,
    response: z.object({ success: z.literal(true), run_id: z.string() }),
    async handle({ app, principal, params, body }) {
      const { run_id } = await triggerWorkflow(app, principal.teamId, params.id!, body);
      return { success: true, run_id };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/workflows/{id}/runs',
    summary: "The workflow's runs, newest first (Form A), each with its steps: outcome and reason (why an email was or was not sent). Filters: contact_id, state",
    tag,
    access: 'full_access',
    query: RunsQuery,
    paged: true,
    response: paged(WorkflowRun),
    async handle({ app, principal, params, query, rawQuery }) {
      return listRuns(app, principal.teamId, params.id!, rawQuery, query);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/workflows/{id}',
    summary: 'Delete the workflow and its runs (runs in flight end; nothing more is sent)',
    tag,
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteWorkflow(app, principal.teamId, params.id!);
      return { success: true };
    },
  }),
];
