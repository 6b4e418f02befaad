"""The tables of kept gate results (history.py loads them): releases ×
profiles per layout, metric and baseline, as text; one release's results
as Markdown; one release's short table against stock (its headline
figures per layout)."""
from __future__ import annotations

from .history import RELEASE, release_number
from .layouts import layout_names
from .report import LABELS

METRICS = ("osd_instructions_per_op", "osd_est_cycles_per_op", "osd_cpu_us_per_op", "iops")
PROFILE_ORDER = ("4k-write", "4k-write-d1", "4k-randread", "4m-write", "rbd-4k-randwrite", "rbd-4k-randwrite-d64",
                 "rbd-4k-randwrite-misaligned", "rbd-4k-randread", "rbd-64k-seqwrite",
                 "cephfs-4k-directwrite-1job-1file", "cephfs-4k-directwrite-16jobs-1file")
CODES = (("gain", "g"), ("no difference", "n"), ("regression", "r"), ("within", "t"), ("instr gain", "g"))
LEGEND = ("cells: ratio candidate/baseline and verdict (g gain, n no difference shown, r regression, "
          "t within tolerance, ? no verdict then); * transcribed from the docs, its report.json not kept. "
          "Intervals, pairs, medians, dates and commands: bench/history --release +perfN --markdown")


def against(res: dict) -> str:
    """The kind of comparison: against stock, the previous release, or another build."""
    label = res["baseline"]["label"]
    if label == "stock":
        return "stock"
    m = RELEASE.match(label)
    if m and int(m.group(1)) < release_number(res["release"]) and res["candidate"]["label"] == res["release"]:
        return "the previous release"
    return "another build"


def column(res: dict) -> str:
    return res["profile"] + ("" if res["variant"] == "defaults" else f" ({res['variant']})")


def column_key(name: str) -> tuple:
    profile = name.split(" ")[0]
    return (PROFILE_ORDER.index(profile) if profile in PROFILE_ORDER else len(PROFILE_ORDER), name)


def code(verdict: str | None) -> str:
    v = (verdict or "").lower()
    return next((c for word, c in CODES if v.startswith(word)), "?")


def preference(res: dict) -> tuple:
    """Of several results in one cell the release's own gate first, then the
    release's own build, then the newest, then the most pairs."""
    pairs = max((m.get("pairs") or 0 for m in res["metrics"]), default=0)
    return (res.get("role") == "release gate", res["candidate"]["label"] == res["release"], res["date"], pairs)


def dec(v: float, decimals: int = 4) -> str:
    """A ratio with four decimals, or as many as a transcribed figure was given with."""
    return f"{v:.{decimals}f}"


def cell_of(res: dict, metric: str) -> str | None:
    m = next((m for m in res["metrics"] if m["metric"] == metric and m.get("ratio") is not None), None)
    if m is None:
        return None
    return f"{dec(m['ratio'], m.get('decimals', 4))} {code(m.get('verdict'))}" + ("" if res["reproduced"] else "*")


def grid(results: list[dict], metric: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """(columns, {release: {column: cell}}) of one metric, the preferred result in each cell."""
    chosen: dict[tuple[str, str], dict] = {}
    for res in results:
        if cell_of(res, metric) is None:
            continue
        key = (res["release"], column(res))
        if key not in chosen or preference(res) > preference(chosen[key]):
            chosen[key] = res
    cols = sorted({c for _, c in chosen}, key=column_key)
    rows: dict[str, dict[str, str]] = {}
    for (release, col), res in chosen.items():
        rows.setdefault(release, {})[col] = cell_of(res, metric)
    return cols, rows


def text_table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*head).rstrip(), fmt.format(*("-" * w for w in widths)),
            *(fmt.format(*r).rstrip() for r in rows)]


def layout_key(layout: str) -> tuple[int, str]:
    """bench/layouts.toml's order (hdd, the default, first); layouts it no
    longer names after those, by name."""
    known = layout_names()
    return (known.index(layout) if layout in known else len(known), layout)


def overview(results: list[dict]) -> str:
    """Every layout's tables: one per baseline kind and metric, releases × profiles."""
    out = []
    for layout in sorted({r["layout"] for r in results}, key=layout_key):
        for kind in ("stock", "the previous release"):
            group = [r for r in results if r["layout"] == layout and against(r) == kind]
            found = {m["metric"] for r in group for m in r["metrics"]}
            for metric in [*METRICS, *sorted(found - set(METRICS))]:
                cols, rows = grid(group, metric)
                if not rows:
                    continue
                out += ["", f"layout {layout}: {LABELS.get(metric, metric)}, against {kind}", ""]
                body = [[rel, *(rows[rel].get(c, "") for c in cols)]
                        for rel in sorted(rows, key=release_number, reverse=True)]
                out += text_table(["release", *cols], body)
    others = sum(1 for r in results if against(r) == "another build")
    transcribed = sum(1 for r in results if not r["reproduced"])
    out += ["", LEGEND + ".",
            f"{len(results)} results, {transcribed} of them transcribed; {others} against other builds "
            "(development builds, options on one side) are in each release's --release table."]
    return "\n".join(out).lstrip("\n") + "\n"


def fmt_number(v) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def medians_text(m: dict) -> str:
    med = m.get("medians") or {}
    return f"{fmt_number(med.get('baseline'))} → {fmt_number(med.get('candidate'))}" if med else "-"


def ratio_text(m: dict) -> str:
    if m.get("ratio") is None:
        return "-"
    ci = m.get("interval")
    d = m.get("decimals", 4)
    return dec(m["ratio"], d) + (f" [{dec(ci[0], d)}, {dec(ci[1], d)}]" if ci else "")


def side_text(side: dict) -> str:
    extra = [x for x in (side.get("build_id") and f"build ID {side['build_id']}",
                         side.get("conf") and f"+ {side['conf']}") if x]
    return side["label"] + (f" ({'; '.join(extra)})" if extra else "")


HEAD = ["layout", "profile", "against", "baseline → candidate", "metric", "medians", "ratio [95%]", "pairs",
        "verdict", "date", "kept as"]


def release_rows(results: list[dict], release: str) -> tuple[list[list[str]], list[str]]:
    """One release's results: a row per metric of each result, and a note
    per result (its command, commit and where its figures come from)."""
    mine = sorted((r for r in results if r["release"] == release),
                  key=lambda r: (layout_key(r["layout"]), against(r) != "stock", column_key(column(r)), r["date"]))
    rows, notes = [], []
    for i, r in enumerate(mine, 1):
        kept = f"[{i}] " + ("report.json" if r["reproduced"] else "transcribed, not reproduced")
        for m in r["metrics"]:
            rows.append([r["layout"], column(r), against(r), f"{side_text(r['baseline'])} → {side_text(r['candidate'])}",
                         LABELS.get(m["metric"], m["metric"]), medians_text(m), ratio_text(m),
                         str(m.get("pairs") or "-"), m.get("verdict") or "-", r["date"], kept])
        notes.append(f"{i}. `{r.get('command') or '-'}`; commit {r.get('commit') or 'not recorded'}; "
                     f"{r['source']}" + (f". {r['note']}" if r.get("note") else ""))
    return rows, notes


def release_markdown(results: list[dict], release: str) -> str:
    rows, notes = release_rows(results, release)
    lines = [f"# {release}: gate results", "", "| " + " | ".join(HEAD) + " |", "|---" * len(HEAD) + "|",
             *("| " + " | ".join(r) + " |" for r in rows)]
    return "\n".join(lines + ["", *notes]) + "\n"


def release_text(results: list[dict], release: str) -> str:
    """One release's results as text: a block per result, a line per metric."""
    out = [f"{release}: gate results"]
    for i, r in enumerate(sorted((r for r in results if r["release"] == release),
                                 key=lambda r: (layout_key(r["layout"]), against(r) != "stock", column_key(column(r)), r["date"])), 1):
        kept = "from its report.json" if r["reproduced"] else "transcribed, not reproduced"
        out += ["", f"[{i}] {column(r)}, layout {r['layout']}, {r['mode']}, {r['date']}, against {against(r)} ({kept})",
                f"    {side_text(r['baseline'])} → {side_text(r['candidate'])}",
                *("    " + line for line in text_table(
                    ["metric", "medians", "ratio [95%]", "pairs", "verdict"],
                    [[LABELS.get(m["metric"], m["metric"]), medians_text(m), ratio_text(m), str(m.get("pairs") or "-"),
                      m.get("verdict") or "-"] for m in r["metrics"]])[2:]),
                f"    {r.get('command') or '-'}; commit {r.get('commit') or 'not recorded'}",
                f"    {r['source']}" + (f". {r['note']}" if r.get("note") else "")]
    return "\n".join(out) + "\n"


# The rows of a release's short table: what each measures and where it is
# read, the 4 KiB write against stock. The replicated rows are the
# three-OSD variant's (a size-3 pool, instructions summed over the OSDs).
SUMMARY_ROWS = (
    ("instructions/op", "osd_instructions_per_op", lambda r: r["variant"] == "defaults"),
    ("est. cycles/op", "osd_est_cycles_per_op", lambda r: r["variant"] == "defaults"),
    ("replicated instructions/op (3 OSDs)", "osd_instructions_per_op", lambda r: r["variant"] == "three-osds"),
    ("replicated est. cycles/op (3 OSDs)", "osd_est_cycles_per_op", lambda r: r["variant"] == "three-osds"),
    ("ceph-osd CPU µs/op", "osd_cpu_us_per_op", lambda r: r["variant"] != "three-osds"),
    ("IOPS", "iops", lambda r: r["variant"] != "three-osds"),
)
SUMMARY_PROFILE = "4k-write"
CPU_MODE_VARIANTS = ("cpu", "cpu-upstream-io-mock")
CPU_MODE_NOTE = ("The CPU mode (variants cpu, cpu-upstream-io-mock) pins ceph-osd to one core with its device "
                 "mocked: a comparison in that mode only (docs/gate.md, \"The CPU mode\").")


def summary_markdown(results: list[dict], release: str) -> str:
    """A release's headline figures against stock, one row per layout and
    metric of the 4 KiB write, each with its interval, pairs, mode and the
    command that measured it; a row no kept result gives says so."""
    mine = [r for r in results if r["release"] == release and against(r) == "stock" and r["profile"] == SUMMARY_PROFILE]
    lines = [f"{release} against Debian's stock packages, {SUMMARY_PROFILE} "
             f"(`bench/history --release {release} --summary`):", "",
             f"| layout ({release}) | metric | ratio [95%] | pairs | verdict | mode | command |", "|---" * 7 + "|"]
    commands: list[str] = []
    for layout in sorted({r["layout"] for r in mine}, key=layout_key):
        for label, metric, fits in SUMMARY_ROWS:
            found = [r for r in mine if r["layout"] == layout and fits(r) and cell_of(r, metric)]
            if not found:
                lines.append(f"| {layout} | {label} | not measured | | | | |")
                continue
            r = max(found, key=preference)
            m = next(m for m in r["metrics"] if m["metric"] == metric)
            command = r.get("command") or "-"
            if command not in commands:
                commands.append(command)
            # a "both" run's rows each name the kind of round they come from
            mode = (m.get("mode") or r["mode"]) + ("" if r["variant"] == "defaults" else f", {r['variant']}")
            kept = "" if r["reproduced"] else " (transcribed)"
            lines.append(f"| {layout} | {label} | {ratio_text(m)} | {m.get('pairs') or '-'} | "
                         f"{m.get('verdict') or '-'} | {mode}{kept} | [{commands.index(command) + 1}] |")
    lines += ["", *(f"[{i}] `{c}`" for i, c in enumerate(commands, 1))]
    if any(r["variant"] in CPU_MODE_VARIANTS for r in mine):
        lines += ["", CPU_MODE_NOTE]
    return "\n".join(lines) + "\n"
