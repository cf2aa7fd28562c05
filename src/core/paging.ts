// Form A pagination (spec: Common pagination), with `limit` accepted as the Form B synonym of `per_page`.
//  1. non-numeric or out-of-range page/per_page: 400 naming the parameter, no clamping
//  2. a page past the end: 200, empty data, real total
//  3. `cursor` is ignored
//  4. offset pages computed at request time
//  5. snake_case query, camelCase meta
import { badRequest } from './errors.js';

export const MAX_PER_PAGE = 100;
/** Keeps offset arithmetic exact; any page past the end is simply empty. */
export const MAX_PAGE = 1_000_000_000;

export interface PageRequest {
  page: number;
  perPage: number;
  offset: number;
  /** The caller used Form B's `limit`; the answer then carries Form B's `pagination` too. */
  formB: boolean;
}

export interface PageMeta {
  page: number;
  perPage: number;
  total: number;
  totalPages: number;
}

export interface Page<T> {
  data: T[];
  meta: PageMeta;
  pagination?: { page: number; limit: number; total: number; totalPages: number };
}

type Query = Record<string, string | string[] | undefined>;

function integerParam(query: Query, name: string, min: number, max: number): number | undefined {
  const raw = query[name];
  if (raw === undefined) return undefined;
  const range = `an integer between ${min} and ${max}`;
  if (Array.isArray(raw) || !/^\d{1,12}$/.test(raw.trim())) throw badRequest(`Invalid query parameter '${name}': must be ${range}`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw badRequest(`Invalid query parameter '${name}': must be ${range}`);
  return n;
}

export function parsePaging(query: Query, defaultPerPage = 20): PageRequest {
  const page = integerParam(query, 'page', 1, MAX_PAGE) ?? 1;
  const perPageParam = integerParam(query, 'per_page', 1, MAX_PER_PAGE);
  const limitParam = integerParam(query, 'limit', 1, MAX_PER_PAGE);
  const perPage = perPageParam ?? limitParam ?? defaultPerPage;
  return { page, perPage, offset: (page - 1) * perPage, formB: perPageParam === undefined && limitParam !== undefined };
}

export function toPage<T>(data: T[], total: number, req: PageRequest): Page<T> {
  const totalPages = total === 0 ? 0 : Math.ceil(total / req.perPage);
  const page: Page<T> = { data, meta: { page: req.page, perPage: req.perPage, total, totalPages } };
  if (req.formB) page.pagination = { page: req.page, limit: req.perPage, total, totalPages };
  return page;
}
