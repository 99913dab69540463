#!/usr/bin/env bash
# Builds the package and the examples as on a platform without Linux (macOS),
# on this Linux machine: a copy of the sources in which `#if os(Linux)` and
# `defined(__linux__)` are false and the `.when(platforms: [.linux])`
# dependencies are dropped. So the BlueZ and D-Bus guards are checked
# without a Mac: the core, runtime, simulation, Bumble, captures and the
# CLI must build without ANCSDBus, ANCSBlueZ and ANCSDesktop, and the CLI's
# stand-ins (Sources/ancs/WithoutLinux.swift) must compile. It does not
# catch a use of a Linux-only API of Glibc or Foundation.
set -euo pipefail
cd "$(dirname "$0")/.."
copy=.build/non-linux/src
rm -rf "$copy"
mkdir -p "$copy"
git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$copy"
cd "$copy"
grep -rlZ 'os(Linux)' Sources Tests Examples | xargs -0 sed -i 's/os(Linux)/false/g'
sed -i 's/defined(__linux__)/0/' Sources/CDBus/CDBus.c Sources/CDBus/include/CDBus.h
# A platform this build never is: the dependency is not linked.
sed -i 's/\.when(platforms: \[\.linux\])/.when(platforms: [.windows])/g' Package.swift Examples/Package.swift
swift build --build-tests --scratch-path ../build
(cd Examples && swift build --scratch-path ../../examples-build)
out=$(../build/debug/ancs doctor 2>&1 || true)
echo "$out"
grep -q "Linux only" <<< "$out" || { echo "non-linux: doctor does not say it needs Linux"; exit 1; }
out=$(../build/debug/ancs listen --stack bluez </dev/null 2>&1 || true)
echo "$out"
grep -q "Linux only" <<< "$out" || { echo "non-linux: listen --stack bluez does not say it needs Linux"; exit 1; }
echo "non-linux: the package and the examples build without the Linux-only modules"
