"""A client that writes new objects one at a time and times each write
(python3-rados, inside the runtime root): the work of `rados bench -t 1
write` (one new object per op), with every op's latency kept, which rados
bench does not report.

  python3 -m cephperf.runtime.qd1_writer CONF POOL PREFIX SECONDS BLOCK_SIZE OUT

Prints "progress N" once a second (N: writes completed; the node's watch
reads it to stop a stalled run) and writes OUT, a JSON object: ops,
seconds, and latencies_us, each write's latency in µs, in order. Every op
has a deadline of its own (rados_osd_op_timeout): a stalled OSD ends the
run with an error rather than hanging it.
"""
from __future__ import annotations

import json
import sys
import time

import rados

OP_TIMEOUT_SECONDS = 60


def write_for(ioctx, prefix: str, seconds: float, block: bytes) -> tuple[list[int], float]:
    latencies, start = [], time.monotonic()
    next_report = start + 1
    while True:
        now = time.monotonic()
        if now - start >= seconds:
            return latencies, now - start
        name = f"{prefix}{len(latencies)}"
        t0 = time.perf_counter_ns()
        ioctx.write_full(name, block)
        latencies.append((time.perf_counter_ns() - t0) // 1000)
        if now >= next_report:
            print(f"progress {len(latencies)}", flush=True)
            next_report += 1


def main() -> None:
    conf, pool, prefix, seconds, block_size, out = sys.argv[1:7]
    cluster = rados.Rados(conffile=conf, conf={"rados_osd_op_timeout": str(OP_TIMEOUT_SECONDS)})
    cluster.connect(timeout=60)
    try:
        with cluster.open_ioctx(pool) as ioctx:
            latencies, took = write_for(ioctx, prefix, float(seconds), b"\xa5" * int(block_size))
    finally:
        cluster.shutdown()
    with open(out, "w") as fh:
        json.dump({"ops": len(latencies), "seconds": round(took, 3), "latencies_us": latencies}, fh)
    print(f"done {len(latencies)}", flush=True)


if __name__ == "__main__":
    main()
