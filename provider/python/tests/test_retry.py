"""The Daemon client behind a load balancer in front of many daemons (a
Kubernetes Service), against test doubles of both: a lease answered
"capacity" is tried again (a new connection each time, so it may reach
another daemon), boundedly; the calls on a desktop go to the daemon the
desktop names; a published desktop's address string carries its ports."""

import http.server
import itertools
import json
import threading
import urllib.error
import urllib.request

import pytest

from drums_osworld import CapacityExhausted, Daemon, DrumsProvider, daemon as daemon_mod


class FakeDaemon:
    """One daemon: full (every lease answers capacity) or not."""

    def __init__(self, full):
        self.full = full
        self.got = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, status, body=None):
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake.got.append("POST " + self.path)
                if self.path != "/v1/desktops":
                    return self._answer(404, {"error": {"code": "not_found", "message": "no"}})
                if fake.full:
                    return self._answer(503, {"error": {"code": "capacity", "message": "all 1 desktops are in use"}})
                self._answer(201, {"id": "d1.x", "address": "192.0.2.10", "guest_port": 30000, "daemon": fake.url,
                                   "ports": {"guest": 30000, "chromium": 30001, "vnc": 30002, "vlc": 30003},
                                   "state": "leased"})

            def do_GET(self):
                fake.got.append("GET " + self.path)
                if self.path == "/v1/snapshots":
                    return self._answer(200, [])
                if self.path == "/v1/desktops/d1.x" and not fake.full:
                    return self._answer(200, {"id": "d1.x", "address": "192.0.2.10", "guest_port": 30000,
                                              "daemon": fake.url, "state": "leased",
                                              "ports": {"guest": 30000, "chromium": 30001, "vnc": 30002, "vlc": 30003}})
                self._answer(404, {"error": {"code": "not_found", "message": "unknown desktop"}})

            def do_DELETE(self):
                fake.got.append("DELETE " + self.path)
                self._answer(204)

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


class Balancer:
    """A test double of a Service: each request goes to the next daemon."""

    def __init__(self, daemons):
        turn = itertools.cycle(daemons)

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _forward(self):
                d = next(turn)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
                req = urllib.request.Request(d.url + self.path, data=body, method=self.command)
                try:
                    with urllib.request.urlopen(req) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _forward

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


@pytest.fixture
def fast_retry(monkeypatch):
    monkeypatch.setattr(daemon_mod, "LEASE_WAIT", 0.001)
    monkeypatch.setattr(daemon_mod, "LEASE_MAX_WAIT", 0.004)
    monkeypatch.delenv("DRUMS_LEASE_ATTEMPTS", raising=False)


def test_lease_retries_another_daemon(fast_retry):
    full, free = FakeDaemon(True), FakeDaemon(False)
    d = Daemon(url=Balancer([full, free]).url, token="tok")
    got = d.lease(width=800, height=600)
    assert got["id"] == "d1.x" and got["daemon"] == free.url
    d.release("d1.x")
    assert full.got == ["POST /v1/desktops"]
    assert free.got == ["POST /v1/desktops", "DELETE /v1/desktops/d1.x"]


def test_lease_retry_is_bounded(fast_retry):
    a, b = FakeDaemon(True), FakeDaemon(True)
    d = Daemon(url=Balancer([a, b]).url, token="tok")
    with pytest.raises(CapacityExhausted):
        d.lease()
    assert len(a.got) + len(b.got) == daemon_mod.LEASE_ATTEMPTS
    # A unix socket reaches one daemon: its capacity answer is final.
    assert Daemon(socket_path="/nonexistent.sock", url="").lease_attempts == 1


def test_published_address_string(fast_retry):
    free = FakeDaemon(False)
    prov = DrumsProvider(daemon=Daemon(url=Balancer([free]).url, token="tok"))
    prov.start_emulator("drums:800x600", True, "Ubuntu")
    try:
        assert prov.get_ip_address("drums:800x600") == "192.0.2.10:30000:30001:30002:30003"
    finally:
        prov.stop_emulator("drums:800x600")
    assert free.got[-1] == "DELETE /v1/desktops/d1.x"
