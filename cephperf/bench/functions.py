"""Where the work goes: per-function instructions per op from the
instruction-counted rounds, for both sides, and where they differ.

Inlining differs between two builds (a function folded into its caller in
one shows up under the caller), so read single per-function differences
with care; the totals are what the rules judge.
"""
from __future__ import annotations

import statistics

SHOWN = 15


def medians(records: list[dict], side: str, kind: str) -> dict[str, float]:
    """Median instructions per op of each function over the side's counted
    rounds that list it (each round lists its top functions only; a function
    listed in fewer than half of them is left out)."""
    rounds = [dict(r["functions"][kind]) for r in records
              if r.get("side") == side and isinstance(r.get("functions"), dict)]
    names = {n for r in rounds for n in r}
    return {n: statistics.median(r[n] for r in rounds if n in r) for n in names
            if 2 * sum(n in r for r in rounds) >= len(rounds)}


def tables(records: list[dict]) -> dict:
    """{kind: {"baseline": [[fn, ir/op]...], "candidate": [...], "differences": [[fn, base, cand, diff]...]}}."""
    out = {}
    for kind in ("self", "inclusive"):
        base, cand = medians(records, "baseline", kind), medians(records, "candidate", kind)
        if not base and not cand:
            continue
        # only functions listed on both sides: one missing from a side's top
        # list is below its cut-off there, not absent
        diffs = [[n, base[n], cand[n], cand[n] - base[n]] for n in set(base) & set(cand)]
        out[kind] = {"baseline": sorted(base.items(), key=lambda kv: -kv[1])[:SHOWN],
                     "candidate": sorted(cand.items(), key=lambda kv: -kv[1])[:SHOWN],
                     "differences": sorted(diffs, key=lambda d: -abs(d[3]))[:SHOWN],
                     "one_side_only": {side: sorted(((n, v) for n, v in mine.items() if n not in other),
                                                    key=lambda kv: -kv[1])[:5]
                                       for side, mine, other in (("baseline", base, cand), ("candidate", cand, base))}}
    return out


def short(name: str, width: int = 90) -> str:
    name = name.replace("|", "\\\\|")
    return name if len(name) <= width else name[:width - 1] + "…"


def markdown(t: dict) -> list[str]:
    if not t:
        return []
    lines = ["## Where the work goes (instruction-counted rounds, medians, instructions per op)", "",
             "Inlining differs between builds: a single function's difference may be work moved, not saved.", ""]
    for kind, tab in t.items():
        lines += [f"### Top functions by {kind} instructions", "", "| baseline | per op | candidate | per op |",
                  "|---|---|---|---|"]
        for (bn, bv), (cn, cv) in zip(tab["baseline"], tab["candidate"]):
            lines.append(f"| `{short(bn, 60)}` | {bv:,.0f} | `{short(cn, 60)}` | {cv:,.0f} |")
        lines += ["", f"### Biggest differences ({kind})", "", "| function | baseline | candidate | difference |",
                  "|---|---|---|---|"]
        for n, b, c, d in tab["differences"]:
            lines.append(f"| `{short(n)}` | {b:,.0f} | {c:,.0f} | {d:+,.0f} |")
        for side, only in tab.get("one_side_only", {}).items():
            if only:
                lines += ["", f"Listed for the {side} only (inlined, or below the other side's cut-off): "
                          + ", ".join(f"`{short(n, 60)}` {v:,.0f}" for n, v in only)]
        lines.append("")
    return lines
