"""The Bumble host of swift-ancs: a Bluetooth LE host process driven over a
line protocol on stdin/stdout (see PROTOCOL.md beside this file).

    ancs_bumble_host.py serve   --transport SPEC [options]   # the NP: an iPhone's ANCS (AMS, CTS) GATT server
    ancs_bumble_host.py consume --transport SPEC [options]   # the NC: an accessory's ANCS (AMS, CTS) GATT client
    ancs_bumble_host.py link    --hci SPEC --hci SPEC ...    # virtual controllers on one virtual link

It translates and never decides: every ANCS decision (what to notify, what to
answer to a Control Point write) is made by the Swift process. Requires
Bumble 0.0.236 (PyPI `bumble`).
"""
import argparse
import asyncio
import logging
import os
import sys

from ancs_host.common import ANCS, MEDIA, PROTOCOL, emit
from ancs_host.consume import Client
from ancs_host.link import run_link
from ancs_host.serve import Server


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    roles = parser.add_subparsers(dest='role', required=True)
    for role in ('serve', 'consume'):
        sub = roles.add_parser(role)
        sub.add_argument('--transport', required=True, help='Bumble transport: usb:0, serial:/dev/ttyACM0,115200, tcp-client:127.0.0.1:9001, ...')
        sub.add_argument('--ancs-uuids', required=True,
                         help='the ANCS service, Notification Source, Control Point and Data Source UUIDs, comma-separated')
        sub.add_argument('--media-uuids',
                         help=f'also {"publish" if role == "serve" else "discover"} AMS and CTS: the AMS service, Remote '
                              'Command, Entity Update, Entity Attribute, the CTS service, Current Time and Local Time '
                              'Information UUIDs, comma-separated')
        sub.add_argument('--address', default='F0:F0:F0:F0:F0:F0' if role == 'serve' else 'F1:F1:F1:F1:F1:F1',
                         help='random static address of this device')
        sub.add_argument('--name', default='swift-ancs NP' if role == 'serve' else 'swift-ancs NC')
        sub.add_argument('--keys', help='bonding keys (JSON file, created when missing)')
        sub.add_argument('--snoop', help='write a btsnoop capture of the HCI traffic to this file')
        sub.add_argument('--mtu', type=int, default=517, help='the largest ATT MTU accepted (serve) or asked for (consume)')
        sub.add_argument('--log-level', default='WARNING')
        sub.add_argument('--peer', help='connect to this address rather than the first ANCS solicitor')
        sub.add_argument('--scan-timeout', type=float, default=20.0)
        sub.add_argument('--pairing', choices=('numeric', 'just-works'), default='numeric',
                         help='numeric: DisplayYesNo with MITM (numeric comparison, as an iPhone); just-works: NoInputNoOutput')
        sub.add_argument('--ask-pairing', action='store_true',
                         help='numeric comparison: wait for a `confirm <conn> yes|no` line instead of confirming')
        if role == 'serve':
            sub.add_argument('--central', action='store_true',
                             help='connect to the accessory advertising the ANCS solicitation, as an iPhone does, instead of advertising')
            sub.add_argument('--allow-notifications-after', type=float, default=0.0, metavar='SECONDS',
                             help='refuse writes enabling the Notification Source or Data Source CCCD with ATT 0x08 '
                                  '(Insufficient Authorization) until this long after the first encrypted link with a peer '
                                  '(0: allowed at once)')
        else:
            sub.add_argument('--reconnect', action='store_true', help='connect again after a disconnection')
            sub.add_argument('--peripheral', action='store_true',
                             help='advertise the ANCS solicitation and wait for the phone, as an accessory does, instead of scanning')
    link = roles.add_parser('link')
    link.add_argument('--hci', action='append', required=True, help='HCI transport of one controller (at least two)')
    link.add_argument('--log-level', default='WARNING')
    args = parser.parse_args()
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format='%(asctime)s %(name)s %(levelname)s %(message)s')
    emit(PROTOCOL, args.role)
    if args.role == 'link':
        asyncio.run(run_link(args))
        return
    uuids = [uuid.strip().upper() for uuid in args.ancs_uuids.split(',')]
    if len(uuids) != 4:
        parser.error('--ancs-uuids needs four UUIDs: service, Notification Source, Control Point, Data Source')
    ANCS.configure(uuids)
    if args.media_uuids:
        media = [uuid.strip() for uuid in args.media_uuids.split(',')]
        if len(media) != 7:
            parser.error('--media-uuids needs seven UUIDs: AMS, Remote Command, Entity Update, Entity Attribute, '
                         'CTS, Current Time, Local Time Information')
        try:
            MEDIA.configure(media)
        except Exception as error:  # noqa: BLE001 - Bumble says which UUID it cannot read
            parser.error(f'--media-uuids: {error}')
    session = Server(args) if args.role == 'serve' else Client(args)
    asyncio.run(session.main())
    os._exit(0)


if __name__ == '__main__':
    main()
