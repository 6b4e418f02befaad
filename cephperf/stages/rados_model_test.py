"""ci/rados-model-test: upstream's model-checked RADOS workload on the OSD under test.

  ci/rados-model-test [--debs DIR | --stock] [--osd-conf FILE] [--conf KEY=VALUE]...
                      [--ops N] [--workload FILE] [--out DIR]

DIR holds the candidate's ceph-osd .deb (default: ci/build-debs' osd-only
output), installed over Debian's stock packages in a throwaway overlay of
the trixie runtime root; --stock runs Debian's stock packages as they are,
which must pass too: that checks the test, not only the candidate. What runs
(cephperf/runtime/rados_model.py, FILE default bench/rados-model.toml):
ceph_test_rados as teuthology's rados task runs it, with a PG split and an
OSD restart during it; omap sets, clears and range removals with RocksDB's
DeleteRange forced, checked against a model of every key, also after an OSD
restart; then ceph-bluestore-tool fsck --deep on the stopped OSD's store.
--osd-conf FILE (ceph.conf sections, as bench/conf/*.conf) and --conf
KEY=VALUE (the [osd] section) are set on the cluster from mkfs on:
bench/conf/rocksdb-insert-hint-on.conf on Debian's packages is the known
broken variant (facebook/rocksdb#5118), which must fail. --ops N shortens
ceph_test_rados (CI's smoke).
Exit 0 on pass, 1 when a step fails (named; a dead OSD with the cause from
its log), 2 when the test could not run. The node's record goes to --out
(default build/reports/rados-model-test/result.json): each step with its
time and op counts; on a failure the cluster's logs (log/), ceph_test_rados'
output among them.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from cephperf import paths
from cephperf.bench.rounds import merge_conf, read_conf_file
from cephperf.common import EXIT_ERROR, StageError, load_toml, log, main_wrapper, rmtree
from cephperf.nodes import check_osd_debs

WORKLOAD = paths.BENCH / "rados-model.toml"
# Each table of the workload file and the numbers it must give (all positive).
NUMBERS = {
    "test_rados": ("ops", "objects", "max_in_flight", "object_size", "seconds"),
    "split": ("at", "pg_num", "seconds"),
    "restart": ("at", "seconds"),
    "omap": ("pool_pgs", "objects", "ops", "rounds", "key_space", "max_keys_per_set", "max_value_bytes",
             "max_subops", "op_timeout"),
    "fsck": ("seconds",),
}
OMAP_KINDS = {"set", "remove_keys", "remove_range", "clear"}


def workload_error(path: Path, message: str) -> StageError:
    return StageError(f"{path}: {message}", EXIT_ERROR)


def check_weights(path: Path, table: str, weights, known: set | None = None) -> None:
    if not isinstance(weights, dict) or not weights:
        raise workload_error(path, f"[{table}.op_weights] must name at least one op")
    for op, weight in weights.items():
        if known is not None and op not in known:
            raise workload_error(path, f"[{table}.op_weights] {op}: not one of {', '.join(sorted(known))}")
        if not isinstance(weight, int) or weight < 0:
            raise workload_error(path, f"[{table}.op_weights] {op} must be a whole number, 0 or more")


def load_workload(path: Path, ops: int | None) -> dict:
    """The workload file, checked (a fault names the file and what is wrong, on one line), with --ops applied."""
    data = load_toml(path)
    for table, keys in NUMBERS.items():
        values = data.get(table)
        if not isinstance(values, dict):
            raise workload_error(path, f"no [{table}] table")
        for key in keys:
            if isinstance(values.get(key), bool) or not isinstance(values.get(key), (int, float)) or values[key] <= 0:
                raise workload_error(path, f"[{table}] {key} must be a positive number")
    check_weights(path, "test_rados", data["test_rados"].get("op_weights"))
    check_weights(path, "omap", data["omap"].get("op_weights"), OMAP_KINDS)
    for table in ("split", "restart"):
        if not data[table]["at"] < 1:
            raise workload_error(path, f"[{table}] at is the fraction of the ops started, below 1")
    if not data["split"]["at"] < data["restart"]["at"]:
        raise workload_error(path, "[split] at must come before [restart] at: the split, then the restart")
    t = data["test_rados"]
    if ops is not None:
        t["ops"] = ops
    # its first `objects` ops only create the objects; more are needed for the mix
    if t["ops"] <= 2 * t["objects"]:
        raise StageError(f"{'--ops' if ops else path}: {t['ops']} ops for {t['objects']} objects: ceph_test_rados' "
                         f"first {t['objects']} ops create them; give it more than {2 * t['objects']}", EXIT_ERROR)
    if 2 * t["max_in_flight"] > t["objects"]:
        raise workload_error(path, "[test_rados] max_in_flight must be at most half of objects (ceph_test_rados' rule)")
    return data


def osd_conf(conf_file: Path | None, settings: list[str]) -> dict:
    """The ceph.conf overlay: FILE's sections, then each KEY=VALUE in [osd]."""
    try:
        from_file = read_conf_file(conf_file)
    except StageError as e:
        raise StageError(" ".join(str(e).split()), e.code)  # configparser's messages span lines
    extra = {}
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep or not key.strip():
            raise StageError(f"--conf {setting!r}: expected KEY=VALUE", EXIT_ERROR)
        extra[key.strip()] = value.strip()
    return merge_conf(from_file, {"osd": extra} if extra else {})


def positive(text: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def execute():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    side = p.add_mutually_exclusive_group()
    side.add_argument("--debs", type=Path, default=paths.debs_out("osd-only"))
    side.add_argument("--stock", action="store_true", help="Debian's stock packages, as the runtime root has them")
    p.add_argument("--osd-conf", type=Path, help="ceph.conf sections set from mkfs on (bench/conf/*.conf)")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="an [osd] option from mkfs on")
    p.add_argument("--ops", type=positive, help="ceph_test_rados' ops (default: the workload file's)")
    p.add_argument("--workload", type=Path, default=WORKLOAD)
    p.add_argument("--out", type=Path, default=paths.reports("rados-model-test"))
    args = p.parse_args()
    workload = load_workload(args.workload, args.ops)
    conf = osd_conf(args.osd_conf, args.conf)
    debs = None if args.stock else args.debs.resolve()
    if debs is not None and not debs.is_dir():
        raise StageError(f"--debs {args.debs}: no such directory", EXIT_ERROR)
    rmtree(args.out / "log")  # an earlier failure's logs
    result = check_osd_debs("rados_model", debs, args.out, 2, ["cluster/log"], "rados model test",
                            conf=conf, bench=workload)
    settings = "; ".join(f"[{section}] {k} = {v}" for section, values in conf.items() for k, v in values.items())
    log(f"PASS: ceph_test_rados, the omap model and a deep fsck on ceph-osd "
        f"{result.get('candidate') or result.get('stock')}{' with ' + settings if settings else ''}, "
        f"in {result['seconds']} s")
    return 0


def main():
    main_wrapper(execute)
