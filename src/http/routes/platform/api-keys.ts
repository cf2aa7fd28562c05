import { z } from 'zod';
import { defineRoute } from '../../route.js';
import { ApiKey, CreateApiKey, IssuedApiKey } from '../../schemas/platform/api-keys.js';
import { Success } from '../../schemas/common.js';
import { createApiKey, deleteApiKey, listApiKeys, rotateApiKey, type IssuedKey } from '../../../services/platform/index.js';

const issued = ({ key, token }: IssuedKey) => ({ success: true as const, ...key, token });

export const apiKeyRoutes = [
  defineRoute({
    method: 'GET',
    path: '/api-keys',
    summary: "List the team's API keys, oldest first (values are never shown again)",
    tag: 'API keys',
    access: 'full_access',
    response: z.object({ keys: z.array(ApiKey) }),
    async handle({ app, principal }) {
      return { keys: await listApiKeys(app, principal.teamId) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api-keys',
    summary: 'Create an API key; its value is in `token`, shown once',
    tag: 'API keys',
    access: 'full_access',
    body: CreateApiKey,
    status: 201,
    response: IssuedApiKey,
    async handle({ app, principal, body }) {
      return issued(await createApiKey(app, principal.teamId, body, principal.mode));
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/api-keys/{id}/rotate',
    summary: 'Give a key a new value (in `token`, shown once); the old value stops working at once',
    tag: 'API keys',
    access: 'full_access',
    response: IssuedApiKey,
    async handle({ app, principal, params }) {
      return issued(await rotateApiKey(app, principal.teamId, params.id!, principal.mode));
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/api-keys/{id}',
    summary: 'Revoke an API key',
    tag: 'API keys',
    access: 'full_access',
    response: Success,
    async handle({ app, principal, params }) {
      await deleteApiKey(app, principal.teamId, params.id!, principal.mode);
      return { success: true };
    },
  }),
];
