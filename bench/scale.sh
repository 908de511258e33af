#!/usr/bin/env bash
# bench/scale.sh: the scale table of issue 20 (target 4), for each size in SIZES:
#   on bench/gen_feed.py's realistic feed (every key of SPEC §1: schedule, window,
#   conditions, sha256, size, headers, expires, ...):
#     libyaml's bare event loop over the file (bench/yaml-events.c), `validate`,
#     `plan` and `plan --json` (clock and probes pinned: --at, --assume; no cache yet);
#   on a served feed of as many resources (url + path, from a loopback nginx that answers
#   every /r/ URL with one 64-byte file, cache on tmpfs):
#     `validate`, the run that fills the cache, a `run` with nothing due, and a revalidation
#     `run` (PREFETCH_CLOCK_OFFSET 2 h further each round, refresh 1h: every answer a 304).
# Wall time (median of alternating rounds), user+sys CPU (median) and peak RSS (maximum)
# each; figures go to $RESULTS for bench/run's table, progress to stderr.
#
#   SIZES="2000 20000 100000 1000000"   resources
#   ROUNDS="2000=7 20000=5 100000=3 1000000=1"   rounds per size (others: 3)
#   BIN=path (else built as scripts/build-release does; SCRATCH, SKIP_BUILD)
#   TMPFS_DIR=/dev/shm   where the caches go
set -u -o pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$BENCH/lib.sh"
SIZES=${SIZES:-2000 20000 100000 1000000}
ROUNDS=${ROUNDS:-2000=7 20000=5 100000=3 1000000=1}
TMPFS_DIR=${TMPFS_DIR:-/dev/shm}
rounds_for() { local r; for r in $ROUNDS; do [ "${r%%=*}" = "$1" ] && { echo "${r#*=}"; return; }; done; echo 3; }

"$ROOT/scripts/setup" nginx-light time gcc libyaml-dev python3 >/dev/null || say "bench: scripts/setup could not install everything"
bin
yaml_events
WORK=$OUT/scale
mkdir -p "$WORK"
chmod 755 "$OUT" "$WORK"
BASE=$(mktemp -d "$TMPFS_DIR/prefetch-scale.XXXXXX") || die "cannot create a folder in $TMPFS_DIR"
chmod 755 "$BASE"
cleanup() { origin_stop "$BASE/origin"; rm -rf "$BASE"; }

# The origin: one 64-byte file behind every /r/ URL.
served_origin "$BASE" 8690
# A 1,000,000-resource manifest is about 230 MB: over the default max_manifest_size.
printf 'max_manifest_size: 1GiB\nconcurrency: 16\nper_host: 16\n' >"$WORK/config.yaml"
CONFIG=$WORK/config.yaml
ASSUME=(--assume network=unmetered,power=ac,free=1TiB --at 2026-11-30T03:00:00Z)
export PREFETCH_MACHINE_ID=bench-scale

for n in $SIZES; do
    rounds=$(rounds_for "$n")
    gen=$WORK/gen-$n
    if [ ! -s "$gen/feed.yaml" ] || [ "$BENCH/gen_feed.py" -nt "$gen/feed.yaml" ]; then
        say "bench: scale $n: generating $gen/feed.yaml"
        mkdir -p "$gen"
        python3 "$BENCH/gen_feed.py" --resources "$n" --seed 1 "$gen/feed.yaml" >/dev/null || die "gen_feed.py failed"
    fi
    served=$BASE/served-$n
    mkdir -p "$served/feeds"
    served_feed "$n" "$URL" "$served/feeds/scale.yaml" 1h
    result "scale.$n.gen_bytes" "$(stat -c %s "$gen/feed.yaml")"
    result "scale.$n.served_bytes" "$(stat -c %s "$served/feeds/scale.yaml")"
    "$BIN" validate --config "$CONFIG" "$gen/feed.yaml" >/dev/null 2>"$M_TMP/err" || die "scale $n: the generated feed does not validate: $(head -c 400 "$M_TMP/err")"
    say "bench: scale $n: $rounds round(s), load $(load)"
    nocache=$BASE/no-cache   # never created: plan only reads
    for ((r = 1; r <= rounds; r++)); do
        measure "scale.$n.yaml" "$YAML_EVENTS" "$gen/feed.yaml"
        measure "scale.$n.validate" "$BIN" validate --config "$CONFIG" "$gen/feed.yaml"
        [ "$M_EXIT" = 0 ] || die "scale $n: validate exited $M_EXIT: $(head -c 300 "$M_TMP/stderr")"
        measure "scale.$n.plan" "$BIN" plan --config "$CONFIG" --feeds "$gen" --cache "$nocache" "${ASSUME[@]}"
        [ "$M_EXIT" = 0 ] || die "scale $n: plan exited $M_EXIT: $(head -c 300 "$M_TMP/stderr")"
        measure "scale.$n.plan_json" "$BIN" plan --json --config "$CONFIG" --feeds "$gen" --cache "$nocache" "${ASSUME[@]}"
        [ "$M_EXIT" = 0 ] || die "scale $n: plan --json exited $M_EXIT"
        say "bench: scale $n: parse round $r/$rounds done"
    done
    for k in yaml validate plan plan_json; do close "scale.$n.$k"; done

    # The served feed: fill once (timed: the first run), then alternate a revalidation run
    # (2 h later each round: every copy older than refresh) and a run with nothing due.
    cache=$served/cache
    run=("$BIN" run --config "$CONFIG" --feeds "$served/feeds" --cache "$cache" --quiet)
    for ((r = 1; r <= rounds; r++)); do
        measure "scale.$n.validate_served" "$BIN" validate --config "$CONFIG" "$served/feeds/scale.yaml"
    done
    close "scale.$n.validate_served"
    n0=$(wc -l <"$BASE/origin/access.log")
    measure "scale.$n.fill" "${run[@]}"
    [ "$M_EXIT" = 0 ] || die "scale $n: the filling run exited $M_EXIT: $(head -c 300 "$M_TMP/stderr")"
    close "scale.$n.fill"
    files=$(find "$cache/scale" -type f -name 'f*.bin' | wc -l)
    [ "$files" = "$n" ] || die "scale $n: $files files cached after the filling run"
    for ((r = 1; r <= rounds; r++)); do
        offset="+$((2 * r))h"
        n0=$(wc -l <"$BASE/origin/access.log")
        PREFETCH_CLOCK_OFFSET=$offset measure "scale.$n.reval" "${run[@]}"
        [ "$M_EXIT" = 0 ] || die "scale $n: the revalidation run exited $M_EXIT: $(head -c 300 "$M_TMP/stderr")"
        sleep 0.2
        got=$(tail -n +"$((n0 + 1))" "$BASE/origin/access.log" | awk '$2 == 304 { k++ } END { print k + 0 }')
        [ "$got" = "$n" ] || say "bench: scale $n: the revalidation run at $offset had $got 304s, not $n"
        n0=$(wc -l <"$BASE/origin/access.log")
        PREFETCH_CLOCK_OFFSET=$offset measure "scale.$n.idle" "${run[@]}"
        [ "$M_EXIT" = 0 ] || die "scale $n: the run with nothing due exited $M_EXIT"
        sleep 0.2
        got=$(tail -n +"$((n0 + 1))" "$BASE/origin/access.log" | wc -l)
        [ "$got" = 0 ] || say "bench: scale $n: the run with nothing due made $got requests"
        say "bench: scale $n: run round $r/$rounds done"
    done
    close "scale.$n.reval"; close "scale.$n.idle"
    rm -rf "$served"
    : >"$BASE/origin/access.log"   # nginx keeps appending to the same (emptied) file
done
result scale.sizes "$(echo $SIZES | tr ' ' ,)"
exit 0
