#!/usr/bin/env python3
"""btmon's capture of the VM run (guest.sh: `btmon -w hci.btsnoop`, BlueZ's monitor format,
btsnoop datalink 2001) through `ancs decode --btsnoop`: it must decode, and name the
notifications `ancs listen --json` saw (listen.jsonl): their Notification Source events and
the titles in their attributes.
usage: check_btmon.py <ancs binary> <output dir of the VM run>"""
import json
import os
import subprocess
import sys

ANCS, OUT = sys.argv[1], sys.argv[2]
failed = 0


def check(name, ok, detail=''):
    global failed
    failed += 0 if ok else 1
    print(f'[check btmon] {"PASS" if ok else "FAIL"} {name}{": " + detail if detail and not ok else ""}', flush=True)


capture = os.path.join(OUT, 'hci.btsnoop')
check('btmon wrote a capture', os.path.getsize(capture) > 16 if os.path.exists(capture) else False, capture)
with open(capture, 'rb') as f:
    header = f.read(16)
check('the capture is in the monitor format (datalink 2001)', header[:8] == b'btsnoop\0' and header[12:16] == (2001).to_bytes(4, 'big'),
      header.hex())

run = subprocess.run([ANCS, 'decode', '--btsnoop', capture, '--json'], capture_output=True, text=True, timeout=120)
check('ancs decode --btsnoop reads it', run.returncode == 0 and not run.stderr, f'exit {run.returncode}: {run.stderr.strip()}')
entries = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
with open(os.path.join(OUT, 'btmon-transcript.jsonl'), 'w') as f:
    f.write(run.stdout)


def values(node, key):
    """Every value of `key` in a JSON tree."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key:
                yield v
            yield from values(v, key)
    elif isinstance(node, list):
        for item in node:
            yield from values(item, key)


listen = []
with open(os.path.join(OUT, 'listen.jsonl')) as f:
    for line in f:
        try:
            listen.append(json.loads(line))
        except ValueError:
            pass

seen_added = {e['uid'] for e in listen if e.get('event') == 'added'}
seen_titles = {a['value'] for e in listen if e.get('event') == 'attributes'
               for a in e.get('attributes', []) if a.get('id') == 'title' and a.get('value')}
captured_added = {e['notificationSource']['uid'] for e in entries
                  if e.get('event') == 'notificationSource' and e['notificationSource'].get('event') == 'added'}
captured_titles = {a.get('value') for e in entries if e.get('event') == 'dataSource'
                   for a in values(e, 'attributes') for a in a if isinstance(a, dict) and a.get('id') == 'title'}

# bluetoothd finds ANCS with its own discovery (or its cache): the handles come from the traffic.
check('the capture has the links, encrypted', any(e.get('event') == 'connected' for e in entries)
      and any(e.get('event') == 'encryption' and e.get('enabled') for e in entries))
check('Control Point commands and their results', any(e.get('event') == 'controlPoint' for e in entries)
      and any(e.get('event') == 'controlPointResult' for e in entries))
check(f'every notification listen saw added ({len(seen_added)}) is in the capture', seen_added and seen_added <= captured_added,
      f'missing {sorted(seen_added - captured_added)}')
check(f'every title listen showed ({len(seen_titles)}) is in the capture\'s Data Source responses',
      seen_titles and seen_titles <= captured_titles, f'missing {sorted(seen_titles - captured_titles)}')
print(f'[check btmon] {len(entries)} transcript entries; {"all passed" if not failed else f"{failed} failed"}', flush=True)
sys.exit(1 if failed else 0)
