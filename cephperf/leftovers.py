"""What a bench or root run may leave behind: our daemons and the runs' mounts.

Used by the tests after every run that must clean up, and by bench/acceptance."""
import os
from pathlib import Path

from cephperf.paths import REPO, cache_dir


def our_daemons(anywhere: bool = False) -> list[str]:
    """ceph-mon, ceph-osd, rados and node-side (cephperf.runtime) processes of
    this checkout's bench (not other users' ones); with `anywhere`, of any
    ceph-perf bench on the machine."""
    # the bench's daemons name files under the cache (their ceph.conf), which
    # need not be called ceph-perf when $CEPH_PERF_CACHE points elsewhere. A
    # test's leftover check counts only its own cache's: a second checkout's
    # gate on another cache is not this one's leftover (it is load, which
    # `anywhere` finds for those that time the machine).
    marks = (str(REPO), str(cache_dir())) + (("ceph-perf",) if anywhere else ())
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                argv = (d / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            prog = os.path.basename(argv[0])
            ours = any(m in a for a in argv for m in marks)
            node_side = len(argv) > 2 and argv[1] == "-m" and argv[2].startswith("cephperf.runtime.")
            if ours and (prog in ("ceph-osd", "ceph-mon", "rados") or node_side):
                found.append(" ".join(argv))
    return found


def run_mounts() -> list[str]:
    """Mounts of a root run (an overlay and what is mounted into it) visible on the host."""
    return [line for line in Path("/proc/mounts").read_text().splitlines() if "/roots/run-" in line]
