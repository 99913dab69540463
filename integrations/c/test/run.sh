#!/usr/bin/env bash
# Builds the C API for the host and runs its tests (test_ancs.c), with the
# heap counted through --wrap, three times: on the C library's posix_memalign,
# on src/ancs_posix_memalign.c, and in storage of the caller's (ancs_heap_use). Prints "capi: N passed, N failed" for each.
# Then the tests of ancs_parser.h (test_parser.c), with the same --wrap: the
# decoder, the encoders and the parser must not allocate. Prints "parser: N
# passed, N failed".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$root/.build/capi/x86_64-unknown-linux-gnu
log=$("$here/../build.sh" x86_64-unknown-linux-gnu "$out")
tables=$(sed -n 's/^UNICODE_TABLES=//p' <<< "$log")
cc -std=c11 -Wall -Wextra -Werror -O1 -g -I "$here/../include" -o "$out/test_ancs" "$here/test_ancs.c" \
  "$out/libancs.a" $tables -lm -Wl,--wrap=malloc,--wrap=free,--wrap=posix_memalign
timeout 120 "$out/test_ancs"
# Again with the posix_memalign replacement for C libraries without one
# (src/ancs_posix_memalign.c) linked in place of the C library's.
echo "-- with src/ancs_posix_memalign.c"
cc -std=c11 -Wall -Wextra -Werror -O1 -g -DANCS_TEST_POSIX_MEMALIGN -I "$here/../include" -o "$out/test_ancs_memalign" \
  "$here/test_ancs.c" "$here/../src/ancs_posix_memalign.c" \
  "$out/libancs.a" $tables -lm -Wl,--wrap=malloc,--wrap=free,--wrap=posix_memalign
timeout 120 "$out/test_ancs_memalign"
# Again with every test in storage of the caller's (ancs_heap_use): the
# library must not call the C library's heap, nor free a block of the
# storage there.
echo "-- in storage of the caller's (ancs_heap_use)"
cc -std=c11 -Wall -Wextra -Werror -O1 -g -DANCS_TEST_STORAGE -I "$here/../include" -o "$out/test_ancs_storage" \
  "$here/test_ancs.c" "$out/libancs.a" $tables -lm -Wl,--wrap=malloc,--wrap=free,--wrap=posix_memalign
timeout 120 "$out/test_ancs_storage"
# The parser API (ancs_parser.h), heap counted the same way.
echo "-- ancs_parser.h"
cc -std=c11 -Wall -Wextra -Werror -O1 -g -I "$here/../include" -o "$out/test_parser" "$here/test_parser.c" \
  "$out/libancs.a" $tables -lm -Wl,--wrap=malloc,--wrap=free,--wrap=posix_memalign
timeout 120 "$out/test_parser"
# ams.h (AMS and CTS: libancs_media.a), heap counted the same way.
echo "-- ams.h"
cc -std=c11 -Wall -Wextra -Werror -O1 -g -I "$here/../include" -o "$out/test_media" "$here/test_media.c" \
  "$out/libancs_media.a" $tables -lm -Wl,--wrap=malloc,--wrap=free,--wrap=posix_memalign
timeout 120 "$out/test_media"
