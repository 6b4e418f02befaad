"""bench/threads: is any single ceph-osd thread on the completion path saturated?

  bench/threads [--packages SRC] [--profile NAME] [--variant NAME]...
                [--seconds S] [--out DIR]

For each variant (default: defaults and io-mock), one fresh one-OSD round of
the profile (default 4k-write) with SRC's packages (default: Debian's stock),
and over the benchmark window:
  - every ceph-osd thread's CPU share, from /proc/PID/task/TID/stat (a thread
    near 100% is saturated: one core is all it can use);
  - the completion path's perf counters: every finisher-* queue (length and
    completion latency) and BlueStore's kv sync/flush/commit/final and aio-wait
    stage latencies (admin socket `perf dump` before and after).
Writes threads.json and threads.md in --out (default build/reports/threads).
Exit 0 when every round ran, 2 when one could not.
"""
import argparse
import json
from pathlib import Path

from cephperf import paths
from cephperf.bench.rounds import load_profile, parse_source, round_spec, run_node, runs_dir
from cephperf.common import log, main_wrapper, rmtree, write_atomic

SATURATED_PERCENT = 90  # of one core, over the whole window


def render(runs: list[dict], packages: str, profile: str) -> str:
    lines = [f"# ceph-osd threads under {profile} ({packages})", ""]
    for r in runs:
        t = r["threads"]
        lines += [f"## variant {r['variant']}: {r['iops']:.0f} IOPS, ceph-osd "
                  f"{r['osd_cpu_us_per_op']:.0f} CPU µs/op, window {t['seconds']} s"
                  + (f", IO mock: {r['io_mock']}" if r.get("io_mock") else ""), "",
                  "| thread name | threads | CPU % (sum) | busiest thread % |", "|---|---|---|---|"]
        for name, g in sorted(t["by_name"].items(), key=lambda kv: -kv[1]["cpu_percent"]):
            if g["cpu_percent"] >= 0.5:
                lines.append(f"| {name} | {g['threads']} | {g['cpu_percent']} | {g['busiest_thread_percent']} |")
        lines += ["", "| counter | count | avg ms | queue now |", "|---|---|---|---|"]
        for key, v in r["queues"].items():
            lat = v.get("complete_latency") if key.startswith("finisher-") else v
            if isinstance(lat, dict):
                lines.append(f"| {key} | {lat['count']} | {lat['avg_ms']} | {v.get('queue_len_now', '')} |")
        busiest = t["busiest"][0]
        verdict = ("saturated" if busiest["cpu_percent"] >= SATURATED_PERCENT else "not saturated")
        lines += ["", f"Busiest thread: {busiest['name']} (tid {busiest['tid']}) at {busiest['cpu_percent']}% "
                      f"of one core: {verdict} (threshold {SATURATED_PERCENT}%).", ""]
    return "\n".join(lines)


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--packages", default="debian")
    p.add_argument("--profile", default="4k-write")
    p.add_argument("--variant", action="append", help="default: defaults and io-mock")
    p.add_argument("--seconds", type=int)
    p.add_argument("--out", type=Path, default=paths.reports("threads"))
    args = p.parse_args()
    side = parse_source(args.packages)
    runs = []
    for variant in args.variant or ["defaults", "io-mock"]:
        prof = load_profile(args.profile, variant)
        state = runs_dir() / f"threads-{variant}"
        spec = round_spec(state, prof, side, prof["conf"], args.seconds, 20, False)
        spec.threads = True
        log(f"{variant}: one round of {args.profile}")
        rec = run_node("round", spec, [side.get("bind")])
        if not rec.get("ok"):
            print(f"threads: ERROR (could not run {variant}): {rec.get('error')}")
            return 2
        rmtree(state)
        runs.append({"variant": variant, **rec})
        log(f"{variant}: {rec['iops']:.0f} IOPS; busiest thread {rec['threads']['busiest'][0]}")
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "threads.json", json.dumps({"schema_version": 1, "packages": args.packages,
                                                        "profile": args.profile, "runs": runs}, indent=2) + "\n")
    md = render(runs, args.packages, args.profile)
    write_atomic(args.out / "threads.md", md)
    print(md)
    return 0



def main():
    main_wrapper(execute)
