# bench/lib.sh: what bench/scale.sh, fleet.sh and daemon.sh share (sourced, not run).
#   measure KEY CMD...   one timed run: wall s, user+sys CPU s, peak RSS KiB (GNU time);
#                        appended to KEY's samples; M_EXIT is its exit status
#   result KEY VALUE     one figure for bench/run's table, in $RESULTS (KEY VALUE a line)
#   median / maximum     of numbers on stdin
#   small_feed WORK      transfer.sh's (b): a loopback nginx over bench/out/transfer/www on a
#                        free port, WORK/feeds/small.yaml (its 2,000 files) and WORK/config.yaml;
#                        sets SMALL_URL; stop it with `small_feed_stop WORK` (callgrind.sh,
#                        callgrind-cases.sh, small-rounds.sh)
# Wall time is `date +%s%N` around the whole process; a median of alternating rounds is
# what the reports give.
BENCH=${BENCH:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
ROOT=${ROOT:-$(cd "$BENCH/.." && pwd)}
OUT=${OUT:-$BENCH/out}
RESULTS=${RESULTS:-$OUT/results.txt}
export PATH="$PATH:/usr/sbin:/sbin"
[ -x /opt/swift/usr/bin/swift ] && export PATH="/opt/swift/usr/bin:$PATH"

say() { printf '%s\n' "$*" >&2; }
die() { say "bench: $*"; exit 1; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
maximum() { sort -g | tail -n 1; }
result() { printf '%s %s\n' "$1" "$2" >>"$RESULTS"; }
load() { awk '{ print $1 }' /proc/loadavg; }

# bin: the release binary, as scripts/build-release builds it. bench/run exports BIN; a
# script run alone builds into SCRATCH (default .build) unless SKIP_BUILD=1.
bin() {
    if [ -n "${BIN:-}" ]; then
        [ -x "$BIN" ] || die "BIN=$BIN is not an executable"
        return
    fi
    local args=()
    [ -n "${SCRATCH:-}" ] && args=(--scratch-path "$SCRATCH")
    if [ -z "${SKIP_BUILD:-}" ]; then
        say "bench: scripts/build-release ${args[*]}"
        mkdir -p "$OUT"
        BIN=$("$ROOT/scripts/build-release" "${args[@]}" 2>"$OUT/build.log") || { tail -n 30 "$OUT/build.log" >&2; die "release build failed"; }
    else
        BIN="$(cd "$ROOT" && swift build -c release --static-swift-stdlib --disable-local-rpath -Xlinker -z -Xlinker now \
            --toolset "$ROOT/scripts/release-toolset.json" "${args[@]}" --show-bin-path)/prefetch"
    fi
    [ -x "$BIN" ] || die "no release binary at $BIN"
    export BIN
}

# yaml_events: libyaml's bare event loop (bench/yaml-events.c), compiled once.
yaml_events() {
    YAML_EVENTS=$OUT/yaml-events
    if [ ! -x "$YAML_EVENTS" ] || [ "$BENCH/yaml-events.c" -nt "$YAML_EVENTS" ]; then
        mkdir -p "$OUT"
        cc -O2 -o "$YAML_EVENTS" "$BENCH/yaml-events.c" -lyaml || die "cannot build bench/yaml-events.c (gcc, libyaml-dev)"
    fi
}

declare -A SAMPLES_T SAMPLES_C PEAK
M_TMP=$(mktemp -d)
# A script that sources this file defines cleanup() for its own processes and folders.
lib_exit() { declare -F cleanup >/dev/null && cleanup; rm -rf "$M_TMP"; }
trap lib_exit EXIT
trap 'exit 130' INT TERM
measure() {
    local key=$1 t0 t1 secs; shift
    t0=$(date +%s%N)
    /usr/bin/time -f '%M %U %S' -o "$M_TMP/time" "$@" >"$M_TMP/stdout" 2>"$M_TMP/stderr"
    M_EXIT=$?
    t1=$(date +%s%N)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')
    read -r M_RSS M_CPU < <(tail -n 1 "$M_TMP/time" | awk '{ printf "%s %.3f\n", $1, $2 + $3 }')
    [[ "${M_RSS:-}" =~ ^[0-9]+$ ]] || M_RSS=0
    M_SECS=$secs
    SAMPLES_T[$key]+="$secs "
    SAMPLES_C[$key]+="$M_CPU "
    [ "$M_RSS" -gt "${PEAK[$key]:-0}" ] && PEAK[$key]=$M_RSS
    return 0
}
# close KEY: its medians and peak into $RESULTS as KEY.wall, KEY.cpu, KEY.rss (KiB), KEY.runs.
close() {
    local key=$1
    result "$key.wall" "$(printf '%s\n' ${SAMPLES_T[$key]} | median)"
    result "$key.cpu" "$(printf '%s\n' ${SAMPLES_C[$key]} | median)"
    result "$key.rss" "${PEAK[$key]:-0}"
    result "$key.runs" "$(printf '%s\n' ${SAMPLES_T[$key]} | grep -c .)"
}

# origin_start WWW PORT RUNDIR: a loopback nginx (1 worker, sendfile, keep-alive) serving
# WWW, and every /r/ANYTHING as the one file WWW/one.bin (a manifest of a million distinct
# URLs without a million files at the origin). The access log's first field is nginx's
# $connection, so connections can be counted. origin_stop RUNDIR.
origin_start() {
    local www=$1 port=$2 run=$3
    mkdir -p "$run/tmp"
    cat >"$run/nginx.conf" <<CONF
worker_processes 1;
daemon on;
pid $run/nginx.pid;
error_log $run/error.log warn;
events { worker_connections 512; }
http {
  log_format bench '\$connection \$status \$body_bytes_sent \$request_method \$uri';
  access_log $run/access.log bench;
  client_body_temp_path $run/tmp; proxy_temp_path $run/tmp; fastcgi_temp_path $run/tmp;
  uwsgi_temp_path $run/tmp; scgi_temp_path $run/tmp;
  sendfile on;
  keepalive_requests 1000000;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$port;
    root $www;
    etag on;
    location /r/ { try_files /one.bin =404; }
  }
}
CONF
    nginx -c "$run/nginx.conf" -e "$run/error.log" 2>/dev/null || nginx -c "$run/nginx.conf" || return 1
    local i
    for i in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0; sleep 0.1; done
    return 1
}
origin_stop() { [ -f "$1/nginx.pid" ] && kill "$(cat "$1/nginx.pid")" 2>/dev/null; rm -f "$1/nginx.pid"; return 0; }
free_port() { local p=$1; while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done; echo "$p"; }
# served_origin BASE FIRST_PORT: BASE/www holding one 64-byte file, served by origin_start on
# the first free port from FIRST_PORT (every /r/ URL answered with it); sets PORT and URL.
served_origin() {
    mkdir -p "$1/www"
    head -c 64 /dev/urandom >"$1/www/one.bin"
    chmod 644 "$1/www/one.bin"
    PORT=$(free_port "$2")
    origin_start "$1/www" "$PORT" "$1/origin" || die "nginx did not start (see $1/origin/error.log)"
    URL="http://127.0.0.1:$PORT"
}
# served_feed N URL FILE [REFRESH]: a feed of N resources, url URL/r/dNNN/fNNNNNNN.bin each,
# in 1,000 folders of at most 1,000 files.
served_feed() {
    awk -v n="$1" -v url="$2" -v refresh="${4:-1h}" 'BEGIN {
        printf "name: scale\nrefresh: %s\nlimits: { concurrency: 16 }\nresources:\n", refresh
        for (i = 0; i < n; i++) { p = sprintf("d%03d/f%07d.bin", i % 1000, i); printf "  - url: %s/r/%s\n    path: %s\n", url, p, p }
    }' >"$3"
}

# The (b) feed of transfer.sh over its generated files (run bench/transfer.sh once first).
small_feed() {
    local work=$1 www=$ROOT/bench/out/transfer/www
    [ -d "$www/small" ] || die "no $www/small: run bench/transfer.sh once first"
    mkdir -p "$work/feeds"
    local port; port=$(free_port 8990)
    "$ROOT/scripts/demo-origin" start "$www" "$port" "$work/origin" >/dev/null
    SMALL_URL="http://127.0.0.1:$port"
    {
        printf 'name: small\nrefresh: 1h\nlimits: { concurrency: 16 }\nresources:\n'
        find "$www/small" -maxdepth 1 -name 'f*.bin' -printf '%f\n' | sort |
            awk -v url="$SMALL_URL" '{ printf "  - url: %s/small/%s\n    path: %s\n", url, $1, $1 }'
    } >"$work/feeds/small.yaml"
    printf 'concurrency: 16\nper_host: 16\n' >"$work/config.yaml"
}
small_feed_stop() { "$ROOT/scripts/demo-origin" stop "$1/origin" >/dev/null 2>&1 || true; }
