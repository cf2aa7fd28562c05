import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { Success } from '../../schemas/common.js';
import { ActivateDkimRotation, AssignIp, CreateDomain, DkimRotation, Domain, RotateDkim, UpdateDomain } from '../../schemas/platform/domains.js';
import {
  assignDedicatedIp, releaseDedicatedIp,
  abortDkimRotation, activateDkimRotation, createDomain, deleteDomain, getDomain, listDomains, rotateDkim, updateDomain, verifyDomain
} from '../../../services/platform/index.js';

export const domainRoutes = [
  defineRoute({
    method: 'GET',
    path: '/domains',
    summary: "List the team's sending domains, newest first (unpaginated)",
    tag: 'Domains',
    access: 'full_access',
    response: z.object({ domains: z.array(Domain) }),
    async handle({ app, principal }) {
      return { domains: await listDomains(app, principal.teamId) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/domains',
    summary: 'Add a sending domain: generates its DKIM key and returns the DNS records to publish',
    tag: 'Domains',
    access: 'full_access',
    body: CreateDomain,
    status: 201,
    response: Domain,
    async handle({ app, principal, body }) {
      return createDomain(app, principal.teamId, body);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/domains/{id}',
    summary: 'Get a domain with its DNS records and their status',
    tag: 'Domains',
    access: 'full_access',
    response: Domain,
    async handle({ app, principal, params }) {
      return getDomain(app, principal.teamId, params.id!);
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/domains/{id}',
    summary: 'Change open/click tracking or the TLS mode',
    tag: 'Domains',
    access: 'full_access',
    body: UpdateDomain,
    response: Success,
    async handle({ app, principal, params, body }) {
      await updateDomain(app, principal.teamId, params.id!, body);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/domains/{id}',
    summary: 'Delete a domain and its keys',
    tag: 'Domains',
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteDomain(app, principal.teamId, params.id!, principal.mode);
      return { success: true };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/domains/{id}/verify',
    summary: 'Look the DNS records up now and refresh the status of each and of the domain',
    tag: 'Domains',
    access: 'full_access',
    response: Domain,
    async handle({ app, principal, params }) {
      return verifyDomain(app, principal.teamId, params.id!);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/domains/{id}/ip',
    summary:
      "Give the domain one of the box's dedicated outbound addresses (MAIL_OUTBOUND_IPS): its mail leaves from it, greeting with its HELO name; its SPF record names it. Scale plan and above (403); 422 when the address is not one of the box's",
    tag: 'Domains',
    access: 'full_access',
    body: AssignIp,
    response: Domain,
    async handle({ app, principal, params, body }) {
      return assignDedicatedIp(app, principal.teamId, params.id!, body.ip);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/domains/{id}/ip',
    summary: "Return the domain to the box's shared outbound addresses",
    tag: 'Domains',
    access: 'full_access',
    response: Domain,
    async handle({ app, principal, params }) {
      return releaseDedicatedIp(app, principal.teamId, params.id!);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/domains/{id}/dkim/rotate',
    summary:
      "Start a DKIM key rotation: new keys under new selectors (of `dkim_key_type`, the domain's current type by default), answered with the TXT records to publish; 409 while a rotation is under way",
    tag: 'Domains',
    access: 'full_access',
    body: RotateDkim,
    status: 201,
    response: DkimRotation,
    async handle({ app, principal, params, body }) {
      return rotateDkim(app, principal.teamId, params.id!, body);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/domains/{id}/dkim/rotate/activate',
    summary:
      'Switch signing to the new keys once their records are published (422 saying what the DNS answered otherwise); the old selectors stay published for `retire_after_days` (1..90, default 7), then are retired',
    tag: 'Domains',
    access: 'full_access',
    body: ActivateDkimRotation,
    response: DkimRotation,
    async handle({ app, principal, params, body }) {
      return activateDkimRotation(app, principal.teamId, params.id!, body);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/domains/{id}/dkim/rotate',
    summary: 'Abort a DKIM rotation that is not activated yet (its new keys are deleted); 409 once activated',
    tag: 'Domains',
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await abortDkimRotation(app, principal.teamId, params.id!);
      return { success: true };
    },
  }),
];
