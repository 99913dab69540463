#!/usr/bin/env python3
"""Writes the seed corpora under Fuzz/corpus/<target>/ from the conformance
vectors (../shared/vectors/conformance.json). Each file is named by the
SHA-1 of its content. Run from the repository root; commit the result."""
import hashlib, json, os, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
vectors = json.load(open(os.path.join(root, "..", "shared", "vectors", "conformance.json")))

def write(target, data):
    folder = os.path.join(root, "Fuzz", "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)

for case in vectors["notificationSource"]:
    data = bytes.fromhex(case["hex"])
    write("notification-source", data)
    # Consumer: link up, subscribe both, then this event (op 3).
    write("consumer", bytes([0, 1, 0, 162, 1, 0, 2, 0, 3]) + data.ljust(8, b"\0"))

for case in vectors["controlPoint"]:
    data = bytes.fromhex(case["hex"])
    write("control-point", data)
    # Provider: connect, subscribe, add, then this write (op 2, connection 0).
    write("provider", bytes([0, 0, 80, 1, 0, 0, 0, 4, 0, 24, 5, 0, 0, 0, 0, 0, 2, 0, len(data) % 48]) + data)

for case in vectors["dataSource"]:
    # Data Source: one GNA request asking title/message/date (choices), then the fragments.
    fragments = [bytes.fromhex(f) for f in case["fragments"]]
    body = b"".join(bytes([min(len(f), 64) - 1]) + f[:64] for f in fragments)
    write("data-source", bytes([0, 0, 3, 1, 64, 3, 64, 5, 0, 2]) + body)
    write("consumer", bytes([0, 1, 0, 162, 1, 0, 2, 0, 6, 200, 2]) + b"".join(bytes([4, len(f) % 40]) + f[:len(f) % 40] for f in fragments))
print("corpus written")
