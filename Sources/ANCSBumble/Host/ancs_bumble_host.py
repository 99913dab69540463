"""The Bumble host of swift-ancs: a Bluetooth LE host process driven over a
line protocol on stdin/stdout (see PROTOCOL.md beside this file).

    ancs_bumble_host.py serve   --transport SPEC [options]   # the NP: an iPhone's ANCS GATT server
    ancs_bumble_host.py consume --transport SPEC [options]   # the NC: an accessory's ANCS GATT client
    ancs_bumble_host.py link    --hci SPEC --hci SPEC ...    # virtual controllers on one virtual link

It translates and never decides: every ANCS decision (what to notify, what to
answer to a Control Point write) is made by the Swift process. Requires
Bumble 0.0.236 (PyPI `bumble`).
"""
import argparse
import asyncio
import contextlib
import logging
import os
import struct
import sys

from bumble import core, hci, ll
from bumble.att import ATT_INSUFFICIENT_AUTHORIZATION_ERROR, ATT_Error, Attribute, AttributeValueV2, is_enhanced_bearer
from bumble.controller import Controller
from bumble.core import AdvertisingData
from bumble.device import Device, Peer
from bumble.gatt import (
    GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR,
    GATT_GENERIC_ATTRIBUTE_SERVICE,
    GATT_SERVICE_CHANGED_CHARACTERISTIC,
    Characteristic,
    CharacteristicValue,
    Descriptor,
    Service,
)
from bumble.keys import JsonKeyStore
from bumble.link import LocalLink
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.snoop import BtSnooper
from bumble.transport import open_transport
from bumble.transport.common import SnoopingTransport

PROTOCOL = 'ancs-bumble 1'
# The ANCS UUIDs come from the Swift side (--ancs-uuids), which has the one
# copy of them (ANCSUUID in the core); set in main(). The characteristics go
# by their short names in the line protocol (PROTOCOL.md): UUIDS maps each
# to its UUID; NOTIFYING are the two that notify, in the order ANCS lists them.
ANCS_SERVICE = None
UUIDS = {}
NAMES = ('ns', 'cp', 'ds')
NOTIFYING = ('ns', 'ds')
# A Control Point write not answered by the Swift process within this time is
# answered with 0x0E (Unlikely Error), before the client's 30 s ATT timeout.
WRITE_ANSWER_TIMEOUT = 25.0
ATT_UNLIKELY_ERROR = 0x0E
# A Service Changed indication not confirmed within this time counts as not delivered.
INDICATION_TIMEOUT = 10.0

log = logging.getLogger('ancs-bumble-host')


def emit(*fields):
    """One event line on stdout."""
    sys.stdout.write(' '.join(str(f) for f in fields) + '\n')
    sys.stdout.flush()


def fail(message):
    emit('fatal', message.replace('\n', ' '))
    sys.exit(2)


def one_line(text):
    return ' '.join(str(text).split())


def status(text):
    """What the host is doing (scanning, connecting, pairing), for the user."""
    emit('status', one_line(text))


class FlushingSnooper(BtSnooper):
    """A btsnoop file written packet by packet, so it can be decoded while
    the host runs; packets after it is closed (the host shutting down while
    it scans) are dropped rather than written to a closed file."""

    def __init__(self, path):
        self.file = open(path, 'wb')  # noqa: SIM115 - closed by close()
        super().__init__(self.file)
        self.file.flush()

    def snoop(self, hci_packet, direction):
        if self.file.closed:
            return
        super().snoop(hci_packet, direction)
        self.file.flush()

    def close(self):
        self.file.close()


class LinkFailure(Exception):
    pass


# A numeric comparison the Swift process is asked to confirm and does not
# answer within this time is answered no.
CONFIRM_TIMEOUT = 30.0


class ComparingDelegate(PairingDelegate):
    """Numeric comparison, as an iPhone pairs: DisplayYesNo with MITM
    protection. The 6-digit code is reported (`pairing-code`) and confirmed,
    or with --ask-pairing confirmed by the `confirm` line that answers it."""

    def __init__(self, connection, session):
        super().__init__(io_capability=PairingDelegate.IoCapability.DISPLAY_OUTPUT_AND_YES_NO_INPUT)
        self.connection = connection
        self.session = session

    async def compare_numbers(self, number, digits):
        code = f'{number:0{digits}d}'
        if not self.session.args.ask_pairing:
            emit('pairing-code', self.connection.handle, code)
            return True
        answer = asyncio.get_running_loop().create_future()
        self.session.questions[self.connection.handle] = answer
        emit('pairing-code', self.connection.handle, code, 'ask')
        try:
            return await asyncio.wait_for(answer, CONFIRM_TIMEOUT)
        except asyncio.TimeoutError:
            log.warning('numeric comparison on %d not answered in %.0f s: no', self.connection.handle, CONFIRM_TIMEOUT)
            return False
        finally:
            self.session.questions.pop(self.connection.handle, None)


class Session:
    """What both roles share: the transport, the device, pairing and the command reader."""

    def __init__(self, args):
        self.args = args
        self.device = None
        self.transport = None
        self.questions = {}  # connection handle -> Future of the `confirm` answer

    async def open(self):
        args = self.args
        try:
            transport = await open_transport(args.transport)
        except Exception as error:  # noqa: BLE001 - any failure is reported as a line
            fail(f'cannot open transport {args.transport}: {type(error).__name__}: {error}')
        if args.snoop:
            try:
                snooper = FlushingSnooper(args.snoop)
            except OSError as error:
                fail(f'cannot write the capture {args.snoop}: {error.strerror or error}')
            transport = SnoopingTransport.create_with(transport, contextlib.closing(snooper))
        self.transport = transport
        address = hci.Address(args.address, hci.Address.RANDOM_DEVICE_ADDRESS)
        device = Device.with_hci(args.name, address, transport.source, transport.sink)
        if args.keys:
            device.keystore = JsonKeyStore(None, args.keys)
        numeric = args.pairing == 'numeric'

        def pairing_config(connection):
            # numeric: as an iPhone, DisplayYesNo and MITM (numeric comparison
            # with a DisplayYesNo peer); just-works: NoInputNoOutput, no MITM.
            delegate = (ComparingDelegate(connection, self) if numeric
                        else PairingDelegate(PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT))
            return PairingConfig(sc=True, mitm=numeric, bonding=True,
                                 identity_address_type=hci.AddressType.RANDOM_DEVICE, delegate=delegate)
        device.pairing_config_factory = pairing_config
        device.le_simultaneous_enabled = False
        self.device = device

    def watch_pairing(self, connection):
        """Reports how a pairing on `connection` ends; a failed one ends the
        link at once (as a phone does), rather than leaving it up unencrypted."""
        def on_pairing(keys):
            mitm = keys.ltk is not None and keys.ltk.authenticated
            emit('paired', connection.handle, 'numeric' if mitm else 'just-works')

        def on_failure(reason):
            name = getattr(reason, 'name', None) or f'0x{int(reason):02X}'
            emit('pairing-failed', connection.handle, f'0x{int(reason):02X}', name)
            asyncio.get_running_loop().create_task(self.drop(connection))
        connection.on('pairing', on_pairing)
        connection.on('pairing_failure', on_failure)

    async def drop(self, connection):
        if connection.handle not in self.device.connections:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(connection.disconnect(), 2)

    async def disconnect_all(self):
        """Ends every link (the host is stopping)."""
        if self.device is None:
            return
        for connection in list(self.device.connections.values()):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(connection.disconnect(), 2)

    async def is_bonded(self, address):
        keystore = self.device.keystore
        if keystore is None:
            return False
        with contextlib.suppress(Exception):
            return await keystore.get(str(address)) is not None
        return False

    def advertising(self):
        """Connectable advertising data with the ANCS solicitation (virtual
        controllers carry no scan response, so it is in the advertising data)."""
        name = self.args.name.encode()
        data = bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.LIST_OF_128_BIT_SERVICE_SOLICITATION_UUIDS, bytes(core.UUID(ANCS_SERVICE))),
            (AdvertisingData.SHORTENED_LOCAL_NAME, name[:8]),
        ]))
        return data, bytes(AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, name[:29])]))

    async def advertise(self):
        if self.device.is_advertising:
            return
        data, scan_response = self.advertising()
        with contextlib.suppress(Exception):
            await self.device.start_advertising(
                advertising_data=data, scan_response_data=scan_response,
                advertising_interval_min=100, advertising_interval_max=100)

    async def find(self, timeout):
        """The first connectable advertiser that solicits ANCS (or has the address --peer)."""
        device = self.device
        found = asyncio.get_running_loop().create_future()
        wanted = self.args.peer.upper() if self.args.peer else None

        def on_advertisement(advertisement):
            data = advertisement.data
            solicited = data.get(AdvertisingData.LIST_OF_128_BIT_SERVICE_SOLICITATION_UUIDS) or []
            ancs = any(str(uuid).upper() == ANCS_SERVICE for uuid in solicited)
            address = str(advertisement.address).replace('/P', '').upper()
            if advertisement.is_connectable and not found.done() and (address == wanted if wanted else ancs):
                found.set_result(advertisement.address)

        device.on('advertisement', on_advertisement)
        status(f'scanning for {wanted}' if wanted else 'scanning for an advertiser soliciting ANCS')
        await device.start_scanning(filter_duplicates=True)
        try:
            return await asyncio.wait_for(found, timeout)
        except asyncio.TimeoutError:
            what = f'no advertiser with the address {wanted}' if wanted else 'no advertiser soliciting ANCS'
            raise LinkFailure(f'{what} found within {timeout:g} s') from None
        finally:
            device.remove_listener('advertisement', on_advertisement)
            with contextlib.suppress(Exception):
                await device.stop_scanning()

    async def connect(self, timeout):
        """Scans (`find`) and connects."""
        address = await self.find(timeout)
        peer = str(address).replace('/P', '')
        status(f'connecting to {peer}')
        try:
            return await self.device.connect(address, timeout=timeout)
        except Exception as error:
            raise LinkFailure(f'cannot connect to {peer}: {type(error).__name__}: {one_line(error)}') from None

    async def secure(self, connection):
        """As central: re-encrypt with a stored bond, or pair."""
        peer = str(connection.peer_address).replace('/P', '')
        try:
            if await self.is_bonded(connection.peer_address):
                status(f'encrypting the link to {peer} with the stored bond')
                await asyncio.wait_for(connection.encrypt(), 20)
            else:
                status(f'pairing with {peer} ({self.args.pairing})')
                await asyncio.wait_for(connection.pair(), 20)
        except Exception as error:
            await self.drop(connection)
            if isinstance(error, asyncio.TimeoutError):
                raise LinkFailure(f'pairing with {peer}: no result within 20 s') from None
            if isinstance(error, core.ProtocolError) and isinstance(error.error_code, int):
                raise LinkFailure(f'pairing with {peer} failed: {error.error_name} (SMP 0x{error.error_code:02X})') from None
            raise LinkFailure(f'pairing with {peer} failed: {type(error).__name__}: {one_line(error)}') from None

    async def commands(self, handle):
        """Reads command lines from stdin until EOF, handing each to `handle` in order."""
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():
            fields = line.decode('utf-8', 'replace').split()
            if not fields:
                continue
            try:
                if fields[0] == 'confirm':
                    answer = self.questions.get(int(fields[1]))
                    if answer is not None and not answer.done():
                        answer.set_result(fields[2] == 'yes')
                    continue
                await handle(fields)
            except (ValueError, IndexError, KeyError) as error:
                emit('error', f'bad command line {" ".join(fields)!r}: {error}')

    async def main(self):
        try:
            await self.run()
            await self.disconnect_all()
        finally:
            if self.transport is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.transport.close(), 2)


def parse_hex(text):
    return bytes.fromhex(text) if text != '-' else b''


def hex_or_dash(data):
    return bytes(data).hex() if data else '-'


# -----------------------------------------------------------------------------
# serve: the Notification Provider (GATT server)
# -----------------------------------------------------------------------------
class Server(Session):
    def __init__(self, args):
        super().__init__(args)
        self.connections = {}       # handle -> Connection, once announced
        self.pending_writes = {}    # id -> Future
        self.answered_writes = {}   # id -> Future, done once the ATT response has been sent
        self.write_connections = {}  # id -> connection handle of the write
        self.next_write = 1
        self.service = None          # ANCS while it is published (unpublish/publish)
        self.service_changed = None  # the Service Changed characteristic (GATT service 0x1801)
        self.service_changed_peers = set()  # peers that asked for Service Changed indications
        self.allowed_at = {}         # peer -> loop time from which its subscriptions are allowed

    def find_service_changed(self):
        """The Service Changed characteristic of the GATT service Bumble's
        Device publishes (GenericAttributeProfileService); one is added if
        the device has none. Called before ANCS is added: ANCS stays the last
        service, so it can be removed and added again under the same handles."""
        gatt_service = getattr(self.device, 'gatt_service', None)
        characteristic = getattr(gatt_service, 'service_changed_characteristic', None)
        if characteristic is None:
            characteristic = Characteristic(GATT_SERVICE_CHANGED_CHARACTERISTIC, Characteristic.Properties.INDICATE,
                                            Characteristic.Permissions(0), b'')
            self.device.add_service(Service(GATT_GENERIC_ATTRIBUTE_SERVICE, [characteristic]))

        def on_subscription(connection, _notify, indicate):
            # Kept for the peer, as for a bonded client it must be (Core Vol 3
            # Part G 7.1): a bonded consumer that does not write it again
            # after re-encrypting still hears of changes (restored in announce).
            peer = self.peer_key(connection)
            if indicate:
                self.service_changed_peers.add(peer)
            else:
                self.service_changed_peers.discard(peer)
        characteristic.on('subscription', on_subscription)
        self.service_changed = characteristic

    @staticmethod
    def peer_key(connection):
        return str(connection.peer_address).replace('/P', '')

    def start_authorization(self, connection):
        """--allow-notifications-after: the phone asks its user once per
        accessory; the answer comes that long after the first encrypted link
        with it, and holds for its later links."""
        delay = self.args.allow_notifications_after
        peer = self.peer_key(connection)
        if delay <= 0 or peer in self.allowed_at:
            return
        loop = asyncio.get_running_loop()
        self.allowed_at[peer] = loop.time() + delay
        loop.call_later(delay, lambda: emit('notifications-allowed', peer))

    def authorizing(self, name, value):
        """A CCCD value whose writes enabling notifications fail with ATT
        0x08 Insufficient Authorization until notifications are allowed (what
        an iPhone answers before its user allows notifications for the
        accessory). Bumble's subscription event cannot refuse a write: the
        CCCD's own write raises the ATT error, and Bumble answers with it."""
        def write(bearer, data):
            connection = bearer.connection if is_enhanced_bearer(bearer) else bearer
            if data and data[0] & 0x03 and self.args.allow_notifications_after > 0:
                peer = self.peer_key(connection)
                if peer not in self.allowed_at:
                    self.start_authorization(connection)
                if asyncio.get_running_loop().time() < self.allowed_at[peer]:
                    emit('subscription-refused', connection.handle, name, f'0x{ATT_INSUFFICIENT_AUTHORIZATION_ERROR:02X}')
                    raise ATT_Error(ATT_INSUFFICIENT_AUTHORIZATION_ERROR)
            return value.write(bearer, data)
        return AttributeValueV2(value.read, write=write)

    def build_service(self):
        encrypted_cccd = (Attribute.READABLE | Attribute.WRITEABLE
                          | Attribute.READ_REQUIRES_ENCRYPTION | Attribute.WRITE_REQUIRES_ENCRYPTION)

        def notifying(name, uuid):
            characteristic = Characteristic(uuid, Characteristic.Properties.NOTIFY,
                                            Attribute.READ_REQUIRES_ENCRYPTION, b'')
            characteristic.descriptors = [Descriptor(
                GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR, encrypted_cccd,
                self.authorizing(name, self.device.gatt_server.make_descriptor_value(characteristic)))]
            return characteristic

        self.notifying = {name: notifying(name, UUIDS[name]) for name in NOTIFYING}
        self.cp = Characteristic(
            UUIDS['cp'], Characteristic.Properties.WRITE,
            Attribute.WRITEABLE | Attribute.WRITE_REQUIRES_ENCRYPTION,
            CharacteristicValue(write=self.on_control_point_write))
        self.service = Service(ANCS_SERVICE, [self.notifying['ns'], self.cp, self.notifying['ds']])
        self.device.add_service(self.service)
        for name, characteristic in self.notifying.items():
            characteristic.on('subscription', self.subscription_handler(name))

    def subscription_handler(self, name):
        def on_subscription(connection, notify, _indicate):
            if connection.handle in self.connections:
                emit('subscription', connection.handle, name, 'on' if notify else 'off')
        return on_subscription

    async def on_control_point_write(self, connection, value):
        if connection.handle not in self.connections:
            await self.announce(connection)
        write_id = self.next_write
        self.next_write += 1
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        answered = loop.create_future()
        self.pending_writes[write_id] = future
        self.answered_writes[write_id] = answered
        self.write_connections[write_id] = connection.handle
        emit('write', connection.handle, write_id, hex_or_dash(value))
        try:
            code = await asyncio.wait_for(future, WRITE_ANSWER_TIMEOUT)
        except asyncio.TimeoutError:
            log.warning('write %d not answered in %.0f s', write_id, WRITE_ANSWER_TIMEOUT)
            self.answered_writes.pop(write_id, None)
            code = ATT_UNLIKELY_ERROR
        finally:
            self.pending_writes.pop(write_id, None)
            self.write_connections.pop(write_id, None)
            # Bumble sends the ATT response in the same step of this task, once
            # this handler returns or raises: a callback scheduled now runs after it.
            loop.call_soon(lambda: answered.done() or answered.set_result(None))
        if code:
            raise ATT_Error(code)

    async def announce(self, connection):
        if connection.handle in self.connections:
            return
        self.connections[connection.handle] = connection
        bonded = await self.is_bonded(connection.peer_address)
        if bonded:
            self.restore_service_changed(connection)
        emit('connected', connection.handle, connection.att_mtu, str(connection.peer_address).replace(' ', ''),
             1 if connection.is_encrypted else 0, 1 if bonded else 0)

    def on_connection(self, connection):
        def on_encryption_change(*_):
            if connection.is_encrypted:
                self.start_authorization(connection)
                asyncio.get_running_loop().create_task(self.announce(connection))

        def on_mtu(*_):
            if connection.handle in self.connections:
                emit('mtu', connection.handle, connection.att_mtu)

        def on_disconnection(reason):
            if self.connections.pop(connection.handle, None) is not None:
                emit('disconnected', connection.handle)
            # Writes still held for this link have no one to answer to.
            for write_id, handle in list(self.write_connections.items()):
                future = self.pending_writes.get(write_id)
                if handle == connection.handle and future is not None and not future.done():
                    future.set_result(ATT_UNLIKELY_ERROR)
            if not self.args.central:
                asyncio.get_running_loop().create_task(self.advertise())

        connection.on('connection_encryption_change', on_encryption_change)
        connection.on('connection_att_mtu_update', on_mtu)
        connection.on('disconnection', on_disconnection)
        self.watch_pairing(connection)

    async def handle(self, fields):
        command = fields[0]
        if command == 'reply':
            future = self.pending_writes.get(int(fields[1]))
            code = 0 if fields[2] == 'ok' else (int(fields[3], 16) if fields[2] == 'att' else ATT_UNLIKELY_ERROR)
            if future is not None and not future.done():
                future.set_result(code)
            # The response goes out before anything sent after this line
            # (Data Source notifications the command causes).
            answered = self.answered_writes.pop(int(fields[1]), None)
            if answered is not None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(answered), 5)
        elif command == 'notify':
            request, handle, name, value = int(fields[1]), int(fields[2]), fields[3], parse_hex(fields[4])
            emit('notified', request, await self.notify(handle, name, value))
        elif command == 'disconnect':
            connection = self.connections.get(int(fields[1]))
            if connection is not None:
                with contextlib.suppress(Exception):
                    await connection.disconnect()
        elif command == 'unpublish':
            await self.unpublish(int(fields[1]), indicate=fields[2:3] != ['silent'])
        elif command == 'publish':
            await self.publish(int(fields[1]), indicate=fields[2:3] != ['silent'])
        elif command == 'forget-bonds':
            await self.forget_bonds(int(fields[1]))
        else:
            emit('error', f'unknown command {command!r}')

    def restore_service_changed(self, connection):
        """A bonded peer that asked for Service Changed on an earlier link
        still has it (its CCCD persists across connections of a bonded client)."""
        if self.service_changed is None or self.peer_key(connection) not in self.service_changed_peers:
            return
        cccds = self.device.gatt_server.subscribers.setdefault(connection, {})
        cccds.setdefault(self.service_changed.handle, bytes([0x02, 0x00]))

    async def indicate_service_changed(self, start, end):
        """Indicates Service Changed (start, end) to every client subscribed
        to it; returns how many confirmed."""
        server = self.device.gatt_server
        handle = self.service_changed.handle
        bearers = [bearer for bearer, cccds in server.subscribers.items()
                   if len(cccds.get(handle) or b'') == 2 and cccds[handle][0] & 0x02]
        value = struct.pack('<HH', start, end)

        async def indicate(bearer):
            await asyncio.wait_for(server.indicate_subscriber(bearer, self.service_changed, value, force=True),
                                   INDICATION_TIMEOUT)
        results = await asyncio.gather(*(indicate(bearer) for bearer in bearers), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                log.info('Service Changed indication not confirmed: %s', result)
        return sum(1 for result in results if not isinstance(result, BaseException))

    async def forget_bonds(self, request):
        """Forgets every bond, as an iPhone does on "Forget This Device",
        and drops the links: a consumer that reconnects with its old keys
        cannot encrypt, and has to pair again."""
        status('forgetting every bond (Forget This Device)')
        forgotten = 0
        keystore = self.device.keystore
        if keystore is not None:
            with contextlib.suppress(Exception):
                for name, _keys in await keystore.get_all():
                    await keystore.delete(name)
                    forgotten += 1
        self.service_changed_peers.clear()
        for connection in list(self.connections.values()):
            await self.drop(connection)
        emit('bonds-forgotten', request, forgotten)

    async def unpublish(self, request, indicate=True):
        """Removes ANCS from the GATT database (the CCCDs go with it: every
        session ends) and indicates Service Changed for its handle range
        (unless `indicate` is false: a phone that changes its database
        without saying so)."""
        service = self.service
        server = self.device.gatt_server
        if service is None:
            emit('unpublished', request, 'failed', 'not-published')
            return
        start, end = service.handle, service.end_group_handle
        if server.attributes[-1].handle != end:  # only the last service can go (Bumble numbers handles by count)
            emit('unpublished', request, 'failed', 'not-the-last-service')
            return
        for bearer, cccds in server.subscribers.items():
            connection = bearer.connection if is_enhanced_bearer(bearer) else bearer
            for name, characteristic in self.notifying.items():
                value = cccds.pop(characteristic.handle, None)
                if value and value[0] & 0x01 and connection.handle in self.connections:
                    emit('subscription', connection.handle, name, 'off')
        server.attributes = [attribute for attribute in server.attributes if not start <= attribute.handle <= end]
        for handle in range(start, end + 1):
            server.attributes_by_handle.pop(handle, None)
        server.services.remove(service)
        self.service = None
        emit('unpublished', request, start, end, await self.indicate_service_changed(start, end) if indicate else 0)

    async def publish(self, request, indicate=True):
        """Adds ANCS again and indicates Service Changed for its new range
        (unless `indicate` is false)."""
        if self.service is not None:
            emit('published', request, 'failed', 'already-published')
            return
        self.build_service()
        start, end = self.service.handle, self.service.end_group_handle
        emit('published', request, start, end, await self.indicate_service_changed(start, end) if indicate else 0)

    async def notify(self, handle, name, value):
        connection = self.connections.get(handle)
        if connection is None:
            return 'failed not-connected'
        if self.service is None:
            return 'failed not-published'
        characteristic = self.notifying[name]
        cccd = self.device.gatt_server.subscribers.get(connection, {}).get(characteristic.handle)
        if not cccd or cccd[0] & 0x01 == 0:
            return 'failed not-subscribed'
        if len(value) > connection.att_mtu - 3:
            return f'failed too-long-for-mtu-{connection.att_mtu}'
        try:
            await self.device.notify_subscriber(connection, characteristic, value, force=True)
        except Exception as error:  # noqa: BLE001
            return f'failed {type(error).__name__}'
        return 'ok'

    async def run(self):
        await self.open()
        device = self.device
        device.gatt_server.max_mtu = self.args.mtu
        self.find_service_changed()
        self.build_service()
        device.on('connection', self.on_connection)
        await device.power_on()
        if not self.args.central:
            await self.advertise()
        handles = f"{self.notifying['ns'].handle} {self.cp.handle} {self.notifying['ds'].handle}"
        emit('ready', str(device.random_address).replace('/P', ''), handles)
        if self.args.central:
            loop = asyncio.get_running_loop()
            connector = loop.create_task(self.connect_to_accessories())
            commands = loop.create_task(self.commands(self.handle))
            await asyncio.wait([connector, commands], return_when=asyncio.FIRST_COMPLETED)
            connector.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(connector, 3)
            await commands
        else:
            await self.commands(self.handle)

    async def connect_to_accessories(self):
        """--central, as an iPhone does: connect to the accessory that
        advertises the ANCS solicitation (or --peer), pair or re-encrypt, and
        connect again whenever the link is lost."""
        while True:
            try:
                connection = await self.connect(self.args.scan_timeout)
                lost = asyncio.get_running_loop().create_future()
                connection.on('disconnection', lambda reason: lost.done() or lost.set_result(reason))
                if self.args.mtu > 23:
                    # As an iPhone does, at once: the accessory need not ask.
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(Peer(connection).request_mtu(self.args.mtu), 10)
                await self.secure(connection)
                await lost
            except asyncio.CancelledError:
                raise
            except LinkFailure as error:
                emit('error', f'connecting to the accessory failed: {error}')
            except Exception as error:  # noqa: BLE001
                emit('error', f'connecting to the accessory failed: {type(error).__name__}: {one_line(error)}')
            await asyncio.sleep(1)


# -----------------------------------------------------------------------------
# consume: the Notification Consumer (GATT client)
# -----------------------------------------------------------------------------
class Client(Session):
    def __init__(self, args):
        super().__init__(args)
        self.peer = None
        self.characteristics = {}
        self.subscribed = set()
        self.link_lost = None
        self.operations = set()
        self.ancs_range = None  # (first, last) handle of ANCS while it is published
        self.rediscovery = asyncio.Lock()
        # One handler per characteristic: Bumble keeps a set of handlers per
        # handle and adds the given one even when the CCCD write fails, so a
        # subscription tried again (after a refusal) must not add a second.
        self.handlers = {name: self.notification_handler(name) for name in NOTIFYING}

    @staticmethod
    def notification_handler(name):
        def on_value(value):
            emit('notify', name, hex_or_dash(value))
        return on_value

    async def discover_ancs(self, peer):
        """ANCS and its three characteristics (the CCCDs of the notifying
        two discovered), or None when the peer does not publish it whole."""
        services = await asyncio.wait_for(peer.discover_service(ANCS_SERVICE), 10)
        if not services:
            return None
        characteristics = await asyncio.wait_for(peer.discover_characteristics(service=services[0]), 10)
        found = {}
        for characteristic in characteristics:
            uuid = str(characteristic.uuid).upper()
            for name in NAMES:
                if uuid == UUIDS[name]:
                    found[name] = characteristic
        if len(found) != len(NAMES):
            log.warning('ANCS lacks characteristics: %s', sorted(set(NAMES) - set(found)))
            return None
        for name in NOTIFYING:
            await asyncio.wait_for(peer.discover_descriptors(found[name]), 10)
        return services[0], found

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

    async def on_service_changed(self, peer, value):
        """Service Changed (first, last handle): when the range touches ANCS,
        ANCS is gone (its CCCDs with it); then ANCS is looked for again."""
        if len(value) < 4:
            return
        start, end = struct.unpack_from('<HH', value)
        async with self.rediscovery:
            if self.peer is not peer:
                return
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
        """Connects (or is connected to), encrypts (pairs or re-encrypts with the bond), exchanges the MTU and finds ANCS."""
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
        await self.watch_service_changed(peer)
        self.peer, self.characteristics, self.subscribed = peer, found, set()
        self.ancs_range = (service.handle, service.end_group_handle)
        emit('link-up', connection.att_mtu, str(connection.peer_address).replace('/P', ''),
             1 if connection.is_encrypted else 0, 1 if bonded else 0)
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

    async def operation(self, request, coroutine, peer):
        try:
            await asyncio.wait_for(coroutine, 30)
            emit('result', request, 'ok')
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

    def start_operation(self, request, coroutine, peer):
        """Runs an operation without holding up the command lines after it
        (a `disconnect` must not wait behind a write the phone holds)."""
        task = asyncio.get_running_loop().create_task(self.operation(request, coroutine, peer))
        self.operations.add(task)
        task.add_done_callback(self.operations.discard)

    async def handle(self, fields):
        command = fields[0]
        if command not in ('subscribe', 'unsubscribe', 'write', 'disconnect'):
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
        if name not in NAMES:
            raise KeyError(name)
        characteristic = self.characteristics.get(name)
        if characteristic is None:  # ANCS is unpublished (Service Changed)
            emit('result', request, 'failed')
            return
        if command == 'write':
            self.start_operation(request, characteristic.write_value(parse_hex(fields[2]), with_response=True), peer)
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


# -----------------------------------------------------------------------------
# link: virtual controllers on one virtual link, one HCI transport each
# -----------------------------------------------------------------------------
class FixedLink(LocalLink):
    """Bumble's LocalLink tags an LE ACL packet with the sender controller's
    random address; a connection made from a public address then never gets
    its data. Tag it with the connection's own address instead."""

    def send_acl_data(self, sender_controller, destination_address, transport, data):
        if transport != core.PhysicalTransport.LE:
            return super().send_acl_data(sender_controller, destination_address, transport, data)
        connection = sender_controller.le_connections.get(destination_address)
        source = connection.self_address if connection else sender_controller.random_address
        destination = self.find_le_controller(destination_address)
        if destination is not None:
            asyncio.get_running_loop().call_soon(lambda: destination.on_link_acl_data(source, transport, data))


class BenchController(Controller):
    """A virtual controller whose host comes and goes, as on a test bench.
    Bumble's controller keeps its links when its host goes away or a new host
    resets it, so the next host can never connect to the same peer again
    ("Connection for ... already exists?"). Here a reset, or the host's
    transport closing, ends the controller's links (the peer's host hears a
    disconnection) and stops its advertising and scanning."""

    def drop_links(self, why):
        for connection in list(self.le_connections.values()):
            log.info('%s: %s, ending the link to %s', self.name, why, connection.peer_address)
            with contextlib.suppress(Exception):
                connection.send_ll_control_pdu(ll.TerminateInd(hci.HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR))
            self.le_connections.pop(connection.peer_address, None)
        self.le_legacy_advertiser.stop()
        for advertising_set in self.advertising_sets.values():
            advertising_set.stop()
        self.le_scan_enable = False
        self.pending_le_connection = None

    def on_hci_reset_command(self, command):
        self.drop_links('reset by its host')
        return super().on_hci_reset_command(command)


async def watch_hosts(controllers):
    """Ends the links of a controller whose TCP host has gone away."""
    connected = {}
    while True:
        for controller, transport in controllers:
            sink = transport.sink
            if not hasattr(sink, 'transport'):  # not a TCP server: no way to tell
                continue
            now = sink.transport is not None
            if connected.get(controller) and not now:
                controller.drop_links('its host went away')
            connected[controller] = now
        await asyncio.sleep(0.05)


async def run_link(args):
    link = FixedLink()
    controllers = []
    for index, spec in enumerate(args.hci):
        try:
            transport = await open_transport(spec)
        except Exception as error:  # noqa: BLE001
            fail(f'cannot open transport {spec}: {type(error).__name__}: {error}')
        controller = BenchController(f'C{index}', host_source=transport.source, host_sink=transport.sink, link=link,
                                     public_address=f'C0:DE:00:00:00:{index + 1:02X}')
        controllers.append((controller, transport))
    emit('ready', len(controllers))
    loop = asyncio.get_running_loop()
    watcher = loop.create_task(watch_hosts(controllers))
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.readline():  # runs until stdin closes
        pass
    watcher.cancel()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    roles = parser.add_subparsers(dest='role', required=True)
    for role in ('serve', 'consume'):
        sub = roles.add_parser(role)
        sub.add_argument('--transport', required=True, help='Bumble transport: usb:0, serial:/dev/ttyACM0,115200, tcp-client:127.0.0.1:9001, ...')
        sub.add_argument('--ancs-uuids', required=True,
                         help='the ANCS service, Notification Source, Control Point and Data Source UUIDs, comma-separated')
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
    global ANCS_SERVICE
    uuids = [uuid.strip().upper() for uuid in args.ancs_uuids.split(',')]
    if len(uuids) != 4:
        parser.error('--ancs-uuids needs four UUIDs: service, Notification Source, Control Point, Data Source')
    ANCS_SERVICE = uuids[0]
    UUIDS.update(zip(NAMES, uuids[1:]))
    session = Server(args) if args.role == 'serve' else Client(args)
    asyncio.run(session.main())
    os._exit(0)


if __name__ == '__main__':
    main()
