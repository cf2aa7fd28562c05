// The DKIM signer against mailauth's verifier: folded and repeated headers, whitespace the relaxed
// canonicalisation must ignore, empty and unterminated bodies, 8-bit header bytes, and tampering.
import { createHash, generateKeyPairSync, verify as cryptoVerify } from 'node:crypto';
import t from 'tap';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { composeMessage, htmlToText } from '../../src/mta/compose.js';
import { relaxedBodyHash, relaxedHeader, signMessage } from '../../src/mta/dkim.js';

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const p = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
const resolver = async (name: string, rr: string) => {
  if (rr === 'TXT' && name === 'sel._domainkey.example.test') return [[`v=DKIM1; k=rsa; p=${p}`]];
  const err = new Error('not found') as Error & { code: string };
  err.code = 'ENOTFOUND';
  throw err;
};
const at = new Date('2026-11-22T10:00:00Z');
const key = { domain: 'example.test', selector: 'sel', privateKey };

async function verify(raw: Buffer) {
  const res = await dkimVerify(raw, { resolver, curTime: at });
  return res.results[0]!;
}

const messages: Record<string, string> = {
  plain: 'From: A <a@example.test>\r\nTo: b@remote.test\r\nSubject: Hello\r\nDate: Sun, 22 Nov 2026 10:00:00 +0000\r\nMessage-ID: <1@example.test>\r\n\r\nHi there\r\n',
  folded: 'From: "A very long display name" \r\n <a@example.test>\r\nTo: b@remote.test,\r\n\tc@remote.test\r\nSubject:   spaced   out   \r\nTo: second@remote.test\r\n\r\nline with trailing spaces   \r\n\ttabbed\t\tline\r\n\r\n\r\n\r\n',
  emptyBody: 'From: a@example.test\r\nSubject: empty\r\n\r\n',
  noFinalCrlf: 'From: a@example.test\r\nSubject: unterminated\r\n\r\nlast line without CRLF',
  eightBit: 'From: =?utf-8?q?J=C3=B6rg?= <a@example.test>\r\nSubject: Grüße\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\nGrüße aus Köln\r\n',
};

for (const [name, text] of Object.entries(messages)) {
  t.test(`${name}: mailauth verifies the signature`, async (t) => {
    const signed = await signMessage(Buffer.from(text, 'utf8'), key, at);
    const result = await verify(signed);
    t.equal(result.status.result, 'pass', JSON.stringify(result.status));
    t.equal(result.signingDomain, 'example.test');
    t.ok(signed.toString('utf8').endsWith(text), 'the message follows the signature unchanged');
  });
}

t.test('PEM keys are accepted too, and From is over-signed', async (t) => {
  const signed = await signMessage(Buffer.from(messages.plain!), { ...key, privateKey: pem }, at);
  const header = signed.toString('latin1').split('\r\n\r\n')[0]!.replace(/\r\n[ \t]+/g, ' ');
  t.match(header, /h=from:from:subject:date:message-id:to;/);
  t.match(header, /c=relaxed\/relaxed; d=example\.test; s=sel; t=1795341600;/);
  t.equal((await verify(signed)).status.result, 'pass');
});

t.test('tampering breaks the signature', async (t) => {
  const signed = (await signMessage(Buffer.from(messages.plain!), key, at)).toString('latin1');
  // mailauth answers "neutral" (body hash did not verify) for a changed body.
  t.match((await verify(Buffer.from(signed.replace('Hi there', 'Hi thera'), 'latin1'))).status, { result: 'neutral', comment: /body hash/ }, 'body');
  t.equal((await verify(Buffer.from(signed.replace('Subject: Hello', 'Subject: Hallo'), 'latin1'))).status.result, 'fail', 'header');
  t.equal((await verify(Buffer.from(signed.replace('\r\n\r\n', '\r\nFrom: evil@x.test\r\n\r\n'), 'latin1'))).status.result, 'fail', 'an added From');
  // Whitespace changes the relaxed canonicalisation forgives.
  t.equal((await verify(Buffer.from(signed.replace('Subject: Hello', 'Subject:    Hello  '), 'latin1'))).status.result, 'pass', 'header whitespace');
});

t.test('a key neither RSA nor Ed25519 is refused', async (t) => {
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  await t.rejects(signMessage(Buffer.from(messages.plain!), { ...key, privateKey: ec }, at), /expected an RSA or Ed25519 key, got ec/);
  await t.rejects(signMessage(Buffer.from(messages.plain!), [key, { ...key, privateKey: ec }], at), /got ec/, 'nor signs with the others of the list');
});

// RFC 8463: ed25519-sha256. The signature is Ed25519 over the SHA-256 of the header hash input, and p= is the
// raw 32-byte public key (not a SubjectPublicKeyInfo).
const ed = generateKeyPairSync('ed25519');
const edRaw = ed.publicKey.export({ type: 'spki', format: 'der' }).subarray(-32);
const edKey = { domain: 'example.test', selector: 'ed', privateKey: ed.privateKey };
const dualResolver = async (name: string, rr: string) => {
  if (rr === 'TXT' && name === 'ed._domainkey.example.test') return [[`v=DKIM1; k=ed25519; p=${edRaw.toString('base64')}`]];
  return resolver(name, rr);
};

t.test('Ed25519 (RFC 8463): mailauth verifies it, with a=ed25519-sha256', async (t) => {
  t.equal(edRaw.length, 32);
  for (const [name, text] of Object.entries(messages)) {
    const signed = await signMessage(Buffer.from(text, 'utf8'), edKey, at);
    const header = signed.toString('latin1').split('\r\n\r\n')[0]!.replace(/\r\n[ \t]+/g, ' ');
    t.match(header, /^DKIM-Signature: v=1; a=ed25519-sha256; c=relaxed\/relaxed; d=example\.test; s=ed;/, name);
    const result = (await dkimVerify(signed, { resolver: dualResolver, curTime: at })).results[0]!;
    t.equal(result.status.result, 'pass', `${name}: ${JSON.stringify(result.status)}`);
  }
});

t.test('Ed25519: the signature is over the SHA-256 of the header hash input, as RFC 8463 §3 has it', async (t) => {
  const signed = (await signMessage(Buffer.from(messages.plain!), edKey, at)).toString('latin1');
  const field = signed.slice(0, signed.indexOf('\r\nFrom:') + 2);
  const b = /b=([A-Za-z0-9+/=\s]+)$/.exec(field.trim())![1]!.replace(/\s+/g, '');
  // The header hash input rebuilt by hand: the signed fields (h=) relaxed, then the field with b= empty.
  const h = /[;\s]h=([^;]+);/.exec(field.replace(/\r\n[ \t]+/g, ''))![1]!.replace(/\s+/g, '').split(':');
  const headers = messages.plain!.split('\r\n\r\n')[0]!.split('\r\n');
  const used = new Map<string, number>();
  let input = '';
  for (const name of h) {
    const all = headers.filter((l) => l.toLowerCase().startsWith(`${name}:`));
    const n = used.get(name) ?? 0;
    used.set(name, n + 1);
    const line = all[all.length - 1 - n];
    if (line !== undefined) input += relaxedHeader(line);
  }
  input += relaxedHeader(field.replace(/\r\n$/, '').replace(/b=[A-Za-z0-9+/=\s]+$/, 'b=')).slice(0, -2);
  const digest = createHash('sha256').update(input, 'latin1').digest();
  t.ok(cryptoVerify(null, digest, ed.publicKey, Buffer.from(b, 'base64')), 'Ed25519 over sha256(input)');
  t.notOk(cryptoVerify(null, Buffer.from(input, 'latin1'), ed.publicKey, Buffer.from(b, 'base64')), 'not over the input itself');
});

t.test('dual signing: an Ed25519 and an RSA signature, each verified by mailauth; RSA alone still passes', async (t) => {
  const signed = await signMessage(Buffer.from(messages.folded!), [key, edKey], at);
  const text = signed.toString('latin1');
  t.equal(text.match(/^DKIM-Signature:/gm)?.length, 2);
  t.match(text, /^DKIM-Signature: v=1; a=rsa-sha256;[\s\S]*\r\nDKIM-Signature: v=1; a=ed25519-sha256;/, 'in the order given: RSA on top');
  const results = (await dkimVerify(signed, { resolver: dualResolver, curTime: at })).results;
  t.same(results.map((r) => [r.status.result, r.selector]).sort(), [['pass', 'ed'], ['pass', 'sel']]);
  // A receiver without the Ed25519 key (or one that skips the algorithm) finds the RSA one passing.
  const rsaOnly = (await dkimVerify(signed, { resolver, curTime: at })).results;
  t.same(rsaOnly.map((r) => [r.status.result, r.selector]).sort(), [['neutral', 'ed'], ['pass', 'sel']]);
});

t.test('canonicalisation corners (RFC 6376 §3.4.5 example)', async (t) => {
  t.equal(relaxedHeader('SUBJect: abc\r\n\tdef  '), 'subject:abc def\r\n');
  t.equal(relaxedHeader('A : X'), 'a:X\r\n');
  // " C \r\nD \t E\r\n\r\n\r\n" relaxed is " C\r\nD E\r\n"
  t.equal(relaxedBodyHash(Buffer.from(' C \r\nD \t E\r\n\r\n\r\n')), relaxedBodyHash(Buffer.from(' C\r\nD E\r\n')));
  t.equal(relaxedBodyHash(Buffer.alloc(0)), '47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=', 'the empty body hashes the empty string');
});

t.test('the body hash: bodies already in relaxed form (hashed as they are) and the rest agree with the rule', async (t) => {
  // RFC 6376 §3.4.4 written out line by line, as the reference.
  const reference = (body: string) => {
    const out = body.split(/\r?\n/).map((l) => l.replace(/[ \t]+/g, ' ').replace(/ $/, ''));
    while (out.length > 0 && out[out.length - 1] === '') out.pop();
    return createHash('sha256').update(out.length === 0 ? '' : `${out.join('\r\n')}\r\n`, 'latin1').digest('base64');
  };
  const bodies = [
    '', '\r\n', '\r\n\r\n', 'abc', 'abc\r\n', 'abc\r\n\r\n\r\n', ' lead\r\n', 'a b c\r\n', 'a.\r\n.\r\n', 'x\rmid\r\n', 'end\r',
    'lone\r\r\n', 'x \ry\r\n', 'trail \r\n', 'trail\t\r\n', 'two  spaces\r\n', 'bare\nlf\n', 'mixed\r\nbare\n\nlf\r\n\n', '\nstarts with LF', 'x\r\n\n\n', 'last line ', '\n', ' \r\n', 'a\r\n \r\n',
    'Hello=\r\nquoted-printable =3D text=20\r\n\r\n', '\u00e4\u00f6 8-bit\r\n',
  ];
  for (const body of bodies) t.equal(relaxedBodyHash(Buffer.from(body, 'latin1')), reference(body), JSON.stringify(body));
  // A composed message (its text part has bare LFs).
  const html = '<h1>Your order  has shipped</h1>' + '<p>Item: a product, quantity 1, \u00fcnicode   here  </p>'.repeat(20);
  const raw = await composeMessage({ from: { address: 'a@example.test' }, to: [{ address: 'b@remote.test' }], cc: [], replyTo: [], subject: 'S', html, text: htmlToText(html), headers: {}, attachments: [{ filename: 'a.pdf', contentType: 'application/pdf', content: Buffer.alloc(3000, 1) }], messageId: '<1@example.test>', date: at });
  const body = raw.subarray(raw.indexOf('\r\n\r\n') + 4);
  t.equal(relaxedBodyHash(body), reference(body.toString('latin1')), 'a composed body');
});

t.test('signed in a render thread (where the RSA operation runs inline): mailauth verifies it', async (t) => {
  const { RenderPool } = await import('../../src/mta/render-pool.js');
  const { createLogger } = await import('../../src/core/logger.js');
  const pool = new RenderPool(1, createLogger('silent'));
  t.teardown(() => pool.close());
  const message = { from: { address: 'a@example.test' }, to: [{ address: 'b@remote.test' }], cc: [], replyTo: [], subject: 'From a thread', html: '<p>Hello from a thread</p>', headers: {}, attachments: [], messageId: '<thread@example.test>', date: at };
  const signed = await pool.render(message, [{ domain: 'example.test', selector: 'sel', pem }], at);
  t.equal((await verify(signed)).status.result, 'pass');
  t.match(signed.toString('latin1'), /^DKIM-Signature: v=1; a=rsa-sha256;/);
});

// RFC 5322 §2.1.1: lines SHOULD be at most 78 characters. The field was folded only between tags, so a
// message signing Reply-To, Cc and List-Unsubscribe had a 95-character h= line, and b= began after the tag
// before it (141 characters, seen on the wire by Exim). Domains and selectors of every length move where the
// folds fall, down to a "b=" that ends a line exactly.
t.test('the DKIM-Signature field is folded to lines of at most 78 characters, and still verifies', async (t) => {
  const message = (domain: string) =>
    `From: A <a@${domain}>\r\nTo: b@remote.test\r\nCc: c@remote.test\r\nReply-To: r@${domain}\r\nSubject: Hello\r\n` +
    `Date: Sun, 22 Nov 2026 10:00:00 +0000\r\nMessage-ID: <1@${domain}>\r\nMIME-Version: 1.0\r\n` +
    'Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\nList-Unsubscribe: <mailto:u@remote.test>\r\n\r\nHi\r\n';
  for (let n = 1; n <= 40; n++) {
    const domain = `${'d'.repeat(n)}.example.test`;
    const selector = 's'.repeat(1 + (n % 9));
    const resolve = async (name: string, rr: string) => {
      if (rr === 'TXT' && name === `${selector}._domainkey.${domain}`) return [[`v=DKIM1; k=rsa; p=${p}`]];
      throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    };
    const signed = (await signMessage(Buffer.from(message(domain)), { domain, selector, privateKey }, at)).toString('latin1');
    const field = signed.slice(0, signed.indexOf('\r\nFrom:'));
    const long = field.split('\r\n').filter((l) => l.length > 78);
    t.same(long, [], `d=${domain}: no line over 78`);
    t.match(field.replace(/\r\n[ \t]+/g, '').replace(/\s+/g, ''), /h=from:from:reply-to:subject:date:message-id:to:cc:mime-version:content-type:content-transfer-encoding:list-unsubscribe;/, 'every field is listed');
    const result = (await dkimVerify(Buffer.from(signed, 'latin1'), { resolver: resolve, curTime: at })).results[0]!;
    t.equal(result.status.result, 'pass', `d=${domain}: ${JSON.stringify(result.status)}`);
  }
});
