#!/usr/bin/env bash
# The core's Swift files a firmware piece compiles, one per line, sorted:
#
#   scripts/embedded/sources.sh PIECE [ROOT]
#
#   all       every file of Sources/ANCS
#   consumer  what an accessory's ANCS consumer needs: no Provider, no AMS
#             (Media/) or CTS (Time/), which a firmware that links only ANCS
#             does not compile (whole-program optimization decides inlining
#             over every file it is given: extra files moved the consumer's
#             size by tens of bytes though none of their code was kept)
#   provider  the same for the Provider: no Consumer, no AMS or CTS
#   parser    Nordic's subset: no engine, no AMS or CTS
#   media     AMS and CTS with what they use of the core (identifiers, the
#             codec's values, the time and the link's types): no ANCS engine
#
# ROOT is the package root (default: this script's).
set -euo pipefail
piece=${1:?usage: $0 all|consumer|provider|parser|media [root]}
root=${2:-$(cd "$(dirname "$0")/../.." && pwd)}
files=$(find "$root/Sources/ANCS" -name '*.swift' | sort)
case $piece in
  all) echo "$files" ;;
  consumer) grep -v -e '/Provider' -e '/Media/' -e '/Time/' <<< "$files" ;;
  provider) grep -v -e '/Consumer' -e '/Media/' -e '/Time/' <<< "$files" ;;
  parser) grep -v -e '/Engines/' -e '/Media/' -e '/Time/' <<< "$files" ;;
  media) grep -e '/Identifiers/' -e '/Codec/' -e '/Engines/Timestamp.swift' -e '/Engines/ATTLink.swift' -e '/Media/' -e '/Time/' <<< "$files" ;;
  *) echo "unknown piece: $piece (all, consumer, provider, parser, media)" >&2; exit 2 ;;
esac
