"""What the firmware test image's generators share (gen-vectors.py,
gen-media-vectors.py): Swift literals of bytes and strings, and the error
that stops a generator on a case it does not understand."""
import os
import sys


def fail(where, message):
    sys.exit("%s: %s: %s" % (os.path.basename(sys.argv[0]), where, message))


def keys(case, allowed, where):
    extra = set(case) - set(allowed)
    if extra:
        fail(where, "unknown field(s) %s" % sorted(extra))


def from_hex(text, where):
    try:
        return bytes.fromhex(text)
    except ValueError:
        fail(where, "not hex: %r" % text)


def bytes_literal(data):
    return "[" + ", ".join("0x%02x" % b for b in data) + "]"


def swift_string(text):
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= ord(ch) < 0x7F:
            out.append(ch)
        else:
            out.append("\\u{%x}" % ord(ch))
    return '"' + "".join(out) + '"'
