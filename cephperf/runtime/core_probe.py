"""How fast the OSD's core runs, measured just before and just after a
pinned round's window.

On these virtual CPUs the same packages' CPU time per op moved by up to 41%
between rounds while their instructions per op moved by 0.3% (docs/gate.md,
"The CPU mode"): the core's speed changes, not the work. A fixed piece of
work, timed in this thread's CPU time on the OSD's core, measures that
speed with the same clock as the OSD's CPU time (steal time is in neither).
Two kinds, as the slowdown may be in the pipeline or in the memory system:
an interpreter loop (branches and L1-resident data) and copies of an 8 MiB
buffer into another (16 MiB in all: more than a core's L2, 1 MiB here, and
within the shared LLC, 32 MiB). Each is the median of several repeats; both
together take about 50 ms. The OSD's own CPU time during each probe is
recorded beside it: a probe the OSD's background work shared the core with
is not the core's speed alone.
"""
import os
import statistics
import time

# One loop unit: about 2 ms here. One copy unit: 8 MiB copied 8 times,
# about 1.3 ms.
LOOP_ITERATIONS = 20_000
COPY_BYTES = 8 << 20
COPY_PASSES = 8
REPEATS = 9


def loop_unit() -> int:
    state, seen = 1, {}
    for i in range(LOOP_ITERATIONS):
        state = (state * 1103515245 + 12345) & 0xFFFFFFFF
        seen[state & 1023] = i
    return state


def copy_unit(src: bytearray, dst: bytearray) -> None:
    for _ in range(COPY_PASSES):
        dst[:] = src  # same length: one memmove, no allocation


def timed(unit, *args) -> float:
    """CPU nanoseconds of one unit of work on this thread: the median of REPEATS."""
    runs = []
    for _ in range(REPEATS):
        t0 = time.thread_time_ns()
        unit(*args)
        runs.append(time.thread_time_ns() - t0)
    return statistics.median(runs)


def probe(cpus: set[int], osd_cpu_seconds) -> dict:
    """Both units timed on `cpus` (this thread moved there and back), with
    the OSD's CPU milliseconds over them (osd_cpu_seconds() read around)."""
    home = os.sched_getaffinity(0)
    # written, so that no page is the kernel's shared zero page
    src, dst = bytearray(b"\x5a") * COPY_BYTES, bytearray(COPY_BYTES)
    os.sched_setaffinity(0, cpus)
    try:
        copy_unit(src, dst)  # the destination's pages faulted in before they are timed
        osd0 = osd_cpu_seconds()
        speed = {"loop_ns": timed(loop_unit), "copy_ns": timed(copy_unit, src, dst)}
        return {**speed, "osd_cpu_ms": round((osd_cpu_seconds() - osd0) * 1000, 1)}
    finally:
        os.sched_setaffinity(0, home)


def per_op_in_units(cpu_us_per_op: float | None, before: dict, after: dict, kind: str) -> float | None:
    """The OSD's CPU per op in units of the probe's work (`kind`: loop_ns or
    copy_ns), its core's speed taken as the mean of the two probes: a core
    that runs slower inflates both and cancels."""
    if not cpu_us_per_op:
        return None
    unit_ns = (before[kind] + after[kind]) / 2
    return float(f"{cpu_us_per_op * 1000 / unit_ns:.5g}")
