"""consume: the Notification Consumer (an accessory's ANCS GATT client), and
with --media-uuids the accessory's AMS and CTS client too."""
import asyncio
import contextlib
import struct

from bumble import core
from bumble.att import ATT_Error
from bumble.device import Peer
from bumble.gatt import GATT_GENERIC_ATTRIBUTE_SERVICE, GATT_SERVICE_CHANGED_CHARACTERISTIC

from .common import (
    ANCS, MEDIA, MEDIA_NOTIFYING, MEDIA_READABLE, MEDIA_SERVICES, MEDIA_WRITABLE, NAMES, NOTIFYING, LinkFailure, emit,
    hex_or_dash, log, one_line, parse_hex, status)
from .session import Session

# The characteristics each operation takes (PROTOCOL.md's short names).
TARGETS = {
    'subscribe': NAMES + MEDIA_NOTIFYING,
    'unsubscribe': NAMES + MEDIA_NOTIFYING,
    'write': ('cp',),
    'write-to': MEDIA_WRITABLE,
    'read': MEDIA_READABLE,
}


class Client(Session):
    def __init__(self, args):
        super().__init__(args)
        self.peer = None
        self.characteristics = {}
        self.subscribed = set()
        self.link_lost = None
        self.operations = set()
        self.ancs_range = None  # (first, last) handle of ANCS while it is published
        self.media = {}         # AMS and CTS characteristics by short name, those the peer has
        self.media_ranges = {}  # 'ams'|'cts' -> (first, last) handle, for each the peer has
        self.rediscovery = asyncio.Lock()
        # One handler per characteristic: Bumble keeps a set of handlers per
        # handle and adds the given one even when the CCCD write fails, so a
        # subscription tried again (after a refusal) must not add a second.
        self.handlers = {name: self.notification_handler(name) for name in NOTIFYING + MEDIA_NOTIFYING}

    @staticmethod
    def notification_handler(name):
        def on_value(value):
            emit('notify', name, hex_or_dash(value))
        return on_value

    @staticmethod
    async def discover(peer, label, service_uuid, uuids, required, notifying):
        """A service and its characteristics by short name (`uuids`: name to
        UUID), with the CCCDs of the `notifying` ones discovered; None when
        the peer does not publish it or lacks one of `required`. Each step is
        bounded: a peer that stops answering must not hold the link up."""
        services = await asyncio.wait_for(peer.discover_service(service_uuid), 10)
        if not services:
            return None
        characteristics = await asyncio.wait_for(peer.discover_characteristics(service=services[0]), 10)
        found = {}
        for characteristic in characteristics:
            for name, uuid in uuids.items():
                if characteristic.uuid == uuid:
                    found[name] = characteristic
        missing = set(required) - set(found)
        if missing:
            log.warning('%s lacks characteristics: %s', label, sorted(missing))
            return None
        for name in notifying:
            await asyncio.wait_for(peer.discover_descriptors(found[name]), 10)
        return services[0], found

    async def discover_ancs(self, peer):
        """ANCS and its three characteristics (the CCCDs of the notifying
        two discovered), or None when the peer does not publish it whole."""
        return await self.discover(peer, 'ANCS', ANCS.service, ANCS.uuids, NAMES, NOTIFYING)

    async def discover_media(self, peer):
        """AMS (all three characteristics) and CTS (Current Time; Local Time
        Information when there), each when the peer has it: the
        characteristics by short name and each present service's handle
        range. A discovery that fails or times out counts as the service
        absent: a phone without a player or a clock still shares notifications."""
        found, ranges = {}, {}
        for name in MEDIA_SERVICES:
            service_uuid, uuids, required = MEDIA.services[name]
            notifying = [n for n in MEDIA_NOTIFYING if n in uuids]
            try:
                discovered = await self.discover(peer, name.upper(), service_uuid, uuids, required, notifying)
            except Exception as error:  # noqa: BLE001 - taken as absent, the link goes on
                log.warning('discovering %s failed, taken as absent: %s: %s', name.upper(), type(error).__name__, error)
                continue
            if discovered is not None:
                service, characteristics = discovered
                found.update(characteristics)
                ranges[name] = (service.handle, service.end_group_handle)
        return found, ranges

    def media_field(self):
        """link-up's and media-changed's field: the media services present."""
        return ','.join(name for name in MEDIA_SERVICES if name in self.media_ranges) or '-'

    async def watch_service_changed(self, peer):
        """Subscribes to Service Changed (GATT service 0x1801), as an
        accessory must to follow ANCS coming and going; a peer without it is
        used as it is."""
        try:
            services = await asyncio.wait_for(peer.discover_service(GATT_GENERIC_ATTRIBUTE_SERVICE), 10)
            characteristics = await asyncio.wait_for(
                peer.discover_characteristics(uuids=[GATT_SERVICE_CHANGED_CHARACTERISTIC], service=services[0]), 10) if services else []
            if not characteristics:
                log.info('the peer has no Service Changed characteristic')
                return

            def on_indication(value):
                asyncio.get_running_loop().create_task(self.on_service_changed(peer, bytes(value)))
            await asyncio.wait_for(peer.subscribe(characteristics[0], on_indication, prefer_notify=False), 10)
        except Exception as error:  # noqa: BLE001 - without it the link still serves ANCS
            log.warning('cannot subscribe to Service Changed: %s: %s', type(error).__name__, error)

    def forget_ancs(self, peer):
        for name in NOTIFYING:
            characteristic = self.characteristics.get(name)
            if characteristic is not None:
                peer.gatt_client.notification_subscribers.pop(characteristic.handle, None)
        self.characteristics, self.subscribed, self.ancs_range = {}, set(), None

    @staticmethod
    def forget_media(peer, characteristics):
        for name in MEDIA_NOTIFYING:
            characteristic = characteristics.get(name)
            if characteristic is not None:
                peer.gatt_client.notification_subscribers.pop(characteristic.handle, None)

    @staticmethod
    def media_layout(service, characteristics, ranges):
        """Where a media service is (None when absent): its range and its characteristics' handles."""
        if service not in ranges:
            return None
        names = MEDIA.services[service][1]
        return ranges[service], {name: c.handle for name, c in characteristics.items() if name in names}

    async def on_service_changed(self, peer, value):
        """Service Changed (first, last handle): ANCS first, then AMS and CTS,
        one indication at a time, each only while `peer` is the current one."""
        if len(value) < 4:
            return
        start, end = struct.unpack_from('<HH', value)
        async with self.rediscovery:
            if self.peer is not peer:
                return
            await self.ancs_changed(peer, start, end)
            if MEDIA.enabled and self.peer is peer:
                await self.media_changed(peer, start, end)

    async def ancs_changed(self, peer, start, end):
        """When the range touches ANCS, ANCS is gone (its CCCDs with it);
        then ANCS is looked for again."""
        if self.ancs_range is not None:
            first, last = self.ancs_range
            if end < first or last < start:
                return  # another service changed
            self.forget_ancs(peer)
            emit('service-changed', 'unpublished')
        try:
            discovered = await self.discover_ancs(peer)
        except Exception as error:  # noqa: BLE001 - the link may be going
            log.info('rediscovering ANCS after Service Changed failed: %s', error)
            return
        if discovered is not None and self.peer is peer:
            service, self.characteristics = discovered
            self.ancs_range = (service.handle, service.end_group_handle)
            emit('service-changed', 'published')

    async def media_changed(self, peer, start, end):
        """When the range touches AMS or CTS, or one of them is absent, both
        are looked for again (operations on them fail meanwhile). A service
        that came, went or moved loses its subscriptions and handlers, and
        `media-changed` tells what is there (one that moved: first without it,
        then with it); one found where it was keeps them: the Swift side sees
        no change, so its notifications must go on."""
        touched = any(first <= end and start <= last for first, last in self.media_ranges.values())
        if not touched and len(self.media_ranges) == len(MEDIA_SERVICES):
            return  # another service changed
        old, old_ranges = self.media, self.media_ranges
        self.media = {}
        found, ranges = await self.discover_media(peer)
        if self.peer is not peer:
            return
        media, changed, moved = {}, False, set()
        for service in MEDIA_SERVICES:
            names = MEDIA.services[service][1]
            before, after = self.media_layout(service, old, old_ranges), self.media_layout(service, found, ranges)
            if before == after:
                kept = old
            else:
                self.forget_media(peer, {name: c for name, c in old.items() if name in names})
                kept, changed = found, True
                if before is not None and after is not None:
                    moved.add(service)
            media.update({name: c for name, c in kept.items() if name in names})
        self.media = media
        if moved:
            # A service that moved lost its subscriptions: told as gone, then
            # back, so the Swift side sets it up again.
            self.media_ranges = {name: r for name, r in ranges.items() if name not in moved}
            emit('media-changed', self.media_field())
        self.media_ranges = ranges
        if changed:
            emit('media-changed', self.media_field())

    async def accept(self):
        """--peripheral, as an accessory does: advertise the ANCS
        solicitation, wait for the phone to connect, and ask it for security
        (it pairs, or re-encrypts with the bond)."""
        device = self.device
        connected = asyncio.get_running_loop().create_future()

        def on_connection(connection):
            if not connected.done():
                connected.set_result(connection)
        device.on('connection', on_connection)
        try:
            await self.advertise()
            status(f'advertising as "{self.args.name}", waiting for the phone to connect')
            connection = await connected
        finally:
            device.remove_listener('connection', on_connection)
        encrypted = asyncio.get_running_loop().create_future()
        connection.on('connection_encryption_change',
                      lambda *_: connection.is_encrypted and not encrypted.done() and encrypted.set_result(True))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(encrypted), 1)
        if not connection.is_encrypted:
            peer = str(connection.peer_address).replace('/P', '')
            status(f'asking {peer} for security (pairing or the stored bond)')
            device.request_pairing(connection)
            try:
                await asyncio.wait_for(encrypted, 20)
            except asyncio.TimeoutError:
                await self.drop(connection)
                raise LinkFailure(f'{peer} did not encrypt the link within 20 s') from None
        return connection

    async def establish(self):
        """Connects (or is connected to), encrypts (pairs or re-encrypts with
        the bond), exchanges the MTU and finds ANCS (and AMS and CTS)."""
        if self.args.peripheral:
            connection = await self.accept()
        else:
            connection = await self.connect(self.args.scan_timeout)
        lost = asyncio.get_running_loop().create_future()
        connection.on('disconnection', lambda reason: lost.done() or lost.set_result(reason))
        connection.on('connection_att_mtu_update',
                      lambda *_: self.peer is not None and emit('mtu', connection.att_mtu))
        if not self.args.peripheral:
            await self.secure(connection)
        bonded = await self.is_bonded(connection.peer_address)
        peer = Peer(connection)
        if self.args.mtu > 23:
            await asyncio.wait_for(peer.request_mtu(self.args.mtu), 10)
        status('discovering ANCS')
        discovered = await self.discover_ancs(peer)
        if discovered is None:
            await self.drop(connection)
            raise LinkFailure('the peer does not publish ANCS')
        service, found = discovered
        media, media_ranges = {}, {}
        if MEDIA.enabled:
            status('discovering AMS and CTS')
            media, media_ranges = await self.discover_media(peer)
        await self.watch_service_changed(peer)
        self.peer, self.characteristics, self.subscribed = peer, found, set()
        self.ancs_range = (service.handle, service.end_group_handle)
        self.media, self.media_ranges = media, media_ranges
        fields = [connection.att_mtu, str(connection.peer_address).replace('/P', ''),
                  1 if connection.is_encrypted else 0, 1 if bonded else 0]
        emit('link-up', *fields, *([self.media_field()] if MEDIA.enabled else []))
        return lost

    async def maintain(self):
        """Keeps one link: after a disconnection, connects again (once or forever per --reconnect)."""
        while True:
            try:
                lost = await self.establish()
            except Exception as error:  # noqa: BLE001
                reason = str(error) if isinstance(error, LinkFailure) else f'{type(error).__name__}: {one_line(error)}'
                if not self.args.reconnect:
                    emit('failed', one_line(reason))
                    return
                emit('error', f'connection failed: {one_line(reason)}; trying again')
                lost = None
            if lost is not None:
                await lost
                self.peer = None
                emit('link-down')
            if not self.args.reconnect:
                emit('finished')
                return
            await asyncio.sleep(1)

    async def operation(self, request, coroutine, peer, value=False):
        """Ends operation `request` with one `result` line; with `value`, the
        coroutine's result (a read's bytes) follows `ok`."""
        try:
            result = await asyncio.wait_for(coroutine, 30)
            emit('result', request, 'ok', *([hex_or_dash(result)] if value else []))
        except (ATT_Error, core.ProtocolError) as error:
            code = error.error_code if isinstance(error.error_code, int) else None
            # An answer that came with the link going away is no ATT answer.
            await asyncio.sleep(0.05)
            if code is None or self.peer is not peer or peer.connection.handle not in self.device.connections:
                emit('result', request, 'failed')
            else:
                emit('result', request, 'att', f'0x{code:02X}')
        except Exception as error:  # noqa: BLE001
            log.info('operation %d failed: %s', request, error)
            emit('result', request, 'failed')

    def start_operation(self, request, coroutine, peer, value=False):
        """Runs an operation without holding up the command lines after it
        (a `disconnect` must not wait behind a write the phone holds)."""
        task = asyncio.get_running_loop().create_task(self.operation(request, coroutine, peer, value))
        self.operations.add(task)
        task.add_done_callback(self.operations.discard)

    async def handle(self, fields):
        command = fields[0]
        if command not in TARGETS and command != 'disconnect':
            emit('error', f'unknown command {command!r}')
            return
        if command == 'disconnect':
            if self.peer is not None:
                with contextlib.suppress(Exception):
                    await self.peer.connection.disconnect()
            return
        request = int(fields[1])
        if self.peer is None:
            emit('result', request, 'failed')
            return
        peer = self.peer
        name = 'cp' if command == 'write' else fields[2]
        if name not in TARGETS[command]:
            raise KeyError(name)
        characteristic = (self.characteristics if name in NAMES else self.media).get(name)
        if characteristic is None:  # ANCS is unpublished, or the peer has no such media characteristic (now)
            emit('result', request, 'failed')
            return
        if command in ('write', 'write-to'):
            value = parse_hex(fields[2] if command == 'write' else fields[3])
            self.start_operation(request, characteristic.write_value(value, with_response=True), peer)
        elif command == 'read':
            self.start_operation(request, characteristic.read_value(), peer, value=True)
        elif command == 'subscribe':
            self.start_operation(request, peer.subscribe(characteristic, self.handlers[name]), peer)
        else:
            self.start_operation(request, peer.unsubscribe(characteristic), peer)

    async def run(self):
        await self.open()
        self.device.on('connection', self.watch_pairing)
        await self.device.power_on()
        emit('ready', str(self.device.random_address).replace('/P', ''), '-')
        link = asyncio.get_running_loop().create_task(self.maintain())
        commands = asyncio.get_running_loop().create_task(self.commands(self.handle))
        await asyncio.wait([link, commands], return_when=asyncio.FIRST_COMPLETED)
        if commands.done():  # stdin closed: the Swift process is done
            link.cancel()
        else:
            await commands
