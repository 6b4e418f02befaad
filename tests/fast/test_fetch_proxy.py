"""Downloads go through apt's proxy (Acquire::http::Proxy), as apt's own would,
and say how far they are. A local HTTP server plays the proxy: the URL's host
does not exist, so only a download through the proxy can succeed."""
import contextlib
import hashlib
import http.server
import io
import os
import tempfile
import threading
import unittest
from pathlib import Path
from unittest import mock

from cephperf.packaging import fetch

PAYLOAD = os.urandom(3 << 20)


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    seen: list = []

    def do_GET(self):
        # a proxy is asked for the absolute URL
        ProxyHandler.seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", str(len(PAYLOAD)))
        self.end_headers()
        self.wfile.write(PAYLOAD)

    def log_message(self, *args):
        pass


class FetchProxyTest(unittest.TestCase):
    def setUp(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ProxyHandler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        conf = self.tmp / "apt.conf"
        conf.write_text(f'Acquire::http::Proxy "http://127.0.0.1:{self.server.server_port}";\n')
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        env["APT_CONFIG"] = str(conf)
        patcher = mock.patch.dict(os.environ, env, clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_a_download_goes_through_apts_proxy_and_shows_progress(self):
        dest = self.tmp / "file.bin"
        said = io.StringIO()
        with contextlib.redirect_stderr(said):
            fetch.download("http://ceph-perf.invalid/file.bin", dest, hashlib.sha256(PAYLOAD).hexdigest())
        self.assertEqual(dest.read_bytes(), PAYLOAD)
        self.assertEqual(ProxyHandler.seen[-1], "http://ceph-perf.invalid/file.bin")
        self.assertIn("file.bin: 1 of 3 MiB (30%)", said.getvalue())

    def test_the_environments_proxy_wins_and_direct_means_none(self):
        self.assertEqual(fetch.parse_apt_proxies('Acquire::http::Proxy "DIRECT";\n'), {})
        self.assertEqual(fetch.parse_apt_proxies('Acquire::https::Proxy "http://p:3128";\n'),
                         {"https": "http://p:3128"})
        with mock.patch.dict(os.environ, {"http_proxy": "http://elsewhere.invalid:1"}):
            handler = next(h for h in fetch.opener().handlers if isinstance(h, fetch.urllib.request.ProxyHandler))
            self.assertEqual(handler.proxies["http"], "http://elsewhere.invalid:1")


if __name__ == "__main__":
    unittest.main()
