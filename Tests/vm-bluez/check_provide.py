#!/usr/bin/python3
"""`ancs provide --central` (Bumble, acting as an iPhone) against accessories on the real
bluetoothd: how it pairs. Runs inside the VM, after the simulated iPhone has gone.

The Bumble host's `link` role puts one virtual controller on /dev/vhci (the kernel's adapter
for bluetoothd) and another on a loopback TCP port for `ancs provide`. Checks:
  1. numeric comparison (the default) with MITM protection against `ancs listen
     --accept-pairing` (DisplayYesNo): the agent is asked to confirm the same 6-digit code the
     provider printed, and the notifications arrive;
  2. `--pairing just-works` still pairs with it (no passkey) and the notifications arrive;
  3. an agent that refuses Just Works authorization (as ancs4linux's does, strict_agent.py)
     pairs with the numeric default (RequestConfirmation, same code), and refuses
     `--pairing just-works` (RequestAuthorization), which the provider reports.

usage: check_provide.py <ancs binary> <output dir> <this folder> <venv with bumble>
Exit 0 when every check passed.
"""
import json, os, re, signal, subprocess, sys, threading, time

ANCS, OUT, HERE, VENV = sys.argv[1:5]
HOST = os.path.normpath(os.path.join(HERE, '../../Sources/ANCSBumble/Host/ancs_bumble_host.py'))
PYTHON = os.path.join(VENV, 'bin/python')
PHONE = 'bumble:tcp-client:127.0.0.1:9101'
T0 = time.monotonic()
checks = []


def log(msg):
    print(f'[check-provide {time.monotonic() - T0:7.3f}] {msg}', flush=True)


def check(name, ok, detail=''):
    checks.append(dict(name=name, ok=bool(ok)))
    log(f'{"PASS" if ok else "FAIL"}: {name} {str(detail)[:300]}')
    return ok


def wait(pred, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = pred()
        if r:
            return r
        time.sleep(0.1)
    log(f'timed out after {timeout}s waiting for {what}')
    return None


class Proc:
    """A child process; its stdout and stderr lines are collected and copied to OUT."""

    def __init__(self, name, argv, stdin=None):
        self.name = name
        self.out, self.err = [], []
        env = dict(os.environ, ANCS_BUMBLE_PYTHON=PYTHON)
        self.p = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1, env=env)
        for stream, lines, suffix in ((self.p.stdout, self.out, 'out'), (self.p.stderr, self.err, 'err')):
            threading.Thread(target=self.collect, args=(stream, lines, suffix), daemon=True).start()

    def collect(self, stream, lines, suffix):
        with open(os.path.join(OUT, f'provide-{self.name}.{suffix}'), 'w') as f:
            for line in stream:
                f.write(line); f.flush()
                lines.append(line.rstrip('\n'))

    def events(self):
        found = []
        for line in list(self.out):
            try:
                found.append(json.loads(line))
            except ValueError:
                pass
        return found

    def event(self, name):
        return next((e for e in self.events() if e.get('event') == name), None)

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)
        log(f'{self.name} exited {self.p.returncode}')


def shown_title(listen, title):
    for e in listen.events():
        if e.get('event') == 'attributes' and any(a.get('id') == 'title' and a.get('value') == title for a in e.get('attributes', [])):
            return e
    return None


def provide(name, address, pairing=None):
    argv = [ANCS, 'provide', '--stack', PHONE, '--central', '--json', '--duration', '90', '--address', address,
            '--snoop', os.path.join(OUT, f'provide-{name}.btsnoop')]
    return Proc(f'{name}-provide', argv + (['--pairing', pairing] if pairing else []))


def with_listen(name, address, pairing):
    listen = Proc(f'{name}-listen', [ANCS, 'listen', '--json', '--accept-pairing', '--name', 'ANCS bench'], stdin=subprocess.PIPE)
    try:
        check(f'{name}: listen advertises', wait(lambda: any('advertising' in l for l in listen.err), 30, 'advertising'), listen.err[-1:])
        phone = provide(name, address, pairing)
        try:
            shown = wait(lambda: shown_title(listen, 'Team stand-up'), 60, 'the notification on listen')
            check(f'{name}: listen shows the provider\'s notification', shown, listen.err[-3:] + phone.err[-3:])
            asked = [l for l in listen.err if 'pairing with' in l]
            paired = phone.event('paired')
            if pairing is None:
                code = (phone.event('pairingCode') or {}).get('code')
                check(f'{name}: the provider printed a 6-digit code', code and re.fullmatch(r'\d{6}', code), phone.out[:6])
                check(f'{name}: the agent confirmed the same code (numeric comparison)',
                      code and any(f'passkey {code}' in l and 'accepted' in l for l in asked), asked)
                check(f'{name}: paired with MITM protection', paired and paired.get('method') == 'numericComparison', paired)
            else:
                check(f'{name}: no passkey (Just Works), accepted', any('no passkey' in l and 'accepted' in l for l in asked), asked)
                check(f'{name}: paired Just Works', paired and paired.get('method') == 'justWorks', paired)
        finally:
            phone.stop()
    finally:
        listen.stop()


def with_strict_agent():
    agent = Proc('strict-agent', ['/usr/bin/python3', os.path.join(HERE, 'strict_agent.py')])
    try:
        if not check('strict agent: registered and advertising', wait(lambda: any(l.startswith('ready') for l in agent.out), 20, 'agent'),
                     agent.err[-3:]):
            return
        phone = provide('strict-numeric', 'F4:00:00:00:00:03')
        try:
            paired = wait(lambda: phone.event('paired'), 60, 'paired')
            code = (phone.event('pairingCode') or {}).get('code')
            check('strict agent: pairs with the numeric default, with MITM protection',
                  paired and paired.get('method') == 'numericComparison', (paired, phone.err[-3:]))
            check('strict agent: asked RequestConfirmation with the code the provider printed',
                  code and any(l.startswith('RequestConfirmation') and l.endswith(f'{code} accepted') for l in agent.out), (code, agent.out))
        finally:
            phone.stop()
        phone = provide('strict-just-works', 'F4:00:00:00:00:04', 'just-works')
        try:
            failed = wait(lambda: phone.event('pairingFailed'), 60, 'pairingFailed')
            check('strict agent: refuses --pairing just-works (RequestAuthorization), the provider reports it',
                  failed and any(l.startswith('RequestAuthorization') for l in agent.out), (failed, agent.out))
            check('strict agent: no pairing succeeded with just-works', phone.event('paired') is None, phone.event('paired'))
        finally:
            phone.stop()
    finally:
        agent.stop()


def adapter_ready():
    r = subprocess.run(['dbus-send', '--system', '--print-reply', '--dest=org.bluez', '/',
                        'org.freedesktop.DBus.ObjectManager.GetManagedObjects'], capture_output=True, text=True)
    return 'org.bluez.Adapter1' in r.stdout


def main():
    link = Proc('link', [PYTHON, '-B', '-u', HOST, 'link', '--hci', 'vhci:/dev/vhci', '--hci', 'tcp-server:127.0.0.1:9101'],
                stdin=subprocess.PIPE)
    try:
        if not check('virtual link on /dev/vhci up', wait(lambda: 'ready 2' in link.out, 90, 'the link'), link.err[-3:]):
            return
        if not check('bluetoothd sees the adapter', wait(adapter_ready, 30, 'the adapter')):
            return
        with_listen('numeric', 'F4:00:00:00:00:01', None)
        with_listen('just-works', 'F4:00:00:00:00:02', 'just-works')
        with_strict_agent()
    finally:
        link.stop()


if __name__ == '__main__':
    main()
    failed = [c['name'] for c in checks if not c['ok']]
    log(f'{len(checks) - len(failed)}/{len(checks)} passed, {len(failed)} failed: {failed}')
    sys.exit(1 if failed or not checks else 0)
