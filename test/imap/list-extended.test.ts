// LIST-EXTENDED (RFC 5258) with SPECIAL-USE selection (RFC 6154 §5.3) and LIST-STATUS (RFC 5819): the RFC's
// examples (§5) over a raw socket, on the RFC's own hierarchy; then imapflow and Python's imaplib.
import t from 'tap';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { message, PASSWORD, session, setupImap } from './setup.js';

/** The LIST responses of a command's output, by name: attributes and extended data. */
function listed(out: string): Map<string, { attrs: string[]; ext: string }> {
  const m = new Map<string, { attrs: string[]; ext: string }>();
  for (const [, attrs, name, ext] of out.matchAll(/^\* LIST \(([^)]*)\) "\/" "([^"]*)"(?: (.*))?\r$/gm)) {
    m.set(name!, { attrs: attrs ? attrs.split(' ') : [], ext: ext ?? '' });
  }
  return m;
}

t.test('LIST-EXTENDED', async (t) => {
  const f = await setupImap(t);
  const user = await f.account('lx');
  const c = await session(f, user.address);
  // RFC 5258 §5's hierarchy: Fruit/{Apple,Banana}, Tofu, Vegetable/{Broccoli,Corn}; subscribed: Fruit/Banana,
  // Vegetable, Vegetable/Broccoli. Its "Fruit/Peach" (subscribed, no longer existing) is shown in
  // subscriptions.test.ts; "Qux2" below is a name that is no mailbox but the parent of one.
  for (const name of ['Fruit/Apple', 'Fruit/Banana', 'Tofu', 'Vegetable/Broccoli', 'Vegetable/Corn', 'Qux2/Bar2']) t.match(await c.command('c', `CREATE ${name}`), /^c OK/m);
  for (const name of ['Fruit/Banana', 'Vegetable', 'Vegetable/Broccoli', 'Qux2/Bar2']) t.match(await c.command('s', `SUBSCRIBE ${name}`), /^s OK/m);
  t.match(await c.command('d', 'DELETE Qux2'), /^d OK/m);
  await f.store.deliver(message({ subject: 'veg' }), [{ mailboxId: user.id, folder: 'Vegetable' }]);

  await t.test('announced; RFC 3501 LIST unchanged; extended syntax says \\NonExistent', async (t) => {
    t.match(await c.command('a0', 'CAPABILITY'), /LIST-EXTENDED/);
    // §5 example 1 (RFC 3501 syntax): a name that is no mailbox is \Noselect.
    const base = listed(await c.command('a1', 'LIST "" %'));
    t.same(base.get('Qux2')?.attrs, ['\\Noselect', '\\HasChildren']);
    t.same(base.get('Tofu')?.attrs, ['\\HasNoChildren']);
    t.same(base.get('Fruit')?.attrs, ['\\HasChildren']);
    const ext = listed(await c.command('a2', 'LIST () "" %'));
    t.same(ext.get('Qux2')?.attrs, ['\\NonExistent', '\\HasChildren'], 'RFC 5258 §3.4: \\NonExistent implies \\Noselect');
    t.same([...ext.keys()], [...base.keys()], 'the same names');
  });

  await t.test('§5 example 2: LIST (SUBSCRIBED) "" "*" (and with REMOTE, example 5)', async (t) => {
    const out = await c.command('b1', 'LIST (SUBSCRIBED) "" "*"');
    const l = listed(out);
    t.same(l.get('Fruit/Banana')?.attrs, ['\\HasNoChildren', '\\Subscribed']);
    t.same(l.get('Vegetable')?.attrs, ['\\HasChildren', '\\Subscribed']);
    t.same(l.get('Vegetable/Broccoli')?.attrs, ['\\HasNoChildren', '\\Subscribed']);
    t.same(l.get('Qux2/Bar2')?.attrs, ['\\HasNoChildren', '\\Subscribed']);
    for (const name of ['Fruit', 'Fruit/Apple', 'Tofu', 'Vegetable/Corn', 'Qux2']) t.notOk(l.has(name), `${name} is not subscribed`);
    for (const [name, e] of l) t.ok(e.attrs.includes('\\Subscribed'), `${name}: every one listed is subscribed`);
    t.same(listed(await c.command('b2', 'LIST (SUBSCRIBED REMOTE) "" "*"')), l, 'REMOTE: there are no remote mailboxes');
  });

  await t.test('§5 examples 3-4: RETURN (CHILDREN), with and without REMOTE', async (t) => {
    const l = listed(await c.command('c1', 'LIST () "" "%" RETURN (CHILDREN)'));
    t.same(l.get('Fruit')?.attrs, ['\\HasChildren']);
    t.same(l.get('Tofu')?.attrs, ['\\HasNoChildren']);
    t.same(l.get('Vegetable')?.attrs, ['\\HasChildren']);
    t.same(l.get('INBOX')?.attrs, ['\\HasNoChildren']);
    t.same(listed(await c.command('c2', 'LIST (REMOTE) "" "%" RETURN (CHILDREN)')), l);
  });

  await t.test('§5 example 6: RETURN (SUBSCRIBED) marks without selecting', async (t) => {
    const l = listed(await c.command('e1', 'LIST "" "%" RETURN (SUBSCRIBED)'));
    t.same(l.get('Vegetable')?.attrs, ['\\HasChildren', '\\Subscribed']);
    t.same(l.get('Fruit')?.attrs, ['\\HasChildren'], 'listed, not subscribed');
    t.same(l.get('Tofu')?.attrs, ['\\HasNoChildren']);
  });

  await t.test('§5 examples 7-8: RECURSIVEMATCH with "%": CHILDINFO for parents of subscribed names', async (t) => {
    const out = await c.command('f1', 'LIST (SUBSCRIBED RECURSIVEMATCH) "" "%" RETURN (CHILDREN)');
    t.match(out, /^\* LIST \(\\HasChildren\) "\/" "Fruit" \("CHILDINFO" \("SUBSCRIBED"\)\)\r$/m, 'not subscribed, listed for its subscribed child');
    t.match(out, /^\* LIST \(\\HasChildren \\Subscribed\) "\/" "Vegetable" \("CHILDINFO" \("SUBSCRIBED"\)\)\r$/m, 'subscribed, with a subscribed child');
    t.match(out, /^\* LIST \(\\NonExistent \\HasChildren\) "\/" "Qux2" \("CHILDINFO" \("SUBSCRIBED"\)\)\r$/m, 'a name that is no mailbox, §5 example 9');
    const l = listed(out);
    t.notOk(l.has('Tofu'), 'no subscribed descendant');
    t.notOk(l.has('Fruit/Banana'), '"%" does not reach it');
  });

  await t.test('§5 example 9 and §3.5: "*" lists the subscribed children themselves, redundant CHILDINFO suppressed', async (t) => {
    const l = listed(await c.command('g1', 'LIST (SUBSCRIBED RECURSIVEMATCH) "" "*"'));
    t.notOk(l.has('Fruit'), 'Fruit/Banana is listed itself');
    t.notOk(l.has('Qux2'), 'Qux2/Bar2 is listed itself');
    t.equal(l.get('Vegetable')?.ext, '("CHILDINFO" ("SUBSCRIBED"))', 'a subscribed one keeps its CHILDINFO');
    t.equal(l.get('Vegetable/Broccoli')?.ext, '');
    t.equal(l.get('Fruit/Banana')?.ext, '');
    // A pattern that names the parent only: the child does not match it, so CHILDINFO is given.
    t.match(await c.command('g2', 'LIST (SUBSCRIBED RECURSIVEMATCH) "" "Fruit"'), /^\* LIST \(\\HasChildren\) "\/" "Fruit" \("CHILDINFO" \("SUBSCRIBED"\)\)\r$/m);
    t.notMatch(await c.command('g3', 'LIST (SUBSCRIBED) "" "Fruit"'), /\* LIST/, 'without RECURSIVEMATCH nothing');
  });

  await t.test('several patterns in one LIST', async (t) => {
    const out = await c.command('h1', 'LIST "" ("INBOX" "Sent*" "Vegetable/%")');
    t.same([...listed(out).keys()], ['INBOX', 'Sent', 'Vegetable/Broccoli', 'Vegetable/Corn']);
    const twice = await c.command('h2', 'LIST "" ("Fruit/*" "*/Apple")');
    t.equal(twice.match(/"Fruit\/Apple"/g)?.length, 1, 'a name two patterns match is listed once');
    t.match(await c.command('h3', 'LIST "" ()'), /^h3 BAD/m, 'an empty pattern list is BAD');
  });

  await t.test('SPECIAL-USE selection and return options (RFC 6154 §5.2, §5.3)', async (t) => {
    const sel = listed(await c.command('i1', 'LIST (SPECIAL-USE) "" "*" RETURN (SPECIAL-USE)'));
    t.same([...sel.keys()].sort(), ['Archive', 'Drafts', 'Junk', 'Sent', 'Trash']);
    t.same(sel.get('Sent')?.attrs, ['\\HasNoChildren', '\\Sent']);
    const ret = listed(await c.command('i2', 'LIST "" "%" RETURN (SPECIAL-USE)'));
    t.ok(ret.has('INBOX') && ret.has('Fruit'), 'the return option selects nothing');
    t.same(ret.get('Trash')?.attrs, ['\\HasNoChildren', '\\Trash']);
  });

  await t.test('RETURN (STATUS …) folded in: after each selectable name listed, never after \\NonExistent', async (t) => {
    const out = await c.command('j1', 'LIST (SUBSCRIBED RECURSIVEMATCH) "" "%" RETURN (STATUS (MESSAGES UNSEEN))');
    t.match(out, /^\* LIST \(\\HasChildren \\Subscribed\) "\/" "Vegetable" \("CHILDINFO" \("SUBSCRIBED"\)\)\r\n\* STATUS "Vegetable" \(MESSAGES 1 UNSEEN 1\)\r$/m);
    t.notMatch(out, /STATUS "Qux2"/);
    t.match(out, /^\* STATUS "Fruit" \(MESSAGES 0 UNSEEN 0\)\r$/m, 'Fruit exists: its STATUS comes');
    t.match(await c.command('j2', 'LIST "" "Veg*" RETURN (CHILDREN STATUS (UIDNEXT) SUBSCRIBED)'), /"Vegetable"\r\n\* STATUS "Vegetable" \(UIDNEXT 2\)\r$/m);
  });

  await t.test('bad options are BAD (RFC 5258 §3, §3.1)', async (t) => {
    t.match(await c.command('k1', 'LIST (RECURSIVEMATCH) "" "%"'), /^k1 BAD/m, 'RECURSIVEMATCH alone');
    t.match(await c.command('k2', 'LIST (REMOTE RECURSIVEMATCH) "" "%"'), /^k2 BAD/m, 'RECURSIVEMATCH with REMOTE only');
    t.match(await c.command('k3', 'LIST (BOGUS) "" "%"'), /^k3 BAD/m);
    t.match(await c.command('k4', 'LIST "" "%" RETURN (BOGUS)'), /^k4 BAD/m);
    t.match(await c.command('k5', 'LIST "" "%" RETURN'), /^k5 BAD/m);
    t.match(await c.command('k6', 'LIST () "" ""'), /^\* LIST \(\\Noselect\) "\/" ""\r\nk6 OK/m, 'the delimiter query still answers');
  });

  await t.test('LSUB still works beside it', async (t) => {
    const out = await c.command('l1', 'LSUB "" "*"');
    t.match(out, /^\* LSUB \(\) "\/" "Fruit\/Banana"\r$/m);
    t.notMatch(out, /"Fruit"\r/);
    t.match(await c.command('l2', 'LSUB "" "%"'), /^\* LSUB \(\\Noselect\) "\/" "Fruit"\r$/m);
  });

  await t.test('imapflow lists with RETURN (SUBSCRIBED …) and LIST-STATUS', async (t) => {
    const client = await f.client(user.address);
    const list = await client.list({ statusQuery: { messages: true, unseen: true } });
    const byPath = new Map(list.map((m) => [m.path, m]));
    t.equal(byPath.get('Vegetable')?.subscribed, true);
    t.notOk(byPath.get('Fruit')?.subscribed);
    t.equal(byPath.get('Vegetable')?.status?.messages, 1);
    t.equal(byPath.get('Sent')?.specialUse, '\\Sent');
    t.ok(byPath.get('Qux2')?.flags.has('\\Noselect'), 'a name that is no mailbox');
    await client.logout();
  });

  await t.test("Python's imaplib sends LIST-EXTENDED commands", async (t) => {
    const script = fileURLToPath(new URL('./fixtures/imaplib_listext.py', import.meta.url));
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile('python3', [script, '127.0.0.1', String(f.imapPort), user.address, PASSWORD], { timeout: 60_000 }, (err, out, errOut) => (err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out))),
    );
    const r = JSON.parse(stdout) as Record<string, [string, string[]]>;
    t.equal(r.recursive![0], 'OK');
    t.ok(r.recursive![1].includes('(\\HasChildren) "/" "Fruit" ("CHILDINFO" ("SUBSCRIBED"))'));
    t.same(r.patterns, ['OK', ['(\\HasNoChildren) "/" "INBOX"', '(\\HasChildren) "/" "Fruit"']]);
    t.equal(r.bad![0], 'BAD');
  });
  c.destroy();
});
