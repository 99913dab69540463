"""serve: the Notification Provider (an iPhone's ANCS GATT server)."""
import asyncio
import contextlib
import struct

from bumble.att import ATT_INSUFFICIENT_AUTHORIZATION_ERROR, ATT_Error, Attribute, AttributeValueV2, is_enhanced_bearer
from bumble.device import Peer
from bumble.gatt import (
    GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR, GATT_GENERIC_ATTRIBUTE_SERVICE,
    GATT_SERVICE_CHANGED_CHARACTERISTIC, Characteristic, CharacteristicValue, Descriptor, Service)

from .common import (
    ANCS, ATT_UNLIKELY_ERROR, INDICATION_TIMEOUT, NOTIFYING, WRITE_ANSWER_TIMEOUT, LinkFailure, emit, hex_or_dash,
    log, one_line, parse_hex, status)
from .session import Session


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

        self.notifying = {name: notifying(name, ANCS.uuids[name]) for name in NOTIFYING}
        self.cp = Characteristic(
            ANCS.uuids['cp'], Characteristic.Properties.WRITE,
            Attribute.WRITEABLE | Attribute.WRITE_REQUIRES_ENCRYPTION,
            CharacteristicValue(write=self.on_control_point_write))
        self.service = Service(ANCS.service, [self.notifying['ns'], self.cp, self.notifying['ds']])
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
