"""Gate reports: JSON (versioned), Markdown, and an SVG chart of every round."""
from __future__ import annotations

import html
import statistics
from collections import Counter

from . import functions

# 2: paired judgement (per-rule ratio, t-interval, smallest detectable effect), environment block
SCHEMA_VERSION = 2
COLOURS = {"baseline": "#1f77b4", "candidate": "#d62728"}
LABELS = {"osd_instructions_per_op": "ceph-osd instructions/op", "osd_est_cycles_per_op": "ceph-osd est. cycles/op",
          "iops": "IOPS", "osd_cpu_us_per_op": "ceph-osd CPU µs/op", "bandwidth_mb_s": "MB/s",
          "lat_avg_s": "avg latency (s)", "osd_cycles_per_op": "ceph-osd cycles/op",
          "osd_peak_rss_mib": "ceph-osd peak RSS (MiB)", "lat_max_s": "max latency (s)",
          "osd_cpu_loop_units_per_op": "ceph-osd CPU/op in loop-probe units",
          "osd_cpu_copy_units_per_op": "ceph-osd CPU/op in copy-probe units",
          "lat_p50_s": "client latency p50 (s)", "lat_p99_s": "client latency p99 (s)",
          "osd_lat_avg_s": "ceph-osd latency mean (s)", "osd_lat_p99_s": "ceph-osd latency p99 (s)",
          "osd_lat_max_s": "ceph-osd latency max (s)",
          "primary_instructions_per_op": "primary's instructions/op", "primary_est_cycles_per_op":
          "primary's est. cycles/op", "replica_instructions_per_op": "a replica's instructions/op",
          "replica_est_cycles_per_op": "a replica's est. cycles/op"}
SHOWN = ("iops", "bandwidth_mb_s", "lat_avg_s", "lat_p50_s", "lat_p99_s", "lat_max_s", "osd_lat_avg_s",
         "osd_lat_p99_s", "osd_lat_max_s", "osd_cpu_us_per_op", "osd_cycles_per_op", "osd_peak_rss_mib",
         "osd_instructions_per_op", "osd_est_cycles_per_op", "primary_instructions_per_op",
         "primary_est_cycles_per_op", "replica_instructions_per_op", "replica_est_cycles_per_op",
         "osd_cpu_loop_units_per_op", "osd_cpu_copy_units_per_op")


def fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 100 else f"{v:,.0f}"
    return str(v)


# Figures only counted rounds give, by their names' ends: the OSD's, and in
# a round of several OSDs each role's (primary_*, replica_*).
COUNTED_SUFFIXES = ("instructions_per_op", "est_cycles_per_op")


def values(recs: list[dict], metric: str, side: str | None = None) -> list[float]:
    """A metric's values from the rounds of the mode that measures it (IOPS
    under callgrind say nothing of speed)."""
    mode = "callgrind" if metric.endswith(COUNTED_SUFFIXES) else "native"
    return [r[metric] for r in recs if (side is None or r["side"] == side) and r.get("mode", "native") == mode
            and isinstance(r.get(metric), (int, float))]


def side_line(rep: dict, side: str) -> str:
    s = rep["sides"][side]
    return f"- {side}: `{s['source']}`" + (f" + `{s['conf']}`" if s.get("conf") else "")


def rules_table(j: dict) -> list[str]:
    lines = [f"## Rules (paired: log ratio of each adjacent baseline/candidate pair, ABBA order; "
             f"{int(j['confidence'] * 100)}% t-interval of the ratio)", "",
             f"| metric | better | tolerance | pairs | ratio | interval | smallest detectable ({int(j['power'] * 100)}% power) "
             f"| verdict | widest round from its side's median (baseline, candidate) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in j["rules"]:
        ci, mde = r.get("ci"), r.get("mde")
        lines.append(f"| {LABELS.get(r['metric'], r['metric'])} | {r['better']} | {r['tolerance']:.0%} | "
                     f"{r.get('pairs', 0)} | {'%.4f' % r['ratio'] if r.get('ratio') is not None else '-'} | "
                     f"{'[%.4f, %.4f]' % tuple(ci) if ci else '-'} | {f'{mde:.1%}' if mde is not None else '-'} | "
                     f"{r['verdict']} | {spread_cell(r.get('spread'))} |")
    return lines


def spread_cell(spread: dict | None) -> str:
    return ", ".join(f"{spread[s]:.2%}" if s in spread else "-" for s in ("baseline", "candidate")) if spread else "-"


def findings_lines(rep: dict) -> list[str]:
    """What bench/diagnose finds in the native rounds (bench/rules/diagnose.toml)."""
    found = rep.get("findings") or {}
    if not found:
        return []
    return ["## Findings (bench/diagnose)", "",
            *(f"- {where}: {f['says']}" for where, said in found.items() for f in said), ""]


def environment_lines(rep: dict) -> list[str]:
    env = rep.get("environment", {})
    host = env.get("host", {})
    lines = ["## Environment", "", f"- ceph-perf {host.get('ceph_perf_commit')}; kernel {host.get('kernel')}; "
             f"{host.get('cpu_model')}, {host.get('cores')} cores"]
    for side, e in env.get("sides", {}).items():
        versions = ", ".join(f"{k} {v}" for k, v in (e.get("versions") or {}).items()) or "not recorded"
        lines.append(f"- {side}: {versions}; {layout_seen_text(e)}")
    return lines + [""]


def layout_seen_text(side_env: dict) -> str:
    """The layout a side's first OSD ran with, as read from it
    (cephperf/runtime/layout.py); older reports have the metadata only."""
    seen = next(iter(((side_env.get("layout") or {}).get("osds") or {}).values()), None)
    if seen:
        return (f"the running OSD: bluestore_bdev_rotational {seen.get('bluestore_bdev_rotational')}, "
                f"{seen.get('op_shards')} op shards, {seen.get('op_threads')} op threads")
    md = side_env.get("osd_metadata") or {}
    rot = md.get("bluestore_bdev_rotational", md.get("rotational"))
    return f"OSD device rotational: {rot if rot is not None else 'not recorded'}"


def placement_text(placed: dict) -> str:
    """A round's CPU placement (cephperf/runtime/measure.py placement) in words."""
    allowed, ran = placed.get("allowed", {}), placed.get("osd_threads_last_ran_on", {})
    osds = ", ".join(f"{name} on CPU {cpus} (its threads last ran on {ran.get(name, '-')})"
                     for name, cpus in allowed.items() if name.startswith("osd."))
    rest = ", ".join(f"{name} on {cpus}" for name, cpus in allowed.items() if not name.startswith("osd."))
    return f"{osds}; {rest}"


def window_text(rep: dict) -> str:
    warmup = rep.get("environment", {}).get("workload", {}).get("warmup_seconds")
    return f" a {warmup} s warm-up before each window," if warmup else ""


ROUND_KIND = {"native": "native", "callgrind": "instruction-counted"}


def rounds_text(rep: dict) -> str:
    """How many rounds each side ran, by mode, from the records: the saved
    --rounds is the native count, which a counted-only run never used."""
    per_mode = Counter(r.get("mode", "native") for r in rep["records"] if r.get("side") == "baseline")
    if not per_mode:
        return f"{rep['rounds']} round(s) per side"
    return " and ".join(f"{n} {ROUND_KIND.get(mode, mode)}" for mode, n in per_mode.items()) + " round(s) per side"


def markdown(rep: dict) -> str:
    j = rep["judgement"]
    lines = [f"# Performance gate: {rep['verdict'].upper()}", "",
             f"Profile `{rep['profile']}` ({rep['description']}), variant `{rep['variant']}`, "
             f"layout `{rep.get('layout', {}).get('name', 'hdd (not recorded)')}`, "
             f"{rounds_text(rep)} in ABBA order,{window_text(rep)} a fresh OSD every round.", "",
             side_line(rep, "baseline"), side_line(rep, "candidate"), "", *rules_table(j), "",
             *functions.markdown(rep.get("functions", {})), *findings_lines(rep), *environment_lines(rep)]
    lines += ["", "## Every metric (medians)", "", "| metric | baseline | candidate | ratio |", "|---|---|---|---|"]
    recs = rep["records"]
    for m in SHOWN:
        b, c = (values(recs, m, side) for side in ("baseline", "candidate"))
        if b and c:
            bm, cm = statistics.median(b), statistics.median(c)
            lines.append(f"| {LABELS.get(m, m)} | {fmt(bm)} | {fmt(cm)} | {cm / bm:.3f} |" if bm else
                         f"| {LABELS.get(m, m)} | {fmt(bm)} | {fmt(cm)} | - |")
    perf = sorted({str(r.get("perf")) for r in recs})
    lines += ["", f"perf stat: {', '.join(perf)}"]
    for side in ("baseline", "candidate"):
        mocks = sorted({r["io_mock"] for r in recs if r["side"] == side and r.get("io_mock")})
        if mocks:
            lines.append(f"IO mock, {side}: {', '.join(mocks)}")
        placed = sorted({placement_text(r["cpu_placement"]) for r in recs if r["side"] == side
                         and (r.get("cpu_placement") or {}).get("pinned")})
        if placed:
            lines.append(f"CPU placement, {side}: {'; '.join(placed)}")
    lines += ["", "## Rounds", "",
              "| # | side | mode | IOPS | MB/s | avg lat (s) | CPU µs/op | peak RSS (MiB) | instructions/op | est. cycles/op |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        lines.append(f"| {r['round']} | {r['side']} | {r.get('mode', 'native')} | {fmt(r.get('iops'))} | "
                     f"{fmt(r.get('bandwidth_mb_s'))} | {fmt(r.get('lat_avg_s'))} | {fmt(r.get('osd_cpu_us_per_op'))} | "
                     f"{fmt(r.get('osd_peak_rss_mib'))} | {fmt(r.get('osd_instructions_per_op'))} | "
                     f"{fmt(r.get('osd_est_cycles_per_op'))} |")
    lines += ["", "![rounds](chart.svg)", ""]
    return "\n".join(lines)


def svg_chart(rep: dict) -> str:
    metrics = [r["metric"] for r in rep["judgement"]["rules"]]
    recs = rep["records"]
    pw, ph, pad = 500, 260, 50
    width, height = pw * len(metrics) + 20, ph + 60
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="18" font-size="14">{html.escape(rep["profile"])} / {html.escape(rep["variant"])}: '
           f'{html.escape(rep["verdict"])}</text>']
    for i, m in enumerate(metrics):
        x0 = 10 + i * pw
        vals = values(recs, m)
        if not vals:
            continue
        lo, hi = min(vals + [0]), max(vals) * 1.1 or 1
        n = max(r["round"] for r in recs)

        def px(rnd):
            return x0 + pad + (rnd - 1) * (pw - 2 * pad) / max(1, n - 1)

        def py(v):
            return 30 + ph - pad - (v - lo) / (hi - lo) * (ph - 2 * pad)

        rule = next((r for r in rep["judgement"]["rules"] if r["metric"] == m), {})
        ratio = (f' — candidate/baseline {rule["ratio"]:.3f} [{rule["ci"][0]:.3f}, {rule["ci"][1]:.3f}]'
                 if rule.get("ci") else "")
        out.append(f'<text x="{x0 + pad}" y="44">{html.escape(LABELS.get(m, m) + ratio)}</text>')
        for rnd in range(1, n + 1):
            out.append(f'<text x="{px(rnd) - 3:.1f}" y="{py(lo) + 14:.1f}" font-size="10">{rnd}</text>')
        out.append(f'<line x1="{x0 + pad}" y1="{py(lo)}" x2="{x0 + pw - pad}" y2="{py(lo)}" stroke="#888"/>')
        out.append(f'<line x1="{x0 + pad}" y1="{py(lo)}" x2="{x0 + pad}" y2="{py(hi)}" stroke="#888"/>')
        for frac in (0, 0.5, 1):
            v = lo + frac * (hi - lo)
            out.append(f'<text x="{x0 + 2}" y="{py(v) + 4}" font-size="10">{fmt(v)}</text>')
        for side, colour in COLOURS.items():
            pts = [(r["round"], r[m]) for r in recs if r["side"] == side and r.get(m) in values(recs, m, side)]
            for rnd, v in pts:
                out.append(f'<circle cx="{px(rnd):.1f}" cy="{py(v):.1f}" r="4" fill="{colour}"/>')
            if pts:
                med = statistics.median(v for _, v in pts)
                out.append(f'<line x1="{x0 + pad}" y1="{py(med):.1f}" x2="{x0 + pw - pad}" y2="{py(med):.1f}" '
                           f'stroke="{colour}" stroke-dasharray="5,4"/>')
        out.append(f'<text x="{x0 + pw / 2 - 15}" y="{30 + ph - pad + 28}" font-size="10">round</text>')
    out += legend(height)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def legend(height: int) -> list[str]:
    return [f'<circle cx="{16 + 200 * i}" cy="{height - 12}" r="4" fill="{colour}"/>'
            f'<text x="{24 + 200 * i}" y="{height - 8}">{side} (dashed: median)</text>'
            for i, side_colour in enumerate(COLOURS.items()) for side, colour in [side_colour]]


def round_summary(rec: dict) -> str:
    if rec.get("mode") == "callgrind" or rec.get("osd_instructions_per_op"):
        return (f"{rec['osd_instructions_per_op']:,.0f} instructions/op, "
                f"{rec['osd_est_cycles_per_op']:,.0f} estimated cycles/op ({rec['iops']:.0f} IOPS under callgrind)")
    placed = rec.get("cpu_placement") or {}
    where = (f", OSD on CPU {placed['allowed'].get('osd.0')}, client on {placed['allowed'].get('client')}"
             if placed.get("pinned") else "")
    return (f"{rec['iops']:.0f} IOPS, {rec.get('osd_cpu_us_per_op') or 0:.1f} µs CPU/op, "
            f"peak RSS {rec.get('osd_peak_rss_mib')} MiB{where}")
