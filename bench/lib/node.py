#!/usr/bin/env python3
"""The single-node cluster, run inside the runtime root (python3 stdlib only).

  node.py round SPEC.json   fresh mon + OSD, one benchmark, metrics, teardown;
                            writes the round's record to SPEC.state_dir/round.json
  node.py serve SPEC.json   fresh mon + OSD, then hold until SIGTERM (bench/cluster up)

One mon (msgr v2 and v1 on 127.0.0.1) and one OSD, BlueStore on a
file-backed device, a size-1 pool; a mgr only when the spec asks (the
IO-mock test reads a health warning); no cephadm, no systemd. The daemons are children of this process and are
stopped by it; the namespaces they run in make sure nothing outlives it.

The benchmark never hangs: rados bench is watched line by line; a dead OSD,
or no completed op for `stall_seconds`, stops it and names the cause (OSD
aborted, OSD full) with the OSD log's last lines.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")


class GateError(Exception):
    """The round could not produce a measurement; the message names the cause."""


def sh(*cmd, timeout=120, check=True, **kw):
    try:
        r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise GateError(f"{' '.join(map(str, cmd[:6]))} did not finish within {timeout} s")
    if check and r.returncode != 0:
        raise GateError(f"{' '.join(map(str, cmd))} failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()[-800:]}")
    return r


def log(msg):
    print(f"[node] {msg}", file=sys.stderr, flush=True)


class Cluster:
    def __init__(self, spec):
        self.spec = spec
        self.state = Path(spec["state_dir"])
        self.conf = self.state / "ceph.conf"
        self.procs = {}
        self.osd_bin = spec.get("osd_binary") or "/usr/bin/ceph-osd"
        ext = spec.get("external")
        if ext:  # an existing cluster: no bring-up, its own conf, keyring and pool
            self.conf = Path(ext["conf"])
            self.rados = ["rados", "-c", ext["conf"], "-k", ext["keyring"], "-p", ext["pool"]]
        else:
            self.rados = ["rados", "-c", str(self.conf), "-p", "bench"]
        self.osd_env = dict(os.environ)
        if spec.get("ld_library_path"):
            self.osd_env["LD_LIBRARY_PATH"] = spec["ld_library_path"]

    def ceph(self, *args, timeout=60):
        return sh("ceph", "-c", self.conf, *args, timeout=timeout)

    def write_conf(self):
        s, port, v1 = self.state, self.spec["port"], self.spec["v1_port"]
        conf = {
            "global": {
                "fsid": str(uuid.uuid4()),
                "mon_host": f"[v2:127.0.0.1:{port},v1:127.0.0.1:{v1}]",
                "auth_cluster_required": "none", "auth_service_required": "none",
                "auth_client_required": "none",
                "mon_allow_pool_size_one": "true", "mon_warn_on_pool_no_redundancy": "false",
                "osd_pool_default_size": "1", "osd_pool_default_min_size": "1",
                "osd_crush_chooseleaf_type": "0",
                # Sane full ratios, below BlueStore's own failsafe, so that a
                # profile that writes too much is stopped by the mon, not by an abort.
                "mon_osd_full_ratio": "0.90", "mon_osd_backfillfull_ratio": "0.85",
                "mon_osd_nearfull_ratio": "0.80",
                "run_dir": f"{s}/run", "admin_socket": f"{s}/run/$name.asok",
                "pid_file": f"{s}/run/$name.pid", "log_file": f"{s}/log/$name.log",
                "ms_bind_ipv6": "false", "public_addr": "127.0.0.1",
            },
            "mon": {"mon_data": f"{s}/mon/$cluster-$id"},
            "mgr": {"mgr_data": f"{s}/mgr/$cluster-$id"},
            "osd": {
                "osd_data": f"{s}/osd/$cluster-$id", "osd_objectstore": "bluestore",
                "bluestore_block_path": f"{s}/osd/block", "bluestore_block_create": "true",
                "bluestore_block_size": str(int(self.spec["device_gib"] * (1 << 30))),
                "osd_crush_update_on_start": "true",
            },
        }
        for section, values in self.spec.get("conf", {}).items():
            for k, v in values.items():
                if k == "debug_*":  # every debug subsystem this build knows
                    for name in debug_subsystems():
                        conf.setdefault(section, {})[name] = str(v)
                else:
                    conf.setdefault(section, {})[k] = str(v).lower() if isinstance(v, bool) else str(v)
        text = "".join(f"[{sec}]\n" + "".join(f"{k} = {v}\n" for k, v in vals.items()) + "\n"
                       for sec, vals in conf.items())
        self.conf.write_text(text)

    def start_osd(self):
        self.start("osd.0", [self.osd_bin, "-c", self.conf, "-i", "0", "-f"], env=self.osd_env)
        return self.procs["osd.0"]

    def stop_osd(self):
        proc = self.procs.pop("osd.0")
        proc.terminate()
        proc.wait(timeout=120)

    def start(self, name, argv, env=None):
        logf = open(self.state / "log" / f"{name}.stdout", "w")
        self.procs[name] = subprocess.Popen([str(a) for a in argv], stdout=logf, stderr=subprocess.STDOUT,
                                            env=env or os.environ)

    def up(self):
        s = self.state
        for d in ("run", "log", "mon/ceph-a", "osd/ceph-0"):
            (s / d).mkdir(parents=True, exist_ok=True)
        self.write_conf()
        fsid = re.search(r"fsid = (\S+)", self.conf.read_text()).group(1)
        port, v1 = self.spec["port"], self.spec["v1_port"]
        sh("monmaptool", "--create", "--fsid", fsid, "--addv", "a",
           f"[v2:127.0.0.1:{port},v1:127.0.0.1:{v1}]", s / "monmap")
        sh("ceph-authtool", "--create-keyring", s / "mon.keyring", "--gen-key", "-n", "mon.", "--cap", "mon", "allow *")
        sh("ceph-mon", "-c", self.conf, "--mkfs", "-i", "a", "--monmap", s / "monmap", "--keyring", s / "mon.keyring")
        self.start("mon.a", ["ceph-mon", "-c", self.conf, "-i", "a", "-f"])
        # Blocks until the mon answers (bounded by the timeout).
        self.ceph("--connect-timeout", "60", "mon", "stat", timeout=90)
        if self.spec.get("mgr"):  # only what reads health checks from the OSD needs one
            (s / "mgr" / "ceph-x").mkdir(parents=True, exist_ok=True)
            self.start("mgr.x", ["ceph-mgr", "-c", self.conf, "-i", "x", "-f"])
        osd_uuid = str(uuid.uuid4())
        osd_id = self.ceph("osd", "new", osd_uuid).stdout.strip()
        if osd_id != "0":
            raise GateError(f"expected osd.0, the mon allocated osd.{osd_id}")
        sh(self.osd_bin, "-c", self.conf, "-i", "0", "--mkfs", "--osd-uuid", osd_uuid, timeout=300, env=self.osd_env)
        self.start_osd()
        self.ceph("osd", "pool", "create", "bench", "32", "32", "replicated")
        self.ceph("osd", "pool", "set", "bench", "size", "1", "--yes-i-really-mean-it")
        self.ceph("osd", "pool", "application", "enable", "bench", "rados")
        # A write blocks until the pool's PG is active: the wait is the write itself.
        try:
            sh("rados", "-c", self.conf, "-p", "bench", "put", "ceph-perf-probe", self.conf, timeout=180)
        except GateError as e:
            raise GateError(f"the pool never became writable: {e}; {self.cause()}")
        sh("rados", "-c", self.conf, "-p", "bench", "rm", "ceph-perf-probe", timeout=60)
        self.check_alive()
        # Options that only work once the OSD is up (the IO-mock switches: with
        # them set from mkfs on, the pool never becomes active).
        for k, v in self.spec.get("runtime_conf", {}).get("osd", {}).items():
            self.ceph("tell", "osd.0", "config", "set", k, str(v).lower() if isinstance(v, bool) else str(v))
            log(f"osd.0: {k} = {v} set at run time")
        log(f"cluster up: mon v2 127.0.0.1:{port}, osd.0 ({self.osd_bin}), {self.spec['device_gib']} GiB device")

    def check_alive(self):
        for name, p in self.procs.items():
            if p.poll() is not None:
                raise GateError(f"{name} exited with status {p.returncode}: {self.cause(name)}")

    def log_tail(self, name, n=15):
        lines = []
        for f in (self.state / "log" / f"{name}.log", self.state / "log" / f"{name}.stdout"):
            if f.exists():
                with open(f, "rb") as fh:
                    fh.seek(max(0, f.stat().st_size - 200_000))
                    lines += fh.read().decode(errors="replace").splitlines()[-n:]
        return lines[-n:]

    def cause(self, name="osd.0"):
        tail = "\n".join(self.log_tail(name, 40))
        aborted = re.search(r"Caught signal|ceph_abort|abort\(\)|FAILED ceph_assert|unexpected error", tail)
        if re.search(r"No space left|ENOSPC|\(28\)|_do_alloc_write failed|allocate failed|failsafe full", tail, re.I):
            kind = "OSD full (out of space)" + (", aborted" if aborted else "")
        elif aborted:
            kind = "OSD aborted"
        else:
            kind = "OSD stopped"
        return kind + "; last log lines:\n  " + "\n  ".join(self.log_tail(name, 15))

    def down(self):
        for name in reversed(list(self.procs)):
            p = self.procs[name]
            if p.poll() is None:
                p.terminate()
        for name, p in self.procs.items():
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def osdmap_full(self):
        try:
            dump = json.loads(self.ceph("osd", "dump", "--format", "json", timeout=20).stdout)
        except (GateError, ValueError, subprocess.TimeoutExpired):
            return False
        return "full" in dump.get("flags", "") or any("full" in o.get("state", []) for o in dump.get("osds", []))

    def osd_cpu_seconds(self):
        fields = Path(f"/proc/{self.procs['osd.0'].pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime

    def thread_cpu(self):
        """CPU seconds of each ceph-osd thread, by thread id: (name, seconds)."""
        out = {}
        for task in Path(f"/proc/{self.procs['osd.0'].pid}/task").iterdir():
            try:
                comm, rest = task.joinpath("stat").read_text().rsplit(")", 1)
            except FileNotFoundError:  # the thread ended meanwhile
                continue
            f = rest.split()
            out[task.name] = (comm.split("(", 1)[1], (int(f[11]) + int(f[12])) / CLK_TCK)
        return out

    def perf_dump(self):
        asok = self.state / "run" / "osd.0.asok"
        return json.loads(sh("ceph", "--admin-daemon", asok, "perf", "dump", timeout=60).stdout)

    def osd_peak_rss_kib(self):
        m = re.search(r"VmHWM:\s+(\d+)", Path(f"/proc/{self.procs['osd.0'].pid}/status").read_text())
        return int(m.group(1)) if m else None

    # -- benchmarking ---------------------------------------------------------
    def rados_bench(self, seconds, mode, extra, perf_out=None):
        """Run rados bench, watching its per-second lines; returns (summary, stderr tail)."""
        cmd = [*self.rados, "bench", str(seconds), mode, *map(str, extra)]
        if perf_out:
            cmd = ["perf", "stat", "-e", "cycles,instructions", "-x", ",", "-o", str(perf_out),
                   "-p", str(self.procs["osd.0"].pid), "--", *cmd]
        stall = self.spec.get("stall_seconds", 20)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        state = {"finished": -1, "progress_at": time.monotonic(), "lines": []}

        def reader():
            for line in proc.stdout:
                state["lines"].append(line.rstrip("\n"))
                m = re.match(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s", line)
                if m and int(m.group(4)) > state["finished"]:
                    state["finished"] = int(m.group(4))
                    state["progress_at"] = time.monotonic()
                if self.spec.get("progress"):
                    print(line, end="", file=sys.stderr, flush=True)

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        deadline = time.monotonic() + seconds + 120
        problem = None
        while proc.poll() is None:
            t.join(timeout=1.0)  # wakes on output end or once a second to check the daemons
            if "osd.0" in self.procs and self.procs["osd.0"].poll() is not None:
                problem = f"osd.0 died during the benchmark (status {self.procs['osd.0'].returncode}): {self.cause()}"
            elif time.monotonic() - state["progress_at"] > stall:
                full = "OSD full (the osdmap carries the full flag); " if self.osdmap_full() else ""
                problem = f"no progress for {stall} s: {full}{self.cause()}"
            elif time.monotonic() > deadline:
                problem = f"rados bench ran past its {seconds} s plus 120 s margin"
            if problem:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise GateError(problem)
        t.join(timeout=10)
        if proc.returncode != 0:
            raise GateError(f"rados bench failed (exit {proc.returncode}): " + " | ".join(state["lines"][-8:]))
        return parse_summary(state["lines"])

    def run_profile(self):
        b = self.spec["bench"]
        extra = ["-t", b["threads"], "-b", b["block_size"], "--no-cleanup", "--run-name", "ceph-perf"]
        if b.get("max_objects"):
            extra += ["--max-objects", b["max_objects"]]
        perf_out = self.state / "perf.csv" if self.spec.get("perf") else None
        if b["mode"] == "rand":
            log(f"write phase: {b['prefill_seconds']} s")
            self.rados_bench(b["prefill_seconds"], "write", extra)
            mode, extra = "rand", ["-t", b["threads"], "--run-name", "ceph-perf"]
        else:
            mode = "write"
        local = "osd.0" in self.procs
        cpu0 = self.osd_cpu_seconds() if local else None
        probe = self.spec.get("threads") and local
        if probe:
            threads0, counters0, t0 = self.thread_cpu(), self.perf_dump(), time.monotonic()
        summary = self.rados_bench(b["seconds"], mode, extra, perf_out if local else None)
        rec = dict(summary)
        if probe:
            rec["threads"] = thread_report(threads0, self.thread_cpu(), time.monotonic() - t0)
            rec["queues"] = queue_report(counters0, self.perf_dump())
        if local:
            cpu = self.osd_cpu_seconds() - cpu0
            ops = summary.get("ops") or 0
            rec.update(osd_cpu_seconds=round(cpu, 3),
                       osd_cpu_us_per_op=round(cpu / ops * 1e6, 3) if ops else None,
                       osd_peak_rss_mib=round((self.osd_peak_rss_kib() or 0) / 1024, 1))
            if perf_out:
                rec.update(perf_counts(perf_out, ops))
        else:
            sh(*self.rados, "cleanup", "--run-name", "ceph-perf", timeout=1800)
        self.check_alive()
        return rec


def thread_report(before, after, seconds):
    """Per-thread CPU share over the benchmark, busiest first, and totals by thread name."""
    threads = []
    for tid, (name, cpu) in after.items():
        used = cpu - before.get(tid, (name, 0.0))[1]
        threads.append({"tid": int(tid), "name": name, "cpu_seconds": round(used, 2),
                        "cpu_percent": round(100 * used / seconds, 1)})
    threads.sort(key=lambda t: -t["cpu_seconds"])
    by_name = {}
    for t in threads:
        g = by_name.setdefault(t["name"], {"threads": 0, "cpu_percent": 0.0, "busiest_thread_percent": 0.0})
        g["threads"] += 1
        g["cpu_percent"] = round(g["cpu_percent"] + t["cpu_percent"], 1)
        g["busiest_thread_percent"] = max(g["busiest_thread_percent"], t["cpu_percent"])
    return {"seconds": round(seconds, 1), "busiest": threads[:12], "by_name": by_name}


def queue_report(before, after):
    """The completion path's counters over the benchmark: every finisher's queue
    and completion latency, and BlueStore's kv sync/final stages and aio wait."""
    def delta(sec, key):
        a, b = after.get(sec, {}).get(key), before.get(sec, {}).get(key)
        if isinstance(a, dict) and "avgcount" in a:
            n = a["avgcount"] - (b or {}).get("avgcount", 0)
            total = a["sum"] - (b or {}).get("sum", 0)
            return {"count": n, "avg_ms": round(1000 * total / n, 3) if n else None}
        return a
    out = {}
    for sec in after:
        if sec.startswith("finisher-"):
            out[sec] = {"queue_len_now": after[sec].get("queue_len"),
                        "complete_latency": delta(sec, "complete_latency")}
    for key in ("kv_sync_lat", "kv_flush_lat", "kv_commit_lat", "kv_final_lat", "state_kv_queued_lat",
                "state_kv_committing_lat", "state_finishing_lat", "state_aio_wait_lat", "state_done_lat",
                "commit_lat"):
        v = delta("bluestore", key)
        if v is not None:
            out[f"bluestore.{key}"] = v
    return out


def debug_subsystems():
    r = sh("ceph-conf", "-c", "/dev/null", "-D", check=False)
    names = [line.split("=")[0].strip() for line in r.stdout.splitlines() if line.startswith("debug_")]
    if not names:
        raise GateError("could not list the debug_* options with ceph-conf -D")
    return names


def parse_summary(lines):
    """rados bench's closing summary, as numbers."""
    keys = {
        "Total time run": "seconds", "Total writes made": "ops", "Total reads made": "ops",
        "Bandwidth (MB/sec)": "bandwidth_mb_s", "Average IOPS": "iops", "Stddev IOPS": "iops_stddev",
        "Average Latency(s)": "lat_avg_s", "Stddev Latency(s)": "lat_stddev_s", "Max latency(s)": "lat_max_s",
    }
    out = {}
    for line in lines:
        if ":" in line:
            k, v = line.split(":", 1)
            if k.strip() in keys:
                try:
                    out[keys[k.strip()]] = float(v.strip())
                except ValueError:
                    pass
    if "iops" not in out:
        raise GateError("rados bench printed no summary: " + " | ".join(lines[-8:]))
    return out


def perf_counts(path, ops):
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {"perf": "no output"}
    vals = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[2] in ("cycles", "instructions", "cycles:u", "instructions:u"):
            vals[parts[2].split(":")[0]] = parts[0]
    if not vals or any(v.startswith("<not") for v in vals.values()):
        return {"perf": "cycles not supported on this machine"}
    c = float(vals["cycles"])
    return {"perf": "ok", "osd_cycles_per_op": round(c / ops) if ops else None}


def perf_supported():
    try:
        r = subprocess.run(["perf", "stat", "-e", "cycles", "-x", ",", "--", "true"],
                           capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and "<not supported>" not in r.stderr and "<not counted>" not in r.stderr


# Upstream's way to skip device IO, for a ceph-osd without bluestore_io_mock
# (Debian's stock packages). Set at run time, once the pool is active: set from
# mkfs on, the pool's PGs never become active (measured: the first write hangs).
UPSTREAM_IO_MOCK = {"bluestore_debug_omit_block_device_write": "true", "bluestore_debug_omit_kv_commit": "true"}


def osd_has_option(osd_bin, name, env=None):
    return sh(osd_bin, "--show-config-value", name, check=False, env=env).returncode == 0


def choose_io_mock(spec, cluster):
    """The IO-mock variant: our bluestore_io_mock where this ceph-osd has it,
    upstream's two debug options otherwise. Returns which one, for the record."""
    if osd_has_option(cluster.osd_bin, "bluestore_io_mock", cluster.osd_env):
        spec.setdefault("conf", {}).setdefault("osd", {})["bluestore_io_mock"] = "true"
        return "bluestore_io_mock"
    spec.setdefault("runtime_conf", {}).setdefault("osd", {}).update(UPSTREAM_IO_MOCK)
    return "upstream debug options (this ceph-osd has no bluestore_io_mock)"


OBJECT_SIZES = [1, 4096, 65536, 1 << 20, 4 << 20]


class Objects:
    """Objects of 1 B to 4 MiB with known contents, written and checked with rados."""

    def __init__(self, cluster, work):
        self.cluster, self.work, self.sums, self.sizes = cluster, Path(work), {}, {}

    def write(self, tag):
        for i, size in enumerate(OBJECT_SIZES):
            name, path = f"{tag}-{i}-{size}", self.work / f"{tag}-{i}"
            data = os.urandom(size)
            path.write_bytes(data)
            sh(*self.cluster.rados, "put", name, path, timeout=180)
            path.unlink()
            self.sums[name], self.sizes[name] = hashlib.sha256(data).hexdigest(), size

    def verify(self, step, names=None, zeros=False):
        """Every object listed and read back intact (or, zeros=True, as that many zero bytes)."""
        names = list(names or self.sums)
        listed = set(sh(*self.cluster.rados, "ls", timeout=180).stdout.split())
        missing = set(names) - listed
        if missing:
            raise GateError(f"{step}: objects missing from the pool listing: {sorted(missing)}")
        for name in names:
            want = hashlib.sha256(bytes(self.sizes[name])).hexdigest() if zeros else self.sums[name]
            out = self.work / f"{name}.read"
            # a read blocks until the PG is active again: the wait is the read
            sh(*self.cluster.rados, "get", name, out, timeout=300)
            got = hashlib.sha256(out.read_bytes()).hexdigest()
            out.unlink()
            if got != want:
                what = f"{self.sizes[name]} zero bytes" if zeros else "as written"
                raise GateError(f"{step}: object {name} does not read back {what} (sha256 {got})")
        log(f"{step}: {len(names)} objects read back {'as zeros' if zeros else 'intact'}")
        return len(names)


def installed_version(pkg):
    return sh("dpkg-query", "-W", "-f", "${Version}", pkg).stdout.strip()


def install_packages(spec):
    debs = spec.get("debs") or []
    if debs:
        log(f"installing {len(debs)} package(s) over the stock ones")
        sh("dpkg", "-i", "--force-confold", *debs, timeout=600)
    if spec.get("apt_source"):
        Path("/etc/apt/sources.list.d/ceph-perf-candidate.list").write_text(spec["apt_source"] + "\n")
        sh("apt-get", "update", timeout=600)
        sh("apt-get", "install", "-y", "ceph-osd", "ceph-mon", "ceph-common", timeout=900)


def main():
    cmd, spec = sys.argv[1], json.loads(Path(sys.argv[2]).read_text())
    state = Path(spec["state_dir"])
    cluster = Cluster(spec)
    result = {"ok": False}
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        install_packages(spec)
        if spec.get("perf") and not perf_supported():
            spec["perf"] = False
            result["perf_note"] = "cycles not supported on this machine"
        if spec.get("io_mock") and cmd != "external":
            result["io_mock"] = choose_io_mock(spec, cluster)
        if cmd != "external":
            cluster.up()
        if cmd == "serve":
            (state / "up").write_text(json.dumps({"conf": str(cluster.conf)}))
            signal.pause()
        else:
            rec = cluster.run_profile()
            result.update(rec, ok=True)
            if "perf" not in result:
                result["perf"] = result.pop("perf_note", "perf stat not requested")
    except GateError as e:
        result["error"] = str(e)
    except KeyboardInterrupt:
        result["error"] = "interrupted"
    except Exception as e:  # a bug here must still end the round with a record
        result["error"] = f"internal error in node.py: {type(e).__name__}: {e}"
    finally:
        cluster.down()
        tmp = state / "round.json.tmp"
        tmp.write_text(json.dumps(result, indent=2))
        os.replace(tmp, state / "round.json")
    return 0 if result["ok"] else 2


if __name__ == "__main__":
    sys.exit(main())
