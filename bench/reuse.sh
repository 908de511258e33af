#!/usr/bin/env bash
# Benchmark (issue 37, SPEC §9): content the cache already holds is placed with no request.
#   (a) a 512 MiB file already in another feed: `prefetch run` of a feed listing its sha256 at
#       a URL the origin does not have (a request would fail the run), against `openssl dgst
#       -sha256` over the same page-cached file, in alternating rounds: target at most 1.1×
#       (Debian's sha256sum uses no SHA instructions: not a fair yardstick);
#   (b) 2,000 × 16 KiB moved to new URLs with the same content (each round flips the feed
#       between /moved-a/ and /moved-b/, which the origin does not have): `prefetch run`
#       against prefetch's own run fetching the 2,000 from the loopback origin into an empty
#       cache, in alternating rounds: target at most 0.5×.
# Each on tmpfs (/dev/shm) and on disk (bench/out/reuse). Medians of ROUNDS (5) alternating
# rounds after one warm-up; a report, not a test. Uses transfer.sh's files (run it once first).
#   BIN=path  the prefetch binary (else built as scripts/build-release does); ROUNDS=5;
#   MEDIA="tmpfs disk"; CASES="a b"; RESULTS=file (bench/run's table)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
bin
ROUNDS=${ROUNDS:-5}
MEDIA=${MEDIA:-tmpfs disk}
CASES=${CASES:-a b}
WWW=$ROOT/bench/out/transfer/www
[ -f "$WWW/big.bin" ] && [ -d "$WWW/small" ] || die "no $WWW/big.bin or $WWW/small: run bench/transfer.sh once first"
RUN=$OUT/reuse
mkdir -p "$RUN"
PORT=$(free_port 9090)
"$ROOT/scripts/demo-origin" start "$WWW" "$PORT" "$RUN/origin" >/dev/null || die "the origin did not start"
URL="http://127.0.0.1:$PORT"
WORKS=()
cleanup() { "$ROOT/scripts/demo-origin" stop "$RUN/origin" >/dev/null 2>&1; rm -rf "${WORKS[@]}"; }
BIG_SHA=$(openssl dgst -sha256 -r "$WWW/big.bin" | cut -d' ' -f1)
BIG_SIZE=$(stat -c %s "$WWW/big.bin")
# The 2,000 files' sha256s, once: "NAME SHA" a line.
(cd "$WWW/small" && find . -maxdepth 1 -name 'f*.bin' -printf '%f\n' | sort | xargs openssl dgst -sha256 -r) |
    awk '{ sub(/^\*/, "", $2); print $2, $1 }' >"$RUN/small.sha256"
small_feed_file() {  # small_feed_file PREFIX FILE: the 2,000 at URL/PREFIX/NAME, with sha256
    { printf 'name: small\nrefresh: 1h\nlimits: { concurrency: 16 }\nresources:\n'
      awk -v url="$URL/$1" '{ printf "  - url: %s/%s\n    path: %s\n    sha256: %s\n", url, $1, $1, $2 }' "$RUN/small.sha256"
    } >"$2"
}
pf() { "$BIN" run --quiet --feeds "$1/feeds" --cache "$1/cache" --config "$1/config.yaml"; }

for medium in $MEDIA; do
    case $medium in
    tmpfs) base=$(mktemp -d /dev/shm/prefetch-reuse.XXXXXX) ;;
    *) base=$(mktemp -d "$RUN/disk.XXXXXX") ;;
    esac
    WORKS+=("$base")
    if [[ " $CASES " == *" a "* ]]; then
        w=$base/a
        mkdir -p "$w/feeds"
        printf 'concurrency: 16\nper_host: 16\n' >"$w/config.yaml"
        printf 'name: one\nresources:\n  - url: %s/big.bin\n    path: big.bin\n    size: %s\n    sha256: %s\n' "$URL" "$BIG_SIZE" "$BIG_SHA" >"$w/feeds/one.yaml"
        pf "$w" || die "(a) the first fetch failed"
        printf 'name: two\nresources:\n  - url: %s/elsewhere/big.bin\n    path: big.bin\n    size: %s\n    sha256: %s\n' "$URL" "$BIG_SIZE" "$BIG_SHA" >"$w/feeds/two.yaml"
        say "reuse (a) on $medium: $ROUNDS rounds"
        for round in $(seq 0 "$ROUNDS"); do
            rm -f "$w/cache/two/big.bin"; sync
            key=reuse.a.$medium.prefetch; [ "$round" = 0 ] && key=warmup
            measure "$key" "$BIN" run --quiet --feeds "$w/feeds" --cache "$w/cache" --config "$w/config.yaml"
            [ "$M_EXIT" = 0 ] || die "(a) prefetch failed: $(cat "$M_TMP/stderr")"
            [ "$(stat -c %i "$w/cache/two/big.bin")" = "$(stat -c %i "$w/cache/one/big.bin")" ] || die "(a) not linked"
            key=reuse.a.$medium.dgst; [ "$round" = 0 ] && key=warmup
            measure "$key" openssl dgst -sha256 "$w/cache/one/big.bin"
        done
        close "reuse.a.$medium.prefetch"; close "reuse.a.$medium.dgst"
    fi
    if [[ " $CASES " == *" b "* ]]; then
        w=$base/b
        mkdir -p "$w/moved/feeds" "$w/fetch/feeds"
        printf 'concurrency: 16\nper_host: 16\n' | tee "$w/moved/config.yaml" >"$w/fetch/config.yaml"
        small_feed_file small "$w/moved/feeds/small.yaml"
        small_feed_file small "$w/fetch/feeds/small.yaml"
        pf "$w/moved" || die "(b) the first fetch failed"
        say "reuse (b) on $medium: $ROUNDS rounds"
        prefix=moved-a
        for round in $(seq 0 "$ROUNDS"); do
            rm -rf "$w/fetch/cache"; sync
            key=reuse.b.$medium.fetch; [ "$round" = 0 ] && key=warmup
            measure "$key" "$BIN" run --quiet --feeds "$w/fetch/feeds" --cache "$w/fetch/cache" --config "$w/fetch/config.yaml"
            [ "$M_EXIT" = 0 ] || die "(b) the fetch failed: $(cat "$M_TMP/stderr")"
            small_feed_file "$prefix" "$w/moved/feeds/small.yaml"; sync
            key=reuse.b.$medium.moved; [ "$round" = 0 ] && key=warmup
            measure "$key" "$BIN" run --quiet --feeds "$w/moved/feeds" --cache "$w/moved/cache" --config "$w/moved/config.yaml"
            [ "$M_EXIT" = 0 ] || die "(b) the moved run failed (a request?): $(cat "$M_TMP/stderr")"
            [ "$prefix" = moved-a ] && prefix=moved-b || prefix=moved-a
        done
        close "reuse.b.$medium.fetch"; close "reuse.b.$medium.moved"
    fi
done
grep -c ' 200 \| 404 ' "$RUN/origin/access.log" >/dev/null 2>&1 || true
# The report: figures, peer, ratio, target.
report() {
    awk -v media="$MEDIA" -v cases="$CASES" '
        { v[$1] = $2 }
        END {
            printf "| case | medium | prefetch | peer | peer figure | ratio | target | met |\n|---|---|---|---|---|---|---|---|\n"
            n = split(media, m, " ")
            for (i = 1; i <= n; i++) {
                if (cases ~ /a/ && (("reuse.a." m[i] ".prefetch.wall") in v)) {
                    p = v["reuse.a." m[i] ".prefetch.wall"]; q = v["reuse.a." m[i] ".dgst.wall"]; r = p / q
                    printf "| 512 MiB in another feed | %s | %.3f s | openssl dgst -sha256 | %.3f s | %.2f | ≤ 1.1 | %s |\n", m[i], p, q, r, r <= 1.1 ? "met" : "not met"
                }
                if (cases ~ /b/ && (("reuse.b." m[i] ".moved.wall") in v)) {
                    p = v["reuse.b." m[i] ".moved.wall"]; q = v["reuse.b." m[i] ".fetch.wall"]; r = p / q
                    printf "| 2,000 × 16 KiB moved | %s | %.3f s | its own fetch | %.3f s | %.2f | ≤ 0.5 | %s |\n", m[i], p, q, r, r <= 0.5 ? "met" : "not met"
                }
            }
        }' "$RESULTS"
}
report | tee "$RUN/report.txt"
