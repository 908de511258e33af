#!/usr/bin/env bash
# Benchmark: what `prefetch plan` adds on top of parsing. Times `validate`, `plan`
# and `plan --json` on the same input — one feed of 100,000 resources, and 200 feeds
# of 500 — and reports medians, peak RSS and plan/validate ratios. Target: planning
# adds less than 50% on top of parsing. A report: exits 0 once it has figures.
#
# Environment: RUNS=7 (timed runs after a warm-up), SCRATCH=DIR (swift build
# --scratch-path), SKIP_BUILD=1 (use the release binary as built), SEED=1.
set -u -o pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
OUT="$BENCH/out"
RUNS=${RUNS:-7}
SEED=${SEED:-1}
say() { printf '%s\n' "$*" >&2; }

[ -x /usr/bin/time ] || { apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq time >/dev/null 2>&1; }
SWIFT_ARGS=(-c release --static-swift-stdlib --toolset "$ROOT/scripts/release-toolset.json")  # as scripts/build-release
[ -n "${SCRATCH:-}" ] && SWIFT_ARGS+=(--scratch-path "$SCRATCH")
cd "$ROOT" || exit 1
[ -n "${SKIP_BUILD:-}" ] || swift build "${SWIFT_ARGS[@]}" >/dev/null 2>&1 || { say "bench: release build failed"; exit 1; }
BIN="$(swift build "${SWIFT_ARGS[@]}" --show-bin-path)/prefetch"

mkdir -p "$OUT"
ONE="$OUT/plan-one"; MANY="$OUT/plan-many"
if [ ! -s "$ONE/feed.yaml" ] || [ "$BENCH/gen_feed.py" -nt "$ONE/feed.yaml" ]; then
    mkdir -p "$ONE"
    python3 "$BENCH/gen_feed.py" --seed "$SEED" "$ONE/feed.yaml" >/dev/null
    python3 "$BENCH/gen_feed.py" --seed "$SEED" --feeds 200 --resources 500 "$MANY" >/dev/null
fi
CACHE=$(mktemp -d)/cache   # never created: plan only reads
# Pin the probes and the clock so every run plans the same thing.
ASSUME=(--assume network=unmetered,power=ac,free=1TiB --at 2026-11-30T03:00:00Z)

# median_of CMD...: RUNS timed runs after a warm-up; prints "MEDIAN_S MAX_RSS_MB".
median_of() {
    "$@" >/dev/null 2>&1 || { say "bench: failed: $*"; echo "nan nan"; return; }
    local times=() rss_max=0 i t0 t1 rss
    for ((i = 0; i < RUNS; i++)); do
        t0=$(date +%s%N)
        /usr/bin/time -f '%M' -o "$OUT/.rss" "$@" >/dev/null 2>&1
        t1=$(date +%s%N)
        times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')")
        rss=$(tail -n 1 "$OUT/.rss"); [ "$rss" -gt "$rss_max" ] && rss_max=$rss
    done
    printf '%s %s\n' "$(printf '%s\n' "${times[@]}" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')" \
        "$(awk -v k="$rss_max" 'BEGIN { printf "%.0f", k / 1024 }')"
}

verdicts=()
report() {  # report TITLE FEEDS
    local title=$1 feeds=$2 v p j
    say "bench: $title"
    read -r v_t v_m < <(median_of "$BIN" validate "$feeds")
    read -r p_t p_m < <(median_of "$BIN" plan --feeds "$feeds" --cache "$CACHE" "${ASSUME[@]}")
    read -r j_t j_m < <(median_of "$BIN" plan --json --feeds "$feeds" --cache "$CACHE" "${ASSUME[@]}")
    printf '\n%-38s %9s %12s %14s\n' "$title" "median s" "peak RSS MB" "vs validate"
    printf '%-38s %9s %12s %14s\n' "prefetch validate" "$v_t" "$v_m" "1.00"
    printf '%-38s %9s %12s %14s\n' "prefetch plan" "$p_t" "$p_m" "$(awk -v a="$p_t" -v b="$v_t" 'BEGIN { printf "%.2f", a / b }')"
    printf '%-38s %9s %12s %14s\n' "prefetch plan --json" "$j_t" "$j_m" "$(awk -v a="$j_t" -v b="$v_t" 'BEGIN { printf "%.2f", a / b }')"
    verdicts+=("$(awk -v a="$p_t" -v b="$v_t" -v t="$title" 'BEGIN { r = a / b - 1; printf "%s: plan adds %.0f%% on top of parsing (target < 50%%)   %s", t, r * 100, (r < 0.5) ? "PASS" : "MISS" }')")
    verdicts+=("$(awk -v a="$j_t" -v b="$v_t" -v t="$title" 'BEGIN { r = a / b - 1; printf "%s: plan --json adds %.0f%%   %s", t, r * 100, (r < 0.5) ? "PASS" : "MISS" }')")
}

printf 'machine: %s cores, %s; %s\n' "$(nproc)" "$(uname -sr)" "$(swift --version 2>/dev/null | head -n 1)"
report "1 feed x 100000 resources" "$ONE"
report "200 feeds x 500 resources" "$MANY"
# Instruction counts (callgrind) do not move with the machine's load: the steadier ratio.
if command -v valgrind >/dev/null; then
    SMALL="$OUT/plan-10k"
    if [ ! -s "$SMALL/feed.yaml" ] || [ "$BENCH/gen_feed.py" -nt "$SMALL/feed.yaml" ]; then
        mkdir -p "$SMALL"; python3 "$BENCH/gen_feed.py" --seed "$SEED" --resources 10000 "$SMALL/feed.yaml" >/dev/null
    fi
    count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | awk '/Collected/ { print $4 }'; }
    say "bench: callgrind on 10000 resources"
    ci_v=$(count "$BIN" validate "$SMALL")
    ci_p=$(count "$BIN" plan --feeds "$SMALL" --cache "$CACHE" "${ASSUME[@]}")
    ci_j=$(count "$BIN" plan --json --feeds "$SMALL" --cache "$CACHE" "${ASSUME[@]}")
    printf '\n%-38s %14s %14s\n' "instructions, 1 feed x 10000" "instructions" "vs validate"
    printf '%-38s %14s %14s\n' "prefetch validate" "$ci_v" "1.00"
    printf '%-38s %14s %14s\n' "prefetch plan" "$ci_p" "$(awk -v a="$ci_p" -v b="$ci_v" 'BEGIN { printf "%.2f", a / b }')"
    printf '%-38s %14s %14s\n' "prefetch plan --json" "$ci_j" "$(awk -v a="$ci_j" -v b="$ci_v" 'BEGIN { printf "%.2f", a / b }')"
fi
echo
printf '%s\n' "${verdicts[@]}"
rm -f "$OUT/.rss"
