#!/bin/sh
# Builds the binary the image ships: the release profile with the lock file as it is, then
# stripped of symbols and line tables (the release profile keeps line tables for profiling;
# stripping afterwards reuses its artifacts instead of compiling everything again under a
# profile of its own). The Dockerfile's build stage runs this, and so does .ci/run: CI compiles
# what the image ships, with the same toolchain.
#
#   sh deploy/build-binary.sh OUTPUT
set -eu
out=${1:?usage: build-binary.sh OUTPUT}
cargo build --release --locked -p agent --bin unbounded-mtu
target=${CARGO_TARGET_DIR:-target}
mkdir -p "$(dirname "$out")"
strip --strip-all -o "$out" "$target/release/unbounded-mtu"
"$out" --version
