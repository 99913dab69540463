#!/usr/bin/env python3
"""Writes the seed corpora Fuzz/corpus/<target>/ from the conformance vectors
(Tests/Vectors/conformance.json: events, commands, and the requests and
fragments of the Data Source cases), in each target's input format (see the
comment at the top of Fuzz/Targets/<target>.swift). Files are named by the
SHA-1 of their content, as libFuzzer names the inputs it adds. Existing files
are kept (inputs merged with `scripts/fuzz.sh --merge`, regression inputs).
Run from anywhere; commit the result. --out DIR writes the seeds under
DIR/<target>/ instead (to compare them with the committed ones)."""
import argparse, hashlib, json, os

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--vectors", default=os.path.join(root, "Tests", "Vectors", "conformance.json"),
                    help="the conformance vectors (default: Tests/Vectors/conformance.json)")
parser.add_argument("--out", default=os.path.join(root, "Fuzz", "corpus"),
                    help="the folder of the corpora (default: Fuzz/corpus)")
arguments = parser.parse_args()
with open(arguments.vectors, encoding="utf-8") as file:
    vectors = json.load(file)
written = {}

def write(target, data):
    folder = os.path.join(arguments.out, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
    written[target] = written.get(target, 0) + 1

notification_source = [bytes.fromhex(c["hex"]) for c in vectors["notificationSource"]]
control_point = [bytes.fromhex(c["hex"]) for c in vectors["controlPoint"]]
data_source = [(bytes.fromhex(c["request"]), [bytes.fromhex(f) for f in c["fragments"]]) for c in vectors["dataSource"]]

# notification-source, control-point: the bytes themselves.
for data in notification_source:
    write("notification-source", data)
for data in control_point:
    write("control-point", data)

# data-source: [unlimited] then ops: E0 <len> <command> registers a request,
# <n-1> <n bytes> is one notification (n <= 224), F0/F1 <i> cancel
# (response may follow / not), FC finish.
def notifications(fragments):
    out = b""
    for f in fragments:
        for i in range(0, len(f), 224):
            part = f[i:i + 224]
            out += bytes([len(part) - 1]) + part
    return out

def register(request):
    return bytes([0xE0, len(request)]) + request

for request, fragments in data_source:
    write("data-source", b"\0" + register(request) + notifications(fragments))
(gna, gna_fragments), (gaa, gaa_fragments) = data_source[1], data_source[4]
# Two requests pipelined, answered in order.
write("data-source", b"\0" + register(gna) + register(gaa) + notifications(gna_fragments + gaa_fragments))
# The first cancelled, its response still coming; then cancelled with no response following.
write("data-source", b"\0" + register(gna) + register(gaa) + b"\xf0\x00" + notifications(gna_fragments + gaa_fragments))
write("data-source", b"\0" + register(gna) + register(gaa) + b"\xf1\x00" + notifications(gaa_fragments))
# Cancelled half way through its response.
write("data-source", b"\0" + register(gna) + notifications(gna_fragments[:2]) + b"\xf0\x00" + notifications(gna_fragments[2:]))
# Session end in the middle of a response, then a new session.
write("data-source", b"\0" + register(gna) + notifications(gna_fragments[:2]) + b"\xfc" + register(gna) + notifications(gna_fragments))
# A tight unlimitedValueLength: the 19-byte AppIdentifier is too long.
write("data-source", b"\x08" + register(gna) + notifications(gna_fragments))

# data-source-parser: <len> <command>, then <n-1> <n bytes> notifications (n <= 224).
for request, fragments in data_source:
    write("data-source-parser", bytes([len(request)]) + request + notifications(fragments))
# The link dropping half way through, and trailing bytes after the response.
write("data-source-parser", bytes([len(gna)]) + gna + notifications(gna_fragments[:2]))
write("data-source-parser", bytes([len(gaa)]) + gaa + notifications([b"".join(gaa_fragments) + b"\0\1"]))

# provider: [budget, uid start] then ops (op, connection, operands):
# 0 connect, 2 subscribe (0: DS on, 1: NS on), 6 add, 3 write <len> <bytes>, 5 GNA.
setup = b"\0\0" + bytes([0, 0, 0]) + bytes([2, 0, 0]) + bytes([2, 0, 1]) + bytes([6, 0, 0x01, 1, 0x18]) + bytes([6, 0, 0x06, 6, 0x10])
for data in control_point:
    # UIDs count from 0: point the command at notification 1.
    if data[:1] in (b"\0", b"\2"):
        data = data[:1] + b"\x01\0\0\0" + data[5:]
    write("provider", setup + bytes([3, 0, len(data)]) + data)
write("provider", setup + bytes([5, 0, 7, 0, 0, 0, 1, 0x40, 0, 2, 0x0a, 0, 3, 0xff, 0xff, 4, 0, 0, 5, 0, 0, 6, 0, 0, 7, 0, 0, 1]))
# A second consumer at a larger MTU, then the first disconnects.
write("provider", setup + bytes([0, 1, 90, 2, 1, 0, 2, 1, 1, 5, 1, 1, 3, 0xff, 0xff, 0, 9, 0, 0, 7, 0, 0, 9, 0]))
write("provider", b"\x04\x01" + setup[2:] + bytes([6, 0, 0x22, 1, 0x18, 5, 0, 1, 1, 0xff, 0xff, 0]))

# consumer: [setup, unlimited] then ops: 0 linkUp, 1/2 DS/NS subscribed,
# 3 event, 4 <len> fragment, 5 write result, 6 GNA, 7 GAA, 14 NP answers.
session = b"\0\0" + bytes([0, 0, 1, 0, 2, 0])
for data in notification_source:
    write("consumer", session + b"\x03" + data.ljust(8, b"\0"))
for request, fragments in data_source:
    if request[0] == 0:
        n = request[5:]
        attrs, i = [], 0
        while i < len(n):
            if n[i] in (1, 2, 3):
                attrs.append((n[i], n[i + 1])); i += 3
            else:
                attrs.append((n[i], 0)); i += 1
        uid = request[1] % 4
        ask = bytes([6, len(attrs) - 1]) + b"".join(bytes(a) for a in attrs) + bytes([uid])
        added = b"\x03" + bytes([0, 0, 0, 1, uid, 0, 0, 0])
    else:
        ask, added = bytes([7, 0]), b""
    stream = b"".join(bytes([4, len(f)]) + f for f in fragments)
    write("consumer", session + added + ask + bytes([5, 0, 0]) + stream)
    write("consumer", session + added + ask + bytes([5, 0, 0, 14, 0]))
# Eager attributes and app names, answered by the NP; then the link drops mid-response.
eager = b"\x04\0" + bytes([0, 0, 1, 0, 2, 0, 3, 0, 0, 4, 1, 2, 0, 0, 0])
write("consumer", eager + bytes([5, 0, 0, 14, 1, 5, 1, 0, 14, 0]))
write("consumer", eager + bytes([5, 0, 0, 14, 3, 11, 0, 0, 1, 0, 2, 0]))

for target, count in sorted(written.items()):
    print(f"{target}: {count} seeds")
