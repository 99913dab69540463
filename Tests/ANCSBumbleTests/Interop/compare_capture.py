"""Checks that `ancs decode --btsnoop --json` of a capture says what each
side logged during the run. One `PASS`/`FAIL` line per check; exit status 1
on any failure.

    python compare_capture.py TRANSCRIPT.jsonl [--provide P.jsonl] [--client C.json] [--listen L.jsonl]
"""
import argparse
import json
import sys


def lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def titles_in(attributes):
    return [a.get('value') for a in attributes if a.get('id') == 'title']


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('transcript')
    parser.add_argument('--provide', help='ancs provide --json output')
    parser.add_argument('--client', help="the Bumble AncsClient interop record")
    parser.add_argument('--listen', help='ancs listen --json output')
    args = parser.parse_args()
    entries = lines(args.transcript)
    failures = 0

    def check(name, ok, detail=''):
        nonlocal failures
        print(f'{"PASS" if ok else "FAIL"} {args.transcript.split("/")[-1]}: {name} {detail}'.rstrip())
        failures += 0 if ok else 1

    ns = [e for e in entries if e['event'] == 'notificationSource']
    ds = [e for e in entries if e['event'] == 'dataSource']
    captured_titles = [t for e in ds for t in titles_in(e['response'].get('attributes', []))]
    check('ANCS handles found', any(e['event'] == 'ancsHandles' for e in entries))
    check('no undecodable Data Source', not any(e['event'] == 'dataSourceError' for e in entries))

    if args.provide:
        provided = lines(args.provide)
        sent = [p for p in provided if p['event'] in ('notificationAttributesSent', 'appAttributesSent')]
        check('Data Source responses = attributes the provider sent', len(ds) == len(sent), f'{len(ds)} vs {len(sent)}')
        rejected = len([p for p in provided if p['event'] == 'commandRejected'])
        ancs_errors = len([e for e in entries if e['event'] == 'controlPointResult' and e.get('error', 0) >= 0xA0])
        check('ANCS errors on air = commands the provider rejected', ancs_errors == rejected, f'{ancs_errors} vs {rejected}')
        actions = len([p for p in provided if p['event'] == 'actionPerformed'])
        performed = len([e for e in entries if e['event'] == 'controlPoint'
                         and e.get('command', {}).get('kind') == 'performNotificationAction'])
        check('actions on air ≥ actions performed', performed >= actions, f'{performed} vs {actions}')

    if args.client:
        with open(args.client) as f:
            client = json.load(f)
        check('Notification Source events = those the client saw', len(ns) == len(client['events']),
              f'{len(ns)} vs {len(client["events"])}')
        uids = [e['notificationSource']['uid'] for e in ns]
        check('same NotificationUIDs in order', uids == [e['uid'] for e in client['events']])
        seen = [a.get('TITLE') for a in client['attributes'].values()]
        check('every title the client got is on air', all(t in captured_titles for t in seen), f'{seen}')

    if args.listen:
        listened = lines(args.listen)
        added = [e for e in listened if e['event'] in ('added', 'modified', 'removed')]
        check('Notification Source events = those listen printed', len(ns) == len(added), f'{len(ns)} vs {len(added)}')
        logged_titles = [t for e in listened if e['event'] == 'attributes' for t in titles_in(e['attributes'])]
        check('titles on air = titles listen printed', captured_titles[:len(logged_titles)] == logged_titles,
              f'{len(logged_titles)} titles')

    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
