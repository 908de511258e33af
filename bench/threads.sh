#!/usr/bin/env bash
# bench/threads.sh: transfer.sh's (b) and (c) with prefetch on different numbers of transfer
# threads (PREFETCH_TRANSFER_THREADS), in alternating rounds with curl's (b), on one
# loopback nginx. Each round runs every variant once, then curl, so a change in the
# machine's load hits them all alike; the report gives medians and ratios to curl.
# A report, not a test; progress on stderr, the report on stdout.
#
#   N=21              rounds
#   THREADS="1 2"     the thread counts compared ("auto": prefetch decides)
#   BIN=path          the prefetch binary (default: scripts/build-release builds it)
#   BINS="a=path b=path"  compare binaries instead (before and after a change), each on the
#                     first of THREADS, in alternating rounds the same way
#
# It reuses the content bench/transfer.sh generates in bench/out/transfer/www (run that
# once first) and starts its own nginx on the first free port from 8890.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-21}
THREADS=${THREADS:-1 2}
WWW=bench/out/transfer/www
export PATH="$PATH:/usr/sbin:/sbin"
[ -d "$WWW/small" ] || { echo "bench/threads.sh: no $WWW/small: run bench/transfer.sh once first" >&2; exit 1; }
if [ -n "${BINS:-}" ]; then BIN=""; else BIN=${BIN:-$(scripts/build-release)}; fi
# The variants: "label=binary=threads" each.
VARIANTS=()
if [ -n "${BINS:-}" ]; then
    for pair in $BINS; do VARIANTS+=("${pair%%=*}=${pair#*=}=${THREADS%% *}"); done
else
    for t in $THREADS; do VARIANTS+=("threads: $t=$BIN=$t"); done
fi
command -v curl >/dev/null && command -v nginx >/dev/null || scripts/setup curl nginx-light

port=8890
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
work=$(mktemp -d /dev/shm/prefetch-threads.XXXXXX)
scripts/demo-origin start "$WWW" "$port" "$work/origin" >/dev/null
trap 'scripts/demo-origin stop "$work/origin" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
url="http://127.0.0.1:$port"
files=$(find "$WWW/small" -maxdepth 1 -name 'f*.bin' | wc -l)
mkdir -p "$work/feeds"
{
    printf 'name: small\nrefresh: 1h\nlimits: { concurrency: 16 }\nresources:\n'
    find "$WWW/small" -maxdepth 1 -name 'f*.bin' -printf '%f\n' | sort | awk -v url="$url" '{ printf "  - url: %s/small/%s\n    path: %s\n", url, $1, $1 }'
} >"$work/feeds/small.yaml"
printf 'concurrency: 16\nper_host: 16\n' >"$work/config.yaml"
find "$WWW/small" -maxdepth 1 -name 'f*.bin' -printf '%f\n' | sort | awk -v url="$url" '{ printf "url = \"%s/small/%s\"\n", url, $1 }' >"$work/curl.cfg"

# ms TIME0: milliseconds since TIME0 (date +%s%N), one decimal
ms() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
variant_env() { [ "$1" = auto ] && echo "PREFETCH_TRANSFER_THREADS=" || echo "PREFETCH_TRANSFER_THREADS=$1"; }
run_prefetch() {  # VARIANT CACHE [offset]
    local rest=${1#*=}
    env "$(variant_env "${rest##*=}")" PREFETCH_CLOCK_OFFSET="${3:-0s}" "${rest%=*}" run --feeds "$work/feeds" --cache "$2" --config "$work/config.yaml" --quiet >/dev/null 2>"$work/err" ||
        { echo "bench/threads.sh: prefetch (${1%%=*}) failed: $(head -c 300 "$work/err")" >&2; exit 1; }
}

declare -A B C
CURL=""
echo "bench/threads.sh: $N rounds of (b) and (c), ${#VARIANTS[@]} variants; $files files from $url" >&2
for i in "${!VARIANTS[@]}"; do run_prefetch "${VARIANTS[$i]}" "$work/c-$i"; done  # each (c) cache, filled once
for ((round = 0; round <= N; round++)); do
    for i in "${!VARIANTS[@]}"; do
        rm -rf "$work/b"; sync
        t0=$(date +%s%N); run_prefetch "${VARIANTS[$i]}" "$work/b"; b=$(ms "$t0")
        sync
        t0=$(date +%s%N); run_prefetch "${VARIANTS[$i]}" "$work/c-$i" "+$((2 * (round + 1)))h"; c=$(ms "$t0")
        [ "$round" -gt 0 ] && { B[$i]+="$b "; C[$i]+="$c "; }
    done
    rm -rf "$work/curl"; mkdir -p "$work/curl"; sync
    t0=$(date +%s%N)
    curl -sS -f --parallel --parallel-max 16 --output-dir "$work/curl" --remote-name-all -K "$work/curl.cfg" 2>"$work/err" ||
        { echo "bench/threads.sh: curl failed: $(head -c 300 "$work/err")" >&2; exit 1; }
    [ "$round" -gt 0 ] && CURL+="$(ms "$t0") "
    [ "$round" -gt 0 ] && echo "bench/threads.sh: round $round/$N done" >&2
done

curl_ms=$(printf '%s\n' $CURL | median)
echo "prefetch (b) and (c) by transfer threads, against curl's (b); medians of $N alternating rounds on tmpfs"
echo "machine: $(nproc) cores"
printf '%-28s %10s %10s %10s\n' "" "(b) ms" "x curl" "(c) ms"
printf '%-28s %10s %10s %10s\n' "curl --parallel-max 16" "$curl_ms" "1.00" "-"
for i in "${!VARIANTS[@]}"; do
    b=$(printf '%s\n' ${B[$i]} | median); c=$(printf '%s\n' ${C[$i]} | median)
    printf '%-28s %10s %10s %10s\n' "prefetch, ${VARIANTS[$i]%%=*}" "$b" "$(awk -v a="$b" -v b="$curl_ms" 'BEGIN { printf "%.3f", a / b }')" "$c"
done
