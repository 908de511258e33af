#!/usr/bin/env bash
# Benchmark: `prefetch validate` against PyYAML's C loader (libyaml) on the same
# generated feed. A report, not a test: it always exits 0 once it has figures, and
# prints PASS/MISS per target. See bench/README.md.
#
# Environment:
#   RESOURCES=100000   resources in the generated feed
#   RUNS=7             timed runs per command, after one untimed warm-up
#   BUDGET=600         seconds of timed runs per command at most: a command whose
#                      warm-up took W seconds gets min(RUNS, BUDGET/W) runs (at least 1)
#   SCRATCH=DIR        swift build --scratch-path (default: the package's .build)
#   PYTHON=python3     interpreter for PyYAML (must have yaml.__with_libyaml__)
#   SKIP_BUILD=1       use the release binary already built
#   SEED=1             generator seed
set -u -o pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
OUT="$BENCH/out"
RESOURCES=${RESOURCES:-100000}
RUNS=${RUNS:-7}
BUDGET=${BUDGET:-600}
SEED=${SEED:-1}
TARGET_RATIO=1.0     # prefetch time / PyYAML time, at most
TARGET_RSS_MB=200    # prefetch peak RSS, under

say() { printf '%s\n' "$*" >&2; }
die() { say "bench: $*"; exit 1; }

# --- tools: scripts/setup installs with apt-get only what is missing -----------
command -v swift >/dev/null || die "swift is not on PATH"
[ -x /usr/bin/time ] || "$ROOT/scripts/setup" time || true
[ -x /usr/bin/time ] || die "/usr/bin/time is missing (Debian package 'time')"

has_cyaml() { "$1" -c 'import yaml, sys; sys.exit(0 if yaml.__with_libyaml__ and hasattr(yaml, "CSafeLoader") else 1)' >/dev/null 2>&1; }
PY=
for candidate in ${PYTHON:-} python3 /usr/bin/python3; do
    command -v "$candidate" >/dev/null 2>&1 && has_cyaml "$candidate" && { PY=$candidate; break; }
done
if [ -z "$PY" ]; then
    # Debian's python3-yaml is built with libyaml; it serves /usr/bin/python3.
    "$ROOT/scripts/setup" python3-yaml || true
    has_cyaml /usr/bin/python3 && PY=/usr/bin/python3
fi
if [ -z "$PY" ] && command -v python3 >/dev/null; then
    # PyPI's PyYAML wheels bundle libyaml.
    say "bench: installing PyYAML with pip"
    python3 -m pip install --quiet --disable-pip-version-check pyyaml >/dev/null 2>&1 \
        || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages pyyaml >/dev/null 2>&1 || true
    has_cyaml python3 && PY=python3
fi
[ -n "$PY" ] || die "no python3 with PyYAML built on libyaml (yaml.__with_libyaml__); install python3-yaml"
# Time the interpreter itself, not a wrapper such as a pyenv shim (a shell script).
PY=$("$PY" -c 'import sys; print(sys.executable)') || die "cannot locate the python interpreter"
PY_DESC=$("$PY" -c 'import sys, yaml; print(f"{sys.executable}: Python {sys.version.split()[0]}, PyYAML {yaml.__version__}, yaml.__with_libyaml__={yaml.__with_libyaml__}")')

# --- build -------------------------------------------------------------------
SWIFT_ARGS=(-c release --static-swift-stdlib --toolset "$ROOT/scripts/release-toolset.json")  # as scripts/build-release
[ -n "${SCRATCH:-}" ] && SWIFT_ARGS+=(--scratch-path "$SCRATCH")
cd "$ROOT" || die "cannot enter $ROOT"
if [ -z "${SKIP_BUILD:-}" ]; then
    say "bench: swift build ${SWIFT_ARGS[*]}"
    mkdir -p "$OUT"
    swift build "${SWIFT_ARGS[@]}" >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log" >&2; die "release build failed"; }
    rm -f "$OUT/build.log"
fi
BIN="$(swift build "${SWIFT_ARGS[@]}" --show-bin-path)/prefetch"
[ -x "$BIN" ] || die "no release binary at $BIN (build first, or unset SKIP_BUILD)"

# --- input -------------------------------------------------------------------
mkdir -p "$OUT"
FEED="$OUT/feed-$RESOURCES-s$SEED.yaml"
if [ ! -s "$FEED" ] || [ "$BENCH/gen_feed.py" -nt "$FEED" ]; then
    say "bench: generating $FEED"
    "$PY" "$BENCH/gen_feed.py" --resources "$RESOURCES" --seed "$SEED" "$FEED" >/dev/null || die "gen_feed.py failed"
fi
FEED_BYTES=$(stat -c %s "$FEED")
FEED_MB=$(awk -v b="$FEED_BYTES" 'BEGIN { printf "%.1f", b / 1048576 }')

# --- timing ------------------------------------------------------------------
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# run_once CMD...: prints "SECONDS RSS_KIB EXIT" for one run; its output goes to
# $RUN_OUT (default /dev/null), its stderr to $TMP/stderr.
run_once() {
    local t0 t1 status
    t0=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$TMP/rss" "$@" >"${RUN_OUT:-/dev/null}" 2>"$TMP/stderr"
    status=$?
    t1=$(date +%s%N)
    printf '%s %s %s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')" "$(tail -n 1 "$TMP/rss")" "$status"
}

# measure LABEL CMD...: a warm-up, then timed runs; sets M_TIME (median s), M_RSS (max KiB), M_RUNS.
measure() {
    local label=$1; shift
    local warm secs rss status runs i times=() rss_max=0
    say "bench: $label: warm-up"
    read -r warm rss status < <(RUN_OUT="$TMP/stdout" run_once "$@")
    if [ "$status" -ne 0 ]; then
        say "bench: $label exited $status on the warm-up:"; head -n 20 "$TMP/stderr" >&2
        return 1
    fi
    runs=$(awk -v w="$warm" -v b="$BUDGET" -v r="$RUNS" 'BEGIN { n = (w > 0) ? int(b / w) : r; if (n > r) n = r; if (n < 1) n = 1; print n }')
    if [ "$runs" -lt "$RUNS" ]; then
        say "bench: $label: warm-up took ${warm}s, so $runs timed run(s) within BUDGET=${BUDGET}s"
    fi
    for ((i = 1; i <= runs; i++)); do
        read -r secs rss status < <(run_once "$@")
        [ "$status" -eq 0 ] || { say "bench: $label exited $status"; head -n 20 "$TMP/stderr" >&2; return 1; }
        times+=("$secs")
        [ "$rss" -gt "$rss_max" ] && rss_max=$rss
        say "bench: $label: run $i/$runs ${secs}s, ${rss} KiB"
    done
    M_TIME=$(printf '%s\n' "${times[@]}" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    M_RSS=$rss_max
    M_RUNS=$runs
}

# measure fails on a non-zero exit, so only the success path (a valid feed: parse,
# decode, check every field) is timed; the warm-up's summary line is shown.
PF_OK=1 PY_OK=1 SUMMARY="(no output)"
if measure "prefetch validate" "$BIN" validate "$FEED"; then
    PF_TIME=$M_TIME PF_RSS=$M_RSS PF_RUNS=$M_RUNS
else
    PF_OK=0
fi
[ -s "$TMP/stdout" ] && SUMMARY=$(tail -n 1 "$TMP/stdout")
say "bench: prefetch validate says: $SUMMARY"
if measure "PyYAML CSafeLoader" "$PY" -c 'import yaml,sys; yaml.load(open(sys.argv[1]), Loader=yaml.CSafeLoader)' "$FEED"; then
    PY_TIME=$M_TIME PY_RSS=$M_RSS PY_RUNS=$M_RUNS
else
    PY_OK=0
fi
# Reference only: what Python itself costs before it reads a byte of YAML.
if measure "python3 + import yaml" "$PY" -c 'import yaml'; then
    IM_TIME=$M_TIME IM_RSS=$M_RSS IM_RUNS=$M_RUNS
else
    IM_TIME= IM_RSS=
fi

# --- report ------------------------------------------------------------------
mb() { awk -v k="$1" 'BEGIN { printf "%.0f", k / 1024 }'; }
row() { printf '%-38s %9s %13s %7s %6s\n' "$@"; }
echo
echo "machine: $(nproc) cores, $(uname -sr); $(swift --version 2>/dev/null | head -n 1)"
echo "python:  $PY_DESC  (CSafeLoader = libyaml's C parser: yes)"
echo "feed:    $FEED ($RESOURCES resources, $FEED_BYTES bytes); prefetch: $SUMMARY"
echo
row "validate, $RESOURCES resources ($FEED_MB MB)" "median s" "peak RSS MB" "ratio" "runs"
if [ "$PF_OK" = 1 ]; then
    row "prefetch validate" "$(printf '%.3f' "$PF_TIME")" "$(mb "$PF_RSS")" "1.00" "$PF_RUNS"
else
    row "prefetch validate" "failed" "-" "-" "-"
fi
if [ "$PY_OK" = 1 ]; then
    ratio_py=-
    [ "$PF_OK" = 1 ] && ratio_py=$(awk -v a="$PY_TIME" -v b="$PF_TIME" 'BEGIN { printf "%.2f", a / b }')
    row "PyYAML CSafeLoader" "$(printf '%.3f' "$PY_TIME")" "$(mb "$PY_RSS")" "$ratio_py" "$PY_RUNS"
else
    row "PyYAML CSafeLoader" "failed" "-" "-" "-"
fi
[ -n "$IM_TIME" ] && row "  (python3 + import yaml, no file)" "$(printf '%.3f' "$IM_TIME")" "$(mb "$IM_RSS")" "" "$IM_RUNS"
echo "(ratio: each row's median time over prefetch's; wall time of the whole process, startup included)"
echo

if [ "$PF_OK" = 1 ] && [ "$PY_OK" = 1 ]; then
    verdict=$(awk -v a="$PF_TIME" -v b="$PY_TIME" -v t="$TARGET_RATIO" 'BEGIN { r = a / b; printf "%.2f %s", r, (r <= t) ? "PASS" : "MISS" }')
    echo "time: prefetch/PyYAML = ${verdict% *}x  (target <= ${TARGET_RATIO}x)   ${verdict#* }"
else
    echo "time: no ratio (a command failed)   MISS"
fi
if [ "$PF_OK" = 1 ]; then
    rss_mb=$(awk -v k="$PF_RSS" 'BEGIN { printf "%.0f", k / 1024 }')
    if awk -v k="$PF_RSS" -v t="$TARGET_RSS_MB" 'BEGIN { exit !(k / 1024 < t) }'; then v=PASS; else v=MISS; fi
    echo "peak RSS: prefetch ${rss_mb} MB  (target < ${TARGET_RSS_MB} MB)   $v"
else
    echo "peak RSS: no figure (prefetch failed)   MISS"
fi
exit 0
