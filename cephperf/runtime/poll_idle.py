"""Keep one CPU from going idle during a round, without taking time from
anything else on it (python3 stdlib only): a busy loop in the SCHED_IDLE
class, which runs only when nothing else on that CPU is runnable and gives
way to any thread that wakes there at once.

Why (docs/gate.md, "The CPU mode"): the OSD keeps its pinned core 93-95%
busy, and in the rest its threads wait. When nothing is runnable a virtual
CPU halts, an exit to the hypervisor, and the wake-up that ends the halt
costs the threads it wakes: with these loops Debian's stock OSD spent 10%
less CPU per op and switched context 28% less often per op (2026-11-27).
That cost is the hypervisor's, not Ceph's, and it varies with what else the
host runs. As the kernel's idle=poll does for a whole machine, a CPU that
never halts takes it out. The loop's own CPU time is its own: the OSD's
utime + stime do not count it.

    python3 -m cephperf.runtime.poll_idle CPU
"""
import os
import sys

from .osd_stats import cpu_list, cpu_seconds
from .shell import log


def start_loops(cluster) -> None:
    """A loop on every CPU the round may use (the node's and the OSD's), kept
    in cluster.procs: check_alive watches them and down() ends them with the
    daemons."""
    cpus = set(os.sched_getaffinity(0)) | (cluster.placement["osd"] if cluster.placement else set())
    for cpu in sorted(cpus):
        cluster.start(f"poll-idle.{cpu}", [sys.executable, "-m", "cephperf.runtime.poll_idle", cpu])
    log(f"idle polling on CPU(s) {cpu_list(cpus)}")


def loops_cpu(cluster) -> dict:
    """CPU seconds of each loop, by name."""
    return {name: cpu_seconds(p.pid) for name, p in cluster.procs.items() if name.startswith("poll-idle.")}


def main() -> None:
    cpu = int(sys.argv[1])
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    while True:
        pass


if __name__ == "__main__":
    main()
