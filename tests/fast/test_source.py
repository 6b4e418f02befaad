"""ci/source on a miniature source package: fetch, verify, assemble, strictness."""
import http.server
import os
import signal
import subprocess
import threading
import unittest

from tests.helpers import CI, LINES, SourceFixture, unified_patch


class AssembleTest(SourceFixture):
    def test_series_applied_and_changelog_on_top(self):
        r = self.source("--from", self.tarballs)
        self.assertEqual(r.returncode, 0, r.stderr)
        tree = self.tree()
        self.assertEqual(r.stdout.strip(), str(tree))
        applied = subprocess.run(["quilt", "applied"], cwd=tree, capture_output=True, text=True,
                                 env={**os.environ, "QUILT_PATCHES": "debian/patches"}).stdout.split()
        self.assertEqual(applied, ["debian/patches/debian-b.patch", "debian/patches/ceph-perf/ours-a.patch"])
        self.assertIn("line 15 ours", (tree / "src/a.txt").read_text())
        top = subprocess.run(["dpkg-parsechangelog", "-l", tree / "debian/changelog", "-S", "Version"],
                             capture_output=True, text=True).stdout.strip()
        self.assertEqual(top, "1.0+ds-1+perf1")

    def test_rerun_is_noop_and_changed_patch_rebuilds(self):
        self.assertEqual(self.source("--from", self.tarballs).returncode, 0)
        inode = self.tree().stat().st_ino
        again = self.source("--from", self.tarballs)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("up to date", again.stderr)
        self.assertEqual(self.tree().stat().st_ino, inode, "a no-op re-run must not touch the tree")
        (self.patches / "ours-a.patch").write_text(
            unified_patch("src/a.txt", LINES, LINES.replace("line 16\n", "line 16 changed\n")))
        changed = self.source("--from", self.tarballs)
        self.assertEqual(changed.returncode, 0, changed.stderr)
        self.assertNotIn("up to date", changed.stderr)
        self.assertIn("line 16 changed", (self.tree() / "src/a.txt").read_text())

    def test_fuzz_is_refused_naming_patch_and_hunk(self):
        # Made against a base whose first context line differs: applies only with fuzz 1.
        base = LINES.replace("line 12\n", "line twelve\n")
        self.add_patch("needs-fuzz.patch", unified_patch("src/a.txt", base, base.replace("line 18\n", "line 18 fuzzy\n")))
        r = self.source("--from", self.tarballs)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("needs-fuzz.patch", r.stderr)
        self.assertIn("hunk #1 of src/a.txt needs fuzz", r.stderr)
        self.assertFalse((self.build / "source").exists(), "no tree may be left after a failure")
        self.assertFalse((self.build / ".source.new").exists())

    def test_failing_hunk_is_named(self):
        self.add_patch("broken.patch", unified_patch("src/b.txt", "something else\n", "new\n"))
        r = self.source("--from", self.tarballs)
        self.assertEqual(r.returncode, 1)
        self.assertIn("patch ceph-perf/broken.patch does not apply: hunk #1 of src/b.txt fails", r.stderr)

    def test_applied_upstream_is_detected(self):
        # The orig already has LINES: this patch's change is upstream.
        self.add_patch("upstreamed.patch", unified_patch("src/a.txt", LINES.replace("line 25\n", "line 25 old\n"), LINES))
        r = self.source("--from", self.tarballs)
        self.assertEqual(r.returncode, 1)
        self.assertIn("patch upstreamed.patch is already applied upstream", r.stderr)
        self.assertIn("applied-upstream", r.stderr)

    def test_applied_upstream_marked_is_reported_not_reapplied(self):
        self.add_patch("upstreamed.patch", unified_patch("src/a.txt", LINES.replace("line 25\n", "line 25 old\n"), LINES),
                       note="applied-upstream")
        r = self.source("--from", self.tarballs)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("patch upstreamed.patch: applied upstream, not re-applied", r.stderr)
        series = (self.tree() / "debian/patches/series").read_text()
        self.assertNotIn("upstreamed.patch", series)

    def test_stale_applied_upstream_mark_fails(self):
        self.add_patch("not-upstream.patch", unified_patch("src/a.txt", LINES, LINES.replace("line 3\n", "line 3 x\n")),
                       note="applied-upstream")
        r = self.source("--from", self.tarballs)
        self.assertEqual(r.returncode, 1)
        self.assertIn("does not contain its change; remove the mark", r.stderr)


class VerifyTest(SourceFixture):
    def test_corrupted_tarball_in_from_dir(self):
        good = self.orig.read_bytes()
        self.orig.write_bytes(good[:-10] + b"0123456789")
        r = self.source("--from", self.tarballs)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"{self.orig.name}: sha256 mismatch: expected ", r.stderr)
        self.assertIn(", got ", r.stderr)
        self.assertFalse((self.build / "source").exists(), "nothing may be unpacked")
        self.assertFalse((self.build / ".source.new").exists(), "nothing may be unpacked")

    def test_corrupted_cached_download_is_not_trusted(self):
        downloads = self.cache / "downloads"
        downloads.mkdir(parents=True)
        (downloads / self.orig.name).write_bytes(b"truncated")
        with Server(self.orig.read_bytes()) as srv:
            self.configure_url(srv.url)
            r = self.source()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("sha256 mismatch", r.stderr)
        self.assertEqual((downloads / self.orig.name).read_bytes(), self.orig.read_bytes())

    def test_wrong_download_is_deleted(self):
        with Server(b"not the file at all") as srv:
            self.configure_url(srv.url)
            r = self.source()
        self.assertEqual(r.returncode, 1)
        self.assertIn("sha256 mismatch", r.stderr)
        left = sorted(p.name for p in (self.cache / "downloads").iterdir())
        self.assertEqual(left, [self.debian.name], "the wrong download must be deleted")

    def configure_url(self, url):
        (self.tmp / "local.toml").write_text(f'[files."{self.orig.name}"]\nurl = "{url}"\n')
        # The debian tarball comes from --from-less paths too: serve it via the cache.
        d = self.cache / "downloads"
        d.mkdir(parents=True, exist_ok=True)
        (d / self.debian.name).write_bytes(self.debian.read_bytes())


class Server:
    """A local HTTP server that can stall halfway through the body."""

    def __init__(self, data: bytes, stall: bool = False):
        self.data, self.stall = data, stall
        self.half_sent, self.release = threading.Event(), threading.Event()

    def __enter__(self):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", str(len(outer.data)))
                self.end_headers()
                half = len(outer.data) // 2 if outer.stall else len(outer.data)
                self.wfile.write(outer.data[:half])
                self.wfile.flush()
                outer.half_sent.set()
                if outer.stall:
                    outer.release.wait(60)
                    try:
                        self.wfile.write(outer.data[half:])
                    except OSError:
                        pass

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/file"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class InterruptedFetchTest(SourceFixture):
    def start_stalled_fetch(self, srv):
        VerifyTest.configure_url(self, srv.url)
        proc = subprocess.Popen([str(CI / "source"), "--patches", self.patches, "--debian", self.ours],
                                env={**os.environ, **self.env()}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertTrue(srv.half_sent.wait(60), "the fetch never started")
        return proc

    def assert_no_trusted_partial(self):
        downloads = self.cache / "downloads"
        self.assertFalse((downloads / self.orig.name).exists(), "a partial download took the final name")

    def test_sigterm_mid_fetch_leaves_nothing(self):
        with Server(self.orig.read_bytes() * 1, stall=True) as srv:
            proc = self.start_stalled_fetch(srv)
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        self.assertNotEqual(proc.returncode, 0)
        self.assert_no_trusted_partial()
        self.assertEqual([p.name for p in (self.cache / "downloads").glob("*.part-*")], [])
        self.assertFalse((self.build / "source").exists())

    def test_sigkill_mid_fetch_then_rerun(self):
        with Server(self.orig.read_bytes(), stall=True) as srv:
            proc = self.start_stalled_fetch(srv)
            proc.kill()
            proc.communicate(timeout=60)
        self.assert_no_trusted_partial()
        with Server(self.orig.read_bytes()) as srv:
            VerifyTest.configure_url(self, srv.url)
            r = self.source()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([p.name for p in (self.cache / "downloads").glob("*.part-*")], [])


if __name__ == "__main__":
    unittest.main()
