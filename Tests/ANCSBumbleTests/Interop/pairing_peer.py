"""A Bumble peer with a pairing policy, to test how `ancs provide` and
`ancs listen --stack bumble` pair and what they do when pairing fails.

    pairing_peer.py --transport SPEC --role accessory|phone --refuse none|all|just-works [--hold S]

accessory: scans for a connectable advertiser soliciting ANCS, connects and
  pairs (DisplayYesNo, MITM, Secure Connections, bonding), as an accessory
  whose agent answers numeric comparison with yes.
phone: advertises the ANCS solicitation and waits for a central to connect
  and pair with it.
--refuse all: every pairing request or question is answered no;
--refuse just-works: a Just Works confirmation is answered no (as ancs4linux's
  agent refuses Just Works authorization), numeric comparison yes.

One line per fact on stdout: `connected`, `pairing-code NNNNNN`,
`paired numeric|just-works`, `pairing-failed 0xNN`, then `disconnected after
S s` (seconds since the pairing ended) or `still-connected after S s`.
"""
import argparse
import asyncio
import logging
import sys
import time

from bumble import core, hci
from bumble.core import AdvertisingData
from bumble.device import Device
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.transport import open_transport

ANCS_SERVICE = '7905F431-B5CE-4E99-A40F-4B1E122D00D0'


def say(*fields):
    print(*fields, flush=True)


class Delegate(PairingDelegate):
    def __init__(self, refuse):
        super().__init__(io_capability=PairingDelegate.IoCapability.DISPLAY_OUTPUT_AND_YES_NO_INPUT)
        self.refuse = refuse

    async def accept(self):
        return self.refuse != 'all'

    async def confirm(self, auto=False):  # Just Works
        return self.refuse == 'none'

    async def compare_numbers(self, number, digits):
        say('pairing-code', f'{number:0{digits}d}')
        return self.refuse != 'all'


async def main(args):
    transport = await open_transport(args.transport)
    address = 'F2:F2:F2:F2:F2:F2' if args.role == 'accessory' else 'F3:F3:F3:F3:F3:F3'
    device = Device.with_hci('pairing peer', hci.Address(address, hci.Address.RANDOM_DEVICE_ADDRESS),
                             transport.source, transport.sink)
    device.pairing_config_factory = lambda connection: PairingConfig(
        sc=True, mitm=True, bonding=True, identity_address_type=hci.AddressType.RANDOM_DEVICE,
        delegate=Delegate(args.refuse))
    await device.power_on()
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    lost = loop.create_future()

    def watch(connection):
        say('connected')
        connection.on('pairing', lambda keys: (
            say('paired', 'numeric' if keys.ltk is not None and keys.ltk.authenticated else 'just-works'),
            ended.done() or ended.set_result(time.monotonic())))
        connection.on('pairing_failure', lambda reason: (
            say('pairing-failed', f'0x{int(reason):02X}'), ended.done() or ended.set_result(time.monotonic())))
        connection.on('disconnection', lambda reason: lost.done() or lost.set_result(time.monotonic()))

    if args.role == 'accessory':
        found = loop.create_future()

        def on_advertisement(advertisement):
            solicited = advertisement.data.get(AdvertisingData.LIST_OF_128_BIT_SERVICE_SOLICITATION_UUIDS) or []
            if advertisement.is_connectable and not found.done() and any(str(u).upper() == ANCS_SERVICE for u in solicited):
                found.set_result(advertisement.address)
        device.on('advertisement', on_advertisement)
        await device.start_scanning(filter_duplicates=True)
        target = await asyncio.wait_for(found, 20)
        await device.stop_scanning()
        connection = await device.connect(target, timeout=20)
        watch(connection)
        pairing = loop.create_task(connection.pair())
        pairing.add_done_callback(lambda task: task.cancelled() or task.exception())
    else:
        connected = loop.create_future()
        device.on('connection', lambda connection: connected.done() or connected.set_result(connection))
        data = bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.LIST_OF_128_BIT_SERVICE_SOLICITATION_UUIDS, bytes(core.UUID(ANCS_SERVICE))),
        ]))
        await device.start_advertising(advertising_data=data, advertising_interval_min=100, advertising_interval_max=100)
        watch(await asyncio.wait_for(connected, 20))
    at = await asyncio.wait_for(ended, 30)
    try:
        gone = await asyncio.wait_for(asyncio.shield(lost), args.hold)
        say('disconnected after', f'{gone - at:.3f}', 's')
    except asyncio.TimeoutError:
        say('still-connected after', f'{time.monotonic() - at:.3f}', 's')
    await transport.close()


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--transport', required=True)
    parser.add_argument('--role', choices=('accessory', 'phone'), required=True)
    parser.add_argument('--refuse', choices=('none', 'all', 'just-works'), default='none')
    parser.add_argument('--hold', type=float, default=5.0, help='seconds to wait for the disconnection after pairing ends')
    parser.add_argument('--log-level', default='WARNING')
    arguments = parser.parse_args()
    logging.basicConfig(level=arguments.log_level.upper(), stream=sys.stderr)
    asyncio.run(main(arguments))
