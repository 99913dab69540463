"""A simulated iPhone (ANCS Notification Provider) for testing `ancs listen` on a real bluetoothd.

One Bumble LocalLink carries two virtual controllers: controller A is opened on /dev/vhci, so the
Linux kernel drives it as hci0 for bluetoothd; controller B is this process's own Bumble host,
the phone. Like an iPhone it connects to an accessory advertising the ANCS solicitation, pairs
when the accessory asks for security (or re-encrypts with the bond), answers the Control Point
with the ANCS error codes, announces its notifications as PreExisting when Notification Source
is subscribed, and fragments Data Source responses to ATT_MTU - 3.

Beside ANCS it plays music and keeps a clock, as an iPhone does: the Apple Media Service and the
Current Time Service of Tests/ANCSBumbleTests/Interop/bumble_media_phone.py (Bumble's own Ams),
its title cut in its notification at any MTU (ATT's longest value, 512 bytes: read whole).

A line protocol on a Unix socket drives it; each command answers one JSON line:
  status | post <uid> | disconnect | connect | max_mtu <n> | remove_service | add_service
  fraglog | actions | events | media (AMS's and CTS's record: commands, registrations, subscriptions)
and the faults of real iPhones:
  forget_subscriptions   the CCCDs forgotten in silence (nothing more is notified)
  sharing off|on         "Share System Notifications" off: CCCD writes succeed, every Control
                         Point write fails 0x03, nothing is notified; on: as before
  refuse_cccd <code>|off CCCD writes refused with that ATT code (notifications not allowed yet)
  forget_bond            "Forget This Device": the keys deleted, the link dropped; the next
                         connection pairs anew
  ns_quiet               Notification Source quiet (the Control Point still answers) until
                         the accessory subscribes to it again (as its subscription lost alone)
  lose_ds                Data Source lost alone: Control Point writes taken and answered, no
                         Data Source response delivered until the accessory subscribes to it again
  decline_pairing on|off the accessory's requests for security answered with Pairing Failed
                         (the person tapped Cancel on the pairing prompt): a link never paired
                         stays unencrypted, and the CCCDs (encryption required) refuse writes
"""
import argparse, asyncio, json, os, struct, sys, time

from bumble import hci
from bumble.att import ATT_Error, Attribute, AttributeValueV2
from bumble.controller import Controller
from bumble.core import AdvertisingData
from bumble.device import Device
from bumble.gatt import CharacteristicValue, Descriptor, GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR
from bumble.host import Host
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.smp import SMP_PAIRING_NOT_SUPPORTED_ERROR, SMP_Pairing_Failed_Command
from bumble.profiles.ancs import Ancs, CategoryId, EventFlags, EventId, Notification
from bumble.transport import open_transport
from bumble.transport.common import AsyncPipeSink

# The host program's virtual link, which delivers LE data from the connection's own (public)
# address, as the kernel's connection expects.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'Sources', 'ANCSBumble', 'Host'))
from ancs_host.link import FixedLink  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'ANCSBumbleTests', 'Interop'))
import bumble_media_phone  # noqa: E402

# What the phone plays first: a title of 512 bytes (ATT's longest value), characters of one to
# three bytes: cut in its notification at any MTU, read whole (at MTU 185: Read, then Read Blob).
MEDIA_TITLE = ('Ça plane pour moi — Émilie Sørensen à Zürich · ' * 12).encode()[:500].decode('utf-8', 'ignore')
MEDIA_TITLE += '.' * (512 - len(MEDIA_TITLE.encode()))

ANCS_UUID = '7905f431-b5ce-4e99-a40f-4b1e122d00d0'
T0 = time.monotonic()


def log(msg):
    print(f'[iphone {time.monotonic() - T0:7.3f}] {msg}', flush=True)


class Phone:
    def __init__(self, device):
        self.device = device
        self.conn = None
        self.events = []
        self.actions = []
        self.fragments = []   # [response length, [fragment sizes]]
        self.notifications = {
            1: dict(app='com.apple.MobileSMS', title='Alice', subtitle='', message='Lunch at noon?',
                    date='20240131T235959', pos='Reply', neg='Clear', cat=CategoryId.SOCIAL),
            2: dict(app='com.apple.mobilemail', title='Bob', subtitle='Re: report', message='M' * 600,
                    date='20240201T120000', pos='', neg='Trash', cat=CategoryId.EMAIL),
            3: dict(app='com.apple.mobilecal', title='Standup', subtitle='', message='N' * 400,
                    date='20240202T090000', pos='', neg='', cat=CategoryId.SCHEDULE),
        }
        self.present = {1}   # on the phone before the accessory subscribes: PreExisting
        self.sharing = True
        self.ns_quiet = False
        self.ds_lost = False
        self.cccd_refusal = None   # an ATT code: CCCD writes refused with it
        self.declines_pairing = False
        self.apps = {'com.apple.MobileSMS': 'Messages', 'com.apple.mobilemail': 'Mail', 'com.apple.mobilecal': 'Calendar'}
        self.install_service()

    def add_generated(self, uid):
        """A made-up notification from one of 8 apps, with a message of about 100 bytes."""
        app = f'com.example.app{uid % 8}'
        self.apps[app] = f'App {uid % 8}'
        self.notifications[uid] = dict(app=app, title=f'Sender {uid}', subtitle='', message=f'Message {uid}: ' + 'x' * 90,
                                       date='20240203T101500', pos='', neg='Clear', cat=CategoryId.SOCIAL)

    def ev(self, kind, **kw):
        e = dict(t=round(time.monotonic() - T0, 3), ev=kind, **kw)
        self.events.append(e)
        log(f'event {e}')

    def install_service(self):
        self.svc = Ancs()
        self.ns = self.svc.notification_source_characteristic
        self.ds = self.svc.data_source_characteristic
        cp = self.svc.control_point_characteristic
        cp.value = CharacteristicValue(write=self.on_cp_write)
        cp.permissions |= Attribute.WRITE_REQUIRES_ENCRYPTION   # like iOS: nothing before encryption
        for ch in (self.ns, self.ds):
            value = self.device.gatt_server.make_descriptor_value(ch)
            ch.descriptors = list(ch.descriptors) + [Descriptor(
                GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR,
                Attribute.READABLE | Attribute.WRITEABLE | Attribute.READ_REQUIRES_ENCRYPTION | Attribute.WRITE_REQUIRES_ENCRYPTION,
                AttributeValueV2(value.read, write=self.cccd_writer(ch, value.write)))]
        self.device.add_service(self.svc)
        self.ns.on('subscription', self.on_ns_subscription)
        self.ds.on('subscription', self.on_ds_subscription)

    def cccd_writer(self, ch, write):
        name = 'ns' if ch is self.ns else 'ds'

        def on_write(bearer, value):
            if self.cccd_refusal is not None:
                self.ev('cccd_refused', ch=name, on=bool(value and value[0] & 1), code=self.cccd_refusal)
                raise ATT_Error(self.cccd_refusal)
            return write(bearer, value)
        return on_write

    def on_ds_subscription(self, conn, notify, _indicate):
        self.ev('ds_subscription', on=bool(notify))
        self.ds_lost = False   # written anew: delivered again

    def on_ns_subscription(self, conn, notify, _indicate):
        self.ev('ns_subscription', on=bool(notify))
        if notify:   # iOS announces what is already there
            self.ns_quiet = False
            async def announce():
                await asyncio.sleep(0.1)
                for uid in sorted(self.present):
                    await self.post(uid, pre_existing=True)
            asyncio.get_running_loop().create_task(announce())

    async def post(self, uid, event=EventId.NOTIFICATION_ADDED, pre_existing=False):
        if event == EventId.NOTIFICATION_ADDED:
            self.present.add(uid)
        if not self.sharing or self.ns_quiet:   # held, announced when the accessory subscribes again
            self.ev('held', uid=uid, event=int(event))
            return
        n = self.notifications[uid]
        flags = EventFlags(0)
        if n['pos']:
            flags |= EventFlags.POSITIVE_ACTION
        if n['neg']:
            flags |= EventFlags.NEGATIVE_ACTION
        if pre_existing:
            flags |= EventFlags.PRE_EXISTING
        await self.device.notify_subscriber(self.conn, self.ns, bytes(Notification(event, flags, n['cat'], 1, uid)))
        self.ev('posted', uid=uid, event=int(event), pre_existing=pre_existing)

    async def send_data(self, data):
        if self.ds_lost:   # taken, never delivered
            self.ev('ds_dropped', length=len(data))
            return
        chunk = self.conn.att_mtu - 3
        sizes = [len(data[i:i + chunk]) for i in range(0, len(data), chunk)]
        self.fragments.append([len(data), sizes])
        for i in range(0, len(data), chunk):
            await self.device.notify_subscriber(self.conn, self.ds, data[i:i + chunk])

    def on_cp_write(self, conn, value):
        if not self.sharing:
            self.ev('cp_refused', code=3)
            raise ATT_Error(0x03)
        if not value:
            raise ATT_Error(0xA1)
        cmd = value[0]
        if cmd == 0:   # Get Notification Attributes
            if len(value) < 5:
                raise ATT_Error(0xA1)
            (uid,) = struct.unpack_from('<I', value, 1)
            if uid not in self.present:
                raise ATT_Error(0xA2)
            n, out, i = self.notifications[uid], bytearray(value[:5]), 5
            while i < len(value):
                aid = value[i]; i += 1
                maxlen = 0xFFFF
                if aid in (1, 2, 3):
                    if i + 2 > len(value):
                        raise ATT_Error(0xA1)
                    (maxlen,) = struct.unpack_from('<H', value, i); i += 2
                text = {0: n['app'], 1: n['title'], 2: n['subtitle'], 3: n['message'], 4: str(len(n['message'])),
                        5: n['date'], 6: n['pos'], 7: n['neg']}.get(aid)
                if text is None:
                    raise ATT_Error(0xA2)
                b = text.encode()[:maxlen]
                out += struct.pack('<BH', aid, len(b)) + b
        elif cmd == 1:   # Get App Attributes
            end = value.find(0, 1)
            if end < 0:
                raise ATT_Error(0xA1)
            app = value[1:end].decode()
            if app not in self.apps:
                raise ATT_Error(0xA2)
            out = bytearray(value[:end + 1])
            for aid in value[end + 1:]:
                if aid != 0:
                    raise ATT_Error(0xA2)
                b = self.apps[app].encode()
                out += struct.pack('<BH', aid, len(b)) + b
        elif cmd == 2:   # Perform Notification Action
            if len(value) != 6:
                raise ATT_Error(0xA1)
            uid, action = struct.unpack_from('<IB', value, 1)
            if uid not in self.present:
                raise ATT_Error(0xA2)
            self.actions.append([uid, action])
            self.present.discard(uid)
            asyncio.get_running_loop().create_task(self.post(uid, EventId.NOTIFICATION_REMOVED))
            return
        else:
            raise ATT_Error(0xA0)
        asyncio.get_running_loop().create_task(self.send_data(bytes(out)))   # after the Write Response


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--transport', default='vhci:/dev/vhci')
    ap.add_argument('--control', default='/run/iphone.sock')
    args = ap.parse_args()

    link = FixedLink()
    transport = await open_transport(args.transport)
    Controller('A', host_source=transport.source, host_sink=transport.sink, link=link, public_address='C0:DE:00:00:00:01')
    ctrl = Controller('B', link=link, public_address='F1:F1:F1:F1:F1:F1')
    dev = Device(name='Simulated iPhone', address=hci.Address('F0:F0:F0:F0:F0:F0'), host=Host(ctrl, AsyncPipeSink(ctrl)))
    cfg = PairingConfig(sc=True, mitm=False, bonding=True, identity_address_type=hci.AddressType.RANDOM_DEVICE,
                        delegate=PairingDelegate(PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT))
    dev.pairing_config_factory = lambda c: cfg
    # AMS and CTS first: ANCS stays the last service, so removing it and adding it back (Service
    # Changed) gives it its handles again (Bumble numbers a new service after the attributes it holds).
    media = bumble_media_phone.Phone(argparse.Namespace(title=MEDIA_TITLE, time='2026-11-28T14:53:07', utc_offset_minutes=60,
                                                        record=None), dev, ancs=False)
    phone = Phone(dev)
    await dev.power_on()
    dev.gatt_server.max_mtu = 517
    bonded = set()

    def on_connection(conn):
        phone.conn = conn
        phone.ev('connected', peer=str(conn.peer_address))
        conn.on('disconnection', lambda reason: (phone.ev('disconnected', reason=str(reason)), media.links.pop(conn.handle, None)))
        conn.on('pairing', lambda keys: (bonded.add(str(conn.peer_address)), phone.ev('paired')))
        conn.on('pairing_failure', lambda reason: phone.ev('pairing_failure', reason=str(reason)))
        conn.on('connection_encryption_change', lambda *a: phone.ev('encryption', on=conn.is_encrypted))
        conn.on('connection_att_mtu_update', lambda *a: phone.ev('att_mtu', mtu=conn.att_mtu))

        def on_security_request(auth_req):
            # The accessory wants encryption: pair the first time, re-encrypt with the bond later.
            known = str(conn.peer_address) in bonded
            phone.ev('security_request', bonded=known)
            if phone.declines_pairing and not known:
                phone.ev('pairing_declined')
                dev.smp_manager.send_command(conn, SMP_Pairing_Failed_Command(reason=SMP_PAIRING_NOT_SUPPORTED_ERROR))
                return
            asyncio.get_running_loop().create_task(conn.encrypt() if known else conn.pair())
        conn.on('security_request', on_security_request)

    dev.on('connection', on_connection)

    async def connect(timeout=30):
        found = asyncio.get_running_loop().create_future()

        def on_adv(adv):
            sol = adv.data.get(AdvertisingData.LIST_OF_128_BIT_SERVICE_SOLICITATION_UUIDS) or []
            if adv.is_connectable and any(str(u).lower() == ANCS_UUID for u in sol) and not found.done():
                found.set_result(adv.address)
        dev.on('advertisement', on_adv)
        await dev.start_scanning(filter_duplicates=True)
        try:
            address = await asyncio.wait_for(found, timeout)
        finally:
            dev.remove_listener('advertisement', on_adv)
            await dev.stop_scanning()
        conn = await dev.connect(address, timeout=timeout)
        return dict(peer=str(conn.peer_address))

    async def indicate_service_changed():
        start, end = phone.svc.handle, phone.svc.end_group_handle
        sc = dev.gatt_service.service_changed_characteristic
        await dev.indicate_subscriber(phone.conn, sc, struct.pack('<HH', start, end), force=True)
        return [start, end]

    async def remove_service():
        start, end = phone.svc.handle, phone.svc.end_group_handle
        srv = dev.gatt_server
        srv.attributes = [a for a in srv.attributes if not (start <= a.handle <= end)]
        srv.services = [s for s in srv.services if s is not phone.svc]
        srv.attributes_by_handle.clear()
        return await indicate_service_changed()

    async def add_service():
        phone.install_service()
        return await indicate_service_changed()

    async def handle(reader, writer):
        while line := await reader.readline():
            cmd, *rest = line.decode().split()
            conn = phone.conn
            try:
                if cmd == 'status':
                    r = dict(connected=conn is not None and conn.handle in dev.connections,
                             mtu=conn.att_mtu if conn else None, encrypted=conn.is_encrypted if conn else None)
                elif cmd == 'post':
                    await phone.post(int(rest[0])); r = 'posted'
                elif cmd == 'post_many':   # post_many FIRST COUNT: COUNT new notifications from 8 apps
                    first, count = int(rest[0]), int(rest[1])
                    for uid in range(first, first + count):
                        phone.add_generated(uid)
                        await phone.post(uid)
                    r = count
                elif cmd == 'remove_many':   # remove_many FIRST COUNT: those notifications removed on the phone
                    first, count = int(rest[0]), int(rest[1])
                    for uid in range(first, first + count):
                        phone.present.discard(uid)
                        await phone.post(uid, EventId.NOTIFICATION_REMOVED)
                    r = count
                elif cmd == 'disconnect':
                    await conn.disconnect(); r = 'disconnected'
                elif cmd == 'connect':
                    r = await connect()
                elif cmd == 'max_mtu':
                    dev.gatt_server.max_mtu = int(rest[0]); r = int(rest[0])
                elif cmd == 'remove_service':
                    r = await remove_service()
                elif cmd == 'add_service':
                    r = await add_service()
                elif cmd == 'forget_subscriptions':
                    r = sum(len(c) for c in dev.gatt_server.subscribers.values())
                    dev.gatt_server.subscribers.clear()
                    phone.ev('subscriptions_forgotten', count=r)
                elif cmd == 'lose_ds':
                    phone.ds_lost = True; phone.ev('ds_lost'); r = True
                elif cmd == 'ns_quiet':
                    phone.ns_quiet = True; phone.ev('ns_quiet'); r = True
                elif cmd == 'sharing':
                    phone.sharing = rest[0] == 'on'; phone.ev('sharing', on=phone.sharing); r = phone.sharing
                elif cmd == 'decline_pairing':
                    phone.declines_pairing = rest[0] == 'on'; r = phone.declines_pairing
                elif cmd == 'refuse_cccd':
                    phone.cccd_refusal = None if rest[0] == 'off' else int(rest[0], 0); r = phone.cccd_refusal
                elif cmd == 'forget_bond':
                    peer = str(conn.peer_address)
                    bonded.discard(peer)
                    try:
                        await dev.keystore.delete(peer)
                    except KeyError:
                        pass
                    phone.ev('bond_forgotten', peer=peer)
                    await conn.disconnect(); r = peer
                elif cmd == 'fraglog':
                    r = phone.fragments
                elif cmd == 'actions':
                    r = phone.actions
                elif cmd == 'events':
                    r = phone.events
                elif cmd == 'media':
                    r = dict(media.record, title=MEDIA_TITLE)
                else:
                    r = f'unknown command {cmd}'
                writer.write((json.dumps(dict(ok=True, r=r)) + '\n').encode())
            except (Exception, asyncio.CancelledError) as e:
                writer.write((json.dumps(dict(ok=False, err=f'{type(e).__name__}: {e}')) + '\n').encode())
            await writer.drain()

    if os.path.exists(args.control):
        os.unlink(args.control)
    await asyncio.start_unix_server(handle, path=args.control)
    log(f'ready, control socket {args.control}')
    await asyncio.get_running_loop().create_future()


if __name__ == '__main__':
    asyncio.run(main())
