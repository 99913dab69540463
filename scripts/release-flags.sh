# Sourced by scripts/install.sh and scripts/ci-bluez.sh: the flags of the
# release build of `ancs` that is installed.
#   --static-swift-stdlib  the Swift runtime and Foundation linked in, so the
#                          machine that runs it needs no Swift toolchain.
#   RELR                   where the C library can read them (glibc 2.36 and
#                          later) and the toolchain has lld: the relative
#                          relocations packed (-z pack-relative-relocs). The
#                          loader reads all of them at every start; packed,
#                          1.8 MB of the binary are no longer resident
#                          (BENCHMARKS.md, "Memory of `ancs listen` on the real bluetoothd").
release_flags=(-c release --static-swift-stdlib)
release_relr=no
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
swift_dir=$(dirname "$(readlink -f "$(command -v swift)")")
if [ -n "$glibc" ] && [ "$(printf '%s\n2.36\n' "$glibc" | sort -V | head -n 1)" = 2.36 ] && [ -x "$swift_dir/ld.lld" ]; then
  release_flags+=(-Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs)
  release_relr=yes
fi
