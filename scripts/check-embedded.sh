#!/usr/bin/env bash
# Builds the protocol core with Embedded Swift for Cortex-M4 and RISC-V and
# prints its code and data size. Fails if the core uses anything Embedded
# Swift forbids (Foundation, untyped throws, existentials, reflection), or if
# a build passes its budget of text (below).
#
# The builds, per target:
#   core      every file of Sources/ANCS, as a relocatable object (all public
#             API, AMS and CTS included)
#   consumer  what an accessory links: the Consumer engine reached from
#             firmware/entry/consumer-entry.swift, dead code stripped, every
#             write and subscription taken as a success (the budget's figure)
#   consumer-all  the same entry with -D ANCS_WHOLE_CONSUMER: results read
#             from the input (the refusal paths: 0x03, 0x05, 0xFD, a refused
#             subscription), Service Changed, stop, bond lost and cancel: the
#             whole consumer a firmware links (a ceiling, below: BENCHMARKS.md
#             section 3)
#   provider  the same for the Provider engine (provider-entry.swift)
#   parser    the subset Nordic's ANCS client offers: Notification Source
#             decoding, command encoding, one Data Source response at a time
#             (DataSourceParser), no engine, no AMS or CTS (parser-entry.swift)
#   reassembler  the same with the Data Source reassembler instead (several
#             requests outstanding, abandonment, resynchronization;
#             reassembler-entry.swift)
#   ams, cts  the AMS client and the CTS client, each alone, every input and
#             result read from the caller (media-entry.swift): what an
#             accessory adds to flash for now playing, or for the phone's
#             clock
# The linked builds are whole-program, as integrations/c/build.sh makes the C
# API's object (scripts/embedded/whole-program.sh: only the entry point stays
# visible), then linked with --gc-sections. They leave libc (malloc, free, memcpy, memmove, memset)
# unresolved: their size depends on the firmware's C library.
set -euo pipefail
cd "$(dirname "$0")/.."
out=".build/embedded"
mkdir -p "$out"

size_bin=$(command -v llvm-size || ls /usr/bin/llvm-size-* 2>/dev/null | head -n 1 || true)
if [ -z "$size_bin" ]; then
  echo "error: llvm-size not found (Debian package: llvm)" >&2
  exit 1
fi
lld_bin=$(command -v ld.lld || true)

mapfile -t core < <(scripts/embedded/sources.sh all)
mapfile -t consumer_sources < <(scripts/embedded/sources.sh consumer)
mapfile -t provider_sources < <(scripts/embedded/sources.sh provider)
mapfile -t parser_sources < <(scripts/embedded/sources.sh parser)
mapfile -t media_sources < <(scripts/embedded/sources.sh media)

. scripts/embedded/targets.sh  # embedded_swift
compile() { # output target sources...
  local output=$1 target=$2; shift 2
  swiftc -target "$target" "${embedded_swift[@]}" \
    -Xfrontend -function-sections -Xcc -fdata-sections \
    -module-name ANCS -c "$@" -o "$output"
}

linked() { # name target entry sources...
  local name=$1 target=$2 entry=$3; shift 3
  local base="$out/$name-$target"
  scripts/embedded/whole-program.sh "$target" "$entry" "$base.o" -module-name ANCS "$@"
  "$lld_bin" --gc-sections -z norelro --entry="$entry" --unresolved-symbols=ignore-all -o "$base.elf" "$base.o"
  local line text
  line=$(row "$name" "$target" "$base.elf")
  echo "$line"
  text=$(awk '{ print $3 }' <<< "$line")
  local budget=${budgets[$name-$target]:-}
  if [ -n "$budget" ] && [ "$text" -gt "$budget" ]; then
    echo "error: $name on $target: $text bytes of text, over its budget of $budget" >&2
    over=true
  fi
}

# Budgets of linked text (BENCHMARKS.md section 5): the consumer an accessory
# flashes, 16 KiB; the parser subset Nordic's client offers, 4 KB; the AMS
# client, 12 KiB, and the CTS client, 5 KiB (their first figures, 11 591 and
# 4 652 bytes, rounded up: a ceiling against growth, to be lowered). The
# whole consumer (refusal paths counted) is held to 14 KiB (14 336), the
# bound issue 34 set it (BENCHMARKS.md section 3).
declare -A budgets=([consumer-armv7em-none-none-eabi]=16384 [consumer-all-armv7em-none-none-eabi]=14336
                    [parser-armv7em-none-none-eabi]=4096
                    [ams-armv7em-none-none-eabi]=12288 [cts-armv7em-none-none-eabi]=5120)
over=false

row() { # name target file
  "$size_bin" "$3" | awk -v n="$1" -v t="$2" 'NR==2 { printf "%-12s %-26s %8s %8s %8s\n", n, t, $1, $2, $3 }'
}

# The rows of one architecture; exits 3 when a build is over its budget.
measure() { # target
  local target=$1
  compile "$out/core-$target.o" "$target" "${core[@]}"
  row core "$target" "$out/core-$target.o"
  if [ -n "$lld_bin" ]; then
    linked consumer "$target" ancs_consumer_input "${consumer_sources[@]}" firmware/entry/consumer-entry.swift
    linked consumer-all "$target" ancs_consumer_input -D ANCS_WHOLE_CONSUMER "${consumer_sources[@]}" firmware/entry/consumer-entry.swift
    linked provider "$target" ancs_provider_input "${provider_sources[@]}" firmware/entry/provider-entry.swift
    linked parser "$target" ancs_parser_input "${parser_sources[@]}" firmware/entry/parser-entry.swift firmware/entry/example-command.swift
    linked reassembler "$target" ancs_reassembler_input "${parser_sources[@]}" firmware/entry/reassembler-entry.swift firmware/entry/example-command.swift
    linked ams "$target" ancs_ams_input "${media_sources[@]}" firmware/entry/media-entry.swift
    linked cts "$target" ancs_cts_input "${media_sources[@]}" firmware/entry/media-entry.swift
  fi
  if $over; then exit 3; fi
}

# Each build is one single-threaded compiler run: the two architectures are
# built side by side (one per core), their rows printed in order after.
targets=(armv7em-none-none-eabi riscv32-none-none-eabi)
pids=()
for target in "${targets[@]}"; do
  (measure "$target") > "$out/rows-$target.txt" 2> "$out/rows-$target.err" &
  pids+=($!)
done
failed=false
statuses=()
for pid in "${pids[@]}"; do
  status=0
  wait "$pid" || status=$?
  statuses+=("$status")
done
printf '%-12s %-26s %8s %8s %8s\n' build target text data bss
for index in "${!targets[@]}"; do
  cat "$out/rows-${targets[$index]}.txt"
  cat "$out/rows-${targets[$index]}.err" >&2
  case ${statuses[$index]} in
    0) ;;
    3) failed=true ;;
    *) echo "error: the ${targets[$index]} builds failed (status ${statuses[$index]})" >&2; failed=true ;;
  esac
done
if $failed; then exit 1; fi
