#!/usr/bin/env python3
"""bench/table.py RESULTS: the Markdown tables of bench/run from its figures file.

RESULTS holds one "KEY VALUE" a line (bench/lib.sh's `result`, transfer.sh's RESULTS).
Prints the targets' table of issue 20 (workload, prefetch, peer, peer figure, ratio,
target, met), then the scale table and the transfer table in full. A figure that is
missing (its row was not run, or failed) is shown as "not measured".
"""

import sys

R = {}
for line in open(sys.argv[1]):
    key, _, value = line.rstrip("\n").partition(" ")
    R[key] = value


# The baseline of 88e1a8b timed the hash as "openssl" (the file prefetch placed); later runs as "dgst".
for key in [k for k in R if ".openssl." in k]:
    R.setdefault(key.replace(".openssl.", ".dgst."), R[key])


def num(key):
    try:
        v = float(R[key])
        return None if v != v else v
    except (KeyError, ValueError):
        return None


def s(v, digits=3):
    return "—" if v is None else f"{v:.{digits}f} s"


def mib(kib):
    return "—" if kib is None else f"{kib / 1024:.1f} MB"


rows = []


def row(workload, prefetch, peer, peer_figure, ratio, target, met):
    rows.append((workload, prefetch, peer, peer_figure, ratio, target, met))


def verdict(ok):
    return "not measured" if ok is None else ("**met**" if ok else "not met")


def ratio_row(workload, p, peer, q, target_text, limit, better="lower", unit=s, show=None):
    """p, q: prefetch's and the peer's figure; ratio p/q (better lower) or q/p (higher)."""
    if p is None or q is None:
        row(workload, unit(p), peer, unit(q), "—", target_text, verdict(None))
        return
    r = p / q if better == "lower" else q / p
    ok = r <= limit if better == "lower" else r >= limit
    row(workload, show or unit(p), peer, unit(q), f"{r:.2f}×", target_text, verdict(ok))


BIG = R.get("transfer.big_mib", "512")
SMALL = f"{int(R.get('transfer.files', '2000')):,}"

# --- (a), (b), (c) on tmpfs, then on disk -------------------------------------------------
for medium in ("tmpfs", "disk"):
    on = f" ({medium})"
    p = num(f"transfer.a.{medium}.prefetch.wall")
    c = num(f"transfer.a.{medium}.curl.wall")
    h = num(f"transfer.a.{medium}.dgst.wall")
    big_bytes = float(BIG) * 1048576
    thr = (lambda t: "—" if t is None else f"{t:.3f} s ({big_bytes / 1048576 / t:.0f} MiB/s)")
    if medium == "tmpfs":
        ratio_row(f"(a) {BIG} MiB with `size` + `sha256`{on}: throughput", p, "`curl -o`", c,
                  "≥ 0.95× curl's throughput", 0.95, better="higher", unit=thr)
        lim = None if c is None or h is None else max(c, h)
        if p is None or lim is None:
            row(f"(a) the same against the 2-core limit{on}", s(p), "max(`curl -o`, `openssl dgst -sha256` of the file)", s(lim), "—", "≤ 1.10× the limit", verdict(None))
        else:
            row(f"(a) the same against the 2-core limit{on}", s(p), "max(`curl -o`, `openssl dgst -sha256` of the file)",
                f"{lim:.3f} s (curl {c:.3f}, openssl {h:.3f})", f"{p / lim:.2f}×", "≤ 1.10× the limit", verdict(p / lim <= 1.10))
    else:
        if p is None or c is None:
            row(f"(a) {BIG} MiB, outputs on disk (prefetch fsyncs, the peers do not)", thr(p), "`curl -o`", thr(c), "—", "none: report", "—")
        else:
            row(f"(a) {BIG} MiB, outputs on disk (prefetch fsyncs, the peers do not)", thr(p), "`curl -o`", thr(c), f"{c / p:.2f}× throughput", "none: report", "—")
    peers = {t: num(f"transfer.b.{medium}.{t}.wall") for t in ("curl", "wget2", "aria2c")}
    known = {t: v for t, v in peers.items() if v is not None}
    fastest = min(known, key=known.get) if known else None
    names = {"curl": "`curl --parallel`", "wget2": "wget2 `--max-threads=16`", "aria2c": "aria2c `-j16`"}
    pb = num(f"transfer.b.{medium}.prefetch.wall")
    peer = "fastest of curl, wget2, aria2c" + (f": {names[fastest]}" if fastest else "")
    if medium == "tmpfs":
        ratio_row(f"(b) {SMALL} × 16 KiB, 16-way{on}", pb, peer, known.get(fastest), "≤ 0.8× the fastest", 0.8)
        ratio_row(f"(b) the same: CPU (user + sys){on}", num(f"transfer.b.{medium}.prefetch.cpu"), "`curl --parallel`",
                  num(f"transfer.b.{medium}.curl.cpu"), "≤ 1.0× curl's", 1.0)
        ratio_row(f"(c) revalidating those {SMALL} (all 304){on}", num(f"transfer.c.{medium}.prefetch.wall"),
                  "`wget2 -N --max-threads=16`", num(f"transfer.w.{medium}.wget2.wall"), "≤ 0.8× wget2 -N", 0.8)
        n = num(f"transfer.n.{medium}.prefetch.wall")
        row(f"a pass with nothing due, {SMALL} resources{on}", s(n), "", "", "", "must fall first (target 3): no figure set", "—")
    else:
        pq = known.get(fastest)
        row(f"(b) {SMALL} × 16 KiB, 16-way{on}", s(pb), peer, s(pq), "—" if pb is None or pq is None else f"{pb / pq:.2f}×", "none: report", "—")
        pc, wc = num(f"transfer.c.{medium}.prefetch.wall"), num(f"transfer.w.{medium}.wget2.wall")
        row(f"(c) revalidating those {SMALL}{on}", s(pc), "`wget2 -N --max-threads=16`", s(wc),
            "—" if pc is None or wc is None else f"{pc / wc:.2f}×", "none: report", "—")

# --- scale -----------------------------------------------------------------------------------
K = 100000
ratio_row(f"`validate`, 100,000 resources", num(f"scale.{K}.validate.wall"), "libyaml's bare event loop, same file",
          num(f"scale.{K}.yaml.wall"), "≤ 1.5×", 1.5)
for cmd, label in (("plan", "`plan`"), ("plan_json", "`plan --json`")):
    ratio_row(f"{label}, 100,000", num(f"scale.{K}.{cmd}.wall"), "`validate`, same file", num(f"scale.{K}.validate.wall"), "≤ 1.3× validate", 1.3)
ratio_row("a `run` with nothing due, 100,000", num(f"scale.{K}.idle.wall"), "`validate`, same file",
          num(f"scale.{K}.validate_served.wall"), "≤ 1.3× validate", 1.3)
COMMANDS = [("validate", "validate"), ("plan", "plan"), ("plan_json", "plan --json"), ("validate_served", "validate (served feed)"),
            ("fill", "run: filling the cache"), ("idle", "run: nothing due"), ("reval", "run: revalidation, all 304")]
sizes = [int(x) for x in R.get("scale.sizes", "").split(",") if x]
upto = [(n, c) for n in sizes if n <= K for c, _ in COMMANDS if num(f"scale.{n}.{c}.rss") is not None]
if upto:
    n, c = max(upto, key=lambda nc: num(f"scale.{nc[0]}.{nc[1]}.rss"))
    worst = num(f"scale.{n}.{c}.rss")
    row("peak RSS, every command up to 100,000 resources", f"{mib(worst)} (`{dict(COMMANDS)[c]}`, {n:,})", "", "", "", "< 64 MB", verdict(worst / 1024 < 64))
else:
    row("peak RSS, every command up to 100,000 resources", "—", "", "", "", "< 64 MB", verdict(None))
M = 1000000
at_m = [(c, num(f"scale.{M}.{c}.rss")) for c, _ in COMMANDS if num(f"scale.{M}.{c}.rss") is not None]
if at_m:
    c, worst = max(at_m, key=lambda x: x[1])
    base = max((num(f"scale.{K}.{x}.rss") or 0) for x, _ in COMMANDS)
    per = (worst - base) * 1024 / (M - K) if base else None
    ok = worst / 1024 < 450 and (per is None or per < 400)
    row("peak RSS, every command at 1,000,000 resources", f"{mib(worst)} (`{dict(COMMANDS)[c]}`)", "", "",
        "—" if per is None else f"{per:.0f} B per resource beyond 100,000", "< 450 MB; < 400 B per resource beyond 100,000", verdict(ok))
else:
    row("peak RSS, every command at 1,000,000 resources", "—", "", "", "", "< 450 MB; < 400 B per resource beyond 100,000", verdict(None))

# --- fleet, daemon ---------------------------------------------------------------------------
frss = num("fleet.run.rss")
row(f"one `run`, {int(num('fleet.files') or 50000):,} × 256 B, 5 % transient, 1 % permanent failures: peak RSS", mib(frss), "", "", "", "< 64 MB",
    verdict(None if frss is None else frss / 1024 < 64))
cpk = num("fleet.conns_per_1000")
row("the same: connections per 1,000 requests (at the origin)",
    "—" if cpk is None else f"{cpk:.1f} ({R.get('fleet.connections')} for {R.get('fleet.requests')})", "", "", "", "≤ 10",
    verdict(None if cpk is None else cpk <= 10))
dcpu, dmin = num("daemon.cpu_pct"), num("daemon.seconds")
row(f"the daemon at rest, {int(num('daemon.resources') or 100000):,} resources: CPU over {'—' if dmin is None else f'{dmin / 60:.0f} min'} from its start",
    "—" if dcpu is None else f"{dcpu:.3f} % of a core (after 1 min: {num('daemon.cpu_pct_after_1min'):.3f} %)", "", "", "", "≤ 0.5 %",
    verdict(None if dcpu is None else dcpu <= 0.5))
hwm = num("daemon.hwm")
row("the same: peak RSS, the start included", mib(hwm) if hwm is None else f"{mib(hwm)} (first start, verifying once: {mib(num('daemon.first_start_hwm'))})",
    "", "", "", "< 64 MB", verdict(None if hwm is None else hwm / 1024 < 64))
r1, r2 = num("daemon.rss_1min"), num("daemon.rss_end")
row("the same: RSS at 10 minutes against 1 minute", "—" if r1 is None or r2 is None else f"{mib(r2)} against {mib(r1)}", "", "",
    "—" if not r1 or r2 is None else f"{(r2 - r1) / r1 * 100:+.1f} %", "within 5 %", verdict(None if not r1 or r2 is None else abs(r2 - r1) / r1 <= 0.05))

print("| workload | prefetch | peer | peer's figure | ratio | target | met |")
print("|---|---:|---|---:|---:|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")

# --- the scale table in full -------------------------------------------------------------------
if sizes:
    print()
    print("Scale (target 4): wall time is the median of alternating rounds, CPU user + sys (median), peak RSS the maximum;")
    print("`validate`, `plan`, `plan --json` over bench/gen_feed.py's feed (every SPEC §1 key), the runs over a served feed")
    print("(url + path, one 64-byte body behind every URL, cache on tmpfs). MB = MiB.")
    print()
    print("| resources | command | wall | CPU | peak RSS | RSS per resource | vs `validate` | rounds |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        for c, label in [("yaml", "libyaml's event loop (reference)")] + COMMANDS:
            w = num(f"scale.{n}.{c}.wall")
            if w is None:
                continue
            ref = num(f"scale.{n}.validate_served.wall") if c in ("fill", "idle", "reval") else num(f"scale.{n}.validate.wall")
            rss = num(f"scale.{n}.{c}.rss")
            print(f"| {n:,} | {label} | {w:.3f} s | {num(f'scale.{n}.{c}.cpu'):.2f} s | {mib(rss)} | {rss * 1024 / n:.0f} B | "
                  f"{'' if c in ('yaml', 'validate', 'validate_served') or ref is None else f'{w / ref:.2f}×'} | {R.get(f'scale.{n}.{c}.runs')} |")
    sz = ", ".join(f"{n:,}: {int(R[f'scale.{n}.gen_bytes']) / 1e6:.1f} MB" for n in sizes if f"scale.{n}.gen_bytes" in R)
    print()
    print(f"Generated manifests: {sz}.")

# --- the transfer table in full ------------------------------------------------------------------
tools = [("a", "prefetch", f"(a) prefetch, {BIG} MiB, size + sha256"), ("a", "curl", "(a) curl -o"), ("a", "wget2", "(a) wget2 -O"),
         ("a", "aria2c", "(a) aria2c -x1 -s1"), ("a", "dgst", "(a) openssl dgst -sha256 of the file, alone"), ("a", "curlsync", "(a) curl -o, then fsync (sync FILE)"),
         ("b", "prefetch", f"(b) prefetch, {SMALL} × 16 KiB"), ("b", "curl", "(b) curl --parallel --parallel-max 16"),
         ("b", "wget2", "(b) wget2 --max-threads=16"), ("b", "aria2c", "(b) aria2c -j16"),
         ("c", "prefetch", "(c) prefetch again 2 h later: 304s"), ("w", "wget2", "(c) wget2 -N --max-threads=16: 304s"),
         ("r", "curl", "(c) curl --parallel with If-None-Match (reference)"), ("n", "prefetch", "prefetch again, nothing due (reference)")]
if any(k.startswith("transfer.") for k in R):
    print()
    print("Transfers (targets 1–3, 7): medians of alternating rounds, one loopback nginx (1 worker, sendfile).")
    print()
    print("| case | tmpfs wall | tmpfs CPU | tmpfs peak RSS | disk wall | disk CPU | disk peak RSS |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case, tool, label in tools:
        cells = []
        for medium in ("tmpfs", "disk"):
            w, c, m = (num(f"transfer.{case}.{medium}.{tool}.{x}") for x in ("wall", "cpu", "rss"))
            cells += [s(w), "—" if c is None else f"{c:.2f} s", mib(m)]
        print(f"| {label} | " + " | ".join(cells) + " |")
    for medium in ("tmpfs", "disk"):
        if f"transfer.fs.{medium}" in R:
            print(f"\n{medium}: {R[f'transfer.fs.{medium}'].replace('_', ' ')}; (c) all 304 and no body byte: "
                  f"{'yes' if R.get(f'transfer.c.{medium}.ok') == '1' and R.get(f'transfer.c.{medium}.body') == '0' else 'NO'}")
