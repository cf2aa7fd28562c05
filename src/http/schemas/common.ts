import { z } from 'zod';

export const ErrorBody = z.object({ error: z.string(), code: z.string() }).meta({ id: 'Error' });
export const Success = z.object({ success: z.literal(true) }).meta({ id: 'Success' });
export const PageMeta = z
  .object({ page: z.number().int(), perPage: z.number().int(), total: z.number().int(), totalPages: z.number().int() })
  .meta({ id: 'PageMeta' });

export const paged = <T extends z.ZodType>(item: T) => z.object({ data: z.array(item), meta: PageMeta });

/** A non-empty trimmed name, as used by keys, teams and the like. */
export const name = (max = 100) =>
  z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

export const boolean = () => z.boolean({ error: 'must be a boolean' });

/** A query parameter `true` or `false`, as a boolean. */
export const queryBoolean = () => z.enum(['true', 'false'], { error: 'must be true or false' }).transform((v) => v === 'true');
