#!/usr/bin/env python3
"""The standard Data Source workload: Get Notification Attributes responses,
cut into Data Source notifications at several ATT MTUs, and a manifest with
the checksum of every value, so a benchmark proves it decoded each value.

    scripts/gen_ds_workload.py --out .build/bench-workload           write it
    scripts/gen_ds_workload.py --out .build/bench-workload --check   compare it

Options: --seed N (default 0x414E4353), --count N responses (default 1000),
--mtu 23,185,517 (each in 23...517). The same seed and count give the same
bytes on any Python 3: the random numbers come from SplitMix64, written out
here, not from Python's `random`.

Each response (ANCS "Data Source"; all integers little-endian):

    u8 CommandID 0, u32 NotificationUID, then five tuples
    u8 AttributeID, u16 Length, Length bytes of the value:
      0 AppIdentifier  10..30 bytes, "com." then lower-case letters, dots
                       and reverse-DNS parts, never ending in a dot
      1 Title          5..40 bytes; a third of the titles mix in names and
                       words of 2-, 3- and 4-byte UTF-8
      2 Subtitle       0..20 bytes (0: an empty value, Length 0)
      3 Message        20..1000 bytes, words, names, punctuation and
                       2-, 3- and 4-byte UTF-8
      5 Date           15 bytes, yyyyMMdd'T'HHmmSS

Lengths count bytes. Every value is valid UTF-8: a value is built from
whole words, and where the next word would not fit it is padded to its
length with lower-case ASCII letters, so no character is ever cut. The
NotificationUIDs are distinct.

Files written in the output folder:

  ds_workload_mtu<MTU>.bin, one per MTU: a run of records,
      u8 0, u32 NotificationUID          a response starts (the consumer
                                         has just asked for it)
      u8 1, u16 length, length bytes     one Data Source notification
    each response cut into notifications of MTU - 3 bytes, the last shorter.
  ds_workload.json, the manifest: the counts, the response and value
    bytes, each file's size, notification count and SHA-256, the first
    response as text, and checksum_fnv1a64: FNV-1a 64 (offset basis
    0xcbf29ce484222325, prime 0x100000001b3) over every tuple of every
    response in order, each as u32 NotificationUID, u8 AttributeID,
    u16 Length and the value's bytes. A consumer that folds each value it
    decodes into the same hash must end with the same number.
"""
import argparse
import hashlib
import json
import os
import struct
import sys

FORMAT_NAME = "gen_ds_workload.py"  # the manifest's "generator" field
FORMAT_VERSION = 1
STANDARD_SEED = 0x414E4353  # "ANCS" in ASCII
STANDARD_MTUS = (23, 185, 517)
ALL_64 = 0xFFFF_FFFF_FFFF_FFFF

# The material values are made of. Order matters: a value is chosen by its
# index, so changing any list changes the workload.
LETTERS = "abcdefghijklmnopqrstuvwxyz"
DNS_PARTS = ["com.", "org.", "net.", "io."]
WORDS = """
    the meeting is moved to tomorrow please bring your notes we should
    talk about the new release call me when you land dinner at eight
    your package has shipped battery low reminder update available
    photo shared with you lunch ok sounds good see you soon thanks
    running late traffic is bad did you see the game tonight
""".split()
# 2-byte (Latin, Greek, Cyrillic), 3-byte (CJK, Hangul, punctuation) and
# 4-byte (emoji) UTF-8.
UNICODE_PIECES = ["é", "ü", "ñ", "ø", "ß", "ł", "Ж", "Ω", "ç", "å",
                  "日本語", "中文", "한국어", "€", "…", "—", "こんにちは", "ありがとう",
                  "😀", "🎉", "👍", "🚀", "🙂", "🔥"]
PLAIN_NAMES = ["Alice", "Bob", "Carol", "Dave", "Eve", "Mallory", "Team",
               "Calendar", "Mail", "Messages", "Weather", "Bank"]
UNICODE_NAMES = ["Zoë", "José", "Łukasz", "Björn", "Ågot", "Сергей", "Ελένη",
                 "山田太郎", "김민준", "Renée", "François", "Müller"]
SEPARATORS = [" ", " ", " ", ", ", ". ", "! "]

CHECKSUM_TEXT = ("FNV-1a 64 over u32le uid, u8 attr id, u16le len, value bytes; "
                 "every tuple of every response in order")


class SplitMix64:
    """Steele, Lea and Flood's SplitMix64: one 64-bit state, one output per step."""

    def __init__(self, seed):
        self.state = seed & ALL_64

    def next64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & ALL_64
        x = self.state
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & ALL_64
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & ALL_64
        return x ^ (x >> 31)

    def index(self, n):
        """0 ..< n (by remainder: the workload is defined this way)."""
        return self.next64() % n

    def inclusive(self, low, high):
        return low + self.index(high - low + 1)

    def choose(self, items):
        return items[self.index(len(items))]

    def odds(self, hits, out_of):
        """True `hits` times in `out_of`."""
        return self.index(out_of) < hits


def exactly(random, size, next_piece):
    """UTF-8 bytes of exactly `size`: pieces while they fit, then letters."""
    value = bytearray()
    while len(value) < size:
        piece = next_piece().encode()
        if len(value) + len(piece) > size:
            while len(value) < size:
                value += random.choose(LETTERS).encode()
            break
        value += piece
    return bytes(value)


def make_app_identifier(random):
    size = random.inclusive(10, 30)

    def piece():
        if random.odds(1, 8):
            return random.choose(DNS_PARTS)
        return random.choose(LETTERS + ".")

    value = bytearray(b"com." + exactly(random, size - 4, piece))
    value[-1] = ord(random.choose(LETTERS))
    return bytes(value)


def make_title(random):
    size = random.inclusive(5, 40)
    unicode = random.odds(1, 3)

    def piece():
        roll = random.index(10)
        if roll < 3:
            return random.choose(UNICODE_NAMES if unicode else PLAIN_NAMES)
        if roll == 3 and unicode:
            return random.choose(UNICODE_PIECES)
        return random.choose(WORDS) + " "

    return exactly(random, size, piece)


def make_subtitle(random):
    size = random.inclusive(0, 20)

    def piece():
        if random.odds(1, 6):
            return random.choose(UNICODE_PIECES)
        return random.choose(WORDS) + " "

    return exactly(random, size, piece)


def make_message(random):
    size = random.inclusive(20, 1000)
    names = UNICODE_NAMES + PLAIN_NAMES

    def piece():
        roll = random.index(10)
        if roll < 3:
            return random.choose(UNICODE_PIECES)
        if roll == 3:
            return random.choose(names) + " "
        word = random.choose(WORDS)
        return word + random.choose(SEPARATORS)

    return exactly(random, size, piece)


def make_date(random):
    fields = [random.inclusive(2019, 2030), random.inclusive(1, 12), random.inclusive(1, 28),
              random.inclusive(0, 23), random.inclusive(0, 59), random.inclusive(0, 59)]
    text = "%04d%02d%02dT%02d%02d%02d" % tuple(fields)
    return text.encode()


# (AttributeID, maker), in the order every response carries them.
ATTRIBUTES = [(0, make_app_identifier), (1, make_title), (2, make_subtitle),
              (3, make_message), (5, make_date)]


class Response:
    def __init__(self, uid, tuples):
        self.uid = uid
        self.tuples = tuples  # [(AttributeID, value bytes)]

    def wire(self):
        out = bytearray(struct.pack("<BI", 0, self.uid))
        for attribute, value in self.tuples:
            out += struct.pack("<BH", attribute, len(value))
            out += value
        return bytes(out)


def make_responses(seed, count):
    random = SplitMix64(seed)
    responses, used = [], set()
    for _ in range(count):
        uid = random.next64() & 0xFFFFFFFF
        while uid in used:
            uid = random.next64() & 0xFFFFFFFF
        used.add(uid)
        tuples = []
        for attribute, make in ATTRIBUTES:
            value = make(random)
            value.decode("utf-8")  # raises if a value is not UTF-8
            tuples.append((attribute, value))
        responses.append(Response(uid, tuples))
    return responses


def fnv1a64(responses):
    digest = 0xCBF29CE484222325
    for response in responses:
        for attribute, value in response.tuples:
            for byte in struct.pack("<IBH", response.uid, attribute, len(value)) + value:
                digest = ((digest ^ byte) * 0x100000001B3) & ALL_64
    return digest


def records(wires, mtu):
    """The .bin file for one MTU, and its number of notifications."""
    payload = mtu - 3
    out, notifications = bytearray(), 0
    for uid, wire in wires:
        out += struct.pack("<BI", 0, uid)
        for start in range(0, len(wire), payload):
            piece = wire[start:start + payload]
            out += struct.pack("<BH", 1, len(piece))
            out += piece
            notifications += 1
    return bytes(out), notifications


def workload(seed, count, mtus):
    """{file name: bytes} for every file of the workload, the manifest's included."""
    responses = make_responses(seed, count)
    wires = [(response.uid, response.wire()) for response in responses]
    files, per_mtu = {}, {}
    for mtu in mtus:
        data, notifications = records(wires, mtu)
        name = "ds_workload_mtu%d.bin" % mtu
        files[name] = data
        per_mtu[str(mtu)] = {
            "file": name,
            "fragment_payload": mtu - 3,
            "fragments": notifications,
            "file_bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    values = [value for response in responses for _, value in response.tuples]
    first = responses[0]
    manifest = {
        "generator": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "seed": seed,
        "responses": count,
        "attributes_per_response": [attribute for attribute, _ in ATTRIBUTES],
        "response_bytes": sum(len(wire) for _, wire in wires),
        "attribute_value_bytes": sum(len(value) for value in values),
        "attributes_with_non_ascii": sum(1 for value in values if max(value, default=0) >= 0x80),
        "checksum_fnv1a64": "0x%016x" % fnv1a64(responses),
        "checksum_definition": CHECKSUM_TEXT,
        "mtus": per_mtu,
        "sample_first_response": {
            "uid": first.uid,
            "attributes": {str(attribute): value.decode("utf-8") for attribute, value in first.tuples},
        },
    }
    files["ds_workload.json"] = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    return files, manifest


def compare(folder, files):
    """The names of the files in `folder` that differ from `files` (or are missing)."""
    differing = []
    for name, data in files.items():
        try:
            with open(os.path.join(folder, name), "rb") as file:
                if file.read() != data:
                    differing.append(name)
        except OSError:
            differing.append(name + " (missing)")
    return differing


def main(arguments=None):
    parser = argparse.ArgumentParser(
        description="The standard ANCS Data Source workload (see the comment at the top of this file).")
    parser.add_argument("--out", default=".", help="the output folder (default: the current one)")
    parser.add_argument("--seed", type=lambda text: int(text, 0), default=STANDARD_SEED,
                        help="the random seed (default: 0x414E4353)")
    parser.add_argument("--count", type=int, default=1000, help="responses (default: 1000)")
    parser.add_argument("--mtu", default=",".join(map(str, STANDARD_MTUS)),
                        help="ATT MTUs, comma-separated (default: 23,185,517)")
    parser.add_argument("--check", action="store_true",
                        help="compare the files in --out with the workload, byte for byte; write nothing")
    options = parser.parse_args(arguments)
    try:
        mtus = [int(text) for text in options.mtu.split(",")]
    except ValueError:
        parser.error("--mtu takes ATT MTUs separated by commas, such as 23,185,517")
    if not all(23 <= mtu <= 517 for mtu in mtus):
        parser.error("an ATT MTU is between 23 and 517")
    if options.count < 1:
        parser.error("--count must be at least 1")

    files, manifest = workload(options.seed, options.count, mtus)
    if options.check:
        differing = compare(options.out, files)
        if differing:
            print("MISMATCH: " + ", ".join(differing))
            return 1
        print("OK")
        return 0

    os.makedirs(options.out, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(options.out, name), "wb") as file:
            file.write(data)
    print("%d responses, %d response bytes, checksum %s -> %s"
          % (options.count, manifest["response_bytes"], manifest["checksum_fnv1a64"], options.out))
    for mtu, entry in manifest["mtus"].items():
        print("  MTU %s: %d fragments, %s (%d B)" % (mtu, entry["fragments"], entry["file"], entry["file_bytes"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
