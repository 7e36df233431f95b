#!/usr/bin/env bash
# Runs every cargo-fuzz target for N seconds each (default 20): `fuzz/smoke.sh [N] [target...]`.
# Fails when the nightly toolchain or cargo-fuzz is missing (a smoke that cannot run is not a
# pass), and when a target finds a crash (the input is left under fuzz/artifacts/<target>/; copy
# it to fuzz/regressions/<target>/ and replay it from a test, see fuzz/README.md). Builds into
# FUZZ_TARGET_DIR when set (CI keeps it outside the clone), else fuzz/target.
set -u
cd "$(dirname "$0")"
secs="${1:-20}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(decode resolve whatif probe_reply netlink_dump)
fi
target_dir="${FUZZ_TARGET_DIR:-target}"
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "FAIL fuzz smoke: no nightly toolchain (rustup toolchain install nightly)"
  exit 1
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "FAIL fuzz smoke: cargo-fuzz is not installed (cargo install cargo-fuzz --locked)"
  exit 1
fi
if ! cargo +nightly fuzz build -O --target-dir "$target_dir" >/dev/null 2>build.log; then
  echo "FAIL fuzz smoke: build failed"; tail -30 build.log; exit 1
fi
rm -f build.log
status=0
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t"
  # Seed the corpus with the regression inputs (and, for decode, the example manifests).
  cp -n regressions/"$t"/* "corpus/$t/" 2>/dev/null || true
  if [ "$t" = decode ]; then
    for f in ../examples/*/cluster.yaml; do
      [ -f "$f" ] && cp -n "$f" "corpus/$t/example-$(basename "$(dirname "$f")").yaml"
    done
  fi
  log="fuzz-$t.log"
  if cargo +nightly fuzz run -O --target-dir "$target_dir" "$t" "corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 >"$log" 2>&1; then
    line=$(grep -E '^#[0-9]+' "$log" | tail -1)
    echo "ok   $t (${secs}s): $line"
  else
    echo "FAIL $t: crash or error; last lines of $log:"
    tail -25 "$log"
    status=1
  fi
done
exit $status
