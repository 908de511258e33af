#!/usr/bin/env bash
# bench/callgrind.sh: instructions prefetch executes for transfer.sh's (b) (2,000 small
# files from a loopback nginx into an empty cache), counted by valgrind's callgrind over
# the whole process and every thread. Counted instructions, unlike wall time, do not move
# with the load of a shared machine: use it to tell a real cost from noise when comparing
# binaries (this VM has no hardware counters for `perf stat`). A report, not a test.
#
#   BINS="path path ..."  the prefetch binaries to count, one after another
#   T=2                   PREFETCH_TRANSFER_THREADS (empty: prefetch decides)
#
# Reuses bench/out/transfer/www (run bench/transfer.sh once first). About 8 s per binary.
set -euo pipefail
BENCH=$(cd "$(dirname "$0")" && pwd)
. "$BENCH/lib.sh"
cd "$ROOT"
[ -n "${BINS:-}" ] || { echo "bench/callgrind.sh: set BINS to the binaries to count" >&2; exit 2; }
command -v valgrind >/dev/null && command -v nginx >/dev/null || scripts/setup valgrind nginx-light
work=$(mktemp -d /dev/shm/prefetch-callgrind.XXXXXX)
cleanup() { small_feed_stop "$work"; rm -rf "$work"; }
small_feed "$work"
echo "instructions for (b), threads: ${T:-auto}"
for bin in $BINS; do
    rm -rf "$work/b"
    env PREFETCH_TRANSFER_THREADS="${T:-}" valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" \
        "$bin" run --feeds "$work/feeds" --cache "$work/b" --config "$work/config.yaml" --quiet >/dev/null 2>"$work/vg.err" ||
        { echo "bench/callgrind.sh: $bin failed: $(tail -3 "$work/vg.err")" >&2; exit 1; }
    printf '%-50s %s\n' "$bin" "$(sed -n 's/.*Collected : //p' "$work/vg.err")"
    [ -n "${KEEP:-}" ] && cp "$work/cg.out" "$KEEP.$(basename "$(dirname "$(dirname "$bin")")")"
done
