// A new user's tour of the HTTP API from outside, against a running appliance (not part of npm test).
// Walks every path of the spec with good and bad input and prints a table of what answered differently
// from the spec: a 404 on a spec path (missing feature), a 500, an error body that is not { error, code },
// a status other than the spec's, a missing field, paging that is not Form A.
//
//   API=http://127.0.0.1:33000 KEY=sk_live_… npx tsx scripts/blackbox-tour.ts [--all]
//
// It creates resources in the key's team (contacts, segments, templates, webhooks, …) and leaves them there:
// point it at a scratch data dir. --all prints every check, not only the findings.

const API = (process.env.API ?? 'http://127.0.0.1:3000').replace(/\/$/, '');
const KEY = process.env.KEY ?? '';
const SHOW_ALL = process.argv.includes('--all');
if (!KEY) {
  process.stderr.write('set KEY (a full_access key) and API\n');
  process.exit(2);
}

interface Res {
  status: number;
  body: unknown;
  text: string;
  headers: Headers;
}

interface Row {
  path: string;
  kase: string;
  expected: string;
  got: string;
  ok: boolean;
  note: string;
}
const rows: Row[] = [];

async function call(method: string, path: string, body?: unknown, opts: { auth?: string | null; raw?: string; type?: string } = {}): Promise<Res> {
  const headers: Record<string, string> = {};
  const auth = opts.auth === undefined ? KEY : opts.auth;
  if (auth) headers.authorization = `Bearer ${auth}`;
  let payload: string | undefined;
  if (opts.raw !== undefined) {
    payload = opts.raw;
    headers['content-type'] = opts.type ?? 'application/json';
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  }
  const r = await fetch(API + path, { method, headers, body: payload, redirect: 'manual' });
  const text = await r.text();
  let parsed: unknown = undefined;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: r.status, body: parsed, text, headers: r.headers };
}

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function errorShapeProblem(res: Res): string | null {
  if (res.status < 400) return null;
  const b = obj(res.body);
  if (typeof b.error !== 'string' || typeof b.code !== 'string') return `error body not {error,code}: ${res.text.slice(0, 120)}`;
  return null;
}

const CODE_OF: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  422: 'unprocessable_entity',
};

/** One check: the status is one of `want`; the error body has the house shape; `extra` adds findings. */
function record(path: string, kase: string, res: Res, want: number[], extra?: (res: Res) => string | null): Res {
  const problems: string[] = [];
  if (!want.includes(res.status)) problems.push(`status ${res.status}`);
  if (res.status >= 500) problems.push('server error');
  const shape = errorShapeProblem(res);
  if (shape) problems.push(shape);
  if (res.status >= 400 && res.status < 500 && CODE_OF[res.status] && res.status !== 429) {
    const code = obj(res.body).code;
    // 403s for plan limits and holds may carry their own codes (the spec leaves them open)
    if (res.status !== 403 && code !== CODE_OF[res.status]) problems.push(`code ${String(code)} for ${res.status}`);
  }
  if (want.includes(res.status) && extra) {
    const e = extra(res);
    if (e) problems.push(e);
  }
  const got = `${res.status} ${res.status >= 400 ? String(obj(res.body).error ?? res.text.slice(0, 80)) : ''}`.trim();
  rows.push({ path, kase, expected: want.join('/'), got: got.slice(0, 110), ok: problems.length === 0, note: problems.join('; ') });
  return res;
}

function hasFields(...fields: string[]) {
  return (res: Res): string | null => {
    const b = obj(res.body);
    const missing = fields.filter((f) => !(f in b));
    return missing.length ? `missing ${missing.join(', ')}` : null;
  };
}

function formA(res: Res, items = 'data'): string | null {
  if (res.status >= 400) return null;
  const b = obj(res.body);
  const meta = obj(b.meta);
  if (!Array.isArray(b[items])) return `no ${items}[] (Form A)`;
  for (const f of ['page', 'perPage', 'total', 'totalPages']) if (typeof meta[f] !== 'number') return `meta.${f} missing`;
  if ((meta.totalPages as number) !== Math.ceil((meta.total as number) / (meta.perPage as number))) return 'totalPages != ceil(total/perPage)';
  return null;
}

function formB(res: Res): string | null {
  const b = obj(res.body);
  const p = obj(b.pagination);
  if (!Array.isArray(b.data)) return 'no data[] (Form B)';
  for (const f of ['page', 'limit', 'total', 'totalPages']) if (typeof p[f] !== 'number') return `pagination.${f} missing`;
  return null;
}

/** The paging rules of Form A on one list path. */
async function pagingA(path: string, extraQuery = '', defaultPerPage = 20, items = 'data'): Promise<void> {
  const fa = (r: Res) => formA(r, items);
  const q = (s: string) => `${path}?${s}${extraQuery ? '&' + extraQuery : ''}`;
  record(path, 'Form A default', await call('GET', q('')), [200], (r) => fa(r) ?? (obj(obj(r.body).meta).perPage === defaultPerPage ? null : `default perPage ${String(obj(obj(r.body).meta).perPage)} != ${defaultPerPage}`));
  for (const bad of ['page=0', 'page=abc', 'page=1.5', 'per_page=0', 'per_page=101', 'per_page=x', 'limit=101', 'limit=0']) {
    record(path, `paging ${bad}`, await call('GET', q(bad)), [400], (r) => {
      const name = bad.split('=')[0]!;
      return String(obj(r.body).error).includes(name) ? null : `message does not name ${name}`;
    });
  }
  record(path, 'page past the end', await call('GET', q('page=9999&per_page=1')), [200], (r) => {
    const b = obj(r.body);
    return fa(r) ?? (Array.isArray(b[items]) && (b[items] as unknown[]).length === 0 ? null : 'data not empty');
  });
  record(path, 'cursor ignored', await call('GET', q('cursor=zzz')), [200], fa);
  record(path, 'Form B limit=2', await call('GET', q('limit=2')), [200], (r) => {
    const b = obj(r.body);
    if (b.pagination) return formB(r);
    const meta = obj(b.meta);
    return meta.perPage === 2 ? null : `limit not honoured (perPage ${String(meta.perPage)})`;
  });
}

/** Bad bodies any JSON POST/PATCH/PUT must refuse with 400 (not 500). */
async function badBodies(method: string, path: string): Promise<void> {
  record(path, `${method} invalid JSON`, await call(method, path, undefined, { raw: '{"a":' }), [400]);
  record(path, `${method} JSON array body`, await call(method, path, undefined, { raw: '[1,2]' }), [400, 422]);
  record(path, `${method} JSON string body`, await call(method, path, undefined, { raw: '"x"' }), [400, 422]);
  record(path, `${method} null body`, await call(method, path, undefined, { raw: 'null' }), [400, 422]);
}

/** Ids nobody has: unknown, malformed, huge. */
async function badIds(method: string, template: string, body?: unknown, accept: number[] = [404]): Promise<void> {
  for (const id of ['doesnotexist', '999999999', '-1', '1.5', '%20', '99999999999999999999999', 'x'.repeat(300)]) {
    record(template, `${method} id=${id.length > 20 ? id.slice(0, 8) + '…' : id}`, await call(method, template.replace('{id}', id), body), accept.concat(id === '%20' || id.length > 200 || id === '-1' || id === '1.5' ? [400] : []));
  }
}

async function main(): Promise<void> {
  const stamp = Date.now().toString(36);

  // ---- authentication
  record('/domains', 'no credential', await call('GET', '/domains', undefined, { auth: null }), [401]);
  record('/domains', 'bad credential', await call('GET', '/domains', undefined, { auth: 'sk_live_nope' }), [401], (r) =>
    obj(r.body).error === 'Invalid API key' ? null : 'message not "Invalid API key"',
  );
  record('/domains', 'Basic auth header', await call('GET', '/domains', undefined, { auth: null }), [401]);
  const sk = await call('POST', '/api-keys', { name: `tour-send-${stamp}`, permission: 'sending_access' });
  record('/api-keys', 'create sending_access', sk, [200, 201], (r) => (typeof obj(r.body).token === 'string' || typeof obj(r.body).key === 'string' ? null : 'no key value in response'));
  const sendKey = String(obj(sk.body).token ?? obj(sk.body).key ?? '');
  if (sendKey) {
    record('/domains', 'sending_access on GET /domains', await call('GET', '/domains', undefined, { auth: sendKey }), [403], (r) =>
      obj(r.body).error === 'API key does not have permission' ? null : `message "${String(obj(r.body).error)}"`,
    );
  }

  // ---- domains
  const domains = await call('GET', '/domains');
  record('/domains', 'GET list', domains, [200], (r) => (Array.isArray(obj(r.body).domains) ? null : 'no domains[]'));
  const dname = `tour-${stamp}.example`;
  const dom = record('/domains', 'POST good', await call('POST', '/domains', { name: dname }), [200, 201], hasFields('id', 'name', 'status', 'region', 'open_tracking', 'click_tracking', 'tls_mode', 'dns_records', 'created_at'));
  const domId = String(obj(dom.body).id);
  record('/domains', 'POST duplicate', await call('POST', '/domains', { name: dname }), [409]);
  record('/domains', 'POST missing name', await call('POST', '/domains', {}), [400], (r) =>
    String(obj(r.body).error).startsWith('Request body is missing required fields') ? null : 'message pattern',
  );
  record('/domains', 'POST bad region', await call('POST', '/domains', { name: `r-${dname}`, region: 'us-east-1' }), [400]);
  record('/domains', 'POST bad name', await call('POST', '/domains', { name: 'not a domain' }), [400, 422]);
  record('/domains', 'POST name number', await call('POST', '/domains', { name: 42 }), [400]);
  await badBodies('POST', '/domains');
  record('/domains/{id}', 'GET', await call('GET', `/domains/${domId}`), [200], hasFields('id', 'dns_records'));
  record('/domains/{id}', 'PATCH good', await call('PATCH', `/domains/${domId}`, { open_tracking: true, tls_mode: 'enforced' }), [200]);
  record('/domains/{id}', 'PATCH bad tls_mode', await call('PATCH', `/domains/${domId}`, { tls_mode: 'always' }), [400]);
  record('/domains/{id}', 'PATCH open_tracking string', await call('PATCH', `/domains/${domId}`, { open_tracking: 'yes' }), [400]);
  await badBodies('PATCH', `/domains/${domId}`);
  await badIds('GET', '/domains/{id}');
  await badIds('PATCH', '/domains/{id}', { open_tracking: true });
  await badIds('DELETE', '/domains/{id}');
  await badIds('POST', '/domains/{id}/verify');
  record('/domains/{id}/verify', 'POST', await call('POST', `/domains/${domId}/verify`), [200], hasFields('status', 'dns_records'));
  record('/domains/{id}/dkim/rotate', 'POST', await call('POST', `/domains/${domId}/dkim/rotate`), [200, 201, 409, 422]);
  record('/domains/{id}/dkim/rotate', 'DELETE', await call('DELETE', `/domains/${domId}/dkim/rotate`), [200, 404, 409]);
  record('/domains/{id}/dkim/rotate/activate', 'POST without rotation', await call('POST', `/domains/${domId}/dkim/rotate/activate`), [409, 422, 404]);
  record('/domains/{id}/ip', 'POST (no outbound IPs configured)', await call('POST', `/domains/${domId}/ip`, {}), [400, 409, 422]);
  record('/domains/{id}/ip', 'DELETE (none assigned)', await call('DELETE', `/domains/${domId}/ip`), [200, 404, 409]);
  record('/domains/{id}/dmarc/reports', 'GET', await call('GET', `/domains/${domId}/dmarc/reports`), [200], (r) => {
    const p = obj(obj(r.body).pagination);
    return Array.isArray(obj(r.body).reports) && typeof p.perPage === 'number' ? null : 'shape {reports, pagination{perPage}}';
  });
  record('/domains/{id}/dmarc/reports', 'perPage=500 clamped', await call('GET', `/domains/${domId}/dmarc/reports?perPage=500`), [200], (r) =>
    obj(obj(r.body).pagination).perPage === 100 ? null : `perPage ${String(obj(obj(r.body).pagination).perPage)}`,
  );
  record('/domains/{id}/dmarc/reports', 'per_page ignored', await call('GET', `/domains/${domId}/dmarc/reports?per_page=5`), [200], (r) =>
    obj(obj(r.body).pagination).perPage === 20 ? null : `perPage ${String(obj(obj(r.body).pagination).perPage)}`,
  );
  record('/domains/{id}/dmarc/reports', 'page=abc', await call('GET', `/domains/${domId}/dmarc/reports?page=abc`), [200, 400]);

  // a verified sending domain: the first operator-verified one in the list
  const verified = (obj(domains.body).domains as Array<Record<string, unknown>> | undefined)?.find((d) => d.status === 'verified');
  const from = verified ? `Tour <tour@${String(verified.name)}>` : `tour@${dname}`;
  const localTo = verified ? `nobody-${stamp}@${String(verified.name)}` : 'x@example.com';

  // ---- emails
  const e1 = record('/emails', 'POST good (202)', await call('POST', '/emails', { from, to: [localTo], subject: 'tour', text: 'hello' }), [202], (r) =>
    String(obj(r.body).id).startsWith('em_') ? null : 'id not em_',
  );
  const emId = String(obj(e1.body).id);
  record('/emails/send', 'POST alias', await call('POST', '/emails/send', { from, to: [localTo], subject: 'tour', text: 'hello' }), [202]);
  record('/emails', 'POST missing to', await call('POST', '/emails', { from, subject: 'x', text: 'x' }), [400], (r) =>
    obj(r.body).error === 'Request body is missing required fields: to' ? null : 'message pattern',
  );
  record('/emails', 'POST missing from+to', await call('POST', '/emails', { subject: 'x' }), [400], (r) =>
    String(obj(r.body).error).startsWith('Request body is missing required fields:') ? null : 'message pattern',
  );
  record('/emails', 'POST bad to address', await call('POST', '/emails', { from, to: ['ok@example.com', 'nope'], text: 'x' }), [400], (r) =>
    obj(r.body).error === 'to.1: must be a valid email address' ? null : 'message pattern to.1',
  );
  record('/emails', 'POST bad from', await call('POST', '/emails', { from: 'nope', to: ['a@example.com'], text: 'x' }), [400]);
  record('/emails', 'POST unverified domain', await call('POST', '/emails', { from: `a@${dname}`, to: ['a@example.com'], text: 'x' }), [422], (r) =>
    obj(r.body).error === `Domain '${dname}' is not verified` ? null : 'message pattern',
  );
  record('/emails', 'POST unknown domain', await call('POST', '/emails', { from: 'a@unknown-tour.example', to: ['a@example.com'], text: 'x' }), [422], (r) =>
    obj(r.body).error === `Domain 'unknown-tour.example' not found for this team` ? null : 'message pattern',
  );
  const fifty = Array.from({ length: 51 }, (_, i) => `r${i}@example.com`);
  record('/emails', 'POST 51 to', await call('POST', '/emails', { from, to: fifty, text: 'x' }), [400, 422]);
  record('/emails', 'POST 30 to + 30 cc', await call('POST', '/emails', { from, to: fifty.slice(0, 30), cc: fifty.slice(20, 50).map((a) => 'c' + a), text: 'x' }), [422]);
  record('/emails', 'POST subject 999', await call('POST', '/emails', { from, to: [localTo], subject: 's'.repeat(999), text: 'x' }), [400]);
  record('/emails', 'POST 11 tags', await call('POST', '/emails', { from, to: [localTo], tags: Array.from({ length: 11 }, (_, i) => `t${i}`), text: 'x' }), [400]);
  record('/emails', 'POST tag 65 chars', await call('POST', '/emails', { from, to: [localTo], tags: ['t'.repeat(65)], text: 'x' }), [400]);
  record('/emails', 'POST header 1025', await call('POST', '/emails', { from, to: [localTo], headers: { 'X-A': 'a'.repeat(1025) }, text: 'x' }), [400]);
  record('/emails', 'POST 11 attachments', await call('POST', '/emails', { from, to: [localTo], text: 'x', attachments: Array.from({ length: 11 }, (_, i) => ({ filename: `${i}.txt`, content: 'aGk=' })) }), [400]);
  record('/emails', 'POST attachment no content', await call('POST', '/emails', { from, to: [localTo], text: 'x', attachments: [{ filename: 'a.txt' }] }), [400]);
  record('/emails', 'POST attachment bad base64', await call('POST', '/emails', { from, to: [localTo], text: 'x', attachments: [{ filename: 'a.txt', content: '!!!not base64!!!' }] }), [400, 422]);
  record('/emails', 'POST template unknown', await call('POST', '/emails', { from, to: [localTo], template_id: 'tpl_nope' }), [404, 422]);
  record('/emails', 'POST scheduled_at garbage', await call('POST', '/emails', { from, to: [localTo], text: 'x', scheduled_at: 'tomorrow-ish' }), [400]);
  record('/emails', 'POST variables non-string', await call('POST', '/emails', { from, to: [localTo], text: 'x', variables: { a: { b: 1 } } }), [400, 202]);
  record('/emails', 'POST reply_to invalid', await call('POST', '/emails', { from, to: [localTo], text: 'x', reply_to: 'nope' }), [400]);
  record('/emails', 'POST to as string', await call('POST', '/emails', { from, to: localTo, text: 'x' }), [400, 202]);
  await badBodies('POST', '/emails');
  const idem = `tour-${stamp}`;
  const i1 = await call('POST', '/emails', { from, to: [localTo], text: 'x', idempotency_key: idem });
  const i2 = await call('POST', '/emails', { from, to: [localTo], text: 'x', idempotency_key: idem });
  record('/emails', 'POST idempotency replay', i2, [200, 202], (r) => (obj(r.body).id === obj(i1.body).id ? null : 'different id on replay'));
  const sched = await call('POST', '/emails', { from, to: [localTo], text: 'x', scheduled_at: new Date(Date.now() + 86400000).toISOString() });
  record('/emails', 'POST scheduled', sched, [202]);
  const schedId = String(obj(sched.body).id);

  record('/emails/batch', 'POST good', await call('POST', '/emails/batch', { emails: [{ from, to: [localTo], text: 'x' }, { from, to: [localTo], text: 'y' }] }), [202, 200], (r) =>
    Array.isArray(obj(r.body).data) && (obj(r.body).data as unknown[]).length === 2 ? null : 'data[2]',
  );
  record('/emails/batch', 'POST 101', await call('POST', '/emails/batch', { emails: Array.from({ length: 101 }, () => ({ from, to: [localTo], text: 'x' })) }), [400], (r) =>
    /emails/.test(String(obj(r.body).error)) && /100/.test(String(obj(r.body).error)) ? null : 'message names emails and 100',
  );
  record('/emails/batch', 'POST empty', await call('POST', '/emails/batch', { emails: [] }), [400]);
  record('/emails/batch', 'POST bare array', await call('POST', '/emails/batch', [{ from, to: [localTo], text: 'x' }]), [202, 200, 400]);
  record('/emails/batch', 'POST one bad element', await call('POST', '/emails/batch', { emails: [{ from, to: [localTo], text: 'x' }, { from, to: ['bad'], text: 'x' }] }), [400]);
  await badBodies('POST', '/emails/batch');

  await pagingA('/emails');
  record('/emails', 'GET list item shape', await call('GET', '/emails?per_page=1'), [200], (r) => {
    const item = obj((obj(r.body).data as unknown[] | undefined)?.[0]);
    const missing = ['id', 'publicId', 'createdAt', 'status'].filter((f) => !(f in item));
    if (missing.length) return `item missing ${missing.join(',')}`;
    if (typeof item.id !== 'number') return 'item id not numeric';
    return 'html' in item || 'text' in item ? 'list item carries body' : null;
  });
  for (const f of ['status=delivered', 'status=bogus', `domain_id=${domId}`, 'to=a@example.com', 'from=x', 'subject=tour', 'tag=t', 'date_from=2020-01-01', 'date_to=2999-01-01', 'date_from=garbage', 'provider=gmail', 'country=DE', 'device=mobile']) {
    record('/emails', `GET filter ${f}`, await call('GET', `/emails?${f}`), f.includes('bogus') || f.includes('garbage') ? [400] : [200], formA);
  }
  record('/emails/{id}', 'GET', await call('GET', `/emails/${emId}`), [200], hasFields('id', 'from', 'to', 'subject', 'status', 'tags', 'created_at', 'scheduled_at', 'delivered_at'));
  await badIds('GET', '/emails/{id}');
  await badIds('GET', '/emails/{id}/events');
  await badIds('POST', '/emails/{id}/cancel');
  await badIds('PATCH', '/emails/{id}', { scheduled_at: new Date(Date.now() + 3600000).toISOString() });
  record('/emails/{id}/events', 'GET', await call('GET', `/emails/${emId}/events`), [200], (r) => {
    const ev = obj(r.body).events as Array<Record<string, unknown>> | undefined;
    if (!Array.isArray(ev)) return 'no events[]';
    const bad = ev.find((e) => !('type' in e && 'timestamp' in e && 'data' in e));
    return bad ? 'event missing type/timestamp/data' : null;
  });
  record('/emails/{id}', 'PATCH reschedule', await call('PATCH', `/emails/${schedId}`, { scheduled_at: new Date(Date.now() + 7200000).toISOString() }), [200], (r) =>
    obj(r.body).success === true ? null : 'not {success:true}',
  );
  record('/emails/{id}', 'PATCH missing scheduled_at', await call('PATCH', `/emails/${schedId}`, {}), [400]);
  record('/emails/{id}', 'PATCH bad scheduled_at', await call('PATCH', `/emails/${schedId}`, { scheduled_at: 'soon' }), [400]);
  await badBodies('PATCH', `/emails/${schedId}`);
  record('/emails/{id}/cancel', 'POST scheduled', await call('POST', `/emails/${schedId}/cancel`), [200], (r) => (obj(r.body).success === true ? null : 'not {success:true}'));
  record('/emails/{id}/cancel', 'POST again (cancelled)', await call('POST', `/emails/${schedId}/cancel`), [409, 422, 200]);
  record('/emails/{id}', 'PATCH cancelled', await call('PATCH', `/emails/${schedId}`, { scheduled_at: new Date(Date.now() + 7200000).toISOString() }), [409, 422]);
  record('/emails/preview', 'POST good', await call('POST', '/emails/preview', { from, to: [localTo], subject: 's', html: '<p>x</p>' }), [200]);
  await badBodies('POST', '/emails/preview');
  record('/emails/spam-preview', 'POST good', await call('POST', '/emails/spam-preview', { from, to: [localTo], subject: 's', html: '<p>x</p>' }), [200]);
  await badBodies('POST', '/emails/spam-preview');

  // ---- contacts
  const c1 = record('/contacts', 'POST good', await call('POST', '/contacts', { email: `c1-${stamp}@example.com`, first_name: 'Ann', properties: {} }), [200, 201], (r) => {
    const c = obj(obj(r.body).contact);
    const missing = ['id', 'email', 'first_name', 'last_name', 'unsubscribed', 'properties', 'created_at'].filter((f) => !(f in c));
    return missing.length ? `contact missing ${missing.join(',')}` : null;
  });
  const contactId = String(obj(obj(c1.body).contact).id);
  record('/contacts', 'POST duplicate', await call('POST', '/contacts', { email: `c1-${stamp}@example.com` }), [409], (r) =>
    obj(r.body).error === 'Contact already exists' ? null : 'message pattern',
  );
  record('/contacts', 'POST duplicate other case', await call('POST', '/contacts', { email: `C1-${stamp}@EXAMPLE.com` }), [409]);
  record('/contacts', 'POST missing email', await call('POST', '/contacts', {}), [400]);
  record('/contacts', 'POST bad email', await call('POST', '/contacts', { email: 'nope' }), [400]);
  record('/contacts', 'POST unsubscribed string', await call('POST', '/contacts', { email: `c2-${stamp}@example.com`, unsubscribed: 'yes' }), [400]);
  record('/contacts', 'POST properties array', await call('POST', '/contacts', { email: `c3-${stamp}@example.com`, properties: [1] }), [400]);
  record('/contacts', 'POST unknown property', await call('POST', '/contacts', { email: `c4-${stamp}@example.com`, properties: { nosuchprop: 1 } }), [400, 422, 200, 201]);
  await badBodies('POST', '/contacts');
  await pagingA('/contacts');
  for (const f of ['search=c1', 'unsubscribed=true', 'unsubscribed=maybe', 'segment_id=nope', 'engagement_segment=nope']) {
    record('/contacts', `GET filter ${f}`, await call('GET', `/contacts?${f}`), f.includes('maybe') || f.includes('engagement_segment=nope') ? [400] : [200, 404], formA);
  }
  record('/contacts/{id}', 'GET', await call('GET', `/contacts/${contactId}`), [200], (r) => (obj(r.body).contact ? null : 'not {contact}'));
  record('/contacts/{id}', 'PATCH good', await call('PATCH', `/contacts/${contactId}`, { last_name: 'B' }), [200], (r) => (obj(r.body).success === true ? null : 'not {success:true}'));
  record('/contacts/{id}', 'PATCH bad type', await call('PATCH', `/contacts/${contactId}`, { unsubscribed: 'no' }), [400]);
  record('/contacts/{id}', 'PATCH email dup', await call('PATCH', `/contacts/${contactId}`, { email: 'x' }), [400, 200]);
  await badBodies('PATCH', `/contacts/${contactId}`);
  await badIds('GET', '/contacts/{id}');
  await badIds('PATCH', '/contacts/{id}', { first_name: 'x' });
  await badIds('DELETE', '/contacts/{id}');
  record('/contacts/import', 'POST good', await call('POST', '/contacts/import', { csv: `email,first_name\nimp1-${stamp}@example.com,I\nbad-address,Z\n` }), [200]);
  record('/contacts/import', 'POST missing csv', await call('POST', '/contacts/import', {}), [400]);
  record('/contacts/import', 'POST no email column', await call('POST', '/contacts/import', { csv: 'name\nx\n' }), [400, 422]);
  record('/contacts/import', 'POST unknown segment', await call('POST', '/contacts/import', { csv: `email\nimp2-${stamp}@example.com\n`, segment_id: 'nope' }), [404, 400, 422]);
  record('/contacts/import', 'POST 10001 rows', await call('POST', '/contacts/import', { csv: 'email\n' + Array.from({ length: 10001 }, (_, i) => `big${i}-${stamp}@example.com`).join('\n') }), [400]);
  record('/contacts/import', 'POST csv garbage quotes', await call('POST', '/contacts/import', { csv: 'email\n"unterminated\n' }), [400, 200, 422]);
  await badBodies('POST', '/contacts/import');
  const exp = await call('GET', '/contacts/export');
  record('/contacts/export', 'GET', exp, [200], (r) => (/csv/.test(r.headers.get('content-type') ?? '') ? null : `content-type ${r.headers.get('content-type')}`));

  // ---- segments, properties, topics, suppressions
  record('/segments', 'GET', await call('GET', '/segments'), [200], (r) => (Array.isArray(obj(r.body).segments) ? null : 'not {segments}'));
  const seg = record('/segments', 'POST good', await call('POST', '/segments', { name: `seg-${stamp}` }), [200, 201]);
  const segId = String(obj(seg.body).id ?? obj(obj(seg.body).segment).id);
  record('/segments', 'POST missing name', await call('POST', '/segments', {}), [400]);
  record('/segments', 'POST name number', await call('POST', '/segments', { name: 5 }), [400]);
  await badBodies('POST', '/segments');
  record('/segments/{id}/contacts', 'POST good', await call('POST', `/segments/${segId}/contacts`, { contact_ids: [contactId] }), [200]);
  record('/segments/{id}/contacts', 'POST missing ids', await call('POST', `/segments/${segId}/contacts`, {}), [400]);
  record('/segments/{id}/contacts', 'POST ids not array', await call('POST', `/segments/${segId}/contacts`, { contact_ids: contactId }), [400]);
  record('/segments/{id}/contacts', 'POST unknown contact', await call('POST', `/segments/${segId}/contacts`, { contact_ids: ['nope'] }), [404, 400, 422, 200]);
  await badIds('POST', '/segments/{id}/contacts', { contact_ids: [contactId] });
  await pagingA(`/segments/${segId}/members`);
  await badIds('GET', '/segments/{id}/members');
  record('/segments/{id}/broadcasts', 'GET', await call('GET', `/segments/${segId}/broadcasts`), [200], (r) => (Array.isArray(obj(r.body).broadcasts) ? null : 'not {broadcasts}'));
  await badIds('GET', '/segments/{id}/broadcasts');
  record('/segments/preview', 'POST empty rules', await call('POST', '/segments/preview', {}), [200, 400]);
  await badBodies('POST', '/segments/preview');

  record('/contact-properties', 'GET', await call('GET', '/contact-properties'), [200], (r) => (Array.isArray(obj(r.body).properties) ? null : 'not {properties}'));
  const prop = record('/contact-properties', 'POST good', await call('POST', '/contact-properties', { name: `p_${stamp}`, type: 'number' }), [200, 201]);
  const propId = String(obj(prop.body).id ?? obj(obj(prop.body).property).id);
  record('/contact-properties', 'POST dup', await call('POST', '/contact-properties', { name: `p_${stamp}`, type: 'number' }), [409]);
  record('/contact-properties', 'POST bad type', await call('POST', '/contact-properties', { name: `q_${stamp}`, type: 'float' }), [400]);
  record('/contact-properties', 'POST missing type', await call('POST', '/contact-properties', { name: `q_${stamp}` }), [400]);
  await badBodies('POST', '/contact-properties');
  record('/contact-properties/{id}', 'PATCH', await call('PATCH', `/contact-properties/${propId}`, { name: `p2_${stamp}` }), [200, 400, 422]);
  await badBodies('PATCH', `/contact-properties/${propId}`);
  await badIds('PATCH', '/contact-properties/{id}', { name: 'zz' });
  await badIds('DELETE', '/contact-properties/{id}');

  record('/subscription-topics', 'GET', await call('GET', '/subscription-topics'), [200], (r) => (Array.isArray(obj(r.body).topics) ? null : 'not {topics}'));
  const topic = record('/subscription-topics', 'POST good', await call('POST', '/subscription-topics', { name: `topic-${stamp}`, default_subscription: 'opt_in' }), [200, 201]);
  const topicId = String(obj(topic.body).id ?? obj(obj(topic.body).topic).id);
  record('/subscription-topics', 'POST missing name', await call('POST', '/subscription-topics', {}), [400]);
  await badBodies('POST', '/subscription-topics');
  record('/subscription-topics/{id}', 'PATCH', await call('PATCH', `/subscription-topics/${topicId}`, { name: `topic2-${stamp}` }), [200]);
  await badBodies('PATCH', `/subscription-topics/${topicId}`);
  await badIds('PATCH', '/subscription-topics/{id}', { name: 'x' });
  await badIds('DELETE', '/subscription-topics/{id}');
  await pagingA(`/subscription-topics/${topicId}/subscribers`, '', 50);
  record('/subscription-topics/{id}/subscribers', 'subscribed=maybe', await call('GET', `/subscription-topics/${topicId}/subscribers?subscribed=maybe`), [400]);
  record('/subscription-topics/{id}/subscribers', 'subscribed=false', await call('GET', `/subscription-topics/${topicId}/subscribers?subscribed=false`), [200], formA);
  await badIds('GET', '/subscription-topics/{id}/subscribers');
  record('/subscription-topics/contacts/{contactId}/subscriptions', 'GET', await call('GET', `/subscription-topics/contacts/${contactId}/subscriptions`), [200], (r) =>
    Array.isArray(obj(r.body).subscriptions) ? null : 'not {subscriptions}',
  );
  record('/subscription-topics/contacts/{contactId}/subscriptions', 'POST good', await call('POST', `/subscription-topics/contacts/${contactId}/subscriptions`, { subscriptions: [{ topic_id: topicId, subscribed: true }] }), [200, 201]);
  record('/subscription-topics/contacts/{contactId}/subscriptions', 'POST unknown topic', await call('POST', `/subscription-topics/contacts/${contactId}/subscriptions`, { subscriptions: [{ topic_id: 'nope', subscribed: true }] }), [422]);
  await badBodies('POST', `/subscription-topics/contacts/${contactId}/subscriptions`);
  await badIds('GET', '/subscription-topics/contacts/{id}/subscriptions');
  record('/subscription-topics/contacts/{contactId}/subscriptions/{topicId}', 'DELETE', await call('DELETE', `/subscription-topics/contacts/${contactId}/subscriptions/${topicId}`), [200]);
  record('/subscription-topics/contacts/{contactId}/subscriptions/{topicId}', 'DELETE unknown', await call('DELETE', `/subscription-topics/contacts/${contactId}/subscriptions/nope`), [404]);

  await pagingA('/suppressions');
  record('/suppressions', 'POST good', await call('POST', '/suppressions', { email: `sup-${stamp}@example.com`, reason: 'manual' }), [200, 201]);
  record('/suppressions', 'POST bad reason', await call('POST', '/suppressions', { email: `sup2-${stamp}@example.com`, reason: 'because' }), [400]);
  record('/suppressions', 'POST bad email', await call('POST', '/suppressions', { email: 'nope', reason: 'manual' }), [400]);
  record('/suppressions', 'POST missing reason', await call('POST', '/suppressions', { email: `sup3-${stamp}@example.com` }), [400]);
  await badBodies('POST', '/suppressions');
  record('/suppressions/export', 'GET', await call('GET', '/suppressions/export'), [200], (r) => (/csv/.test(r.headers.get('content-type') ?? '') ? null : `content-type ${r.headers.get('content-type')}`));
  record('/suppressions/import', 'POST good', await call('POST', '/suppressions/import', { csv: `email,reason\nsupi-${stamp}@example.com,manual\n` }), [200]);
  record('/suppressions/import', 'POST missing csv', await call('POST', '/suppressions/import', {}), [400]);
  await badBodies('POST', '/suppressions/import');
  record('/suppressions/{email}', 'DELETE', await call('DELETE', `/suppressions/${encodeURIComponent(`sup-${stamp}@example.com`)}`), [200]);
  record('/suppressions/{email}', 'DELETE unknown', await call('DELETE', '/suppressions/nobody%40example.com'), [404]);
  record('/suppressions/{email}', 'DELETE not an address', await call('DELETE', '/suppressions/notanaddress'), [400, 404]);

  // ---- templates
  await pagingA('/templates');
  record('/templates', 'GET counts', await call('GET', '/templates'), [200], (r) => {
    const c = obj(obj(r.body).counts);
    return typeof c.published === 'number' && typeof c.draft === 'number' ? null : 'counts {published,draft} missing';
  });
  record('/templates', 'GET published=maybe', await call('GET', '/templates?published=maybe'), [400]);
  const tpl = record('/templates', 'POST good', await call('POST', '/templates', { name: `tpl-${stamp}`, subject: 'Hi {{name}}', html: '<p>Hi {{name}}</p>' }), [200, 201]);
  const tplId = String(obj(tpl.body).id ?? obj(obj(tpl.body).template).id);
  record('/templates', 'POST missing html', await call('POST', '/templates', { name: 'x', subject: 'y' }), [400]);
  record('/templates', 'POST bad builder_type', await call('POST', '/templates', { name: 'x', subject: 'y', html: 'z', builder_type: 'wysiwyg' }), [400]);
  record('/templates', 'POST bad liquid', await call('POST', '/templates', { name: 'x', subject: 'y', html: '{% if %}' }), [400, 422]);
  record('/templates', 'POST visual blocks not array', await call('POST', '/templates', { name: 'x', subject: 'y', html: 'z', builder_type: 'visual', builder_blocks: 'no' }), [400]);
  await badBodies('POST', '/templates');
  record('/emails', 'POST unpublished template', await call('POST', '/emails', { from, to: [localTo], template_id: tplId, variables: { name: 'A' } }), [422], (r) =>
    obj(r.body).error === 'Template is not published' ? null : 'message pattern',
  );
  record('/templates/{id}', 'GET', await call('GET', `/templates/${tplId}`), [200]);
  record('/templates/{id}', 'PATCH', await call('PATCH', `/templates/${tplId}`, { html: '<p>Hello {{name}}</p>' }), [200]);
  record('/templates/{id}', 'PATCH bad', await call('PATCH', `/templates/${tplId}`, { html: 5 }), [400]);
  await badBodies('PATCH', `/templates/${tplId}`);
  record('/templates/{id}/publish', 'POST', await call('POST', `/templates/${tplId}/publish`), [200]);
  record('/emails', 'POST published template', await call('POST', '/emails', { from, to: [localTo], template_id: tplId, variables: { name: 'A' } }), [202]);
  record('/templates/{id}/render', 'POST', await call('POST', `/templates/${tplId}/render`, { variables: { name: 'Z' } }), [200]);
  record('/templates/{id}/render', 'POST variables array', await call('POST', `/templates/${tplId}/render`, { variables: [1] }), [400]);
  await badBodies('POST', `/templates/${tplId}/render`);
  record('/templates/{id}/duplicate', 'POST', await call('POST', `/templates/${tplId}/duplicate`), [200, 201]);
  record('/templates/{id}/unpublish', 'POST', await call('POST', `/templates/${tplId}/unpublish`), [200]);
  for (const op of ['render', 'duplicate', 'publish', 'unpublish']) await badIds('POST', `/templates/{id}/${op}`, op === 'render' ? { variables: {} } : undefined);
  await badIds('GET', '/templates/{id}');
  await badIds('PATCH', '/templates/{id}', { name: 'x' });
  await badIds('DELETE', '/templates/{id}');
  const presets = record('/templates/presets', 'GET', await call('GET', '/templates/presets'), [200], (r) => (Array.isArray(obj(r.body).data) ? null : 'not {data}'));
  const presetId = String(obj(((obj(presets.body).data ?? obj(presets.body).presets) as unknown[] | undefined)?.[0]).id);
  record('/templates/presets/{presetId}/use', 'POST', await call('POST', `/templates/presets/${presetId}/use`, {}), [200, 201]);
  record('/templates/presets/{presetId}/use', 'POST unknown', await call('POST', '/templates/presets/nope/use', {}), [404]);

  // ---- broadcasts
  await pagingA('/broadcasts');
  record('/broadcasts', 'GET status=bogus', await call('GET', '/broadcasts?status=bogus'), [400]);
  const bc = record('/broadcasts', 'POST good', await call('POST', '/broadcasts', { name: `bc-${stamp}`, from, subject: 'News', html: '<p>Hi {{ contact.first_name }}</p>', segment_ids: [segId] }), [200, 201]);
  const bcId = String(obj(bc.body).id ?? obj(obj(bc.body).broadcast).id);
  record('/broadcasts', 'POST missing html', await call('POST', '/broadcasts', { name: 'x', from, subject: 'y' }), [400]);
  record('/broadcasts', 'POST unknown segment', await call('POST', '/broadcasts', { name: 'x', from, subject: 'y', html: 'z', segment_ids: ['nope'] }), [400, 404, 422]);
  record('/broadcasts', 'POST ab 1 variant', await call('POST', '/broadcasts', { name: 'x', from, subject: 'y', html: 'z', segment_ids: [segId], ab_test: { variants: [{ name: 'a', subject: 'a', weight: 50 }], test_duration_minutes: 10 } }), [400]);
  record('/broadcasts', 'POST ab 6 variants', await call('POST', '/broadcasts', { name: 'x', from, subject: 'y', html: 'z', segment_ids: [segId], ab_test: { variants: Array.from({ length: 6 }, (_, i) => ({ name: `v${i}`, subject: 's', weight: 10 })), test_duration_minutes: 10 } }), [400]);
  record('/broadcasts', 'POST ab duration 4', await call('POST', '/broadcasts', { name: 'x', from, subject: 'y', html: 'z', segment_ids: [segId], ab_test: { variants: [{ name: 'a', subject: 'a', weight: 50 }, { name: 'b', subject: 'b', weight: 50 }], test_duration_minutes: 4 } }), [400]);
  record('/broadcasts', 'POST ab weight 0', await call('POST', '/broadcasts', { name: 'x', from, subject: 'y', html: 'z', segment_ids: [segId], ab_test: { variants: [{ name: 'a', subject: 'a', weight: 0 }, { name: 'b', subject: 'b', weight: 50 }], test_duration_minutes: 10 } }), [400]);
  await badBodies('POST', '/broadcasts');
  record('/broadcasts/{id}', 'GET', await call('GET', `/broadcasts/${bcId}`), [200]);
  record('/broadcasts/{id}', 'PATCH', await call('PATCH', `/broadcasts/${bcId}`, { subject: 'News 2' }), [200]);
  await badBodies('PATCH', `/broadcasts/${bcId}`);
  record('/broadcasts/{id}/variants', 'GET', await call('GET', `/broadcasts/${bcId}/variants`), [200], (r) => (Array.isArray(obj(r.body).variants) ? null : 'not {variants}'));
  record('/broadcasts/{id}/non-openers', 'GET', await call('GET', `/broadcasts/${bcId}/non-openers`), [200, 409, 422], hasFields('broadcast', 'count', 'contacts'));
  record('/broadcasts/{id}/non-openers', 'limit=5001', await call('GET', `/broadcasts/${bcId}/non-openers?limit=5001`), [400]);
  record('/broadcasts/{id}/non-clickers', 'GET', await call('GET', `/broadcasts/${bcId}/non-clickers`), [200, 409, 422], hasFields('broadcast', 'count', 'contacts'));
  record('/broadcasts/performance', 'GET', await call('GET', '/broadcasts/performance'), [200], hasFields('metric', 'since', 'broadcasts'));
  record('/broadcasts/performance', 'limit=101', await call('GET', '/broadcasts/performance?limit=101'), [400]);
  record('/broadcasts/performance', 'limit=abc', await call('GET', '/broadcasts/performance?limit=abc'), [400]);
  record('/broadcasts/{id}/test', 'POST', await call('POST', `/broadcasts/${bcId}/test`, { to: [localTo] }), [200, 202]);
  record('/broadcasts/{id}/test', 'POST bad to', await call('POST', `/broadcasts/${bcId}/test`, { to: ['nope'] }), [400]);
  record('/broadcasts/{id}/end-ab-test', 'POST (no ab)', await call('POST', `/broadcasts/${bcId}/end-ab-test`), [409, 422, 400]);
  record('/broadcasts/{id}/resend', 'POST (draft)', await call('POST', `/broadcasts/${bcId}/resend`, {}), [409, 422, 400]);
  record('/broadcasts/{id}/cancel', 'POST (draft)', await call('POST', `/broadcasts/${bcId}/cancel`), [200, 409, 422]);
  for (const op of ['send', 'cancel', 'test', 'resend', 'end-ab-test']) await badIds('POST', `/broadcasts/{id}/${op}`, {});
  for (const op of ['variants', 'non-openers', 'non-clickers']) await badIds('GET', `/broadcasts/{id}/${op}`);
  await badIds('GET', '/broadcasts/{id}');
  await badIds('PATCH', '/broadcasts/{id}', { subject: 'x' });

  // ---- webhooks
  record('/webhooks', 'GET', await call('GET', '/webhooks'), [200], (r) => (Array.isArray(obj(r.body).webhooks) ? null : 'not {webhooks}'));
  const wh = record('/webhooks', 'POST good', await call('POST', '/webhooks', { url: 'https://hooks.example.com/tour', events: ['email.sent', 'broadcast.sent', 'email.soft_bounced'] }), [200, 201]);
  const whId = String(obj(wh.body).id ?? obj(obj(wh.body).webhook).id);
  record('/webhooks', 'POST bad event', await call('POST', '/webhooks', { url: 'https://hooks.example.com/t', events: ['email.nope'] }), [400]);
  record('/webhooks', 'POST bad url', await call('POST', '/webhooks', { url: 'not a url', events: ['email.sent'] }), [400]);
  record('/webhooks', 'POST ftp url', await call('POST', '/webhooks', { url: 'ftp://hooks.example.com/', events: ['email.sent'] }), [400, 422]);
  record('/webhooks', 'POST private url', await call('POST', '/webhooks', { url: 'http://127.0.0.1:9/', events: ['email.sent'] }), [400, 422]);
  record('/webhooks', 'POST events empty', await call('POST', '/webhooks', { url: 'https://hooks.example.com/t', events: [] }), [400]);
  record('/webhooks', 'POST missing events', await call('POST', '/webhooks', { url: 'https://hooks.example.com/t' }), [400]);
  await badBodies('POST', '/webhooks');
  record('/webhooks/{id}', 'GET', await call('GET', `/webhooks/${whId}`), [200], (r) => {
    const w = obj(obj(r.body).webhook);
    const missing = ['id', 'url', 'events', 'active', 'createdAt'].filter((f) => !(f in w));
    return missing.length ? `webhook missing ${missing.join(',')}` : null;
  });
  record('/webhooks/{id}', 'PATCH enabled', await call('PATCH', `/webhooks/${whId}`, { enabled: false }), [200]);
  record('/webhooks/{id}', 'PATCH enabled string', await call('PATCH', `/webhooks/${whId}`, { enabled: 'no' }), [400]);
  await badBodies('PATCH', `/webhooks/${whId}`);
  record('/webhooks/{id}/deliveries', 'GET', await call('GET', `/webhooks/${whId}/deliveries`), [200], (r) => {
    const p = obj(obj(r.body).pagination);
    return Array.isArray(obj(r.body).deliveries) && typeof p.perPage === 'number' && typeof p.totalPages === 'number' ? null : 'shape {deliveries, pagination}';
  });
  for (const bad of ['page=0', 'per_page=101', 'per_page=abc']) record('/webhooks/{id}/deliveries', bad, await call('GET', `/webhooks/${whId}/deliveries?${bad}`), [400]);
  record('/webhooks/{id}/deliveries/batch-replay', 'POST', await call('POST', `/webhooks/${whId}/deliveries/batch-replay`, {}), [200], hasFields('remaining'));
  record('/webhooks/{id}/deliveries/batch-replay', 'POST limit 1001', await call('POST', `/webhooks/${whId}/deliveries/batch-replay`, { limit: 1001 }), [400]);
  record('/webhooks/{id}/deliveries/batch-replay', 'POST withinMinutes string', await call('POST', `/webhooks/${whId}/deliveries/batch-replay`, { withinMinutes: 'x' }), [400]);
  record('/webhooks/{id}/deliveries/{did}/replay', 'POST unknown', await call('POST', `/webhooks/${whId}/deliveries/999999/replay`), [404]);
  record('/webhooks/{id}/deliveries/{did}/replay', 'POST did=abc', await call('POST', `/webhooks/${whId}/deliveries/abc/replay`), [404, 400]);
  record('/webhooks/{id}/rotate-secret', 'POST graceHours 169', await call('POST', `/webhooks/${whId}/rotate-secret`, { graceHours: 169 }), [400]);
  record('/webhooks/{id}/rotate-secret', 'POST graceHours -1', await call('POST', `/webhooks/${whId}/rotate-secret`, { graceHours: -1 }), [400]);
  record('/webhooks/{id}/rotate-secret', 'POST graceHours 1.5', await call('POST', `/webhooks/${whId}/rotate-secret`, { graceHours: 1.5 }), [400]);
  record('/webhooks/{id}/rotate-secret', 'POST', await call('POST', `/webhooks/${whId}/rotate-secret`, {}), [200]);
  record('/webhooks/{id}/rotate-secret', 'POST no body', await call('POST', `/webhooks/${whId}/rotate-secret`), [200]);
  for (const [m, p] of [['GET', '/webhooks/{id}'], ['PATCH', '/webhooks/{id}'], ['DELETE', '/webhooks/{id}'], ['POST', '/webhooks/{id}/test'], ['GET', '/webhooks/{id}/deliveries'], ['POST', '/webhooks/{id}/rotate-secret'], ['POST', '/webhooks/{id}/deliveries/batch-replay']] as const) {
    await badIds(m, p, m === 'PATCH' ? { enabled: true } : m === 'POST' ? {} : undefined);
  }

  // ---- API keys
  record('/api-keys', 'GET', await call('GET', '/api-keys'), [200], (r) => (Array.isArray(obj(r.body).keys) ? null : 'not {keys}'));
  record('/api-keys', 'GET no secret in list', await call('GET', '/api-keys'), [200], (r) => (/sk_(live|test)_[A-Za-z0-9]{16,}/.test(r.text) ? 'a full key appears in the list' : null));
  record('/api-keys', 'POST bad permission', await call('POST', '/api-keys', { name: 'x', permission: 'root' }), [400]);
  record('/api-keys', 'POST missing permission', await call('POST', '/api-keys', { name: 'x' }), [400]);
  record('/api-keys', 'POST bad mode', await call('POST', '/api-keys', { name: 'x', permission: 'full_access', mode: 'staging' }), [400]);
  await badBodies('POST', '/api-keys');
  const tk = await call('POST', '/api-keys', { name: `tour-test-${stamp}`, permission: 'full_access', mode: 'test' });
  record('/api-keys', 'POST mode test', tk, [200, 201], (r) => (/sk_test_/.test(r.text) ? null : 'no sk_test_ key'));
  const tkId = String(obj(tk.body).id);
  record('/api-keys/{id}/rotate', 'POST', await call('POST', `/api-keys/${tkId}/rotate`), [200, 201]);
  record('/api-keys/{id}', 'DELETE', await call('DELETE', `/api-keys/${tkId}`), [200]);
  await badIds('POST', '/api-keys/{id}/rotate');
  await badIds('DELETE', '/api-keys/{id}');

  // ---- mailboxes
  await pagingA('/mailboxes');
  record('/mailboxes', 'GET domain_id unknown', await call('GET', '/mailboxes?domain_id=nope'), [200, 404], formA);
  const mbAddr = verified ? `tour-${stamp}@${String(verified.name)}` : `tour@${dname}`;
  const mb = record('/mailboxes', 'POST good', await call('POST', '/mailboxes', { address: mbAddr, password: 'correct horse battery' }), [200, 201]);
  const mbId = String(obj(mb.body).id);
  record('/mailboxes', 'POST dup', await call('POST', '/mailboxes', { address: mbAddr, password: 'correct horse battery' }), [409]);
  record('/mailboxes', 'POST short password', await call('POST', '/mailboxes', { address: `s-${mbAddr}`, password: 'x' }), [400]);
  record('/mailboxes', 'POST unverified domain', await call('POST', '/mailboxes', { address: `a@${dname}`, password: 'correct horse battery' }), [422, 400, 403]);
  record('/mailboxes', 'POST bad address', await call('POST', '/mailboxes', { address: 'nope', password: 'correct horse battery' }), [400]);
  record('/mailboxes', 'POST quota negative', await call('POST', '/mailboxes', { address: `q-${mbAddr}`, password: 'correct horse battery', quotaBytes: -1 }), [400]);
  await badBodies('POST', '/mailboxes');
  record('/mailboxes/{id}', 'GET', await call('GET', `/mailboxes/${mbId}`), [200]);
  record('/mailboxes/{id}', 'PATCH', await call('PATCH', `/mailboxes/${mbId}`, { displayName: 'Tour' }), [200]);
  record('/mailboxes/{id}', 'PATCH bad quota', await call('PATCH', `/mailboxes/${mbId}`, { quotaBytes: 'lots' }), [400]);
  await badBodies('PATCH', `/mailboxes/${mbId}`);
  record('/mailboxes/{id}/password', 'POST', await call('POST', `/mailboxes/${mbId}/password`, { password: 'another horse battery' }), [200]);
  record('/mailboxes/{id}/password', 'POST short', await call('POST', `/mailboxes/${mbId}/password`, { password: 'x' }), [400]);
  await badBodies('POST', `/mailboxes/${mbId}/password`);
  record('/mailboxes/{id}/shares', 'GET', await call('GET', `/mailboxes/${mbId}/shares`), [200], (r) => (Array.isArray(obj(r.body).shares) ? null : 'not {shares}'));
  record('/mailboxes/{id}/shares', 'POST self', await call('POST', `/mailboxes/${mbId}/shares`, { targetId: Number(mbId), rights: 'read' }), [400, 409, 422]);
  record('/mailboxes/{id}/shares', 'POST unknown target', await call('POST', `/mailboxes/${mbId}/shares`, { targetId: 999999, rights: 'read' }), [404, 400, 422]);
  await badBodies('POST', `/mailboxes/${mbId}/shares`);
  record('/mailboxes/{id}/shares/{targetId}', 'DELETE unknown', await call('DELETE', `/mailboxes/${mbId}/shares/999999`), [404]);
  record('/mailboxes/{id}/filters', 'GET', await call('GET', `/mailboxes/${mbId}/filters`), [200], (r) => (Array.isArray(obj(r.body).rules) ? null : 'not {rules}'));
  record('/mailboxes/{id}/filters', 'PUT empty', await call('PUT', `/mailboxes/${mbId}/filters`, { rules: [] }), [200]);
  record('/mailboxes/{id}/filters', 'PUT bad rule', await call('PUT', `/mailboxes/${mbId}/filters`, { rules: [{ nonsense: true }] }), [400]);
  await badBodies('PUT', `/mailboxes/${mbId}/filters`);
  for (const [m, p] of [['GET', '/mailboxes/{id}'], ['PATCH', '/mailboxes/{id}'], ['DELETE', '/mailboxes/{id}'], ['POST', '/mailboxes/{id}/password'], ['GET', '/mailboxes/{id}/shares'], ['GET', '/mailboxes/{id}/filters'], ['PUT', '/mailboxes/{id}/filters']] as const) {
    await badIds(m, p, m === 'PATCH' ? { displayName: 'x' } : m === 'POST' ? { password: 'another horse battery' } : m === 'PUT' ? { rules: [] } : undefined);
  }
  await pagingA('/mailboxes/aliases');
  const al = record('/mailboxes/aliases', 'POST good', await call('POST', '/mailboxes/aliases', { address: `alias-${mbAddr}`, targets: [mbAddr] }), [200, 201, 400]);
  record('/mailboxes/aliases', 'POST missing', await call('POST', '/mailboxes/aliases', {}), [400]);
  await badBodies('POST', '/mailboxes/aliases');
  await badIds('DELETE', '/mailboxes/aliases/{id}');
  void al;

  // ---- notification channels
  record('/notification-channels', 'GET', await call('GET', '/notification-channels'), [200], (r) => (Array.isArray(obj(r.body).channels) ? null : 'not {channels}'));
  const ch = record('/notification-channels', 'POST good', await call('POST', '/notification-channels', { type: 'webhook', name: 'tour', url: 'https://hooks.example.com/alerts' }), [200, 201, 400]);
  const chId = String(obj(ch.body).id ?? obj(obj(ch.body).channel).id);
  record('/notification-channels', 'POST bad type', await call('POST', '/notification-channels', { type: 'pigeon', name: 'x' }), [400]);
  await badBodies('POST', '/notification-channels');
  await pagingA(`/notification-channels/${chId}/deliveries`, '', 20, 'deliveries');
  record('/notification-channels/{id}/deliveries', 'GET shape', await call('GET', `/notification-channels/${chId}/deliveries`), [200], (r) =>
    Array.isArray(obj(r.body).deliveries) && obj(r.body).meta ? null : 'not {deliveries, meta}',
  );
  await badBodies('PUT', `/notification-channels/${chId}`);
  for (const [m, p] of [['PUT', '/notification-channels/{id}'], ['DELETE', '/notification-channels/{id}'], ['POST', '/notification-channels/{id}/test'], ['GET', '/notification-channels/{id}/deliveries']] as const) {
    await badIds(m, p, m === 'PUT' ? { name: 'x' } : undefined);
  }
  record('/notification-channels/{id}/deliveries/{deliveryId}/replay', 'POST unknown', await call('POST', `/notification-channels/${chId}/deliveries/999999/replay`), [404]);

  // ---- workflows
  record('/workflows', 'GET', await call('GET', '/workflows'), [200], (r) => (Array.isArray(obj(r.body).data) && !('meta' in obj(r.body)) ? null : '{data} without meta'));
  const wf = record('/workflows', 'POST good', await call('POST', '/workflows', { name: `wf-${stamp}`, trigger: { type: 'manual' } }), [200, 201, 400]);
  const wfId = String(obj(wf.body).id ?? obj(obj(wf.body).workflow).id);
  record('/workflows', 'POST missing', await call('POST', '/workflows', {}), [400]);
  await badBodies('POST', '/workflows');
  record('/workflows/{id}', 'GET', await call('GET', `/workflows/${wfId}`), [200]);
  record('/workflows/{id}/graph', 'PUT bad graph', await call('PUT', `/workflows/${wfId}/graph`, { nodes: 'x' }), [400, 422]);
  await badBodies('PUT', `/workflows/${wfId}/graph`);
  record('/workflows/{id}/activate', 'POST', await call('POST', `/workflows/${wfId}/activate`), [200, 409, 422]);
  record('/workflows/{id}/pause', 'POST', await call('POST', `/workflows/${wfId}/pause`), [200, 409, 422]);
  record('/workflows/{id}/trigger', 'POST no contact', await call('POST', `/workflows/${wfId}/trigger`, {}), [400, 409, 422]);
  await badBodies('POST', `/workflows/${wfId}/trigger`);
  record('/workflows/events', 'POST good', await call('POST', '/workflows/events', { name: 'tour.event', email: `c1-${stamp}@example.com` }), [200, 202, 400]);
  record('/workflows/events', 'POST missing', await call('POST', '/workflows/events', {}), [400]);
  await badBodies('POST', '/workflows/events');
  for (const [m, p] of [['GET', '/workflows/{id}'], ['PUT', '/workflows/{id}/graph'], ['POST', '/workflows/{id}/activate'], ['POST', '/workflows/{id}/pause'], ['POST', '/workflows/{id}/trigger']] as const) {
    await badIds(m, p, m === 'PUT' ? { nodes: [], edges: [] } : m === 'POST' ? {} : undefined);
  }

  // ---- signup forms
  await pagingA('/signup-forms');
  const sf = record('/signup-forms', 'POST good', await call('POST', '/signup-forms', { name: `sf-${stamp}` }), [200, 201, 400]);
  const sfId = String(obj(sf.body).id ?? obj(obj(sf.body).signup_form).id);
  record('/signup-forms', 'POST missing', await call('POST', '/signup-forms', {}), [400]);
  await badBodies('POST', '/signup-forms');
  record('/signup-forms/{id}', 'PATCH', await call('PATCH', `/signup-forms/${sfId}`, { name: `sf2-${stamp}` }), [200]);
  await badBodies('PATCH', `/signup-forms/${sfId}`);
  record('/signup-forms/{id}/submit', 'POST bad email (public)', await call('POST', `/signup-forms/${sfId}/submit`, { email: 'nope' }, { auth: null }), [400]);
  record('/signup-forms/{id}/submit', 'POST missing email (public)', await call('POST', `/signup-forms/${sfId}/submit`, {}, { auth: null }), [400]);
  record('/signup-forms/{id}/submit', 'POST unknown form (public)', await call('POST', '/signup-forms/sf_nope/submit', { email: 'a@example.com' }, { auth: null }), [404]);
  record('/signup-forms/{id}/submit', 'POST invalid JSON (public)', await call('POST', `/signup-forms/${sfId}/submit`, undefined, { auth: null, raw: '{' }), [400]);
  record('/signup-forms/{id}/submit', 'POST form-encoded bad', await call('POST', `/signup-forms/${sfId}/submit`, undefined, { auth: null, raw: 'email=%', type: 'application/x-www-form-urlencoded' }), [400, 303, 200]);
  record('/signup-forms/{id}/submit', 'POST properties array', await call('POST', `/signup-forms/${sfId}/submit`, { email: 'x@example.com', properties: [1] }, { auth: null }), [400]);
  for (const [m, p] of [['PATCH', '/signup-forms/{id}'], ['DELETE', '/signup-forms/{id}']] as const) await badIds(m, p, m === 'PATCH' ? { name: 'x' } : undefined);

  // ---- validation
  record('/email-validations', 'POST good', await call('POST', '/email-validations', { email: 'info@example.com' }), [200]);
  record('/email-validations', 'POST missing', await call('POST', '/email-validations', {}), [400]);
  record('/email-validations', 'POST not string', await call('POST', '/email-validations', { email: 5 }), [400]);
  record('/email-validations', 'POST garbage email', await call('POST', '/email-validations', { email: 'not an address' }), [200, 400]);
  await badBodies('POST', '/email-validations');
  record('/email-validations/batch', 'POST good', await call('POST', '/email-validations/batch', { emails: ['a@example.com', 'b@example.com'] }), [200]);
  record('/email-validations/batch', 'POST empty', await call('POST', '/email-validations/batch', { emails: [] }), [400]);
  await badBodies('POST', '/email-validations/batch');

  // ---- inbound
  await pagingA('/inbound');
  record('/inbound', 'domain unknown → empty page', await call('GET', '/inbound?domain=nope.example'), [200], (r) => formA(r) ?? ((obj(r.body).data as unknown[]).length === 0 ? null : 'not empty'));
  for (const p of ['/inbound/{id}', '/inbound/{id}/attachments']) await badIds('GET', p);
  for (const op of ['reply', 'forward', 'draft-reply']) await badIds('POST', `/inbound/{id}/${op}`, { text: 'x', to: ['a@example.com'] });

  // ---- misc
  record('/health', 'GET', await call('GET', '/health', undefined, { auth: null }), [200]);
  record('/openapi.json', 'GET', await call('GET', '/openapi.json', undefined, { auth: null }), [200]);
  record('/usage', 'GET', await call('GET', '/usage'), [200]);
  record('/events', 'GET', await call('GET', '/events'), [200]);
  record('/alerts', 'GET', await call('GET', '/alerts'), [200]);
  record('/nope', 'unknown path', await call('GET', '/nope'), [404]);
  record('/emails', 'DELETE (method not allowed)', await call('DELETE', '/emails'), [404, 405]);
  record('/mcp', 'POST initialize', await call('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'tour', version: '1' } } }), [200]);
  record('/.well-known/oauth-authorization-server', 'GET', await call('GET', '/.well-known/oauth-authorization-server', undefined, { auth: null }), [200, 404]);

  // ---- print
  const shown = SHOW_ALL ? rows : rows.filter((r) => !r.ok);
  const out = ['| path | case | expected | got | finding |', '|---|---|---|---|---|'];
  for (const r of shown) out.push(`| ${r.path} | ${r.kase} | ${r.expected} | ${r.got.replace(/\|/g, '\\|')} | ${r.ok ? 'ok' : r.note.replace(/\|/g, '\\|')} |`);
  process.stdout.write(out.join('\n') + '\n');
  process.stdout.write(`\n${rows.length} checks, ${rows.filter((r) => !r.ok).length} findings\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`tour stopped: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
