#!/usr/bin/env bash
# Benchmark: `prefetch run` against curl, wget2 and aria2c on one loopback nginx.
#   (a) one big file (512 MiB): prefetch with size + sha256 in the manifest, vs
#       `curl -o`, `wget2 -O`, `aria2c -x1 -s1 --file-allocation=none`; and in the same
#       round `openssl dgst -sha256` of the page-cached file (row dgst): the limit of a 2-core
#       machine is max(curl -o, that hash) (issue 20, target 1);
#   (b) 2000 files of 16 KiB at 16-way concurrency: a feed of 2000 resources with
#       `limits: { concurrency: 16 }` and a config with `concurrency: 16, per_host: 16`,
#       vs `curl --parallel --parallel-max 16`, `aria2c -j16 -i`, `wget2 --max-threads=16 -i`;
#   (c) a second prefetch run over the complete cache of (b) once `refresh: 1h` has
#       passed (PREFETCH_CLOCK_OFFSET=+2h, +4h, …): every answer must be a 304, and
#       nginx's access log must show that no body byte moved; in the same rounds
#       `wget2 -N --max-threads=16` over its own complete copy (If-Modified-Since: 304s).
# Everything runs twice: with the outputs on tmpfs (whose fsync does nothing: prefetch does
# not call it there for complete files) and on disk, so
# the two tables show what durability costs. Reported: median wall time over RUNS or RUNS_SMALL runs
# (after one untimed warm-up; outputs cleared and `sync` between runs), throughput,
# peak RSS (/usr/bin/time -f %M, max over the timed runs) and the time ratio to curl;
# then PASS/MISS against the targets. A report, not a test: it exits 0 once it has
# figures. Progress goes to stderr, the report to stdout (and bench/out/transfer/report.txt).
#
# Environment:
#   RUNS=5            timed runs per tool of (a) (after one untimed warm-up)
#   RUNS_SMALL=11     the same for (b), (c) and their references: short runs on a noisy
#                     machine, where 5 medians left the ratio to curl 5-10 % apart run to run
#   BIN=path          the prefetch binary to measure (bench/run sets it); else it is built
#                     as scripts/build-release does:
#   TOOL_BUDGET=60    seconds of timed runs per tool and case: a tool whose warm-up took W s gets
#                     min(RUNS, TOOL_BUDGET/W) runs, at least 3 (aria2c's (b) on this disk took
#                     40 s a run at a load average of 20, 11 runs of it 7 minutes)
#   SCRATCH=DIR       swift build --scratch-path (default: the package's .build)
#   SKIP_BUILD=1      use the release binary already built
#   RESULTS=file      append the figures there, one "KEY VALUE" a line (bench/run's table)
#   PORT=8790         first port to try for nginx on 127.0.0.1 (the next free one is used)
#   BIG_MIB=512       size of the big file, MiB
#   FILES=2000        number of small files; FILE_KIB=16 their size, KiB
#   CONCURRENCY=16    parallel transfers in (b)
#   MEDIA="tmpfs disk"  which tables to produce
#   CASES="a b c"     which cases to measure (c needs nothing of b's runs: it fills its own cache)
#   BEFORE=PATH       another prefetch binary, timed in the same rounds as a row "before"
#   PEERS="curl wget2 aria2c"  the other tools timed (curl is the reference: keep it)
#   TMPFS_DIR=/dev/shm                 where tmpfs outputs go (must be tmpfs)
#   DISK_DIR=bench/out/transfer/disk   where disk outputs go (must not be tmpfs)
#   WWW=bench/out/transfer/www         the served content (generated once, reused)
#   DELETE_BETWEEN=1  on disk, delete (b)'s outputs between runs at once instead of
#                     renaming them aside until the medium is done (see clear_output)
#   PROFILE=1         afterwards, `perf record --call-graph dwarf` one prefetch run of
#                     (a), (b) and (c) on tmpfs and print where the CPU went (needs perf;
#                     not installed by this script)
# The report's "(prefetch again: nothing due)" row is a reference, not a target: the
# same run once more when every copy is fresh -- what any `run` of this feed costs
# before it transfers anything (startup, condition probes, plan, state, gc).
set -u -o pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/.." && pwd)
OUT="$BENCH/out"
WORK="$OUT/transfer"
RUNS=${RUNS:-5}
RUNS_SMALL=${RUNS_SMALL:-11}
TOOL_BUDGET=${TOOL_BUDGET:-60}
PORT=${PORT:-8790}
BIG_MIB=${BIG_MIB:-512}
FILES=${FILES:-2000}
FILE_KIB=${FILE_KIB:-16}
CONCURRENCY=${CONCURRENCY:-16}
MEDIA=${MEDIA:-tmpfs disk}
CASES=${CASES:-a b c}
has_case() { [[ " $CASES " == *" $1 "* ]]; }
TMPFS_DIR=${TMPFS_DIR:-/dev/shm}
DISK_DIR=${DISK_DIR:-$WORK/disk}
WWW=${WWW:-$WORK/www}
BIG_BYTES=$((BIG_MIB * 1048576))
FILE_BYTES=$((FILE_KIB * 1024))
SMALL_BYTES=$((FILES * FILE_BYTES))
# Targets (issue 20).
TARGET_A=0.95       # (a) prefetch throughput >= 0.95x curl's; where the two cores cannot,
TARGET_A_LIMIT=1.10 #     prefetch time <= 1.1x max(curl, openssl dgst -sha256 of the file)
TARGET_B=0.8        # (b) prefetch time <= 0.8x the fastest of curl, wget2, aria2c; CPU <= curl's
TARGET_C=0.8        # (c) revalidation time <= 0.8x wget2 -N's, 0 body bytes
TARGET_RSS_MB=64    # prefetch peak RSS under this, every case

say() { printf '%s\n' "$*" >&2; }
die() { say "bench: $*"; exit 1; }
export PATH="$PATH:/usr/sbin:/sbin"
[ -x /opt/swift/usr/bin/swift ] && ! command -v swift >/dev/null && export PATH="/opt/swift/usr/bin:$PATH"

# --- tools: scripts/setup installs with apt-get only what is missing ----------------
command -v swift >/dev/null || die "swift is not on PATH"
"$ROOT/scripts/setup" curl wget2 aria2 nginx-light time openssl || say "bench: scripts/setup could not install everything"
for tool in curl wget2 aria2c nginx /usr/bin/time openssl; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (see scripts/setup)"
done

# --- build: as scripts/build-release does, unless BIN names the binary --------------------
SWIFT_ARGS=(-c release --static-swift-stdlib --disable-local-rpath -Xlinker -z -Xlinker now --toolset "$ROOT/scripts/release-toolset.json")
[ -n "${SCRATCH:-}" ] && SWIFT_ARGS+=(--scratch-path "$SCRATCH")
cd "$ROOT" || die "cannot enter $ROOT"
mkdir -p "$WORK"
if [ -n "${BIN:-}" ]; then
    :
elif [ -z "${SKIP_BUILD:-}" ]; then
    say "bench: scripts/build-release ${SCRATCH:+--scratch-path $SCRATCH}"
    for attempt in 1 2 3; do   # a source edited mid-build (a shared checkout) fails it: try again
        BIN=$("$ROOT/scripts/build-release" ${SCRATCH:+--scratch-path "$SCRATCH"} 2>"$WORK/build.log") && break
        grep -q 'modified during the build' "$WORK/build.log" && [ "$attempt" -lt 3 ] || { tail -n 30 "$WORK/build.log" >&2; die "release build failed"; }
        sleep 5
    done
else
    BIN="$(swift build "${SWIFT_ARGS[@]}" --show-bin-path)/prefetch"
fi
[ -x "$BIN" ] || die "no release binary at $BIN (build first, or unset SKIP_BUILD)"

# --- content: random bytes, generated once, world-readable (nginx workers run as nobody) --
mkdir -p "$WWW/small"
if [ "$(stat -c %s "$WWW/big.bin" 2>/dev/null)" != "$BIG_BYTES" ]; then
    say "bench: generating $WWW/big.bin ($BIG_MIB MiB from /dev/urandom)"
    head -c "$BIG_BYTES" /dev/urandom >"$WWW/big.bin.tmp" && mv "$WWW/big.bin.tmp" "$WWW/big.bin" || die "cannot write $WWW/big.bin"
    rm -f "$WWW/big.sha256"
fi
if [ ! -s "$WWW/big.sha256" ] || [ "$WWW/big.bin" -nt "$WWW/big.sha256" ]; then
    sha256sum "$WWW/big.bin" | cut -d' ' -f1 >"$WWW/big.sha256"
fi
BIG_SHA=$(cat "$WWW/big.sha256")
name_of() { printf 'f%05d.bin' "$1"; }
have=$(find "$WWW/small" -maxdepth 1 -name 'f*.bin' -size "${FILE_BYTES}c" | wc -l)
if [ "$have" -lt "$FILES" ]; then
    say "bench: generating $FILES files of $FILE_KIB KiB in $WWW/small"
    for ((i = 1; i <= FILES; i++)); do
        f="$WWW/small/$(name_of "$i")"
        [ "$(stat -c %s "$f" 2>/dev/null)" = "$FILE_BYTES" ] || head -c "$FILE_BYTES" /dev/urandom >"$f"
    done
fi
chmod 755 "$OUT" "$WORK" "$WWW" "$WWW/small" 2>/dev/null
chmod 644 "$WWW/big.bin" && find "$WWW/small" -maxdepth 1 -type f -exec chmod 644 {} +
d=$WWW
while [ "$d" != / ]; do
    [ "$(( 0$(stat -c %a "$d") & 1 ))" = 1 ] || die "$d is not searchable by others: nginx workers (nobody) cannot serve $WWW; set WWW to a folder they can reach"
    d=$(dirname "$d")
done

# --- origin ----------------------------------------------------------------------------
ORIGIN="$WORK/origin"
while (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do PORT=$((PORT + 1)); done
TMPFS_BASE= DISK_BASE=
cleanup() {
    "$ROOT/scripts/demo-origin" stop "$ORIGIN" >/dev/null 2>&1
    [ -n "$TMPFS_BASE" ] && rm -rf "$TMPFS_BASE"
    [ -n "$DISK_BASE" ] && rm -rf "$DISK_BASE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$ROOT/scripts/demo-origin" stop "$ORIGIN" >/dev/null 2>&1
rm -f "$ORIGIN/access.log"
"$ROOT/scripts/demo-origin" start "$WWW" "$PORT" "$ORIGIN" || die "nginx did not start"
URL="http://127.0.0.1:$PORT"
LOG="$ORIGIN/access.log"
say "bench: nginx on $URL serving $WWW"
code=$(curl -s -o /dev/null -w '%{http_code}' "$URL/big.bin" -r 0-0)
[ "$code" = 206 ] || die "nginx answers $code for big.bin (permissions?); see $ORIGIN/error.log"
cat "$WWW/big.bin" "$WWW"/small/* >/dev/null   # the page cache serves every run alike

# --- inputs for the tools --------------------------------------------------------------
IN="$WORK/input"
rm -rf "$IN"; mkdir -p "$IN/feeds-a" "$IN/feeds-b"
cat >"$IN/feeds-a/big.yaml" <<EOF
name: big
resources:
  - url: $URL/big.bin
    path: big.bin
    size: $BIG_BYTES
    sha256: $BIG_SHA
EOF
{
    printf 'name: small\nrefresh: 1h\nlimits: { concurrency: %d }\nresources:\n' "$CONCURRENCY"
    for ((i = 1; i <= FILES; i++)); do n=$(name_of "$i"); printf '  - url: %s/small/%s\n    path: %s\n' "$URL" "$n" "$n"; done
} >"$IN/feeds-b/small.yaml"
printf 'concurrency: %d\nper_host: %d\n' "$CONCURRENCY" "$CONCURRENCY" >"$IN/config-b.yaml"
for ((i = 1; i <= FILES; i++)); do printf '%s/small/%s\n' "$URL" "$(name_of "$i")"; done >"$IN/list.txt"
sed 's/.*/url = "&"/' "$IN/list.txt" >"$IN/curl.cfg"
"$BIN" validate "$IN/feeds-a" "$IN/feeds-b" >/dev/null 2>&1 || { "$BIN" validate "$IN/feeds-a" "$IN/feeds-b" >&2; die "generated feeds do not validate"; }
export PREFETCH_MACHINE_ID=bench-transfer

# --- timing ----------------------------------------------------------------------------
log_lines() { wc -l <"$LOG"; }
# log_since N: "REQUESTS BODY_BYTES STATUSES" for the access-log lines after line N.
log_since() {
    sleep 0.2   # nginx logs a request just after its last byte
    tail -n +"$(($1 + 1))" "$LOG" | awk '{ n++; sub(/^bytes=/, "", $NF); b += $NF; s[$1]++ }
        END { st = ""; for (k in s) st = st (st == "" ? "" : ",") k "x" s[k]; printf "%d %d %s\n", n, b, (st == "" ? "-" : st) }'
}
# clear_output DIR: the previous run's output goes. On disk, in case (b), it is renamed
# into DIR.trash/, deleted once (c) is measured too (DELETE_BETWEEN=1: deleted at once): ext4
# without a journal skips inodes freed in the last 30 s (dirty_expire_centisecs) when it
# allocates new ones (ialloc.c: find_inode_bit -> recently_deleted), so deleting 2000
# files right before the next run makes every file creation in it several times slower,
# for every tool alike -- an artefact of the benchmark's churn, not of the tools.
TRASH_SEQ=0
clear_output() {
    [ -e "$1" ] || return 0
    if [ "${CLEAR_MODE:-delete}" = trash ] && [ -z "${DELETE_BETWEEN:-}" ]; then
        mkdir -p "$1.trash"; TRASH_SEQ=$((TRASH_SEQ + 1)); mv "$1" "$1.trash/$TRASH_SEQ"
    else
        rm -rf "$1"
    fi
}
# timed OUTDIR CMD...: one run; sets T_SECS, T_RSS (KiB), T_EXIT; output in $TMP/stdout, $TMP/stderr.
timed() {
    local outdir=$1 t0 t1; shift
    clear_output "$outdir"; mkdir -p "$outdir"; sync
    local n0; n0=$(nginx_ticks)
    t0=$(date +%s%N)
    /usr/bin/time -f '%M %U %S' -o "$TMP/rss" "$@" >"$TMP/stdout" 2>"$TMP/stderr"
    T_EXIT=$?
    t1=$(date +%s%N)
    timed_figures "$t0" "$t1"
    T_NGINX=$(awk -v a="$n0" -v b="$(nginx_ticks)" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / hz }')
}
# nginx_ticks: user + system clock ticks of nginx's worker so far (its CPU time for a run).
nginx_ticks() {
    local pid; pid=$(pgrep -P "$(cat "$ORIGIN/nginx.pid" 2>/dev/null)" nginx 2>/dev/null | head -n 1)
    [ -n "$pid" ] && awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0
}
# timed_figures T0 T1: T_SECS, and from /usr/bin/time's last line T_RSS (KiB) and T_CPU (user + sys s).
timed_figures() {
    T_SECS=$(awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')
    read -r T_RSS T_CPU < <(tail -n 1 "$TMP/rss" | awk '{ printf "%s %.2f\n", $1, $2 + $3 }')
    [[ "${T_RSS:-}" =~ ^[0-9]+$ ]] || T_RSS=0
    [ -n "${T_CPU:-}" ] || T_CPU=0
}
# keep_run KEY: adds the last run's time, CPU and peak RSS to KEY's figures;
# close_runs KEY: their medians (and the maximum RSS) become KEY's result.
declare -A TIMES CPUS NCPUS
keep_run() { TIMES[$1]+="$T_SECS "; CPUS[$1]+="$T_CPU "; NCPUS[$1]+="${T_NGINX:-0} "; [ "$T_RSS" -gt "${RSS[$1]:-0}" ] && RSS[$1]=$T_RSS; }
close_runs() { TIME[$1]=$(printf '%s\n' ${TIMES[$1]} | median); CPU[$1]=$(printf '%s\n' ${CPUS[$1]} | median); NGINX_CPU[$1]=$(printf '%s\n' ${NCPUS[$1]} | median); NRUNS[$1]=$(printf '%s\n' ${TIMES[$1]} | grep -c .); }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# check_a TOOL OUTDIR / check_b TOOL OUTDIR: the output is complete ("" when fine, else why).
out_a() { case $1 in prefetch|before) echo "$2/cache/big/big.bin" ;; *) echo "$2/big.bin" ;; esac; }
out_b() { case $1 in prefetch|before) echo "$2/cache/small" ;; *) echo "$2" ;; esac; }
check_a() {
    local f; f=$(out_a "$1" "$2")
    [ "$1" = dgst ] && { grep -q "$BIG_SHA" "$TMP/stdout" || echo "openssl dgst printed another digest"; return; }
    [ "$(stat -c %s "$f" 2>/dev/null)" = "$BIG_BYTES" ] || { echo "big.bin missing or of the wrong size"; return; }
    if [ "${3:-}" = hash ] && [ "$(sha256sum "$f" | cut -d' ' -f1)" != "$BIG_SHA" ]; then echo "sha256 differs"; fi
}
check_b() {
    local dir n b; dir=$(out_b "$1" "$2")
    read -r n b < <(find "$dir" -maxdepth 1 -type f -name 'f*.bin' -printf '%s\n' 2>/dev/null | awk '{ n++; b += $1 } END { print n + 0, b + 0 }')
    [ "$n" = "$FILES" ] && [ "$b" = "$SMALL_BYTES" ] || echo "$n files, $b bytes (want $FILES, $SMALL_BYTES)"
}

# cmd_a TOOL OUTDIR / cmd_b TOOL OUTDIR: the command line, in the array CMD.
bin_of() { [ "$1" = before ] && echo "$BEFORE" || echo "$BIN"; }
cmd_a() {
    case $1 in
    prefetch|before) CMD=("$(bin_of "$1")" run --feeds "$IN/feeds-a" --cache "$2/cache" --config /dev/null) ;;
    curl)     CMD=(curl -sS -f -o "$2/big.bin" "$URL/big.bin") ;;
    wget2)    CMD=(wget2 -q -O "$2/big.bin" "$URL/big.bin") ;;
    aria2c)   CMD=(aria2c -q -x1 -s1 --file-allocation=none -d "$2" -o big.bin "$URL/big.bin") ;;
    dgst)     CMD=(openssl dgst -sha256 "$WWW/big.bin") ;;
    curlsync) CMD=(sh -c 'curl -sS -f -o "$1" "$2" && sync "$1"' curlsync "$2/big.bin" "$URL/big.bin") ;;   # the hash alone, of the page-cached file: the limit's other half
    esac
}
cmd_b() {
    case $1 in
    prefetch|before) CMD=("$(bin_of "$1")" run --feeds "$IN/feeds-b" --cache "$2/cache" --config "$IN/config-b.yaml") ;;
    curl)     CMD=(curl -sS -f --parallel --parallel-max "$CONCURRENCY" --output-dir "$2" --remote-name-all -K "$IN/curl.cfg") ;;
    wget2)    CMD=(wget2 -q --max-threads="$CONCURRENCY" -P "$2" -i "$IN/list.txt") ;;
    aria2c)   CMD=(aria2c -q -j"$CONCURRENCY" --file-allocation=none -d "$2" -i "$IN/list.txt") ;;
    esac
}

read -r -a TOOLS <<<"prefetch${BEFORE:+ before} ${PEERS:-curl wget2 aria2c}"
# case_tools CASE MEDIUM: the tools of a case, in each round's order; (a) also times the hash
# alone and, on disk, curl followed by an fsync of its file (coreutils' `sync FILE`): the peer
# made as durable as prefetch's placement.
case_tools() { CASE_TOOLS=("${TOOLS[@]}"); [ "$1" = a ] && CASE_TOOLS+=(dgst) && [ "$2" = disk ] && CASE_TOOLS+=(curlsync); return 0; }
declare -A TIME CPU NGINX_CPU RSS NRUNS REQS BYTES STATUS FAILED CAP
# bench_case CASE MEDIUM BASE: a warm-up round, then RUNS ((a)) or RUNS_SMALL rounds, each tool once per
# round (interleaved, so a change in the machine's load hits every tool alike).
bench_case() {
    local case=$1 medium=$2 base=$3 tool round n0 why key runs=$RUNS
    [ "$case" = a ] || runs=$RUNS_SMALL
    case_tools "$case" "$medium"
    for ((round = 0; round <= runs; round++)); do
        for tool in "${CASE_TOOLS[@]}"; do
            key="$case/$medium/$tool"
            [ -n "${FAILED[$key]:-}" ] && continue
            [ "$round" -gt 0 ] && [ "$(printf '%s\n' ${TIMES[$key]:-} | grep -c .)" -ge "${CAP[$key]:-$runs}" ] && continue
            "cmd_$case" "$tool" "$base/run"
            # Timed runs are quiet, as curl -sS, wget2 -q and aria2c -q are; the warm-up
            # prints prefetch's summary.
            case $tool in prefetch|before) [ "$round" -gt 0 ] && CMD+=(--quiet) ;; esac
            n0=$(log_lines)
            timed "$base/run" "${CMD[@]}"
            read -r REQS[$key] BYTES[$key] STATUS[$key] < <(log_since "$n0")
            why=
            [ "$T_EXIT" = 0 ] || why="exit $T_EXIT: $(head -c 300 "$TMP/stderr")"
            [ -z "$why" ] && why=$("check_$case" "$tool" "$base/run" "$([ "$round" = 0 ] && echo hash)")
            if [ -n "$why" ]; then
                say "bench: ($case, $medium) $tool failed: $why"
                FAILED[$key]=$why
                continue
            fi
            if [ "$round" = 0 ]; then
                [ "$tool" = prefetch ] && say "bench: ($case, $medium) prefetch says: $(tail -n 1 "$TMP/stdout")"
                say "bench: ($case, $medium) $tool warm-up ${T_SECS}s"
                # A tool whose runs take long gets fewer of them (at least 3) within TOOL_BUDGET.
                CAP[$key]=$(awk -v w="$T_SECS" -v b="$TOOL_BUDGET" -v r="$runs" 'BEGIN { n = (w > 0) ? int(b / w) : r; if (n > r) n = r; if (n < 3) n = 3; print n }')
                [ "${CAP[$key]}" -lt "$runs" ] && say "bench: ($case, $medium) $tool: ${CAP[$key]} timed runs (its warm-up took ${T_SECS}s; TOOL_BUDGET=${TOOL_BUDGET}s)"
                continue
            fi
            keep_run "$key"
            say "bench: ($case, $medium) $tool run $round/$runs ${T_SECS}s ${T_RSS} KiB, ${REQS[$key]} requests, ${BYTES[$key]} body bytes"
        done
    done
    clear_output "$base/run"; sync   # a trash folder stays until the medium is done
    for tool in "${CASE_TOOLS[@]}"; do
        key="$case/$medium/$tool"
        [ -n "${FAILED[$key]:-}" ] && continue
        [ -n "${TIMES[$key]:-}" ] && close_runs "$key"
    done
}

# bench_revalidate MEDIUM BASE: (c). A complete cache from an untimed run of (b), then a
# warm-up and RUNS_SMALL timed runs, each with the clock 2h further on so `refresh: 1h`
# has passed and the release is new: every resource is revalidated.
bench_revalidate() {
    local medium=$1 base=$2 cache="$2/reval/cache" round n0 key="c/$1/prefetch" offset before after
    local -a cmd=("$BIN" run --feeds "$IN/feeds-b" --cache "$cache" --config "$IN/config-b.yaml")
    C_OK[$medium]=1 C_BODY[$medium]=0 C_NOTE[$medium]=
    rm -rf "$base/reval"; mkdir -p "$base/reval"
    "${cmd[@]}" >"$TMP/stdout" 2>"$TMP/stderr" || { FAILED[$key]="the filling run exited $?: $(head -c 300 "$TMP/stderr")"; say "bench: (c, $medium) ${FAILED[$key]}"; return; }
    # The peer: wget2 -N over its own complete copy, in the same rounds.
    local wdir="$base/wreval" wkey="w/$medium/wget2"
    mkdir -p "$wdir"
    wget2 -q --max-threads="$CONCURRENCY" -P "$wdir" -i "$IN/list.txt" >/dev/null 2>&1 || { FAILED[$wkey]="the filling wget2 exited $?"; say "bench: (c, $medium) ${FAILED[$wkey]}"; }
    for ((round = 0; round <= RUNS_SMALL; round++)); do
        offset="+$((2 * (round + 1)))h"
        before=$(cd "$cache/small" && find . -type f -name 'f*.bin' -printf '%p %i %s %T@\n' | sort | sha256sum)
        n0=$(log_lines)
        sync
        local t0 t1
        t0=$(date +%s%N)
        PREFETCH_CLOCK_OFFSET=$offset /usr/bin/time -f '%M %U %S' -o "$TMP/rss" "${cmd[@]}" $([ "$round" -gt 0 ] && echo --quiet) >"$TMP/stdout" 2>"$TMP/stderr"
        T_EXIT=$?
        t1=$(date +%s%N)
        timed_figures "$t0" "$t1"
        read -r REQS[$key] BYTES[$key] STATUS[$key] < <(log_since "$n0")
        after=$(cd "$cache/small" && find . -type f -name 'f*.bin' -printf '%p %i %s %T@\n' | sort | sha256sum)
        C_BODY[$medium]=$((C_BODY[$medium] + BYTES[$key]))
        if [ "$T_EXIT" != 0 ]; then
            C_OK[$medium]=0; C_NOTE[$medium]+=" run at $offset exited $T_EXIT;"
        fi
        if [ "${REQS[$key]}" != "$FILES" ] || [ "${STATUS[$key]}" != "304x$FILES" ] || [ "${BYTES[$key]}" != 0 ]; then
            C_OK[$medium]=0; C_NOTE[$medium]+=" at $offset: ${REQS[$key]} requests, statuses ${STATUS[$key]}, ${BYTES[$key]} body bytes;"
        fi
        if [ "$before" != "$after" ]; then
            C_OK[$medium]=0; C_NOTE[$medium]+=" at $offset the cached files changed (inode, size or mtime);"
        fi
        [ "$round" = 0 ] && say "bench: (c, $medium) prefetch warm-up ${T_SECS}s; says: $(tail -n 1 "$TMP/stdout")"
        if [ "$round" -gt 0 ]; then
            keep_run "$key"
            say "bench: (c, $medium) prefetch run $round/$RUNS_SMALL at $offset ${T_SECS}s ${T_RSS} KiB, ${REQS[$key]} requests (${STATUS[$key]}), ${BYTES[$key]} body bytes"
        fi
        [ -n "${FAILED[$wkey]:-}" ] && continue
        n0=$(log_lines)
        sync
        t0=$(date +%s%N)
        /usr/bin/time -f '%M %U %S' -o "$TMP/rss" wget2 -q -N --max-threads="$CONCURRENCY" -P "$wdir" -i "$IN/list.txt" >"$TMP/stdout" 2>"$TMP/stderr"
        T_EXIT=$?
        t1=$(date +%s%N)
        timed_figures "$t0" "$t1"
        read -r REQS[$wkey] BYTES[$wkey] STATUS[$wkey] < <(log_since "$n0")
        if [ "$T_EXIT" != 0 ] || [ "${STATUS[$wkey]}" != "304x$FILES" ] || [ "${BYTES[$wkey]}" != 0 ]; then
            FAILED[$wkey]="wget2 -N: exit $T_EXIT, ${REQS[$wkey]} requests, statuses ${STATUS[$wkey]}, ${BYTES[$wkey]} body bytes"
            say "bench: (c, $medium) ${FAILED[$wkey]}"
            continue
        fi
        [ "$round" = 0 ] && continue
        keep_run "$wkey"
        say "bench: (c, $medium) wget2 -N run $round/$RUNS_SMALL ${T_SECS}s, ${REQS[$wkey]} requests (${STATUS[$wkey]})"
    done
    close_runs "$key"
    [ -z "${FAILED[$wkey]:-}" ] && close_runs "$wkey"
    rm -rf "$wdir"
    # For reference: the same run once more at the same moment, when nothing is due (every
    # copy was just revalidated): what any `run` over this feed costs before transferring.
    key="n/$medium/prefetch"
    for ((round = 1; round <= RUNS_SMALL; round++)); do
        n0=$(log_lines)
        local t0 t1
        t0=$(date +%s%N)
        PREFETCH_CLOCK_OFFSET=$offset /usr/bin/time -f '%M %U %S' -o "$TMP/rss" "${cmd[@]}" --quiet >"$TMP/stdout" 2>"$TMP/stderr"
        T_EXIT=$?
        t1=$(date +%s%N)
        timed_figures "$t0" "$t1"
        read -r REQS[$key] BYTES[$key] STATUS[$key] < <(log_since "$n0")
        [ "$T_EXIT" = 0 ] && [ "${REQS[$key]}" = 0 ] || say "bench: (nothing due, $medium) exit $T_EXIT, ${REQS[$key]} requests"
        keep_run "$key"
        say "bench: (nothing due, $medium) prefetch run $round/$RUNS_SMALL at $offset ${T_SECS}s, ${REQS[$key]} requests"
    done
    close_runs "$key"
    rm -rf "$base/reval"; sync
}

# curl_revalidate MEDIUM BASE: a reference for (c), not a target. curl sends the same 2000
# conditional requests (If-None-Match with each file's ETag, as nginx makes it: "%x-%x" of
# mtime and size), RUNS_SMALL times after a warm-up: the floor of 2000 304s on this machine for
# a tool that reads no manifest, keeps no state and checks no cache.
curl_revalidate() {
    local medium=$1 base=$2 key="r/$1/curl" round n0 t0 t1
    mkdir -p "$base/creval"
    find "$WWW/small" -maxdepth 1 -name 'f*.bin' -printf '%f %s %T@\n' | sort | head -n "$FILES" | awk -v url="$URL" -v out="$base/creval" '{
        if (NR > 1) print "next"   # between entries only: a trailing one is an empty entry (exit 2)
        printf "url = \"%s/small/%s\"\nheader = \"If-None-Match: \\\"%x-%x\\\"\"\noutput = \"%s/%s\"\n", url, $1, int($3), $2, out, $1 }' >"$IN/curl-inm.cfg"
    for ((round = 0; round <= RUNS_SMALL; round++)); do
        n0=$(log_lines)
        sync
        t0=$(date +%s%N)
        /usr/bin/time -f '%M %U %S' -o "$TMP/rss" curl -sS --parallel --parallel-max "$CONCURRENCY" -K "$IN/curl-inm.cfg" >"$TMP/stdout" 2>"$TMP/stderr"
        T_EXIT=$?
        t1=$(date +%s%N)
        timed_figures "$t0" "$t1"
        read -r REQS[$key] BYTES[$key] STATUS[$key] < <(log_since "$n0")
        if [ "$T_EXIT" != 0 ] || [ "${STATUS[$key]}" != "304x$FILES" ] || [ "${BYTES[$key]}" != 0 ]; then
            FAILED[$key]="exit $T_EXIT, ${REQS[$key]} requests, statuses ${STATUS[$key]}, ${BYTES[$key]} body bytes"
            say "bench: (c reference, $medium) curl: ${FAILED[$key]}"
            return
        fi
        [ "$round" = 0 ] && continue
        keep_run "$key"
        say "bench: (c reference, $medium) curl run $round/$RUNS_SMALL ${T_SECS}s, ${REQS[$key]} requests (${STATUS[$key]})"
    done
    close_runs "$key"
    rm -rf "$base/creval"
}

TMP=$(mktemp -d)
trap 'cleanup; rm -rf "$TMP"' EXIT
declare -A C_OK C_BODY C_NOTE FS_DESC
STARTED=$(date +%s)
for medium in $MEDIA; do
    case $medium in
    tmpfs)
        TMPFS_BASE=$(mktemp -d "$TMPFS_DIR/prefetch-transfer.XXXXXX") || die "cannot create a folder in $TMPFS_DIR"
        base=$TMPFS_BASE
        [ "$(stat -f -c %T "$base")" = tmpfs ] || say "bench: warning: $TMPFS_DIR is not tmpfs"
        ;;
    disk)
        mkdir -p "$DISK_DIR" && DISK_BASE=$(mktemp -d "$DISK_DIR/prefetch-transfer.XXXXXX") || die "cannot create a folder in $DISK_DIR"
        base=$DISK_BASE
        [ "$(stat -f -c %T "$base")" = tmpfs ] && say "bench: warning: $DISK_DIR is on tmpfs"
        ;;
    *) die "MEDIA: unknown medium '$medium' (tmpfs, disk)" ;;
    esac
    FS_DESC[$medium]="$base ($(df -PT "$base" | awk 'NR == 2 { print $1 ", " $2 }'))"
    say "bench: === outputs on $medium: ${FS_DESC[$medium]}"
    has_case a && CLEAR_MODE=delete bench_case a "$medium" "$base"
    has_case b && CLEAR_MODE=$([ "$medium" = disk ] && echo trash || echo delete) bench_case b "$medium" "$base"
    has_case c && bench_revalidate "$medium" "$base"
    has_case c && curl_revalidate "$medium" "$base"
    rm -rf "$base/run.trash"
    [ "$medium" = tmpfs ] && { rm -rf "$TMPFS_BASE"; TMPFS_BASE=; }
    [ "$medium" = disk ] && { rm -rf "$DISK_BASE"; DISK_BASE=; }
done
ELAPSED=$(( $(date +%s) - STARTED ))

# --- report ----------------------------------------------------------------------------
ver() { "$@" 2>&1 | head -n 1; }
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "" || v == "nan") print "-"; else printf f, v }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
row() { printf '%-34s %9s %6s %8s %7s %12s %7s %5s\n' "$@"; }
report() {
    local medium=$1 tool key t c fastest ftool v
    echo
    echo "== outputs on $medium: ${FS_DESC[$medium]}"
    echo
    # (a)'s fourth column is nginx's CPU time during the run (its worker's user + sys).
    has_case a && {
    row "(a) 1 file, $BIG_MIB MiB" "median s" "CPU s" "MiB/s" "nginx s" "peak RSS MB" "x curl" "runs"
    c=${TIME[a/$medium/curl]:-}
    case_tools a "$medium"
    for tool in "${CASE_TOOLS[@]}"; do
        key="a/$medium/$tool"; t=${TIME[$key]:-}
        [ -z "$t" ] && { row "$tool" failed - - - - - -; continue; }
        local what=" (size+sha256, fsync)"
        [ "$medium" = tmpfs ] && what=" (size+sha256)"  # tmpfs: prefetch calls no fsync, which does nothing there
        local label=$tool
        case $tool in prefetch|before) label="$tool$what" ;; dgst) label="openssl dgst -sha256 (hash alone)" ;; curlsync) label="curl, then fsync (sync FILE)" ;; esac
        row "$label" "$(fmt "$t" %.3f)" "$(fmt "${CPU[$key]}" %.2f)" \
            "$(awk -v b="$BIG_BYTES" -v t="$t" 'BEGIN { printf "%.0f", b / 1048576 / t }')" "$(fmt "${NGINX_CPU[$key]:-}" %.2f)" "$(mb "${RSS[$key]}")" \
            "$([ -n "$c" ] && awk -v a="$t" -v b="$c" 'BEGIN { printf "%.2f", a / b }' || echo -)" "${NRUNS[$key]}"
    done
    echo
    }
    has_case b || has_case c && {
    row "(b) $FILES files x $FILE_KIB KiB, ${CONCURRENCY}-way" "median s" "CPU s" "MiB/s" "req/s" "peak RSS MB" "x curl" "runs"
    c=${TIME[b/$medium/curl]:-}
    for tool in "${TOOLS[@]}" reval wreval idle creval; do
        case $tool in reval) key="c/$medium/prefetch" ;; wreval) key="w/$medium/wget2" ;; idle) key="n/$medium/prefetch" ;; creval) key="r/$medium/curl" ;; *) key="b/$medium/$tool" ;; esac
        case $tool in reval|wreval|idle|creval) has_case c || continue ;; *) has_case b || continue ;; esac
        t=${TIME[$key]:-}
        local label=$tool
        [ "$tool" = prefetch ] && label="prefetch$([ "$medium" = disk ] && echo " (fsync each)")"
        [ "$tool" = reval ] && label="(c) prefetch again, +2h: 304s"
        [ "$tool" = wreval ] && label="(c) wget2 -N again: 304s"
        [ "$tool" = idle ] && label="  (prefetch again: nothing due)"
        [ "$tool" = creval ] && label="  (curl: the same $FILES as 304s)"
        [ -z "$t" ] && { row "$label" failed - - - - - -; continue; }
        row "$label" "$(fmt "$t" %.3f)" "$(fmt "${CPU[$key]}" %.2f)" \
            "$([ "$tool" = reval ] || [ "$tool" = wreval ] || [ "$tool" = idle ] || [ "$tool" = creval ] && echo - || awk -v b="$SMALL_BYTES" -v t="$t" 'BEGIN { printf "%.1f", b / 1048576 / t }')" \
            "$([ "$tool" = idle ] && echo - || awk -v n="$FILES" -v t="$t" 'BEGIN { printf "%.0f", n / t }')" "$(mb "${RSS[$key]}")" \
            "$([ -n "$c" ] && awk -v a="$t" -v b="$c" 'BEGIN { printf "%.2f", a / b }' || echo -)" "${NRUNS[$key]}"
    done
    has_case c && echo "(c): ${REQS[c/$medium/prefetch]:-?} requests per run, statuses ${STATUS[c/$medium/prefetch]:-?}; body bytes over all (c) runs, from nginx's log: ${C_BODY[$medium]:-?}"
    echo
    }
    # Verdicts.
    t=${TIME[a/$medium/prefetch]:-}; c=${TIME[a/$medium/curl]:-}
    if ! has_case a; then :
    elif [ -n "$t" ] && [ -n "$c" ]; then
        awk -v p="$t" -v c="$c" -v tg="$TARGET_A" 'BEGIN { r = c / p; printf "(a) throughput prefetch/curl = %.2fx  (target >= %.2fx)   %s\n", r, tg, (r >= tg) ? "PASS" : "MISS" }'
        local d=${TIME[a/$medium/dgst]:-}
        [ -n "$d" ] && awk -v p="$t" -v c="$c" -v d="$d" -v tg="$TARGET_A_LIMIT" 'BEGIN { l = (c > d) ? c : d
            printf "    limit max(curl %.3f, dgst %.3f) = %.3f s; prefetch/limit = %.2fx  (target <= %.1fx)   %s\n", c, d, l, p / l, tg, (p / l <= tg) ? "PASS" : "MISS" }'
        awk -v p="${CPU[a/$medium/prefetch]}" -v n="${NGINX_CPU[a/$medium/prefetch]:-0}" -v k="$(nproc)" 'BEGIN {
            printf "    CPU of a prefetch run: its own %.2f s + nginx %.2f s = %.2f s on %d cores: at least %.3f s of wall\n", p, n, p + n, k, (p + n) / k }'
    else echo "(a) no figure (${FAILED[a/$medium/prefetch]:-${FAILED[a/$medium/curl]:-a tool failed}})   MISS"; fi
    fastest=; ftool=
    for tool in curl wget2 aria2c; do
        v=${TIME[b/$medium/$tool]:-}; [ -z "$v" ] && continue
        if [ -z "$fastest" ] || awk -v a="$v" -v b="$fastest" 'BEGIN { exit !(a < b) }'; then fastest=$v; ftool=$tool; fi
    done
    t=${TIME[b/$medium/prefetch]:-}
    if ! has_case b; then :
    elif [ -n "$t" ] && [ -n "$fastest" ]; then
        awk -v p="$t" -v f="$fastest" -v ft="$ftool" -v tg="$TARGET_B" 'BEGIN { r = p / f; printf "(b) time prefetch/fastest (%s) = %.2fx  (target <= %.1fx)   %s\n", ft, r, tg, (r <= tg) ? "PASS" : "MISS" }'
        awk -v p="${CPU[b/$medium/prefetch]}" -v c="${CPU[b/$medium/curl]:-nan}" 'BEGIN { printf "(b) CPU prefetch %.2f s, curl %.2f s  (target: no more than curl)   %s\n", p, c, (p <= c) ? "PASS" : "MISS" }'
    else echo "(b) no figure (${FAILED[b/$medium/prefetch]:-a tool failed})   MISS"; fi
    local tc=${TIME[c/$medium/prefetch]:-} tw=${TIME[w/$medium/wget2]:-}
    if ! has_case c; then :
    elif [ -n "$tc" ] && [ -n "$tw" ]; then
        awk -v c="$tc" -v w="$tw" -v ok="${C_OK[$medium]}" -v body="${C_BODY[$medium]}" -v tg="$TARGET_C" -v note="${C_NOTE[$medium]}" 'BEGIN {
            r = c / w; printf "(c) body bytes %d, all 304: %s; time prefetch/wget2 -N = %.2fx  (target 0 bytes, <= %.1fx)   %s\n",
                body, (ok ? "yes" : "no:" note), r, tg, (ok && body == 0 && r <= tg) ? "PASS" : "MISS" }'
    else echo "(c) no figure (${FAILED[c/$medium/prefetch]:-${FAILED[w/$medium/wget2]:-(b) failed}})   MISS"; fi
    local cr=${TIME[r/$medium/curl]:-} cb=${TIME[b/$medium/curl]:-}
    [ -n "$cr" ] && [ -n "$cb" ] && awk -v r="$cr" -v b="$cb" 'BEGIN { printf "    reference: curl'"'"'s own 304s take %.2fx of its (b) time\n", r / b }'
    local worst=0 parts=""
    for key in a b c; do
        v=${RSS[$key/$medium/prefetch]:-}; [ -z "$v" ] && continue
        parts+="($key) $(mb "$v") MB, "; [ "$v" -gt "$worst" ] && worst=$v
    done
    awk -v w="$worst" -v tg="$TARGET_RSS_MB" -v p="${parts%, }" 'BEGIN { printf "peak RSS prefetch: %s  (target < %d MB)   %s\n", p, tg, (w > 0 && w / 1024 < tg) ? "PASS" : "MISS" }'
}
{
    echo "transfer benchmark: prefetch vs curl, wget2, aria2c on one loopback nginx ($URL)"
    echo "machine: $(nproc) cores, $(uname -sr), $(awk '/MemTotal/ { printf "%.0f GiB RAM", $2 / 1048576 }' /proc/meminfo)"
    echo "versions: $(ver curl --version | cut -d' ' -f1-2); $(ver wget2 --version | sed 's/ - .*//'); $(ver aria2c --version); $(ver nginx -v | sed 's/.*: //'); $(ver swift --version)"
    echo "prefetch: $BIN ($("$BIN" --version 2>&1 | head -n 1)); commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet -- Sources 2>/dev/null || echo " + uncommitted changes in Sources")"
    echo "median of $RUNS timed runs of (a), $RUNS_SMALL of (b) and (c), after 1 warm-up, tools interleaved; wall time of the whole process (CPU s: user + sys);"
    echo "outputs cleared and sync'd before each run ($([ -n "${DELETE_BETWEEN:-}" ] && echo "deleted" || echo "deleted; on disk (b)'s are renamed aside and deleted after (c)"));"
    echo "MB = MiB; x curl = time / curl's time; measuring took ${ELAPSED}s"
    for medium in $MEDIA; do report "$medium"; done
} | tee "$WORK/report.txt"
# The figures for bench/run's table: KEY.wall, .cpu (s), .rss (KiB), .runs, KEY = transfer.CASE.MEDIUM.TOOL
# (CASE a, b, c = prefetch's 304s, w = wget2 -N's, n = nothing due, r = curl's 304s).
if [ -n "${RESULTS:-}" ]; then
    for key in "${!TIME[@]}"; do
        k="transfer.${key//\//.}"
        printf '%s.wall %s\n%s.cpu %s\n%s.rss %s\n%s.runs %s\n' "$k" "${TIME[$key]}" "$k" "${CPU[$key]}" "$k" "${RSS[$key]:-0}" "$k" "${NRUNS[$key]}"
    done >>"$RESULTS"
    for medium in $MEDIA; do
        printf 'transfer.c.%s.ok %s\ntransfer.c.%s.body %s\ntransfer.fs.%s %s\n' "$medium" "${C_OK[$medium]:-0}" "$medium" "${C_BODY[$medium]:-?}" "$medium" "$(echo "${FS_DESC[$medium]}" | tr ' ' _)"
    done >>"$RESULTS"
    printf 'transfer.seconds %s\n' "$ELAPSED" >>"$RESULTS"
fi

# --- optional profile of prefetch's own runs -------------------------------------------
demangle() { if command -v swift-demangle >/dev/null; then swift-demangle --simplified; else swift demangle --simplified 2>/dev/null || cat; fi; }
if [ -n "${PROFILE:-}" ]; then
    if ! command -v perf >/dev/null; then
        say "bench: PROFILE=1 needs perf (Debian: linux-perf); skipped"
    else
        base=$(mktemp -d "$TMPFS_DIR/prefetch-profile.XXXXXX")
        for case in a b c; do
            if [ "$case" = c ]; then   # the complete cache of (b), two hours later
                export PREFETCH_CLOCK_OFFSET=+2h
            else
                "cmd_$case" prefetch "$base"
                rm -rf "$base/cache"
            fi
            data="$WORK/perf-$case.data"
            perf record -q -F 1999 --call-graph dwarf,16384 -o "$data" "${CMD[@]}" >/dev/null 2>&1
            echo
            echo "perf ($case), outputs on tmpfs: CPU samples by command and library (self; children such as busctl included)"
            perf report -i "$data" --no-children --sort comm,dso --stdio -g none 2>/dev/null | grep -E '^ +[0-9]' | head -n 8 | cut -c1-100
            echo "perf ($case): top symbols of the prefetch process (self)"
            perf report -i "$data" --comms prefetch --no-children --sort dso,symbol --stdio -g none 2>/dev/null \
                | grep -E '^ +[0-9]' | head -n 12 | demangle | cut -c1-130
            echo "perf ($case): prefetch's own functions and the library calls they make (inclusive, % of all samples)"
            perf report -i "$data" --comms prefetch --children --sort symbol --stdio -g none 2>/dev/null | grep -E '^ +[0-9]' | demangle \
                | grep -E 'TransferEngine\.|StateStore\.|SQLiteConnection\.(prepare|execute)|Transfer\.(receive|header)|SHA256\.update|CacheFolder\.|Planner\.plan\(|ConditionProbes|NetworkProbe|GarbageCollector\.collect|Array\.remove|sqlite3_prepare_v2|sqlite3_step|curl_multi_perform|fsync' \
                | grep -v '(inlined)' | head -n 16 | cut -c1-130
        done | tee -a "$WORK/report.txt"
        unset PREFETCH_CLOCK_OFFSET
        rm -rf "$base"
    fi
fi
exit 0
