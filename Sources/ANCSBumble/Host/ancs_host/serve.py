"""serve: the Notification Provider (an iPhone's ANCS GATT server), and with
--media-uuids the phone's AMS and CTS servers too."""
import asyncio
import contextlib
import struct

from bumble.att import (
    ATT_INSUFFICIENT_AUTHORIZATION_ERROR, ATT_READ_NOT_PERMITTED_ERROR, ATT_Error, Attribute, AttributeValueV2,
    is_enhanced_bearer)
from bumble.device import Peer
from bumble.gatt import (
    GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR, GATT_GENERIC_ATTRIBUTE_SERVICE,
    GATT_SERVICE_CHANGED_CHARACTERISTIC, Characteristic, CharacteristicValue, Descriptor, Service)

from .common import (
    ANCS, ANSWER_TIMEOUT, ATT_UNLIKELY_ERROR, INDICATION_TIMEOUT, MEDIA, MEDIA_NOTIFYING, MEDIA_READABLE, MEDIA_SERVICES,
    MEDIA_WRITABLE, NOTIFYING, LinkFailure, emit, hex_or_dash, log, one_line, parse_hex, status)
from .session import Session


def connection_of(bearer):
    return bearer.connection if is_enhanced_bearer(bearer) else bearer



def not_readable(_bearer):
    """A characteristic without the Read property: Bumble checks neither the
    property nor READABLE, and a value without a read function raises a
    non-ATT error in the server's task, so the client would get no answer."""
    raise ATT_Error(ATT_READ_NOT_PERMITTED_ERROR)

class Held:
    """A request held until the Swift side answers it: a write (`reply`) or
    a read (`reply-read`, or `reply` with an error)."""

    def __init__(self, handle, read):
        loop = asyncio.get_running_loop()
        self.handle = handle  # the link's connection handle
        self.read = read
        self.answer = loop.create_future()    # 0, an ATT error code, or a read's value
        self.answered = loop.create_future()  # done once the ATT response has been sent


class Server(Session):
    def __init__(self, args):
        super().__init__(args)
        self.connections = {}       # handle -> Connection, once announced
        self.held = {}              # id -> Held, until answered
        self.next_request = 1
        self.service = None          # ANCS while it is published (unpublish/publish)
        self.media = {}              # --media-uuids: AMS's and CTS's characteristics by short name
        self.read_requests = {}      # bearer -> (handle, offset) of the Read or Read Blob being served
        self.long_reads = {}         # (connection handle, short name) -> the value of the last read at offset 0
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
            connection = connection_of(bearer)
            if data and data[0] & 0x03 and self.args.allow_notifications_after > 0:
                peer = self.peer_key(connection)
                if peer not in self.allowed_at:
                    self.start_authorization(connection)
                if asyncio.get_running_loop().time() < self.allowed_at[peer]:
                    emit('subscription-refused', connection.handle, name, f'0x{ATT_INSUFFICIENT_AUTHORIZATION_ERROR:02X}')
                    raise ATT_Error(ATT_INSUFFICIENT_AUTHORIZATION_ERROR)
            return value.write(bearer, data)
        return AttributeValueV2(value.read, write=write)

    def with_cccd(self, characteristic, name):
        """`characteristic` with a CCCD that needs an encrypted link; ANCS's
        (ns, ds) also wait for --allow-notifications-after, the media ones never."""
        value = self.device.gatt_server.make_descriptor_value(characteristic)
        characteristic.descriptors = [Descriptor(
            GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR,
            Attribute.READABLE | Attribute.WRITEABLE | Attribute.READ_REQUIRES_ENCRYPTION | Attribute.WRITE_REQUIRES_ENCRYPTION,
            self.authorizing(name, value) if name in NOTIFYING else value)]
        return characteristic

    def build_service(self):
        self.notifying = {
            name: self.with_cccd(Characteristic(ANCS.uuids[name], Characteristic.Properties.NOTIFY,
                                                Attribute.READ_REQUIRES_ENCRYPTION, b''), name)
            for name in NOTIFYING}
        # No read property: a read is refused 0x02 (without a read function
        # Bumble would answer nothing, and the client wait for ATT's 30 s).
        self.cp = Characteristic(
            ANCS.uuids['cp'], Characteristic.Properties.WRITE,
            Attribute.WRITEABLE | Attribute.WRITE_REQUIRES_ENCRYPTION,
            CharacteristicValue(read=not_readable, write=self.on_control_point_write))
        self.service = Service(ANCS.service, [self.notifying['ns'], self.cp, self.notifying['ds']])
        self.device.add_service(self.service)
        for name, characteristic in self.notifying.items():
            characteristic.on('subscription', self.subscription_handler(name))

    def build_media(self):
        """--media-uuids: AMS and CTS, added once, before ANCS (which must stay
        the last service for unpublish and publish). Writes and reads are
        held until the Swift side answers (`media-write`, `media-read`)."""
        if not MEDIA.enabled:
            return

        def characteristic(name, uuid):
            readable, writable = name in MEDIA_READABLE, name in MEDIA_WRITABLE
            properties, permissions = Characteristic.Properties(0), Attribute.Permissions(0)
            if readable:
                properties |= Characteristic.Properties.READ
                permissions |= Attribute.READABLE | Attribute.READ_REQUIRES_ENCRYPTION
            if writable:
                properties |= Characteristic.Properties.WRITE
                permissions |= Attribute.WRITEABLE | Attribute.WRITE_REQUIRES_ENCRYPTION
            if name in MEDIA_NOTIFYING:
                properties |= Characteristic.Properties.NOTIFY
            made = Characteristic(uuid, properties, permissions, AttributeValueV2(
                read=self.media_reader(name) if readable else not_readable,
                write=self.media_writer(name) if writable else None))
            if name in MEDIA_NOTIFYING:
                self.with_cccd(made, name)  # before the service is added, which would add a CCCD of its own
                made.on('subscription', self.subscription_handler(name))
            return made

        for service in MEDIA_SERVICES:
            service_uuid, uuids, _required = MEDIA.services[service]
            characteristics = {name: characteristic(name, uuid) for name, uuid in uuids.items()}
            self.media.update(characteristics)
            self.device.add_service(Service(service_uuid, list(characteristics.values())))
        self.watch_read_offsets()

    def watch_read_offsets(self):
        """Bumble 0.0.236 calls a characteristic's read function alike for a
        Read and for each Read Blob, without the offset: it cuts the value it
        gets at the blob's offset itself. Its server's two handlers (looked up
        by name for each PDU) are wrapped to note, per bearer, the request
        being served (a client has one outstanding per bearer), so
        `media_reader` tells a read at offset 0 (a new read, even right after
        a long one) from the Read Blobs that follow it."""
        server = self.device.gatt_server
        for handler in ('on_att_read_request', 'on_att_read_blob_request'):
            serve = getattr(server, handler)

            def noting(bearer, request, serve=serve):
                self.read_requests[bearer] = (request.attribute_handle, getattr(request, 'value_offset', 0))
                return serve(bearer, request)
            setattr(server, handler, noting)

    def media_reader(self, name):
        """A read at offset 0 asks the Swift side (`media-read`) for the whole
        value; the Read Blobs after it on that link are answered from that
        value, so one long read sees one value, as a server must give it."""
        async def read(bearer):
            connection = connection_of(bearer)
            handle, offset = self.read_requests.pop(bearer, (None, 0))
            key = (connection.handle, name)
            if handle == self.media[name].handle and offset > 0 and key in self.long_reads:
                return self.long_reads[key]
            self.long_reads.pop(key, None)  # a read that fails leaves no value for stray blobs
            self.long_reads[key] = value = await self.hold(connection, True, 'media-read', name)
            return value
        return read

    def media_writer(self, name):
        async def write(bearer, value):
            await self.hold(connection_of(bearer), False, 'media-write', name, hex_or_dash(value))
        return write

    def subscription_handler(self, name):
        def on_subscription(connection, notify, _indicate):
            if connection.handle in self.connections:
                emit('subscription', connection.handle, name, 'on' if notify else 'off')
        return on_subscription

    async def on_control_point_write(self, connection, value):
        await self.hold(connection, False, 'write', hex_or_dash(value))

    async def hold(self, connection, read, line, *fields):
        """Tells the Swift side of a write or read request (`line <conn> <id>
        fields...`) and holds the ATT response until its answer: returns a
        read's value, raises the ATT error answered. No answer within 25 s,
        or the link lost, is 0x0E (Unlikely Error)."""
        if connection.handle not in self.connections:
            await self.announce(connection)
        request = self.next_request
        self.next_request += 1
        held = Held(connection.handle, read)
        self.held[request] = held
        emit(line, connection.handle, request, *fields)
        loop = asyncio.get_running_loop()
        try:
            answer = await asyncio.wait_for(held.answer, ANSWER_TIMEOUT)
        except asyncio.TimeoutError:
            log.warning('%s %d not answered in %.0f s', line, request, ANSWER_TIMEOUT)
            answer = ATT_UNLIKELY_ERROR
        finally:
            self.held.pop(request, None)
            # Bumble sends the ATT response in the same step of this task, once
            # this handler returns or raises: a callback scheduled now runs after it.
            loop.call_soon(lambda: held.answered.done() or held.answered.set_result(None))
        if isinstance(answer, int):
            if answer:
                raise ATT_Error(answer)
            return None
        return answer

    def answer(self, request, answer):
        """Answers held request `request` (`reply`, `reply-read`); returns
        it, or None when it is no longer held (answered late, link lost)."""
        held = self.held.get(request)
        if held is None or held.answer.done():
            return None
        if isinstance(answer, bytes) != held.read and not (isinstance(answer, int) and answer):
            # A read needs a value, a write none: the request fails rather than waiting 25 s.
            wanted = f'read {request} needs reply-read' if held.read else f'write {request} takes reply'
            emit('error', f'{wanted} (or an error): answered 0x0E')
            answer = ATT_UNLIKELY_ERROR
        held.answer.set_result(answer)
        return held

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
            # Requests still held for this link have no one to answer to.
            for held in list(self.held.values()):
                if held.handle == connection.handle and not held.answer.done():
                    held.answer.set_result(ATT_UNLIKELY_ERROR)
            self.read_requests.pop(connection, None)
            for key in [key for key in self.long_reads if key[0] == connection.handle]:
                del self.long_reads[key]
            if not self.args.central:
                asyncio.get_running_loop().create_task(self.advertise())

        connection.on('connection_encryption_change', on_encryption_change)
        connection.on('connection_att_mtu_update', on_mtu)
        connection.on('disconnection', on_disconnection)
        self.watch_pairing(connection)

    async def handle(self, fields):
        command = fields[0]
        if command in ('reply', 'reply-read'):
            if command == 'reply-read':
                answer = parse_hex(fields[2])
            else:
                answer = 0 if fields[2] == 'ok' else (int(fields[3], 16) if fields[2] == 'att' else ATT_UNLIKELY_ERROR)
            held = self.answer(int(fields[1]), answer)
            # The response goes out before anything sent after this line
            # (the notifications the command causes).
            if held is not None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(held.answered), 5)
        elif command == 'notify':
            request, handle, name, value = int(fields[1]), int(fields[2]), fields[3], parse_hex(fields[4])
            if name not in NOTIFYING + MEDIA_NOTIFYING:
                raise KeyError(name)
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
            connection = connection_of(bearer)
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
        if name in MEDIA_NOTIFYING:
            characteristic = self.media.get(name)
        else:
            characteristic = self.notifying[name] if self.service is not None else None
        if characteristic is None:  # ANCS unpublished, or AMS and CTS without --media-uuids
            return 'failed not-published'
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
        self.build_media()
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
