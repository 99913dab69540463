#!/usr/bin/env bash
# Builds the C API for the host and runs its tests (test_ancs.c), with the
# heap counted through --wrap. Prints "capi: N passed, N failed".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$root/.build/capi/x86_64-unknown-linux-gnu
log=$("$here/../build.sh" x86_64-unknown-linux-gnu "$out")
tables=$(sed -n 's/^UNICODE_TABLES=//p' <<< "$log")
cc -std=c11 -Wall -Wextra -Werror -O1 -g -I "$here/../include" -o "$out/test_ancs" "$here/test_ancs.c" \
  "$out/libancs.a" $tables -lm -Wl,--wrap=malloc,--wrap=free,--wrap=posix_memalign
timeout 120 "$out/test_ancs"
