#!/usr/bin/env bash
# bench/compare.sh: scale.sh's rows at one size for two (or more) binaries, in alternating
# rounds (the order flips each round), so that a change is told from the machine's drift:
#   on bench/gen_feed.py's feed: `validate`, `plan`, `plan --json`;
#   on a served feed: `validate`, a revalidation `run` (every answer a 304) and a `run` with
#   nothing due, each binary over its own cache (filled once, before the rounds).
# Prints per row and binary the median wall time, the median user+sys CPU and the median and
# largest peak RSS, with the ratio to the first binary; figures also go to $RESULTS.
#
#   BINS="before=/tmp/bins/before after=/tmp/bins/after" N=100000 ROUNDS=9 bench/compare.sh
#   TMPFS_DIR=/dev/shm   where the caches go
set -u -o pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$BENCH/lib.sh"
BINS=${BINS:?BINS="name=path name=path"}
N=${N:-100000}
ROUNDS=${ROUNDS:-9}
TMPFS_DIR=${TMPFS_DIR:-/dev/shm}
RESULTS=${RESULTS:-$OUT/compare.txt}
mkdir -p "$OUT"
: >"$RESULTS"

"$ROOT/scripts/setup" nginx-light time python3 >/dev/null || say "bench: scripts/setup could not install everything"
names=()
declare -A PATHS
for pair in $BINS; do
    names+=("${pair%%=*}")
    PATHS[${pair%%=*}]=${pair#*=}
    [ -x "${pair#*=}" ] || die "${pair#*=} is not an executable"
done
WORK=$OUT/scale
mkdir -p "$WORK"
BASE=$(mktemp -d "$TMPFS_DIR/prefetch-compare.XXXXXX") || die "cannot create a folder in $TMPFS_DIR"
chmod 755 "$BASE"
cleanup() { origin_stop "$BASE/origin"; rm -rf "$BASE"; }
served_origin "$BASE" 8790
printf 'max_manifest_size: 1GiB\nconcurrency: 16\nper_host: 16\n' >"$WORK/compare-config.yaml"
CONFIG=$WORK/compare-config.yaml
ASSUME=(--assume network=unmetered,power=ac,free=1TiB --at 2026-11-30T03:00:00Z)
export PREFETCH_MACHINE_ID=bench-scale

gen=$WORK/gen-$N
if [ ! -s "$gen/feed.yaml" ] || [ "$BENCH/gen_feed.py" -nt "$gen/feed.yaml" ]; then
    mkdir -p "$gen"
    python3 "$BENCH/gen_feed.py" --resources "$N" --seed 1 "$gen/feed.yaml" >/dev/null || die "gen_feed.py failed"
fi
mkdir -p "$BASE/feeds"
served_feed "$N" "$URL" "$BASE/feeds/scale.yaml" 1h
nocache=$BASE/no-cache
for name in "${names[@]}"; do
    bin=${PATHS[$name]}
    "$bin" run --config "$CONFIG" --feeds "$BASE/feeds" --cache "$BASE/cache-$name" --quiet >/dev/null 2>&1 ||
        die "$name: the filling run failed"
done

declare -A RSS_ALL
# check WHAT: the run just measured succeeded; its peak RSS is kept with its key's samples.
check() {
    [ "$M_EXIT" = 0 ] || die "$1 exited $M_EXIT: $(head -c 300 "$M_TMP/stderr")"
    RSS_ALL[$LAST]+="$M_RSS "
}
m() { LAST=$1; measure "$@"; }
for ((r = 1; r <= ROUNDS; r++)); do
    order=("${names[@]}")
    if ((r % 2 == 0)); then order=(); for ((i = ${#names[@]} - 1; i >= 0; i--)); do order+=("${names[$i]}"); done; fi
    for name in "${order[@]}"; do
        bin=${PATHS[$name]}
        m "$name.validate" "$bin" validate --config "$CONFIG" "$gen/feed.yaml"; check "$name validate"
        m "$name.plan" "$bin" plan --config "$CONFIG" --feeds "$gen" --cache "$nocache" "${ASSUME[@]}"; check "$name plan"
        m "$name.plan_json" "$bin" plan --json --config "$CONFIG" --feeds "$gen" --cache "$nocache" "${ASSUME[@]}"; check "$name plan --json"
        m "$name.validate_served" "$bin" validate --config "$CONFIG" "$BASE/feeds/scale.yaml"; check "$name validate (served)"
        run=("$bin" run --config "$CONFIG" --feeds "$BASE/feeds" --cache "$BASE/cache-$name" --quiet)
        PREFETCH_CLOCK_OFFSET="+$((2 * r))h" m "$name.reval" "${run[@]}"; check "$name revalidation run"
        PREFETCH_CLOCK_OFFSET="+$((2 * r))h" m "$name.idle" "${run[@]}"; check "$name run with nothing due"
    done
    say "bench: compare $N: round $r/$ROUNDS done, load $(load)"
done

printf '| row | binary | wall s (median) | CPU s (median) | peak RSS KiB (median) | (largest) | RSS / %s |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n' "${names[0]}"
for row in validate plan plan_json validate_served reval idle; do
    first=""
    for name in "${names[@]}"; do
        key=$name.$row
        wall=$(printf '%s\n' ${SAMPLES_T[$key]} | median)
        cpu=$(printf '%s\n' ${SAMPLES_C[$key]} | median)
        rss=$(printf '%s\n' ${RSS_ALL[$key]} | median)
        [ -n "$first" ] || first=$rss
        printf '| %s | %s | %.3f | %.3f | %d | %d | %.3f |\n' "$row" "$name" "$wall" "$cpu" "${rss%.*}" "${PEAK[$key]}" \
            "$(awk -v a="$rss" -v b="$first" 'BEGIN { print a / b }')"
        result "$key.wall" "$wall"; result "$key.cpu" "$cpu"; result "$key.rss_median" "$rss"; result "$key.rss_max" "${PEAK[$key]}"
    done
done
