"""An iPhone's AMS and CTS on Bumble, to test the accessory's media client
(`ancs listen --stack bumble:...`) against a phone that is not our own code:
AMS is Bumble's own service (bumble.profiles.ams.Ams) given a small player,
CTS a fixed clock, and beside them a minimal ANCS that answers every Control
Point write with 0xA2.

    bumble_media_phone.py --transport tcp-client:127.0.0.1:PORT [--title T] [--time 2026-11-28T14:53:07]
                          [--utc-offset-minutes 60] [--record FILE] [--duration 60]

It advertises the ANCS solicitation (connectable, 100 ms) and again after
each disconnection, and pairs as an iPhone does (LE Secure Connections,
DisplayYesNo with MITM, bonding; numeric comparison confirmed). One line
per event on stdout: `connected <peer>`, `registered <entity> <attrs hex>`,
`command <id> ok|refused` (a malformed write: its bytes in hex),
`read <entity> <attr> <n bytes>`, `disconnected`.
With --record, a JSON file of the commands received (ids, in order) and the
registrations, written after each command and at exit. It exits after
--duration seconds, or before when its stdin is a pipe and closes.
"""
import argparse
import asyncio
import contextlib
import datetime
import json
import logging
import os
import stat
import struct
import sys

from bumble import core, hci
from bumble.att import ATT_Error
from bumble.core import AdvertisingData
from bumble.device import Device
from bumble.gatt import (
    GATT_CURRENT_TIME_CHARACTERISTIC, GATT_CURRENT_TIME_SERVICE, Characteristic, CharacteristicValue, Service)
from bumble.keys import JsonKeyStore
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.profiles.ams import (
    Ams, EntityId, EntityUpdateFlags, PlayerAttributeId, QueueAttributeId, RemoteCommandId, TrackAttributeId)
from bumble.transport import open_transport

ANCS_SERVICE = '7905F431-B5CE-4E99-A40F-4B1E122D00D0'
ANCS_NOTIFICATION_SOURCE = '9FBF120D-6301-42D9-8C58-25E699A21DBD'
ANCS_CONTROL_POINT = '69D1D8F3-45E1-49A8-9821-9BBDFDAAD9D9'
ANCS_DATA_SOURCE = '22EAC6E9-24D6-4BB5-BE44-B36ACE7C7BFB'
LOCAL_TIME_INFORMATION = core.UUID('2A0F')

# AMS's error codes (ATT application errors).
INVALID_STATE = 0xA0
INVALID_COMMAND = 0xA1
ABSENT_ATTRIBUTE = 0xA2
ATT_READ_NOT_PERMITTED = 0x02

SUPPORTED = (RemoteCommandId.PLAY, RemoteCommandId.PAUSE, RemoteCommandId.TOGGLE_PLAY_PAUSE,
             RemoteCommandId.NEXT_TRACK, RemoteCommandId.PREVIOUS_TRACK,
             RemoteCommandId.VOLUME_UP, RemoteCommandId.VOLUME_DOWN)
# The attributes each entity has (the Queue's too, as an iPhone's).
ATTRIBUTES = {
    EntityId.PLAYER: tuple(PlayerAttributeId),
    EntityId.QUEUE: tuple(QueueAttributeId),
    EntityId.TRACK: tuple(TrackAttributeId),
}
# Longer than one notification at MTU 23 (17 value bytes), with characters of two and three bytes.
DEFAULT_TITLE = 'Ça plane pour moi — Émilie Sørensen live à Zürich, été 2026'


def say(*fields):
    print(*fields, flush=True)


def decimal(number, places=3):
    """Decimal text with at least one digit after the point: 12.5, 0.0, 215.0."""
    text = f'{number:.{places}f}'.rstrip('0')
    return text + '0' if text.endswith('.') else text


def fitting(value, room):
    """`value` cut to `room` bytes at a UTF-8 character's start, and whether it was cut."""
    if len(value) <= room:
        return value, False
    cut = room
    while cut > 0 and value[cut] & 0xC0 == 0x80:
        cut -= 1
    return value[:cut], True


class Player:
    """What the phone plays: a queue of tracks, playing or paused, a volume.
    Values are AMS's texts; elapsed time is told as of the last change."""

    def __init__(self, title):
        self.tracks = [
            ('Émilie Sørensen', 'Nordlys', title, 215.0),
            ('The Harbour Lights', 'Quiet Water', 'Second Song', 187.5),
            ('Kōji Tanaka', 'Morning Trains', 'Platform 9', 242.25),
        ]
        self.index = 0
        self.playing = True
        self.elapsed = 12.5
        self.since = asyncio.get_running_loop().time()
        self.volume = 0.5

    def now(self):
        return asyncio.get_running_loop().time()

    def position(self):
        return self.elapsed + (self.now() - self.since if self.playing else 0.0)

    def value(self, entity, attribute):
        if entity == EntityId.PLAYER:
            state = f'{int(self.playing)},{"1.0" if self.playing else "0.0"},{decimal(self.elapsed)}'
            return {PlayerAttributeId.NAME: 'Music', PlayerAttributeId.PLAYBACK_INFO: state,
                    PlayerAttributeId.VOLUME: decimal(self.volume)}[attribute].encode()
        if entity == EntityId.QUEUE:
            return {QueueAttributeId.INDEX: str(self.index), QueueAttributeId.COUNT: str(len(self.tracks)),
                    QueueAttributeId.SHUFFLE_MODE: '0', QueueAttributeId.REPEAT_MODE: '0'}[attribute].encode()
        artist, album, title, duration = self.tracks[self.index]
        return {TrackAttributeId.ARTIST: artist, TrackAttributeId.ALBUM: album, TrackAttributeId.TITLE: title,
                TrackAttributeId.DURATION: decimal(duration)}[attribute].encode()

    def snapshot(self):
        return {(entity, attribute): self.value(entity, attribute)
                for entity, attributes in ATTRIBUTES.items() for attribute in attributes}

    def seek(self, elapsed):
        self.elapsed, self.since = elapsed, self.now()

    def change_track(self, index):
        self.index = index % len(self.tracks)
        self.seek(0.0)

    def perform(self, command):
        if command == RemoteCommandId.PLAY or (command == RemoteCommandId.TOGGLE_PLAY_PAUSE and not self.playing):
            if not self.playing:
                self.seek(self.elapsed)
                self.playing = True
        elif command in (RemoteCommandId.PAUSE, RemoteCommandId.TOGGLE_PLAY_PAUSE):
            if self.playing:
                self.seek(round(self.position(), 3))
                self.playing = False
        elif command == RemoteCommandId.NEXT_TRACK:
            self.change_track(self.index + 1)
        elif command == RemoteCommandId.PREVIOUS_TRACK:
            # As the Music app: past 3 s, back to the track's start.
            self.change_track(self.index if self.position() > 3 else self.index - 1)
        elif command == RemoteCommandId.VOLUME_UP:
            self.volume = min(1.0, self.volume + 1 / 16)
        elif command == RemoteCommandId.VOLUME_DOWN:
            self.volume = max(0.0, self.volume - 1 / 16)


class Link:
    """One accessory's AMS state on one connection."""

    def __init__(self, connection):
        self.connection = connection
        self.entity_update_on = False
        self.registrations = {}  # entity -> attribute ids, the last registration
        self.selected = None     # (entity, attribute) written to Entity Attribute
        self.read_told = False   # the selected value's read was reported


class Phone:
    """AMS and CTS on `device` (and a minimal ANCS unless `ancs` is false:
    a phone of its own provides that). `args`: title, time,
    utc_offset_minutes, record (as this program's options)."""

    def __init__(self, args, device, ancs=True):
        self.args = args
        self.device = device
        self.player = Player(args.title)
        self.links = {}  # connection handle -> Link
        # subscriptions: [characteristic, on] in order, as the accessory wrote the CCCDs
        self.record = {'commands': [], 'refused': [], 'registrations': [], 'subscriptions': []}
        self.tasks = set()
        self.ams = self.build_ams()
        if ancs:
            self.build_ancs()
        self.build_cts()

    def later(self, coroutine):
        """Runs after the current ATT response is sent (Bumble sends it in
        this step, once the write handler returns): an iPhone answers a
        write, then notifies what it caused."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def link(self, connection):
        return self.links.setdefault(connection.handle, Link(connection))

    # ANCS: present, so the accessory finds the phone; every command refused.
    def build_ancs(self):
        def refuse(_connection, _value):
            raise ATT_Error(0xA2)
        notify = Characteristic.Properties.NOTIFY
        self.device.add_service(Service(ANCS_SERVICE, [
            Characteristic(ANCS_NOTIFICATION_SOURCE, notify, Characteristic.READABLE, b''),
            Characteristic(ANCS_CONTROL_POINT, Characteristic.Properties.WRITE, Characteristic.WRITEABLE,
                           CharacteristicValue(write=refuse)),
            Characteristic(ANCS_DATA_SOURCE, notify, Characteristic.READABLE, b''),
        ]))

    # AMS: Bumble's template characteristics, given the player's behaviour.
    def build_ams(self):
        ams = Ams()

        def not_readable(_connection):
            raise ATT_Error(ATT_READ_NOT_PERMITTED)
        # Bumble's template declares Remote Command and Entity Attribute
        # write without response only; an iPhone takes (and the accessory
        # sends) writes with response.
        for characteristic in (ams.remote_command_characteristic, ams.entity_attribute_characteristic):
            characteristic.properties |= Characteristic.Properties.WRITE
        ams.remote_command_characteristic.value = CharacteristicValue(read=not_readable, write=self.on_remote_command)
        ams.entity_update_characteristic.value = CharacteristicValue(read=not_readable, write=self.on_entity_update)
        ams.entity_attribute_characteristic.value = CharacteristicValue(
            read=self.on_entity_attribute_read, write=self.on_entity_attribute_write)
        ams.remote_command_characteristic.on('subscription', self.on_remote_command_subscription)
        ams.entity_update_characteristic.on('subscription', self.on_entity_update_subscription)
        self.device.add_service(ams)
        return ams

    def subscribed(self, name, on):
        self.record['subscriptions'].append([name, bool(on)])
        self.save()

    def on_remote_command_subscription(self, connection, notify, _indicate):
        self.subscribed('remoteCommand', notify)
        if notify:
            self.later(self.device.notify_subscriber(
                connection, self.ams.remote_command_characteristic, bytes(SUPPORTED)))

    def on_entity_update_subscription(self, connection, notify, _indicate):
        self.subscribed('entityUpdate', notify)
        link = self.link(connection)
        link.entity_update_on = notify
        if not notify:
            link.registrations = {}

    def on_entity_update(self, connection, value):
        link = self.link(connection)
        if not link.entity_update_on:
            raise ATT_Error(INVALID_STATE)
        if len(value) < 2 or value[0] not in ATTRIBUTES:
            raise ATT_Error(INVALID_COMMAND)
        entity, attributes = EntityId(value[0]), bytes(value[1:])
        link.registrations[entity] = attributes
        self.record['registrations'].append({'entity': int(entity), 'attributes': list(attributes)})
        self.save()
        say('registered', int(entity), attributes.hex())
        known = [attribute for attribute in attributes if attribute < len(ATTRIBUTES[entity])]
        self.later(self.notify_updates(link, [(entity, attribute) for attribute in known]))

    def on_entity_attribute_write(self, connection, value):
        link = self.link(connection)
        if not link.entity_update_on:
            raise ATT_Error(INVALID_STATE)
        if len(value) != 2 or value[0] not in ATTRIBUTES or value[1] >= len(ATTRIBUTES[EntityId(value[0])]):
            raise ATT_Error(INVALID_COMMAND)
        link.selected = (EntityId(value[0]), value[1])
        link.read_told = False

    def on_entity_attribute_read(self, connection):
        link = self.link(connection)
        if not link.entity_update_on:
            raise ATT_Error(INVALID_STATE)
        value = self.player.value(*link.selected) if link.selected else b''
        if not value:
            raise ATT_Error(ABSENT_ATTRIBUTE)
        # Bumble asks again for each Read Blob of a long read: the read
        # after a selection is told once.
        if not link.read_told:
            link.read_told = True
            say('read', int(link.selected[0]), link.selected[1], len(value))
        return value

    def on_remote_command(self, _connection, value):
        command = value[0] if len(value) == 1 else None
        if command not in SUPPORTED:
            if len(value) == 1:
                self.record['commands'].append(value[0])
                self.record['refused'].append(value[0])
                self.save()
            say('command', value[0] if len(value) == 1 else value.hex() or '-', 'refused')
            raise ATT_Error(INVALID_COMMAND)
        before = self.player.snapshot()
        self.player.perform(RemoteCommandId(command))
        after = self.player.snapshot()
        self.record['commands'].append(command)
        self.save()
        say('command', command, 'ok')
        changed = [key for key in after if after[key] != before[key]]
        for link in list(self.links.values()):
            self.later(self.notify_updates(link, changed))

    async def notify_updates(self, link, attributes):
        """Entity Update notifications of the registered `attributes`, each
        value cut to fit one notification (flagged truncated when cut)."""
        if not link.entity_update_on or link.connection.handle not in self.device.connections:
            return
        room = link.connection.att_mtu - 3 - 3
        for entity, attribute in attributes:
            if attribute not in link.registrations.get(entity, b''):
                continue
            value, cut = fitting(self.player.value(entity, attribute), room)
            flags = EntityUpdateFlags.TRUNCATED if cut else 0
            with contextlib.suppress(Exception):
                await self.device.notify_subscriber(
                    link.connection, self.ams.entity_update_characteristic,
                    bytes([entity, attribute, flags]) + value)

    # CTS: a clock stopped at --time, in the zone --utc-offset-minutes.
    def build_cts(self):
        when = datetime.datetime.fromisoformat(self.args.time)
        current_time = struct.pack('<HBBBBBBBB', when.year, when.month, when.day, when.hour, when.minute,
                                   when.second, when.isoweekday(), 0, 0)
        local_time = struct.pack('<bB', self.args.utc_offset_minutes // 15, 0)
        time_characteristic = Characteristic(GATT_CURRENT_TIME_CHARACTERISTIC,
                                             Characteristic.Properties.READ | Characteristic.Properties.NOTIFY,
                                             Characteristic.READABLE, current_time)
        time_characteristic.on('subscription', lambda _connection, notify, _indicate: self.subscribed('currentTime', notify))
        self.device.add_service(Service(GATT_CURRENT_TIME_SERVICE, [
            time_characteristic,
            Characteristic(LOCAL_TIME_INFORMATION, Characteristic.Properties.READ, Characteristic.READABLE,
                           local_time),
        ]))

    def save(self):
        if self.args.record:
            with open(self.args.record, 'w') as output:
                json.dump(self.record, output, indent=1)


class Confirming(PairingDelegate):
    """DisplayYesNo, as an iPhone: numeric comparison, confirmed."""

    def __init__(self):
        super().__init__(io_capability=PairingDelegate.IoCapability.DISPLAY_OUTPUT_AND_YES_NO_INPUT)

    async def compare_numbers(self, number, digits):
        return True


async def main(args):
    transport = await open_transport(args.transport)
    device = Device.with_hci(args.name, hci.Address(args.address, hci.Address.RANDOM_DEVICE_ADDRESS),
                             transport.source, transport.sink)
    if args.keys:
        device.keystore = JsonKeyStore(None, args.keys)
    device.pairing_config_factory = lambda connection: PairingConfig(
        sc=True, mitm=True, bonding=True, identity_address_type=hci.AddressType.RANDOM_DEVICE, delegate=Confirming())
    await device.power_on()
    phone = Phone(args, device)
    loop = asyncio.get_running_loop()
    data = bytes(AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.LIST_OF_128_BIT_SERVICE_SOLICITATION_UUIDS, bytes(core.UUID(ANCS_SERVICE))),
        (AdvertisingData.SHORTENED_LOCAL_NAME, args.name.encode()[:8]),
    ]))

    async def advertise():
        if not device.is_advertising:
            with contextlib.suppress(Exception):
                await device.start_advertising(advertising_data=data, advertising_interval_min=100,
                                               advertising_interval_max=100)

    def on_connection(connection):
        say('connected', str(connection.peer_address).replace('/P', ''))

        def on_disconnection(_reason):
            phone.links.pop(connection.handle, None)
            say('disconnected')
            loop.create_task(advertise())
        connection.on('disconnection', on_disconnection)
    device.on('connection', on_connection)
    await advertise()

    async def stdin_closed():
        # Only a pipe (or socket) closes: from /dev/null or a terminal the
        # phone runs for --duration.
        if not stat.S_ISFIFO(os.fstat(0).st_mode) and not stat.S_ISSOCK(os.fstat(0).st_mode):
            await asyncio.Event().wait()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while await reader.readline():
            pass
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stdin_closed(), args.duration)
    phone.save()
    for connection in list(device.connections.values()):
        with contextlib.suppress(Exception):
            await asyncio.wait_for(connection.disconnect(), 2)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(transport.close(), 2)


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--transport', required=True, help='Bumble transport, e.g. tcp-client:127.0.0.1:9001')
    parser.add_argument('--address', default='F5:F5:F5:F5:F5:F5', help='random static address of the phone')
    parser.add_argument('--name', default='Bumble iPhone')
    parser.add_argument('--keys', help='bonding keys (JSON file); in memory without it')
    parser.add_argument('--title', default=DEFAULT_TITLE, help="the first track's title")
    parser.add_argument('--time', default='2026-11-28T14:53:07', help='the Current Time told (it does not run)')
    parser.add_argument('--utc-offset-minutes', type=int, default=60, help='the time zone (a multiple of 15)')
    parser.add_argument('--record', help='write the commands and registrations received to this JSON file')
    parser.add_argument('--duration', type=float, default=60.0, help='exit after this many seconds')
    parser.add_argument('--log-level', default='WARNING')
    arguments = parser.parse_args()
    logging.basicConfig(level=arguments.log_level.upper(), stream=sys.stderr)
    asyncio.run(main(arguments))
