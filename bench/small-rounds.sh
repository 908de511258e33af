#!/usr/bin/env bash
# bench/small-rounds.sh ROUNDS BIN...: alternating rounds of (b) [2000 x 16 KiB into an empty tmpfs cache] and (c) [the same at +2h: 2000 304s]
# for each prefetch binary, plus curl --parallel (b) and wget2 --max-threads=16 (b) and wget2 -N (c). Prints median wall and CPU (user+sys).
# Reuses bench/out/transfer/www (run bench/transfer.sh once first); needs curl, wget2, nginx. A report, not a test.
set -uo pipefail
BENCH=$(cd "$(dirname "$0")" && pwd)
. "$BENCH/lib.sh"
cd "$ROOT"
WWW=$ROOT/bench/out/transfer/www
rounds=$1; shift
work=$(mktemp -d /dev/shm/small-rounds.XXXXXX)
cleanup() { small_feed_stop "$work"; rm -rf "$work"; }
small_feed "$work"
url=$SMALL_URL
for i in $(seq 1 2000); do printf '%s/small/f%05d.bin\n' "$url" $i; done >"$work/list.txt"
sed 's/.*/url = "&"/' "$work/list.txt" >"$work/curl.cfg"
export PREFETCH_MACHINE_ID=bench-transfer
cat "$WWW"/small/* >/dev/null
t() { local key=$1; shift; local t0 t1; t0=$(date +%s%N); /usr/bin/time -f '%U %S %M' -o "$work/time" "$@" >/dev/null 2>"$work/err"; local rc=$?; t1=$(date +%s%N)
      [ $rc = 0 ] || { echo "$key failed rc $rc: $(head -c 300 "$work/err")" >&2; }
      read -r u s m < "$work/time"; echo "$key $(( (t1 - t0) / 1000 )) $(awk -v u=$u -v s=$s 'BEGIN{print u+s}') $m" >> "$work/results"; }
for ((r = 0; r <= rounds; r++)); do
    n=0
    for bin in "$@"; do
        n=$((n + 1)); rm -rf "$work/c$n"
        t "b/p$n" "$bin" run --feeds "$work/feeds" --cache "$work/c$n" --config "$work/config.yaml" --quiet
        PREFETCH_CLOCK_OFFSET=+$((2 * (r + 1)))h t "c/p$n" env PREFETCH_CLOCK_OFFSET=+$((2 * (r + 1)))h "$bin" run --feeds "$work/feeds" --cache "$work/c$n" --config "$work/config.yaml" --quiet
        t "n/p$n" env PREFETCH_CLOCK_OFFSET=+$((2 * (r + 1)))h "$bin" run --feeds "$work/feeds" --cache "$work/c$n" --config "$work/config.yaml" --quiet
    done
    rm -rf "$work/curl"; mkdir -p "$work/curl"
    t b/curl curl -sS -f --parallel --parallel-max 16 --output-dir "$work/curl" --remote-name-all -K "$work/curl.cfg"
    rm -rf "$work/wget"; mkdir -p "$work/wget"
    t b/wget2 wget2 -q --max-threads=16 -P "$work/wget" -i "$work/list.txt"
    t c/wget2 wget2 -q -N --max-threads=16 -P "$work/wget" -i "$work/list.txt"
    [ $r = 0 ] && : > "$work/results"   # round 0 is the warm-up
done
sort "$work/results" | awk '{ k=$1; w[k]=w[k] " " $2; c[k]=c[k] " " $3; m[k]=($4>m[k]?$4:m[k]) } END { for (k in w) print k, w[k], "|", c[k], "|", m[k] }' |
while read -r key rest; do
    walls=$(echo "$rest" | cut -d'|' -f1); cpus=$(echo "$rest" | cut -d'|' -f2); rss=$(echo "$rest" | cut -d'|' -f3)
    mw=$(printf '%s\n' $walls | sort -g | awk '{v[NR]=$1} END{print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}')
    mc=$(printf '%s\n' $cpus | sort -g | awk '{v[NR]=$1} END{print (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}')
    printf '%-10s median wall %.3f s  median CPU %.2f s  peak RSS %d KiB  (%d runs)\n' "$key" "$(awk -v w=$mw 'BEGIN{print w/1e6}')" "$mc" $rss "$(echo $walls | wc -w)"
done | sort
