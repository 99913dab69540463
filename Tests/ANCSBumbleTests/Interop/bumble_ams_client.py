"""Interop: Bumble's own AMS client (bumble.profiles.ams.AmsClient) and plain
GATT reads of CTS against our phone (the serve role with AMS and CTS). Every
step has a timeout; the exit status is 0 only when every step passed. One
line per step on stdout: `PASS <step> <detail>` or `FAIL <step> <reason>`,
and with --json FILE a record of what the client was told.

    python bumble_ams_client.py --transport tcp-client:127.0.0.1:PORT [--mtu 23] [--expect-title TEXT]
                                [--expect-time 2026-11-28T14:53] [--expect-utc-offset-minutes 60] [--json FILE]

AmsClient as Bumble 0.0.236 has it, and what these steps rely on:
- it writes Remote Command, Entity Update and Entity Attribute with
  response, as an iPhone takes them (Bumble's own Ams server template
  declares Remote Command and Entity Attribute write without response only);
- `start()` subscribes Remote Command, then Entity Update; the supported
  commands are told as soon as Remote Command is subscribed, so the handler
  is registered before `start()`;
- each Entity Update notification is handled in a task of its own; a
  truncated value is written to Entity Attribute and read whole there (Read
  and Read Blob), so its event comes after those of later, whole values;
  an exception in that task (a refused read, a value it cannot parse, such
  as the empty playback info, volume or duration of a phone with no player)
  is dropped with the task: no event, nothing raised to the caller (a
  failing step names it);
- its events carry no value: the value is the client's attribute of the
  same name; `supported_commands` only grows (a new list is added to it);
- `stop()` unsubscribes Entity Update with a handler it never subscribed
  (it subscribed a lambda): the Entity Update CCCD stays on (--known-bugs).
"""
import argparse
import asyncio
import contextlib
import json
import struct
import sys

from bumble import core
from bumble.device import Peer
from bumble.gatt import (
    GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR, GATT_CURRENT_TIME_CHARACTERISTIC, GATT_CURRENT_TIME_SERVICE)
from bumble.profiles.ams import AmsClient, EntityId, PlayerAttributeId, RemoteCommandId, TrackAttributeId

from interop import accessory, check, exchange_mtu, find_phone, pair, refused_unencrypted, step, tally, watch_dropped_exceptions

LOCAL_TIME_INFORMATION = core.UUID('2A0F')
record = {'titles': [], 'commands': [], 'supported': [], 'time': None, 'utcOffsetMinutes': None}


class Told:
    """AmsClient's events in order, each with the client's value at the time."""

    def __init__(self, client):
        self.events = []
        self.changed = asyncio.Event()
        values = {
            AmsClient.EVENT_SUPPORTED_COMMANDS: lambda: sorted(int(c) for c in client.supported_commands),
            AmsClient.EVENT_PLAYER_NAME: lambda: client.player_name,
            AmsClient.EVENT_PLAYER_PLAYBACK_INFO: lambda: client.player_playback_info,
            AmsClient.EVENT_PLAYER_VOLUME: lambda: client.player_volume,
            AmsClient.EVENT_TRACK_ARTIST: lambda: client.track_artist,
            AmsClient.EVENT_TRACK_ALBUM: lambda: client.track_album,
            AmsClient.EVENT_TRACK_TITLE: lambda: client.track_title,
            AmsClient.EVENT_TRACK_DURATION: lambda: client.track_duration,
        }
        for event, value in values.items():
            client.on(event, self.handler(event, value))

    def handler(self, event, value):
        def on_event():
            told = value()
            self.events.append((event, told))
            if event == AmsClient.EVENT_TRACK_TITLE:
                record['titles'].append(told)
            self.changed.set()
        return on_event

    async def next(self, start, predicate):
        """The first event from index `start` on that `predicate(event, value)`
        accepts, and the index after it."""
        index = start
        while True:
            while index < len(self.events):
                event, value = self.events[index]
                index += 1
                if predicate(event, value):
                    return value, index
            self.changed.clear()
            await self.changed.wait()


def decode_current_time(value):
    check(len(value) == 10, f'Current Time is {len(value)} bytes, not 10: {value.hex()}')
    year, month, day, hours, minutes, seconds, weekday, fractions, reason = struct.unpack('<HBBBBBBBB', value)
    return f'{year:04d}-{month:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}', weekday, fractions, reason


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--transport', required=True)
    parser.add_argument('--mtu', type=int, default=23)
    parser.add_argument('--address', default='F3:F3:F3:F3:F3:F3')
    parser.add_argument('--keys', help='bonding keys file')
    parser.add_argument('--json', help='write what the client was told to this file')
    parser.add_argument('--expect-title', help='the first track title, whole (longer than one notification)')
    parser.add_argument('--expect-time', help='a prefix of the Current Time told, e.g. 2026-11-28T14:53')
    parser.add_argument('--expect-utc-offset-minutes', type=int, help='the time zone told, in minutes')
    parser.add_argument('--known-bugs', action='store_true', help='also show AmsClient bugs (the step passes when the bug shows)')
    args = parser.parse_args()
    watch_dropped_exceptions()

    device = await accessory(args.transport, 'bumble AMS client', args.address, args.keys)

    address = await step('scan: an advertiser solicits ANCS', find_phone(device), 15)
    if address is None:
        return await finish(args)
    state = {}

    async def connect():
        state['connection'] = await device.connect(address)
        return f'{address}'
    await step('connect', connect(), 10)
    connection = state.get('connection')
    if connection is None:
        return await finish(args)
    peer = Peer(connection)

    async def discover_cts():
        services = await peer.discover_service(GATT_CURRENT_TIME_SERVICE)
        check(services, 'no Current Time service')
        characteristics = await peer.discover_characteristics(
            uuids=[GATT_CURRENT_TIME_CHARACTERISTIC, LOCAL_TIME_INFORMATION], service=services[0])
        for characteristic in characteristics:
            state['ct' if characteristic.uuid == GATT_CURRENT_TIME_CHARACTERISTIC else 'lt'] = characteristic
        check('ct' in state, 'no Current Time characteristic')
        check('lt' in state, 'no Local Time Information characteristic')
        refused = await refused_unencrypted(state['lt'].read_value(), 'read of Local Time Information')
        return f'CTS discovered unencrypted; a {refused}'
    await step('encryption required', discover_cts(), 10)

    await step('pair', pair(connection), 20)

    if args.mtu > 23:
        await step(f'exchange MTU {args.mtu}', exchange_mtu(peer, args.mtu), 10)

    async def start():
        client = await AmsClient.for_peer(peer)
        check(client is not None, 'no AMS service')
        state['client'], state['told'] = client, Told(client)
        await client.start()
        supported, _ = await state['told'].next(0, lambda event, _value: event == AmsClient.EVENT_SUPPORTED_COMMANDS)
        check(supported, 'an empty list of supported commands')
        record['supported'] = supported
        names = [RemoteCommandId(c).name for c in supported]
        return f'AMS found, Remote Command and Entity Update subscribed; supported: {", ".join(names)}'
    await step('AMS: start, supported commands told', start(), 10)
    client, told = state.get('client'), state.get('told')
    if client is None:
        return await finish(args, connection)

    async def observe():
        await client.observe(EntityId.PLAYER, [PlayerAttributeId.NAME, PlayerAttributeId.PLAYBACK_INFO,
                                                PlayerAttributeId.VOLUME])
        await client.observe(EntityId.TRACK, [TrackAttributeId.ARTIST, TrackAttributeId.ALBUM, TrackAttributeId.TITLE,
                                               TrackAttributeId.DURATION])
        return 'Player (name, playback info, volume) and Track (artist, album, title, duration) registered'
    await step('AMS: observe Player and Track', observe(), 10)

    room = connection.att_mtu - 3 - 3  # an Entity Update notification's value bytes

    async def title():
        value, state['index'] = await told.next(0, lambda event, _value: event == AmsClient.EVENT_TRACK_TITLE)
        size = len(value.encode())
        if args.expect_title is None:
            return f'“{value}” ({size} bytes; no --expect-title: not compared)'
        check(value == args.expect_title, f'title {value!r}, expected {args.expect_title!r}')
        how = 'cut by the phone, read in full' if size > room else 'not cut'
        return f'“{value}”, {size} bytes, whole ({how}: a notification carries {room} at MTU {connection.att_mtu})'
    await step('AMS: track title, whole', title(), 10)

    async def next_track():
        before = client.track_title
        await client.next_track()
        record['commands'].append(int(RemoteCommandId.NEXT_TRACK))
        value, state['index'] = await told.next(
            state.get('index', 0), lambda event, value: event == AmsClient.EVENT_TRACK_TITLE and value != before)
        return f'next track accepted; title now “{value}”'
    await step('AMS: next track', next_track(), 10)

    async def toggle():
        info, _ = await told.next(0, lambda event, _value: event == AmsClient.EVENT_PLAYER_PLAYBACK_INFO)
        before = client.player_playback_info.playback_state
        start = len(told.events)
        await client.toggle_play_pause()
        record['commands'].append(int(RemoteCommandId.TOGGLE_PLAY_PAUSE))
        info, _ = await told.next(start, lambda event, value: event == AmsClient.EVENT_PLAYER_PLAYBACK_INFO
                                  and value.playback_state != before)
        return (f'toggle play/pause accepted; {before.name} -> {info.playback_state.name} '
                f'(rate {info.playback_rate}, elapsed {info.elapsed_time})')
    await step('AMS: toggle play/pause', toggle(), 10)

    async def current_time():
        check('ct' in state and 'lt' in state, 'CTS was not discovered')
        value = bytes(await state['ct'].read_value())
        when, weekday, fractions, reason = decode_current_time(value)
        local = bytes(await state['lt'].read_value())
        check(len(local) == 2, f'Local Time Information is {len(local)} bytes, not 2: {local.hex()}')
        offset, dst = struct.unpack('<bB', local)
        record['time'], record['utcOffsetMinutes'] = when, offset * 15
        print(f'current-time {when} weekday {weekday} fractions {fractions} reason 0x{reason:02X} '
              f'utc-offset {offset * 15:+d} min dst-offset {dst}', flush=True)
        if args.expect_time is not None:
            check(when.startswith(args.expect_time), f'time {when}, expected {args.expect_time}…')
        if args.expect_utc_offset_minutes is not None:
            check(offset * 15 == args.expect_utc_offset_minutes,
                  f'UTC offset {offset * 15} min, expected {args.expect_utc_offset_minutes}')
        return f'{when}, UTC{offset * 15:+d} min (Current Time {value.hex()}, Local Time Information {local.hex()})'
    await step('CTS: Current Time and Local Time Information', current_time(), 10)

    if args.known_bugs:
        async def stop_leaves_entity_update():
            await client.stop()
            cccd = client._ams_proxy.entity_update.get_descriptor(GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR)
            value = bytes(await cccd.read_value())
            check(value == bytes([1, 0]), f'the Entity Update CCCD is {value.hex()} after stop()')
            return 'known bug shown: after stop() the Entity Update CCCD is still 0100 (notifications on)'
        await step('known bug: stop() leaves Entity Update subscribed', stop_leaves_entity_update(), 10)
    return await finish(args, connection)


async def finish(args, connection=None):
    """Disconnects, writes the record, prints the tally; the exit status."""
    if connection is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(connection.disconnect(), 5)
    if args.json:
        with open(args.json, 'w') as output:
            json.dump(record, output, indent=1, ensure_ascii=False)
    return tally()


if __name__ == '__main__':
    sys.exit(asyncio.run(main()))
