"""bench/history: every release's gate results, from the files kept in results/gate/.

  bench/history                                  the table of releases × profiles
  bench/history --release +perfN [--markdown]    one release's results
  bench/history --release +perfN --summary       its short table against stock
  bench/history --add REPORT.json... --release +perfN [--release-gate] [--against LABEL] [--date YYYY-MM-DD]
  bench/history --check FILE                     the figures of FILE no kept result backs

results/gate/ holds one small JSON file per gate report: release, profile,
layout, variant, mode, both sides (label, source, ceph-osd build ID), and per
judged metric the medians, ratio, 95% interval, pairs and verdict; the date,
commit and command. A file made by --add from a report.json says
"reproduced": true and names the report; the figures of releases whose
reports were not kept are transcribed from docs/measurements.md (or
patches/README.md) and say "reproduced": false and which section they come
from.

The table gives, per layout, metric and baseline (stock, or the previous
release), each release's ratio on each profile with its verdict; where a
release has several results on one profile the release's own gate is
shown. --release prints every result of one release with its interval,
pairs, medians, date and where it comes from (--markdown: as Markdown);
--summary, its short table: per layout, the 4 KiB write against stock in
instructions and estimated cycles per op, the same replicated over three
OSDs, ceph-osd CPU µs per op and IOPS, each with its interval, pairs, mode
and command (README.md gives the current release's).

--add imports bench/gate report.json files of one release into
results/gate/perfN/, each a new file written atomically, none unless every
report reads. The baseline is "stock" where its source was Debian's
packages, else --against names it (e.g. +perf14); --release-gate marks the
release's own gate (ci/release's gate stage), which the table shows before
other results of a profile. After a release:
  bench/history --add build/reports/gate-release/*/report.json --release +perfN --release-gate
then commit results/gate/perfN/.
--check FILE lists each four-decimal figure of FILE that no result of the
release named next to it (the nearest +perfN before it in its paragraph)
holds as a ratio or an interval's bound.

Exit 0: printed (or imported; for --check: every figure backed). 1: --check
found a figure no result backs. 2: could not run (a bad report or result
file, named; an unknown release).
"""
import argparse
from pathlib import Path

from cephperf.bench.history import RESULTS, add_reports, load_results, release_number, unbacked_figures
from cephperf.bench.history_table import overview, release_markdown, release_text, summary_markdown
from cephperf.common import EXIT_ERROR, EXIT_FAIL, StageError, main_wrapper


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", type=Path, default=RESULTS, help="the folder of kept results (default results/gate)")
    p.add_argument("--release", help="+perfN: print its results (with --add: the release the report is of)")
    p.add_argument("--markdown", action="store_true", help="with --release: as Markdown")
    p.add_argument("--summary", action="store_true", help="with --release: its short table against stock")
    p.add_argument("--add", type=Path, nargs="+", metavar="REPORT", help="import bench/gate report.json files")
    p.add_argument("--against", help="with --add: the baseline's label (default: stock for Debian's packages)")
    p.add_argument("--release-gate", action="store_true", help="with --add: the report is the release's own gate")
    p.add_argument("--date", help="with --add: the run's day (default: from the report's directory name)")
    p.add_argument("--check", type=Path, metavar="FILE", help="list FILE's figures that no kept result backs")
    args = p.parse_args()
    if args.add:
        if not args.release:
            p.error("--add needs --release +perfN")
        release_number(args.release)
        for kept in add_reports(args.add, args.release, args.results, args.against, args.date, args.release_gate):
            print(f"history: kept {kept}")
        return 0
    results = load_results(args.results)
    if args.check:
        missing = unbacked_figures(args.check.read_text(), results)
        for figure, release, line in missing:
            print(f"{args.check}: {figure} ({release or 'no release named'}) not in any kept result: {line}")
        print(f"history: {len(missing)} figure(s) of {args.check} not backed by a kept result")
        return EXIT_FAIL if missing else 0
    if args.release:
        release_number(args.release)
        if not any(r["release"] == args.release for r in results):
            raise StageError(f"no kept result of {args.release} in {args.results}", EXIT_ERROR)
        show = summary_markdown if args.summary else release_markdown if args.markdown else release_text
        print(show(results, args.release), end="")
        return 0
    if args.markdown or args.summary:
        p.error("--markdown and --summary go with --release +perfN")
    print(overview(results), end="")
    return 0


def main():
    main_wrapper(execute)
