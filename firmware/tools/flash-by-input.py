#!/usr/bin/env python3
"""Flash bytes per input file of a firmware image, from its ld.lld map.

Flash is what the linker script puts in FLASH: .text (code and read-only
data), .ARM.exidx, and the initial values of .data. Archive members are
counted under their archive (libgcc.a, libswiftUnicodeDataTables.a).

Usage: flash-by-input.py IMAGE.map      prints "input bytes" lines, largest first
"""
import collections
import re
import sys

FLASH_SECTIONS = {".text", ".ARM.exidx", ".data"}
# VMA LMA Size Align Out/In/Symbol, the last indented by nesting depth.
LINE = re.compile(r"^\s*[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+ (\s*)(\S.*)$")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: flash-by-input.py IMAGE.map")
    sizes = collections.Counter()
    section = None
    for line in open(sys.argv[1]):
        match = LINE.match(line.rstrip("\n"))
        if not match:
            continue
        size, depth, text = int(match.group(1), 16), len(match.group(2)), match.group(3)
        if depth == 0:
            section = text.split()[0]
        elif depth == 8 and section in FLASH_SECTIONS:
            owner = re.match(r"(.*?):\(", text)
            if owner is None:
                continue  # linker-made filler and symbols assigned in the script
            name = owner.group(1).split("/")[-1]
            sizes[name.split("(")[0]] += size
    for name, size in sizes.most_common():
        print("%s %d" % (name, size))


main()
