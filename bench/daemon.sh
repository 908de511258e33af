#!/usr/bin/env bash
# bench/daemon.sh: the daemon at rest (issue 20, target 6). 100,000 resources, all cached
# and fresh (refresh 24h), so nothing is due for a day; no feed_sources; verify_every 365d;
# the condition probes run as SPEC §7 says. Steps:
#   1. one `run` fills the cache from a loopback nginx (tmpfs);
#   2. a first daemon start verifies the cache once (never verified: SPEC §6) and records it;
#      it is stopped once state.db has `last_verification` (its peak RSS is reported too);
#   3. the measured start: /proc/PID/status (VmRSS, VmHWM) and /proc/PID/stat (utime + stime
#      + the children it waited for) at 1 minute and at SECONDS (default 600).
# Reported: CPU as % of one core averaged from the start to the end, and from 1 minute to
# the end; RSS peak (VmHWM at the end: the start included); RSS at 1 minute and at the end.
#
#   RESOURCES=100000  SECONDS_AT_REST=600  BIN=path  TMPFS_DIR=/dev/shm
#   READY_FILE=path   touched once the measured daemon's first pass is over (bench/run goes on
#                     with other rows meanwhile: the daemon's own CPU and memory are what count;
#                     its start, a core for a second or two, no longer overlaps their first rounds)
set -u -o pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$BENCH/lib.sh"
RESOURCES=${RESOURCES:-100000}
SECONDS_AT_REST=${SECONDS_AT_REST:-600}
TMPFS_DIR=${TMPFS_DIR:-/dev/shm}
"$ROOT/scripts/setup" nginx-light time sqlite3 >/dev/null || say "bench: scripts/setup could not install everything"
bin
BASE=$(mktemp -d "$TMPFS_DIR/prefetch-daemon.XXXXXX") || die "cannot create a folder in $TMPFS_DIR"
chmod 755 "$BASE"
DPID=
cleanup() {
    [ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
    origin_stop "$BASE/origin"; rm -rf "$BASE"
}
mkdir -p "$BASE/www" "$BASE/feeds"
head -c 64 /dev/urandom >"$BASE/www/one.bin"; chmod 644 "$BASE/www/one.bin"
PORT=$(free_port 8490)
origin_start "$BASE/www" "$PORT" "$BASE/origin" || die "nginx did not start"
served_feed "$RESOURCES" "http://127.0.0.1:$PORT" "$BASE/feeds/scale.yaml" 24h
printf 'max_manifest_size: 1GiB\nconcurrency: 16\nper_host: 16\nverify_every: 365d\n' >"$BASE/config.yaml"
export PREFETCH_MACHINE_ID=bench-daemon
args=(--config "$BASE/config.yaml" --feeds "$BASE/feeds" --cache "$BASE/cache")
say "bench: daemon: filling the cache ($RESOURCES resources), load $(load)"
"$BIN" run "${args[@]}" --quiet >"$BASE/fill.out" 2>&1 || die "the filling run failed: $(tail -n 3 "$BASE/fill.out")"

# hwm PID / rss PID: KiB from /proc/PID/status; cpu_ticks PID: utime+stime+cutime+cstime.
hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 + $14 + $15 }'; }
TICK=$(getconf CLK_TCK)

say "bench: daemon: first start (verifies the cache once)"
"$BIN" daemon "${args[@]}" >"$BASE/first.out" 2>&1 &
DPID=$!
for ((i = 0; i < 300; i++)); do
    sleep 1
    kill -0 "$DPID" 2>/dev/null || die "the first daemon exited: $(tail -n 3 "$BASE/first.out")"
    v=$(sqlite3 -readonly "$BASE/cache/.prefetch/state.db" "SELECT value FROM counters WHERE feed = '' AND name = 'last_verification'" 2>/dev/null)
    [ -n "$v" ] && break
done
[ -n "$v" ] || say "bench: daemon: the first start did not finish its verification in 300 s"
first_hwm=$(hwm "$DPID")
kill -TERM "$DPID"; wait "$DPID"; DPID=

say "bench: daemon: the measured start, $SECONDS_AT_REST s"
"$BIN" daemon "${args[@]}" >"$BASE/daemon.out" 2>&1 &
DPID=$!
t0=$(date +%s%N)
if [ -n "${READY_FILE:-}" ]; then
    # Its first pass (feeds, state, plan over every resource) takes a core for a second or
    # two: the other rows wait for it, until its CPU ticks stand still for 2 s (at most 60 s).
    last=-1; still=0
    for ((i = 0; i < 120 && still < 4; i++)); do
        sleep 0.5
        now=$(cpu_ticks "$DPID" 2>/dev/null) || break
        if [ "$now" = "$last" ]; then still=$((still + 1)); else still=0; fi
        last=$now
    done
    touch "$READY_FILE"
fi
since() { awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
sleep_until() { local left; left=$(awk -v s="$(since)" -v t="$1" 'BEGIN { d = t - s; print (d > 0) ? d : 0 }'); sleep "$left"; }
sleep_until 60
kill -0 "$DPID" 2>/dev/null || die "the daemon exited: $(tail -n 3 "$BASE/daemon.out")"
t1=$(since); c1=$(cpu_ticks "$DPID"); r1=$(rss "$DPID"); h1=$(hwm "$DPID")
sleep_until "$SECONDS_AT_REST"
kill -0 "$DPID" 2>/dev/null || die "the daemon exited: $(tail -n 3 "$BASE/daemon.out")"
t2=$(since); c2=$(cpu_ticks "$DPID"); r2=$(rss "$DPID"); h2=$(hwm "$DPID")
threads=$(ls "/proc/$DPID/task" | wc -l)
kill -TERM "$DPID"; wait "$DPID"; status=$?; DPID=
requests=$(wc -l <"$BASE/origin/access.log")
result daemon.resources "$RESOURCES"
result daemon.seconds "$t2"
result daemon.cpu_pct "$(awk -v c="$c2" -v t="$t2" -v k="$TICK" 'BEGIN { printf "%.3f", c / k / t * 100 }')"
result daemon.cpu_pct_after_1min "$(awk -v a="$c1" -v b="$c2" -v s="$t1" -v t="$t2" -v k="$TICK" 'BEGIN { printf "%.3f", (b - a) / k / (t - s) * 100 }')"
result daemon.cpu_s "$(awk -v c="$c2" -v k="$TICK" 'BEGIN { printf "%.2f", c / k }')"
result daemon.hwm "$h2"
result daemon.hwm_1min "$h1"
result daemon.rss_1min "$r1"
result daemon.rss_end "$r2"
result daemon.first_start_hwm "${first_hwm:-0}"
result daemon.threads "$threads"
result daemon.exit "$status"
say "bench: daemon: CPU $(awk -v c="$c2" -v t="$t2" -v k="$TICK" 'BEGIN { printf "%.3f", c / k / t * 100 }') % over ${t2} s; RSS ${r1} KiB at 1 min, ${r2} KiB at the end, peak ${h2} KiB; $threads threads; exit $status; origin requests (fill included) $requests"
exit 0
