"""What the interop clients (bumble_ancs_client.py, bumble_ams_client.py)
share: steps that print `PASS <step> <detail>` or `FAIL <step> <reason>`
and are tallied, checks, and an accessory on Bumble that finds the phone
(a connectable advertiser soliciting ANCS), connects, pairs (Just Works,
LE Secure Connections, bonding) and exchanges the MTU."""
import asyncio
import gc

from bumble import hci
from bumble.core import AdvertisingData
from bumble.device import Device
from bumble.keys import JsonKeyStore
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.transport import open_transport

ANCS = '7905F431-B5CE-4E99-A40F-4B1E122D00D0'
# (step, passed), in order.
results = []
# Exceptions of tasks nobody awaits (a profile's notification handlers), told
# with the step that fails meanwhile; filled by `watch_dropped_exceptions`.
dropped = []


class Expect(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Expect(message)


async def step(name, coroutine, timeout):
    """Runs one step within `timeout` seconds; its detail, or None when it failed."""
    seen = len(dropped)
    try:
        detail = await asyncio.wait_for(coroutine, timeout)
    except (Exception, asyncio.CancelledError) as error:  # noqa: BLE001
        reason = f'timed out after {timeout} s' if isinstance(error, asyncio.TimeoutError) else f'{type(error).__name__}: {error}'
        gc.collect()  # a failed task's exception is reported when the task is collected
        if len(dropped) > seen:
            reason += f' (a task failed meanwhile: {"; ".join(dropped[seen:])})'
        print(f'FAIL {name} {reason}', flush=True)
        results.append((name, False))
        return None
    print(f'PASS {name} {detail if detail is not None else ""}'.rstrip(), flush=True)
    results.append((name, True))
    return detail


def tally():
    """Prints how many steps passed; the exit status."""
    failed = [name for name, ok in results if not ok]
    print(f'{len(results) - len(failed)}/{len(results)} steps passed', flush=True)
    return 1 if failed else 0


def watch_dropped_exceptions():
    """Keeps the exceptions of tasks nobody awaits, on one line each (Bumble's
    ATT errors print their PDU over several), for `step` to tell."""
    def described(context):
        error = context.get('exception')
        if error is None:
            return context.get('message', '?')
        code = getattr(error, 'error_code', None)
        if isinstance(code, int):
            return f'{type(error).__name__} 0x{code:02X}'
        return f'{type(error).__name__}: {" ".join(str(error).split())}'
    asyncio.get_running_loop().set_exception_handler(lambda _loop, context: dropped.append(described(context)))


async def accessory(transport, name, address, keys=None):
    """A powered-on Bumble device that pairs as a display-less accessory does."""
    opened = await open_transport(transport)
    device = Device.with_hci(name, hci.Address(address), opened.source, opened.sink)
    if keys:
        device.keystore = JsonKeyStore(None, keys)
    config = PairingConfig(sc=True, mitm=False, bonding=True, identity_address_type=hci.AddressType.RANDOM_DEVICE,
                           delegate=PairingDelegate(PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT))
    device.pairing_config_factory = lambda connection: config
    await device.power_on()
    return device


async def find_phone(device):
    """The address of the first connectable advertiser soliciting ANCS."""
    found = asyncio.get_running_loop().create_future()

    def on_advertisement(advertisement):
        solicited = advertisement.data.get(AdvertisingData.LIST_OF_128_BIT_SERVICE_SOLICITATION_UUIDS) or []
        if advertisement.is_connectable and any(str(u).upper() == ANCS for u in solicited) and not found.done():
            found.set_result(advertisement.address)
    device.on('advertisement', on_advertisement)
    await device.start_scanning(filter_duplicates=True)
    address = await found
    device.remove_listener('advertisement', on_advertisement)
    await device.stop_scanning()
    return address


async def refused_unencrypted(operation, what):
    """`operation` (a read or write before pairing) must fail with 0x0F
    Insufficient Encryption; the step's detail says what was refused."""
    try:
        await operation
    except Exception as error:  # noqa: BLE001
        code = getattr(error, 'error_code', None)
        check(code == 0x0F, f'expected Insufficient Encryption, got {error}')
        return f'{what} refused with 0x0F Insufficient Encryption'
    raise Expect(f'an unencrypted {what} succeeded')


async def pair(connection):
    await connection.pair()
    check(connection.is_encrypted, 'not encrypted after pairing')
    return 'LE Secure Connections, bonded' if connection.sc else 'legacy pairing'


async def exchange_mtu(peer, mtu):
    value = await peer.request_mtu(mtu)
    check(value == mtu, f'MTU {value}')
    return f'MTU {value}'
