// API conventions every endpoint shares: errors, auth, body handling, health, OpenAPI.
import t from 'tap';
import http from 'node:http';
import { startTestApp } from '../helpers/app.js';

t.test('API conventions', async (t) => {
  const app = await startTestApp(t);

  t.test('GET /health answers without a credential', async (t) => {
    const res = await app.request('GET', '/health', { key: null });
    t.equal(res.status, 200);
    t.equal(res.body.status, 'ok');
    t.equal(res.body.database, 'ok');
    t.match(res.body.version, /^\d+\.\d+\.\d+/);
  });

  t.test('unknown route: 404 not_found, even without a credential', async (t) => {
    for (const key of [undefined, null]) {
      const res = await app.request('GET', '/no/such/route', { key });
      t.equal(res.status, 404);
      t.same(res.body, { error: 'Route not found: GET /no/such/route', code: 'not_found' });
    }
  });

  t.test('wrong method on a known path: 405 with Allow', async (t) => {
    const res = await app.request('PUT', '/domains', { body: {} });
    t.equal(res.status, 405);
    t.equal(res.body.code, 'method_not_allowed');
    t.match(res.headers.get('allow'), /GET/);
    t.match(res.headers.get('allow'), /POST/);
    // A path that is a route of its own is not the id of a parameterised one (GET /emails/{id}).
    for (const path of ['/emails/batch', '/emails/preview', '/emails/spam-preview']) {
      const get = await app.request('GET', path);
      t.same([get.status, get.body.code, get.headers.get('allow')], [405, 'method_not_allowed', 'POST'], `GET ${path}`);
    }
    t.equal((await app.request('GET', '/emails/em_unknown')).status, 404, 'an unknown id is still a 404');
  });

  t.test('missing, malformed or unknown credential: 401 Invalid API key', async (t) => {
    const cases: Array<Record<string, string> | undefined> = [
      undefined,
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer sk_live_thisKeyDoesNotExist0000000000000' },
      { authorization: 'Bearer not-a-key' },
      { authorization: `Bearer ${app.apiKey}x` },
    ];
    for (const headers of cases) {
      const res = await app.request('GET', '/domains', { key: null, ...(headers ? { headers } : {}) });
      t.equal(res.status, 401, JSON.stringify(headers));
      t.same(res.body, { error: 'Invalid API key', code: 'unauthorized' });
    }
    const lower = await app.request('GET', '/domains', { key: null, headers: { authorization: `bearer ${app.apiKey}` } });
    t.equal(lower.status, 200, 'the scheme is case-insensitive');
  });

  t.test('malformed JSON: 400 invalid_request', async (t) => {
    const res = await app.request('POST', '/api-keys', { raw: '{"name": "x",' });
    t.equal(res.status, 400);
    t.same(res.body, { error: 'Malformed JSON in request body', code: 'invalid_request' });
  });

  t.test('a body that is not an object: 400', async (t) => {
    for (const raw of ['[1,2]', '"text"', '42', 'null']) {
      const res = await app.request('POST', '/api-keys', { raw });
      t.equal(res.status, 400, raw);
      t.same(res.body, { error: 'Request body must be a JSON object', code: 'invalid_request' }, raw);
    }
  });

  t.test('a JSON body without a JSON content type is still read (curl -d)', async (t) => {
    const res = await app.request('POST', '/api-keys', {
      raw: JSON.stringify({ name: 'curl', permission: 'sending_access' }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    t.equal(res.status, 201);
  });

  t.test('body over 36 MB: 413 payload_too_large, refused on its declared length', async (t) => {
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${app.url}/api-keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${app.apiKey}`, 'content-type': 'application/json', 'content-length': String(37 * 1024 * 1024) },
      });
      req.on('response', (r) => {
        let body = '';
        r.on('data', (c: Buffer) => (body += c.toString()));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.write('{"name":"');
      // The rest is never sent: the answer must come from the declared length alone.
    });
    t.equal(res.status, 413);
    t.same(JSON.parse(res.body), { error: 'Request body exceeds the 36 MB limit', code: 'payload_too_large' });
  });

  t.test('chunked body over 36 MB: 413, cut off while streaming', async (t) => {
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${app.url}/api-keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${app.apiKey}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      });
      req.on('response', (r) => {
        let body = '';
        r.on('data', (c: Buffer) => (body += c.toString()));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
      });
      req.on('error', () => undefined); // the server may close while we still write
      const chunk = Buffer.alloc(1024 * 1024, 'a');
      let sent = 0;
      const pump = () => {
        while (sent < 40) {
          sent++;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        req.end();
      };
      req.on('error', reject);
      pump();
    });
    t.equal(res.status, 413);
    t.equal(JSON.parse(res.body).code, 'payload_too_large');
  });

  t.test('the listener survives garbage', async (t) => {
    const net = await import('node:net');
    await new Promise<void>((resolve) => {
      const s = net.connect(app.appliance.ports.api.port, '127.0.0.1', () => s.end('\x00\x01GARBAGE / HTTP/9\r\n\r\n'));
      s.on('data', () => undefined);
      s.on('close', () => resolve());
      s.on('error', () => resolve());
    });
    const res = await app.request('GET', '/health', { key: null });
    t.equal(res.status, 200);
  });

  t.test('GET /openapi.json documents every route from the same schemas', async (t) => {
    const res = await app.request<{ openapi: string; paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { required?: string[]; properties?: Record<string, unknown> } }> } }>> }>(
      'GET',
      '/openapi.json',
      { key: null },
    );
    t.equal(res.status, 200);
    t.equal(res.body.openapi, '3.1.0');
    for (const [p, m] of [
      ['/health', 'get'],
      ['/api-keys', 'post'],
      ['/api-keys/{id}/rotate', 'post'],
      ['/domains', 'get'],
      ['/domains', 'post'],
      ['/domains/{id}', 'patch'],
      ['/domains/{id}/verify', 'post'],
      ['/events', 'get'],
    ] as const) {
      t.ok(res.body.paths[p]?.[m], `${m.toUpperCase()} ${p}`);
    }
    const responses = (p: string, m: string) => Object.keys((res.body.paths[p]?.[m] as { responses?: object } | undefined)?.responses ?? {});
    for (const p of ['/emails', '/emails/send', '/emails/batch']) t.ok(responses(p, 'post').includes('429'), `POST ${p} documents its 429`);
    t.notOk(responses('/health', 'get').includes('429'), 'a route without a rate limit documents none');
    const create = res.body.paths['/domains']!.post!.requestBody!.content['application/json']!.schema;
    t.same(create.required, ['name']);
    t.ok(create.properties?.tls_mode);
  });

  t.test('an idle kept-alive connection stays usable well past Node\'s 5 s default, and says how long', async (t) => {
    // Clients that pool connections (Node's http.Agent, urllib3, …) reuse one idle for seconds; had the server
    // closed it meanwhile, the request would meet ECONNRESET.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    t.teardown(() => agent.destroy());
    const get = () =>
      new Promise<{ status: number; keepAlive: string | undefined; reused: boolean }>((resolve, reject) => {
        const req = http.get(`${app.url}/health`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, keepAlive: res.headers['keep-alive']?.toString(), reused: req.reusedSocket }));
        });
        req.on('error', reject);
      });
    const first = await get();
    t.equal(first.status, 200);
    t.equal(first.keepAlive, 'timeout=65', 'the Keep-Alive hint names the idle timeout');
    await new Promise((resolve) => setTimeout(resolve, 5_500));
    const second = await get();
    t.equal(second.status, 200);
    t.ok(second.reused, 'the same connection, still open after 5.5 s idle');
  });
});
