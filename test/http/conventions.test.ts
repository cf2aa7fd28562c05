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
    for (const raw of ['[1,2]', '"text"', '42']) {
      const res = await app.request('POST', '/api-keys', { raw });
      t.equal(res.status, 400, raw);
      t.equal(res.body.code, 'invalid_request');
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
    const create = res.body.paths['/domains']!.post!.requestBody!.content['application/json']!.schema;
    t.same(create.required, ['name']);
    t.ok(create.properties?.tls_mode);
  });
});
