#!/usr/bin/env bash
# bench/fleet.sh: one `run` over 50,000 resources of 256 B, 5 % failing once with a 500 and
# 1 % for good with a 404, both with a small body on a kept-alive connection (issue 20,
# targets 4 and 5; the same origin and feed as scripts/reliability's `fleet` row:
# scripts/faulty-origin, seeded). Reported: wall, CPU and peak RSS of the run, and the
# connections the origin accepted per 1,000 requests (its own count, GET /stats).
#
#   FILES=50000  SEED=1  BIN=path (else built as scripts/build-release does)
#   TMPFS_DIR=/dev/shm   where the cache goes
set -u -o pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$BENCH/lib.sh"
FILES=${FILES:-50000}
SEED=${SEED:-1}
TMPFS_DIR=${TMPFS_DIR:-/dev/shm}
"$ROOT/scripts/setup" python3 time curl >/dev/null || say "bench: scripts/setup could not install everything"
bin
BASE=$(mktemp -d "$TMPFS_DIR/prefetch-fleet.XXXXXX") || die "cannot create a folder in $TMPFS_DIR"
ORIGIN_PID=
cleanup() { [ -n "$ORIGIN_PID" ] && kill "$ORIGIN_PID" 2>/dev/null; rm -rf "$BASE"; }
mkdir -p "$BASE/feeds"
PORT=$(free_port 8590)
ORIGIN=(python3 "$ROOT/scripts/faulty-origin" --port "$PORT" --files "$FILES" --size 256 --transient 5 --permanent 1 --seed "$SEED")
"${ORIGIN[@]}" --feed-head 'retry: { attempts: 3, backoff: 2s, max_backoff: 4s }\nlimits: { concurrency: 16 }\n' \
    --write-manifest "$BASE/feeds/fleet.yaml" >"$BASE/classes.json" || die "faulty-origin could not write the manifest"
"${ORIGIN[@]}" 2>"$BASE/origin.log" &
ORIGIN_PID=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
printf 'concurrency: 16\nper_host: 16\n' >"$BASE/config.yaml"
say "bench: fleet: $FILES resources, load $(load)"
export PREFETCH_MACHINE_ID=bench-fleet
measure fleet.run "$BIN" run --json --config "$BASE/config.yaml" --feeds "$BASE/feeds" --cache "$BASE/cache"
status=$M_EXIT
stats=$(curl -s "http://127.0.0.1:$PORT/stats")
read -r conns requests < <(python3 -c 'import json, sys; s = json.loads(sys.argv[1]); print(s["connections"], s["requests"])' "$stats")
permanent=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["permanent"])' "$BASE/classes.json")
placed=$(find "$BASE/cache/fleet" -type f -name '*.bin' | wc -l)
[ "$placed" = $((FILES - permanent)) ] || say "bench: fleet: $placed files placed, expected $((FILES - permanent))"
[ "$status" = 1 ] || say "bench: fleet: the run exited $status, expected 1 (the permanent failures)"
close fleet.run
result fleet.files "$FILES"
result fleet.exit "$status"
result fleet.placed "$placed"
result fleet.connections "$conns"
result fleet.requests "$requests"
result fleet.conns_per_1000 "$(awk -v c="$conns" -v r="$requests" 'BEGIN { printf "%.1f", r ? c * 1000 / r : 0 }')"
say "bench: fleet: exit $status, $placed placed, $conns connections for $requests requests"
exit 0
