#!/usr/bin/env bash
# bench/callgrind-cases.sh BIN CASE [OUT]: callgrind instructions of one prefetch run over bench/callgrind.sh's feed:
#   b: 2,000 x 16 KiB into an empty cache; c: the same at +2h (all 304); n: again, nothing due. OUT keeps the profile.
# valgrind 3.19 cannot read the release binary's DWARF 5: pass a copy made with `strip --strip-debug`.
# Reuses bench/out/transfer/www (run bench/transfer.sh once first). A report, not a test.
set -euo pipefail
BENCH=$(cd "$(dirname "$0")" && pwd)
. "$BENCH/lib.sh"
cd "$ROOT"
bin=$1; case=$2; out=${3:-}
work=$(mktemp -d /dev/shm/small-cg.XXXXXX)
cleanup() { small_feed_stop "$work"; rm -rf "$work"; }
small_feed "$work"
export PREFETCH_MACHINE_ID=bench-transfer
run() { "$@" run --feeds "$work/feeds" --cache "$work/b" --config "$work/config.yaml" --quiet >/dev/null 2>"$work/vg.err"; }
off=
if [ "$case" != b ]; then run "$bin"; fi
[ "$case" = c ] && off=+2h
[ "$case" = n ] && off=
env PREFETCH_TRANSFER_THREADS="${T:-}" PREFETCH_CLOCK_OFFSET="$off" valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
  "$bin" run --feeds "$work/feeds" --cache "$work/b" --config "$work/config.yaml" --quiet >/dev/null 2>"$work/vg.err" || { tail "$work/vg.err"; exit 1; }
printf '%s %s %s\n' "$case" "$bin" "$(sed -n 's/.*Collected : //p' "$work/vg.err")"
[ -n "$out" ] && cp "$work/cg.out" "$out"
true
