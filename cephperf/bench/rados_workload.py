"""The workload file of ci/rados-model-test (bench/rados-model.toml), checked
before anything runs: ceph_test_rados' ops and weights, when the PG split, the
OSD restart and the deep scrub come, the omap model's ops, fsck's time limit.
A fault names the file and what is wrong, on one line.
"""
from __future__ import annotations

from pathlib import Path

from ..common import EXIT_ERROR, StageError, load_toml

# Each table of the workload file and the numbers it must give (all positive).
NUMBERS = {
    "test_rados": ("ops", "objects", "max_in_flight", "object_size", "seconds"),
    "split": ("at", "pg_num", "seconds"),
    "restart": ("at", "seconds"),
    "deep_scrub": ("at", "seconds"),
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
    for table in ("split", "restart", "deep_scrub"):
        if not data[table]["at"] < 1:
            raise workload_error(path, f"[{table}] at is the fraction of the ops started, below 1")
    if not data["split"]["at"] < data["restart"]["at"] < data["deep_scrub"]["at"]:
        raise workload_error(path, "[split] at, [restart] at and [deep_scrub] at must rise: the split, the "
                             "restart, then the deep scrub")
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
