#!/usr/bin/env bash
# The figures of BENCHMARKS.md, "Firmware: size, RAM, instructions", as
# Markdown tables:
#   - per firmware image and architecture: flash, .data, .bss; the consumer
#     session's heap and stack peaks; instructions per Data Source response
#     on the emulated device (from firmware/run.sh's figures);
#   - on the host: instructions per response of the Data Source path on the
#     whole standard workload at MTU 23/185/517 (valgrind --tool=callgrind,
#     firmware/host/ds-instructions.swift), next to Nordic's parser
#     (BENCHMARKS.md, "Reference figures": 25 385 / 24 206 / 24 114).
#
#   firmware/measure.sh [--no-build] [--firmware-only]
#     --no-build       use the figures of the last firmware/run.sh
#     --firmware-only  skip the host (callgrind) measurement
#
# Fails if the consumer path (values as bytes, MTU 23, host) passes 12 000
# instructions per response.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/firmware
build=true host=true
for argument in "$@"; do
  case $argument in
    --no-build) build=false ;;
    --firmware-only) host=false ;;
    *) echo "usage: firmware/measure.sh [--no-build] [--firmware-only]" >&2; exit 2 ;;
  esac
done
[ -d /opt/swift/usr/bin ] && export PATH=/opt/swift/usr/bin:$PATH

if $build; then
  firmware/run.sh all > "$out.log" 2>&1 || { cat "$out.log"; echo "error: firmware/run.sh failed" >&2; exit 1; }
fi
for arch in arm riscv; do
  [ -f "$out/$arch/figures.txt" ] || { echo "error: no $out/$arch/figures.txt: run firmware/run.sh" >&2; exit 1; }
done

: > "$out/host-figures.txt"
if $host; then
  command -v valgrind >/dev/null || { echo "error: valgrind not found (apt-get install valgrind)" >&2; exit 1; }
  dir=$out/hostbench
  mkdir -p "$dir/modules"
  mapfile -t core < <(scripts/embedded/sources.sh consumer)
  # The core as a consumer's firmware compiles it (no Provider, AMS or CTS:
  # scripts/embedded/sources.sh), as its own module optimized as a release
  # build of the package would be (whole module, cross-module optimization),
  # then the program.
  swiftc -O -wmo -parse-as-library -swift-version 6 -cross-module-optimization -module-name ANCS \
    -emit-module -emit-module-path "$dir/modules/ANCS.swiftmodule" -c "${core[@]}" -o "$dir/ancs.o"
  swiftc -O -wmo -swift-version 6 -I "$dir/modules" firmware/host/ds-instructions.swift "$dir/ancs.o" -o "$dir/ds-instructions"
  workload=$out/workload
  python3 scripts/gen_ds_workload.py --out "$workload" --check >/dev/null 2>&1 ||
    python3 scripts/gen_ds_workload.py --out "$workload" >/dev/null
  checksum=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['checksum_fnv1a64'])" "$workload/ds_workload.json")
  responses=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['responses'])" "$workload/ds_workload.json")
  passes=2
  # Collect exactly countedPasses: a pattern such as '*countedPasses*' also
  # matches the closure inside it, and callgrind's toggle turns collection
  # off again inside the closure, dropping the String work.
  symbol=$(nm "$dir/ds-instructions" | awk '{print $NF}' | grep countedPasses |
    while read -r mangled; do
      case "$(swift demangle --compact "$mangled")" in *closure*|*thunk*) ;; *) echo "$mangled" ;; esac
    done | head -n 1)
  [ -n "$symbol" ] || { echo "error: no countedPasses symbol in ds-instructions" >&2; exit 1; }
  # Values taken as Strings (the key is the path) and read as bytes (path-bytes).
  for values in strings bytes; do
    modes="reassembler consumer"; [ $values = bytes ] && modes="$modes parser"
    for mode in $modes; do
      key=$mode; [ $values = bytes ] && key=$mode-bytes
      for mtu in 23 185 517; do
        collected=$(valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.$key.$mtu.out" \
          --toggle-collect="$symbol" "$dir/ds-instructions" "$workload/ds_workload_mtu$mtu.bin" "$mode" "$passes" "$checksum" "$values" 2>&1 |
          awk '/Collected :/ { print $NF }')
        [ -n "$collected" ] || { echo "error: callgrind gave no count for $key at MTU $mtu" >&2; exit 1; }
        echo "figure host $key mtu$mtu $((collected / (passes * responses)))" >> "$out/host-figures.txt"
      done
    done
  done
fi

{
  echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) CPUs; $(swiftc --version 2>&1 | head -n 1);"
  echo "         $(qemu-system-arm --version | head -n 1); $(valgrind --version 2>/dev/null || echo 'valgrind not used')"
} > "$out/machine.txt"

for arch in arm riscv; do
  python3 firmware/tools/flash-by-input.py "$out/$arch/entry.map" > "$out/$arch/entry-inputs.txt"
done

python3 - "$out" <<'PY'
import sys
out = sys.argv[1]
fig = {}
for name in ("arm/figures.txt", "riscv/figures.txt", "host-figures.txt"):
    for line in open(f"{out}/{name}"):
        parts = line.split()
        if len(parts) == 5 and parts[0] == "figure":
            fig[(parts[1], parts[2], parts[3])] = int(parts[4])
def g(arch, image, key):
    v = fig.get((arch, image, key))
    return "–" if v is None else f"{v:,}".replace(",", " ")
print(open(f"{out}/machine.txt").read().rstrip())
print()
print("Sizes as linked, in bytes (.text: code and read-only data, with .ARM.exidx on Cortex-M4; flash holds .text and the initial values of .data):")
print()
print("| image | arch | .text | .data | .bss |")
print("|---|---|---:|---:|---:|")
for image, what in (("entry", "consumer (firmware/entry/consumer-entry.swift)"), ("test", "test image (both engines, vectors, workload slice)")):
    for arch in ("arm", "riscv"):
        print(f"| {what} | {'Cortex-M4' if arch == 'arm' else 'RV32IMAC'} | {g(arch, image, 'flash_text')} | {g(arch, image, 'data')} | {g(arch, image, 'bss')} |")
print()
inputs = {}
for arch in ("arm", "riscv"):
    for line in open(f"{out}/{arch}/entry-inputs.txt"):
        name, size = line.split()
        inputs[(arch, name)] = int(size)
def part(arch, names):
    return sum(v for (a, n), v in inputs.items() if a == arch and n in names)
def b(v):
    return f"{v:,}".replace(",", " ")
print("The consumer image's flash by input (`firmware/tools/flash-by-input.py`, from the link map):")
print()
print("| input | Cortex-M4 | RV32IMAC |")
print("|---|---:|---:|")
for label, names in (("core + Swift runtime it reaches (`entry.o`)", {"entry.o"}),
                     ("libgcc (soft-float double, 64-bit division)", {"libgcc.a"}),
                     ("C runtime (`firmware/rt/runtime.c`)", {"runtime.o"}),
                     ("start-up code and vectors", {"startup-arm.o", "startup-riscv.o"}),
                     ("session driver (`firmware/entry/entry-driver.c`)", {"entry-driver.o"}),
                     ("linker-made (`<internal>`)", {"<internal>"})):
    print(f"| {label} | {b(part('arm', names))} | {b(part('riscv', names))} |")
print()
print("RAM of one consumer session at MTU 23 (heap peak: blocks with this allocator's 16-byte headers and 16-byte rounding, then the bytes asked for; stack: deepest use from the top):")
print()
print("| session | arch | heap peak | heap asked for | stack peak | instructions |")
print("|---|---|---:|---:|---:|---:|")
for image, what in (("entry", "consumer-entry.swift driven from C"), ("test", "scripted session in the test image")):
    for arch in ("arm", "riscv"):
        print(f"| {what} | {'Cortex-M4' if arch == 'arm' else 'RV32IMAC'} | {g(arch, image, 'session_heap_peak')} B | {g(arch, image, 'session_heap_requested_peak')} B | {g(arch, image, 'session_stack_peak')} B | {g(arch, image, 'session_instructions')} |")
for arch in ("arm", "riscv"):
    print(f"| worst case, microcontroller preset (`firmware/test/WorstCase.swift`; bound {g(arch, 'test', 'worstcase_heap_bound')} B) | {'Cortex-M4' if arch == 'arm' else 'RV32IMAC'} | {g(arch, 'test', 'worstcase_heap_peak')} B | {g(arch, 'test', 'worstcase_heap_requested_peak')} B | {g(arch, 'test', 'worstcase_stack_peak')} B | – |")
for arch in ("arm", "riscv"):
    print(f"| the same worst case through `ancs.h` (libancs.a; `firmware/capi/worst-case.c`) | {'Cortex-M4' if arch == 'arm' else 'RV32IMAC'} | {g(arch, 'capi', 'capi_worstcase_heap_peak')} B | {g(arch, 'capi', 'capi_worstcase_heap_requested_peak')} B | {g(arch, 'capi', 'capi_worstcase_stack_peak')} B | – |")
for arch in ("arm", "riscv"):
    print(f"| the same in storage of the caller's (`ancs_heap_use`: 8-byte headers; the storage needed, gaps included) | {'Cortex-M4' if arch == 'arm' else 'RV32IMAC'} | {g(arch, 'capi', 'capi_storage_peak')} B | – | – | – |")
for arch in ("arm", "riscv"):
    print(f"| a random phone in that storage ({g(arch, 'capi', 'capi_storage_random_seeds')} seeds × {g(arch, 'capi', 'capi_storage_random_inputs')} inputs: values of random lengths, 24 apps, refusals, cut responses, links that drop) | {'Cortex-M4' if arch == 'arm' else 'RV32IMAC'} | {g(arch, 'capi', 'capi_storage_random_peak')} B | – | – | – |")
print()
print("Heap allocations of one notification's life through `ancs.h` (added, fetched, shown, removed; its app's name already known; `firmware/capi/worst-case.c`): "
      f"{g('arm', 'capi', 'capi_steady_allocations_per_notification')} on Cortex-M4, {g('riscv', 'capi', 'capi_steady_allocations_per_notification')} on RV32IMAC; "
      f"on Cortex-M4, {g('arm', 'capi', 'capi_steady_allocations_events')} in its two Notification Source events (Added, which writes its fetch, and Removed), "
      f"{g('arm', 'capi', 'capi_steady_allocations_write_result')} in the write's result and {g('arm', 'capi', 'capi_steady_allocations_response')} in its response (reassembly, the model, READY).")
print()
nordic = {"mtu23": 25385, "mtu185": 24206, "mtu517": 24114}
n = g("arm", "test", "workload_responses")
print(f"Instructions per Data Source response (device: first {n} responses of the standard workload; host: all 1000, callgrind; the Consumer engine driven as the C API drives it), every value taken as a String unless the row says bytes (read in place, as the C API hands them to firmware); in brackets the ratio to Nordic's x86-64 figure (lower is fewer instructions; device rows compare another instruction set):")
print()
print("| path | where | MTU 23 | MTU 185 | MTU 517 |")
print("|---|---|---:|---:|---:|")
print("| Nordic `ancs_attr_parser.c` (reference) | x86-64, callgrind | 25 385 | 24 206 | 24 114 |")
rows = []
for path in ("reassembler", "consumer", "parser"):
    label = {"reassembler": "DataSourceReassembler", "consumer": "Consumer engine", "parser": "DataSourceParser (one response at a time)"}[path]
    if ("host", path, "mtu23") in fig:
        cells = []
        for m in ("mtu23", "mtu185", "mtu517"):
            v = fig[("host", path, m)]
            cells.append(f"{v:,}".replace(",", " ") + f" ({v / nordic[m]:.2f}×)")
        print(f"| {label} | x86-64, callgrind | " + " | ".join(cells) + " |")
    if ("host", path + "-bytes", "mtu23") in fig:
        cells = []
        for m in ("mtu23", "mtu185", "mtu517"):
            v = fig[("host", path + "-bytes", m)]
            cells.append(f"{v:,}".replace(",", " ") + f" ({v / nordic[m]:.2f}×)")
        print(f"| {label}, values as bytes | x86-64, callgrind | " + " | ".join(cells) + " |")
    for arch, where in (("arm", "Cortex-M4, QEMU"), ("riscv", "RV32IMAC, QEMU")):
        if path == "parser":
            continue  # host only
        cells = []
        for m in ("mtu23", "mtu185", "mtu517"):
            v = fig.get((arch, "test", f"workload_{path}_{m}"))
            cells.append("–" if v is None else f"{v:,}".replace(",", " ") + f" ({v / nordic[m]:.2f}×)")
        print(f"| {label} | {where} | " + " | ".join(cells) + " |")
print()
print("One 80-byte response (conformance vector) through the Consumer engine, instructions for its fragments:")
print()
print("| arch | 1 fragment | 4 fragments (MTU 23, emoji split) | 80 one-byte fragments |")
print("|---|---:|---:|---:|")
for arch in ("arm", "riscv"):
    print(f"| {'Cortex-M4' if arch == 'arm' else 'RV32IMAC'} | {g(arch, 'test', 'ds_1_fragment')} | {g(arch, 'test', 'ds_mtu23_fragments')} | {g(arch, 'test', 'ds_1_byte_fragments')} |")
PY

# The firmware's instruction budget: the consumer path at MTU 23, values read
# as bytes as the C API hands them over, at most 12 000 per response (host).
if $host; then
  budget=12000
  consumer=$(awk '$3 == "consumer-bytes" && $4 == "mtu23" { print $5 }' "$out/host-figures.txt")
  if [ -z "$consumer" ] || [ "$consumer" -gt "$budget" ]; then
    echo "error: the consumer path takes ${consumer:-no figure} instructions per response at MTU 23, over its budget of $budget" >&2
    exit 1
  fi
  echo
  echo "The consumer path at MTU 23: $consumer instructions per response, within its budget of $budget."
fi
