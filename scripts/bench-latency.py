#!/usr/bin/env python3
# The client side of `npm run bench:latency`: Python's standard imaplib, poplib and smtplib at their defaults
# (Nagle on, one command at a time, no pipelining), over STARTTLS, as a new user's script talks to a mail server.
# Started by scripts/bench-latency.ts with the appliance's ports and accounts as JSON on argv[1]; prints one JSON
# object: milliseconds per command, by name.
import imaplib
import json
import poplib
import smtplib
import ssl
import sys
import time

cfg = json.loads(sys.argv[1])
HOST = cfg['host']
REPEAT = cfg['repeat']
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE

out = {}


def timed(name, fn):
    t0 = time.perf_counter()
    r = fn()
    out.setdefault(name, []).append((time.perf_counter() - t0) * 1000)
    return r


def check(typ, what):
    if typ != 'OK':
        raise SystemExit(f'{what} failed: {typ}')


# ------------------------------------------------------------------------------------------------ IMAP
imap = imaplib.IMAP4(HOST, cfg['imapPort'])
imap.starttls(ssl_context=ctx)
check(imap.login(cfg['big']['user'], cfg['big']['password'])[0], 'LOGIN')
typ, data = imap.select('INBOX')
check(typ, 'SELECT')
exists = int(data[0])
for i in range(REPEAT):
    n = 1 + (i * 97) % exists
    typ, data = timed('FETCH n BODY[]', lambda: imap.fetch(str(n), '(BODY[])'))
    check(typ, 'FETCH BODY[]')
for i in range(REPEAT):
    n = 1 + (i * 89) % exists
    check(timed('FETCH n (FLAGS)', lambda: imap.fetch(str(n), '(FLAGS)'))[0], 'FETCH FLAGS')
for i in range(REPEAT):
    uid = 1 + (i * 83) % exists
    sign = '+' if i % 2 == 0 else '-'
    check(timed('UID STORE', lambda: imap.uid('STORE', str(uid), sign + 'FLAGS', '(\\Flagged)'))[0], 'UID STORE')
for _ in range(REPEAT):
    timed('NOOP', lambda: imap.noop())
imap.create('Appended')
message = ('From: a@remote.test\r\nTo: ' + cfg['big']['user'] + '\r\nSubject: appended\r\n\r\n' + 'x' * 76 + '\r\n') * 1
message = (message + ('y' * 78 + '\r\n') * 26).encode()[:2048]
t0 = time.perf_counter()
for _ in range(REPEAT):
    check(timed('APPEND 2 KB', lambda: imap.append('Appended', None, None, message))[0], 'APPEND')
out['APPEND 2 KB per second'] = [REPEAT / (time.perf_counter() - t0)]
for _ in range(cfg['selects']):
    check(timed('SELECT of %d' % exists, lambda: imap.select('INBOX'))[0], 'SELECT')
imap.logout()

imap = imaplib.IMAP4(HOST, cfg['imapPort'])
imap.starttls(ssl_context=ctx)
check(imap.login(cfg['small']['user'], cfg['small']['password'])[0], 'LOGIN')
for _ in range(cfg['selects']):
    typ, data = timed('SELECT of small', lambda: imap.select('INBOX'))
    check(typ, 'SELECT')
out['SELECT of %s' % int(data[0])] = out.pop('SELECT of small')
imap.logout()

# ------------------------------------------------------------------------------------------------ POP3
pop = poplib.POP3(HOST, cfg['pop3Port'])
pop.stls(context=ctx)
pop.user(cfg['big']['user'])
pop.pass_(cfg['big']['password'])
count = pop.stat()[0]
for i in range(REPEAT):
    n = 1 + (i * 97) % count
    timed('POP3 RETR', lambda: pop.retr(n))
for _ in range(REPEAT):
    timed('POP3 NOOP', lambda: pop.noop())
pop.quit()

# ------------------------------------------------------------------------------------------------ SMTP
for port, name in ((cfg['mxPort'], 'MX'), (cfg['submissionPort'], 'submission')):
    for _ in range(cfg['greetings']):
        t0 = time.perf_counter()
        s = smtplib.SMTP(HOST, port)  # returns once the greeting was read
        t1 = time.perf_counter()
        s.ehlo('client.remote.test')
        s.quit()
        t2 = time.perf_counter()
        out.setdefault(name + ' connect → greeting', []).append((t1 - t0) * 1000)
        out.setdefault(name + ' connect → QUIT answered', []).append((t2 - t0) * 1000)

print(json.dumps(out))
