#!/usr/bin/python3
"""`ancs listen --notify` with a real notification server: dunst on a private session bus under
Xvfb. The phone's PreExisting notification must appear in dunst with the ANCS actions as
buttons; choosing "Clear" in dunst's context menu must perform the negative action on the phone.
Runs inside the VM after check.py (the simulated iPhone is still connected).

usage: check_notify.py <ancs binary> <output dir> <this folder>
"""
import json, os, signal, socket, subprocess, sys, time

ANCS, OUT, HERE = sys.argv[1], sys.argv[2], sys.argv[3]
checks = []
T0 = time.monotonic()


def log(msg):
    print(f'[check {time.monotonic() - T0:7.3f}] {msg}', flush=True)


def check(name, ok, detail=''):
    checks.append(dict(name=name, ok=bool(ok), detail=str(detail)[:400]))
    log(f'{"PASS" if ok else "FAIL"}: {name} {str(detail)[:300]}')
    return ok


def phone(*cmd):
    s = socket.socket(socket.AF_UNIX); s.connect('/run/iphone.sock'); s.settimeout(30)
    s.sendall((' '.join(map(str, cmd)) + '\n').encode())
    r = json.loads(s.makefile('r').readline()); s.close()
    return r['r']


def wait(pred, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = pred()
        if r:
            return r
        time.sleep(0.1)
    return None


procs = []
rc_path = os.path.join(OUT, 'dunstrc')
with open(rc_path, 'w') as f:
    f.write(f'[global]\n    dmenu = {HERE}/pick-action.sh\n')
# A session bus that activates nothing: the only notification server is the dunst started here.
bus_conf = os.path.join(OUT, 'session-bus.conf')
with open(bus_conf, 'w') as f:
    f.write('<busconfig><type>session</type><listen>unix:tmpdir=/tmp</listen><auth>EXTERNAL</auth>'
            '<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>'
            '<allow own="*"/></policy></busconfig>\n')
env = dict(os.environ, DISPLAY=':77')
procs.append(subprocess.Popen(['Xvfb', ':77', '-screen', '0', '800x600x16', '-nolisten', 'tcp'],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(OUT, 'xvfb.log'), 'w')))
check('Xvfb is up', wait(lambda: os.path.exists('/tmp/.X11-unix/X77'), 60), 'display :77')
bus = subprocess.Popen(['dbus-daemon', '--config-file', bus_conf, '--nofork', '--print-address=1'], stdout=subprocess.PIPE, text=True)
procs.append(bus)
env['DBUS_SESSION_BUS_ADDRESS'] = bus.stdout.readline().strip()
procs.append(subprocess.Popen(['dunst', '-config', rc_path], env=env, stdout=open(os.path.join(OUT, 'dunst.log'), 'w'), stderr=subprocess.STDOUT))
has_owner = ['dbus-send', '--session', '--print-reply=literal', '--dest=org.freedesktop.DBus', '/org/freedesktop/DBus',
             'org.freedesktop.DBus.NameHasOwner', 'string:org.freedesktop.Notifications']
check('dunst owns org.freedesktop.Notifications',
      wait(lambda: 'true' in subprocess.run(has_owner, env=env, capture_output=True, text=True, timeout=30).stdout, 60), '')

listen = subprocess.Popen([ANCS, 'listen', '--notify', '--accept-pairing'], env=env, stdin=subprocess.PIPE,
                          stdout=open(os.path.join(OUT, 'listen-notify.txt'), 'w'), stderr=subprocess.STDOUT)
try:
    shown = wait(lambda: json.loads(subprocess.run(['dunstctl', 'count', 'displayed'], env=env, capture_output=True, text=True).stdout or '0'), 90)
    check('the notification is on the desktop (dunst shows it)', shown, shown)
    before = len(phone('actions'))
    subprocess.run(['dunstctl', 'context'], env=env, timeout=10)
    acted = wait(lambda: phone('actions')[before:], 15)
    check('choosing “Clear” in dunst performed the negative action on the phone', acted and acted[0][1] == 1, acted)
finally:
    listen.send_signal(signal.SIGINT)
    try:
        rc = listen.wait(10)
    except subprocess.TimeoutExpired:
        listen.kill(); rc = 'hung'
    check('SIGINT: listen --notify exits 0', rc == 0, f'exit {rc}')
    for p in reversed(procs):
        p.kill()
print(open(os.path.join(OUT, 'listen-notify.txt')).read())
with open(os.path.join(OUT, 'checks-notify.json'), 'w') as f:
    json.dump(checks, f, indent=1)
print(f'{sum(c["ok"] for c in checks)} passed, {sum(not c["ok"] for c in checks)} failed', flush=True)
sys.exit(0 if all(c['ok'] for c in checks) else 1)
