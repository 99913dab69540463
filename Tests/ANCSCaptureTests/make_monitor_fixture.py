#!/usr/bin/env python3
"""Writes Fixtures/listen-nc-monitor.btsnoop: the HCI traffic of Fixtures/listen-nc.btsnoop
(an H4 capture) in BlueZ's monitor format (btsnoop datalink 2001, what `btmon -w` writes),
with what a monitor capture holds besides HCI packets, and a second controller.

Monitor records carry (controller index << 16) | opcode in the flags field. Added here:
- a System Note on no controller (index 0xFFFF) first, as btmon starts;
- New Index, Open Index and Index Info for hci0 and hci1;
- a User Logging record (bluetoothd's log) and a management (control) command and event;
- on hci1, a connection with the same handle as hci0's link (an LE Connection Complete,
  an ATT Exchange MTU both ways, a Disconnection Complete) in the middle of hci0's session,
  then Delete Index for hci1;
- an opcode newer than this reader knows (0x00FF), which is skipped like the others.
Every added record has the timestamp of the HCI record next to it, so hci0's transcript is
the same, time for time, as that of the H4 capture.

usage: python3 Tests/ANCSCaptureTests/make_monitor_fixture.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, 'Fixtures', 'listen-nc.btsnoop')
TARGET = os.path.join(HERE, 'Fixtures', 'listen-nc-monitor.btsnoop')

# Monitor opcodes (BlueZ's btsnoop/monitor documentation).
NEW_INDEX, DEL_INDEX, COMMAND, EVENT, ACL_TX, ACL_RX = 0, 1, 2, 3, 4, 5
OPEN_INDEX, INDEX_INFO, SYSTEM_NOTE, USER_LOGGING, CTRL_COMMAND, CTRL_EVENT = 8, 10, 12, 13, 16, 17
NO_INDEX = 0xFFFF


def read_h4(path):
    data = open(path, 'rb').read()
    assert data[:8] == b'btsnoop\0' and struct.unpack('>II', data[8:16]) == (1, 1002)
    offset, records = 16, []
    while offset + 24 <= len(data):
        _, included, flags, _, ts = struct.unpack('>IIIIQ', data[offset:offset + 24])
        payload = data[offset + 24:offset + 24 + included]
        offset += 24 + included
        kind, received = payload[0], flags & 1
        opcode = {1: COMMAND, 4: EVENT, 2: ACL_RX if received else ACL_TX}[kind]
        records.append((opcode, ts, payload[1:]))
    return records


def record(index, opcode, ts, payload):
    return struct.pack('>IIIIQ', len(payload), len(payload), index << 16 | opcode, 0, ts) + payload


def new_index(address):
    # Type 0 (primary controller), bus 0 (virtual), the address (little-endian), an 8-byte name.
    return bytes([0, 0]) + bytes(reversed(bytes.fromhex(address.replace(':', '')))) + b'vhci\0\0\0\0'


def main():
    source = read_h4(SOURCE)
    first = source[0][1]
    out = [b'btsnoop\0' + struct.pack('>II', 1, 2001)]
    out.append(record(NO_INDEX, SYSTEM_NOTE, first, b'Bluetooth monitor ver 5.66\0'))
    out.append(record(0, NEW_INDEX, first, new_index('C0:DE:00:00:00:01')))
    out.append(record(0, OPEN_INDEX, first, b''))
    out.append(record(0, INDEX_INFO, first, bytes(reversed(bytes.fromhex('C0DE00000001'))) + struct.pack('<H', 0x0002)))
    out.append(record(1, NEW_INDEX, first, new_index('C0:DE:00:00:00:02')))
    out.append(record(1, OPEN_INDEX, first, b''))
    middle = len(source) // 2
    for number, (opcode, ts, payload) in enumerate(source):
        if number == 3:
            ident = b'bluetoothd\0'
            out.append(record(0, USER_LOGGING, ts, bytes([6, len(ident)]) + ident + b'src/adapter.c:adapter_start() adapter /org/bluez/hci0 has been enabled\0'))
            out.append(record(NO_INDEX, CTRL_COMMAND, ts, struct.pack('<IH', 1, 0x0001)))
            out.append(record(NO_INDEX, CTRL_EVENT, ts, struct.pack('<IH', 1, 0x0001) + bytes([0])))
            out.append(record(0, 0x00FF, ts, b'a record type from the future'))
        if number == middle:
            # hci1: handle 0x0001 too, peer F1:F1:F1:F1:F1:F1, central; an MTU exchange; disconnected (0x13).
            connect = bytes([0x3E, 19, 0x01, 0x00]) + struct.pack('<H', 1) + bytes([0x00, 0x01]) \
                + bytes([0xF1] * 6) + struct.pack('<HHH', 24, 0, 42) + bytes([0])
            out.append(record(1, EVENT, ts, connect))
            att = lambda pdu: struct.pack('<HH', 0x2001, len(pdu) + 4) + struct.pack('<HH', len(pdu), 4) + pdu
            out.append(record(1, ACL_TX, ts, att(bytes([0x02]) + struct.pack('<H', 247))))
            out.append(record(1, ACL_RX, ts, att(bytes([0x03]) + struct.pack('<H', 100))))
            out.append(record(1, EVENT, ts, bytes([0x05, 4, 0x00]) + struct.pack('<H', 1) + bytes([0x13])))
            out.append(record(1, DEL_INDEX, ts, b''))
        out.append(record(0, opcode, ts, payload))
    open(TARGET, 'wb').write(b''.join(out))
    print(f'{TARGET}: {len(out) - 1} records')


if __name__ == '__main__':
    main()
