#!/usr/bin/env bash
# Benchmark (issue 38, SPEC §9): a changed file costs the blocks that changed. prefetch's delta
# against Debian's zsync client (0.6.2), side by side over plain http from one loopback nginx,
# on four pairs of 256 MiB (SIZE) files, each with the control file zsyncmake made:
#   edits      64 scattered 40 KiB edits and one 100-byte insertion (about 1 % changed)
#   append     the same file with 10 % appended
#   every      one byte changed in every 4 KiB block (nothing left to reuse)
#   unrelated  another file of the same size
# prefetch's cache holds the old version (placed by a run, its entry then changed to the new
# one with `zsync: auto`); the client gets the same file as its seed (-i). Per round each side
# starts from a copy made just before (the same page-cache state). Figures, medians of ROUNDS
# (5) alternating rounds after one warm-up:
#   bytes  body bytes nginx sent for the round (its access log), control file included
#   wall   `prefetch run` (which also fsyncs and checks sha256) against `zsync …; sync`
#   rss    peak RSS of prefetch
# Targets: bytes at most 1.05× the client's; wall at most 1.25×; RSS at most 64 MB; where a
# delta cannot help (the 90 % rule), at most the whole file plus its control file. A report,
# not a test.
#   BIN=path  the prefetch binary (else built as scripts/build-release does); ROUNDS=5;
#   SIZE=bytes (268435456); PAIRS="edits append every unrelated"; RESULTS=file (bench/run's table)
set -uo pipefail
. "$(dirname "$0")/lib.sh"
declare -A SAMPLES_B  # body bytes per round, by key
bin
ROUNDS=${ROUNDS:-5}
SIZE=${SIZE:-268435456}
PAIRS=${PAIRS:-edits append every unrelated}
RUN=$OUT/delta
WWW=$RUN/www
mkdir -p "$WWW"
command -v zsync >/dev/null && command -v zsyncmake >/dev/null || die "zsync and zsyncmake are needed (apt-get install zsync)"
command -v python3 >/dev/null || die "python3 is needed"

# The pairs, made once for SIZE (deterministic bytes: AES-CTR of zeros under a fixed key).
stream() { openssl enc -aes-256-ctr -pass "pass:$1" -nosalt -pbkdf2 </dev/zero 2>/dev/null | head -c "$2"; }
make_pairs() {
    [ -f "$WWW/.made-$SIZE" ] && return
    rm -rf "${WWW:?}"/*
    stream old "$SIZE" >"$RUN/old.bin"
    for pair in edits append every unrelated; do mkdir -p "$WWW/$pair"; ln -f "$RUN/old.bin" "$WWW/$pair/old.bin"; done
    python3 - "$RUN/old.bin" "$WWW" <<'PY' || die "cannot make the pairs"
import random, sys
old_path, www = sys.argv[1], sys.argv[2]
old = open(old_path, 'rb').read()
rng = random.Random(38)
noise = lambda n: rng.randbytes(n)
new = bytearray(old)
for _ in range(64):
    at = rng.randrange(0, len(new) - 40960)
    new[at:at + 40960] = noise(40960)
mid = len(new) // 2
new[mid:mid] = noise(100)
open(www + '/edits/img.bin', 'wb').write(new)
open(www + '/append/img.bin', 'wb').write(old + noise(len(old) // 10))
every = bytearray(old)
for at in range(100, len(every), 4096): every[at] ^= 0xFF
open(www + '/every/img.bin', 'wb').write(every)
PY
    stream unrelated "$SIZE" >"$WWW/unrelated/img.bin"
    for pair in edits append every unrelated; do
        (cd "$WWW/$pair" && zsyncmake -u img.bin -o img.bin.zsync img.bin) || die "zsyncmake failed"
    done
    chmod -R a+rX "$WWW"
    touch "$WWW/.made-$SIZE"
}
say "delta: making the pairs ($SIZE bytes)"
make_pairs

PORT=$(free_port 9290)
origin_start "$WWW" "$PORT" "$RUN/origin" || die "nginx did not start (see $RUN/origin/error.log)"
URL="http://127.0.0.1:$PORT"
WORKS=()
cleanup() { origin_stop "$RUN/origin"; rm -rf "${WORKS[@]}"; }
LOG=$RUN/origin/access.log
# Body bytes nginx sent since line $1 of its log.
sent_since() { tail -n +"$(($1 + 1))" "$LOG" | awk '{ s += $3 } END { print s + 0 }'; }
lines() { wc -l <"$LOG"; }

for pair in $PAIRS; do
    base=$RUN/work-$pair
    rm -rf "$base"; mkdir -p "$base/template/feeds" "$base/client"
    WORKS+=("$base")
    t=$base/template
    printf 'concurrency: 4\nper_host: 4\n' >"$t/config.yaml"
    old_sha=$(openssl dgst -sha256 -r "$RUN/old.bin" | cut -d' ' -f1)
    new_sha=$(openssl dgst -sha256 -r "$WWW/$pair/img.bin" | cut -d' ' -f1)
    printf 'name: t\nresources:\n  - url: %s/%s/old.bin\n    path: img.bin\n    sha256: %s\n' "$URL" "$pair" "$old_sha" >"$t/feeds/t.yaml"
    "$BIN" run --quiet --feeds "$t/feeds" --cache "$t/cache" --config "$t/config.yaml" || die "($pair) placing the old version failed"
    printf 'name: t\nresources:\n  - url: %s/%s/img.bin\n    path: img.bin\n    sha256: %s\n    zsync: auto\n' "$URL" "$pair" "$new_sha" >"$t/feeds/t.yaml"
    say "delta ($pair): $ROUNDS rounds"
    for round in $(seq 0 "$ROUNDS"); do
        w=$base/w; rm -rf "$w"; cp -a "$t" "$w"
        rm -f "$base/client/out.bin" "$base/client/out.bin.part"; cp "$RUN/old.bin" "$base/client/seed.bin"; sync
        from=$(lines)
        key=delta.$pair.prefetch; [ "$round" = 0 ] && key=warmup
        measure "$key" "$BIN" run --quiet --feeds "$w/feeds" --cache "$w/cache" --config "$w/config.yaml"
        [ "$M_EXIT" = 0 ] || die "($pair) prefetch failed: $(cat "$M_TMP/stderr")"
        cmp -s "$w/cache/t/img.bin" "$WWW/$pair/img.bin" || die "($pair) prefetch placed another file"
        [ "$round" = 0 ] || SAMPLES_B[$key]+="$(sent_since "$from") "
        from=$(lines)
        key=delta.$pair.zsync; [ "$round" = 0 ] && key=warmup
        measure "$key" bash -c "cd '$base/client' && zsync -q -i seed.bin -o out.bin '$URL/$pair/img.bin.zsync' && sync"
        [ "$M_EXIT" = 0 ] || die "($pair) zsync failed: $(cat "$M_TMP/stderr")"
        cmp -s "$base/client/out.bin" "$WWW/$pair/img.bin" || die "($pair) zsync built another file"
        [ "$round" = 0 ] || SAMPLES_B[$key]+="$(sent_since "$from") "
    done
    for side in prefetch zsync; do
        close "delta.$pair.$side"
        result "delta.$pair.$side.bytes" "$(printf '%s\n' ${SAMPLES_B[delta.$pair.$side]} | median)"
    done
    result "delta.$pair.whole" "$(( $(stat -c %s "$WWW/$pair/img.bin") + $(stat -c %s "$WWW/$pair/img.bin.zsync") ))"
    rm -rf "$base/w" "$base/client"
done

# The report: figures, peer, ratio, target.
report() {
    awk -v pairs="$PAIRS" '
        { v[$1] = $2 }
        END {
            printf "| pair | bytes | zsync bytes | ratio (≤ 1.05) | wall | zsync; sync | ratio (≤ 1.25) | peak RSS (≤ 64 MB) | ≤ whole + control | met |\n"
            printf "|---|---|---|---|---|---|---|---|---|---|\n"
            n = split(pairs, p, " ")
            for (i = 1; i <= n; i++) {
                k = "delta." p[i]
                if (!((k ".prefetch.wall") in v)) continue
                b = v[k ".prefetch.bytes"]; zb = v[k ".zsync.bytes"]; br = b / zb
                w = v[k ".prefetch.wall"]; zw = v[k ".zsync.wall"]; wr = w / zw
                rss = v[k ".prefetch.rss"] / 1024; whole = v[k ".whole"]
                ok = br <= 1.05 && wr <= 1.25 && rss <= 64 && b <= whole
                printf "| %s | %d | %d | %.3f | %.2f s | %.2f s | %.2f | %.1f MiB | %s | %s |\n", p[i], b, zb, br, w, zw, wr, rss,
                    (b <= whole ? "yes" : "no"), (ok ? "met" : "not met")
            }
        }' "$RESULTS"
}
report | tee "$RUN/report.txt"
