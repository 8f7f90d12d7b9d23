"""A small client of the drums daemon's v1 API over its unix socket (or TCP
with a bearer token), with the standard library's http.client only."""

import http.client
import json
import os
import random
import socket
import time
import urllib.parse

DEFAULT_SOCKET = "/run/drums/drums.sock"

# A cold lease starts a desktop (seconds, up to the daemon's create timeout of
# two minutes); the client must wait longer than that.
DEFAULT_TIMEOUT = 300.0

# A lease answered "capacity" through a URL (a load balancer in front of
# many daemons, such as a Kubernetes Service) is tried again on a new
# connection, which may reach another daemon: LEASE_ATTEMPTS in all
# (DRUMS_LEASE_ATTEMPTS), waiting from LEASE_WAIT up to LEASE_MAX_WAIT
# seconds, doubling, each wait with up to half of it added at random. About
# 20 s in all, as the Go client. A unix socket reaches one daemon: no retry.
LEASE_ATTEMPTS = 6
LEASE_WAIT = 0.5
LEASE_MAX_WAIT = 8.0


class DaemonError(Exception):
    """An error answer of the daemon: HTTP status, code and message."""

    def __init__(self, status, code, message):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def __str__(self):
        return "drums daemon: %s (%s, HTTP %d)" % (self.message, self.code, self.status)


class NotFound(DaemonError):
    """Unknown desktop or snapshot (code not_found)."""


class BadRequest(DaemonError):
    """A request the daemon refused as malformed (code bad_request)."""


class CapacityExhausted(DaemonError):
    """Every desktop is in use (code capacity)."""


class Conflict(DaemonError):
    """The desktop is not in a state that allows the call (code conflict)."""


class Unreachable(DaemonError):
    """No daemon answers at the configured socket or URL."""


_BY_CODE = {
    "not_found": NotFound,
    "bad_request": BadRequest,
    "capacity": CapacityExhausted,
    "conflict": Conflict,
}


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("drums", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._path)
        except OSError:
            s.close()
            raise
        self.sock = s


class Daemon:
    """The daemon at a unix socket (DRUMS_SOCKET, default
    /run/drums/drums.sock) or at an http URL (DRUMS_URL, with DRUMS_TOKEN)."""

    def __init__(self, socket_path=None, url=None, token=None, timeout=DEFAULT_TIMEOUT, lease_attempts=None):
        self.url = url if url is not None else os.environ.get("DRUMS_URL", "")
        self.socket_path = socket_path or os.environ.get("DRUMS_SOCKET") or DEFAULT_SOCKET
        self.token = token if token is not None else os.environ.get("DRUMS_TOKEN", "")
        self.timeout = timeout
        if lease_attempts is None:
            lease_attempts = int(os.environ.get("DRUMS_LEASE_ATTEMPTS", "") or (LEASE_ATTEMPTS if self.url else 1))
        self.lease_attempts = lease_attempts
        # desktop id -> the Daemon of the daemon that holds it, when a
        # desktop names its daemon (drums serve --advertise-url).
        self._owners = {}

    def where(self):
        return self.url or "unix:" + self.socket_path

    def _connection(self):
        if not self.url:
            return _UnixHTTPConnection(self.socket_path, self.timeout), ""
        u = urllib.parse.urlsplit(self.url)
        cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        return cls(u.hostname, u.port, timeout=self.timeout), u.path.rstrip("/")

    def _owned(self, d):
        """Records which daemon holds desktop d, when d names one and this
        client reaches daemons by URL (a unix socket's client talks to its
        daemon only); returns d."""
        url = (d or {}).get("daemon") or ""
        if url and self.url and url.rstrip("/") != self.url.rstrip("/"):
            owner = self._owners.get(d["id"])
            if owner is None or owner.url.rstrip("/") != url.rstrip("/"):
                self._owners[d["id"]] = Daemon(url=url, token=self.token, timeout=self.timeout, lease_attempts=1)
        return d

    def _at(self, desktop_id):
        """The Daemon to send the calls on desktop_id to."""
        return self._owners.get(desktop_id, self)

    def _desktop_call(self, method, desktop_id, suffix="", body=None):
        d = self._at(desktop_id).request(method, "/v1/desktops/%s%s" % (urllib.parse.quote(desktop_id, safe=""), suffix), body)
        return self._owned(d)

    def request(self, method, path, body=None):
        """Sends one request; returns the decoded JSON answer (None for 204)
        or raises DaemonError with the daemon's message."""
        conn, prefix = self._connection()
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        try:
            try:
                conn.request(method, prefix + path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException) as e:
                raise Unreachable(0, "unreachable", "%s %s at %s: %s (is `drums serve` running? set DRUMS_SOCKET)"
                                  % (method, path, self.where(), e)) from e
        finally:
            conn.close()
        if resp.status >= 400:
            code, message = "internal", raw.decode("utf-8", "replace").strip() or resp.reason
            try:
                err = json.loads(raw)["error"]
                code, message = err["code"], err["message"]
            except (ValueError, KeyError, TypeError):
                pass
            raise _BY_CODE.get(code, DaemonError)(resp.status, code, message)
        if resp.status == 204 or not raw:
            return None
        return json.loads(raw)

    def lease(self, width=None, height=None, snapshot="", lease_seconds=None, image=""):
        body = {}
        if width:
            body["width"] = int(width)
        if height:
            body["height"] = int(height)
        if snapshot:
            body["snapshot"] = snapshot
        if image:
            body["image"] = image
        if lease_seconds:
            body["lease_seconds"] = int(lease_seconds)
        wait = LEASE_WAIT
        for attempt in range(1, max(1, self.lease_attempts) + 1):
            try:
                return self._owned(self.request("POST", "/v1/desktops", body))
            except CapacityExhausted:
                if attempt >= self.lease_attempts:
                    raise
            time.sleep(wait + random.uniform(0, wait / 2))
            wait = min(2 * wait, LEASE_MAX_WAIT)

    def get(self, desktop_id):
        return self._desktop_call("GET", desktop_id)

    def list(self):
        return self.request("GET", "/v1/desktops")

    def renew(self, desktop_id, lease_seconds=None):
        body = {"lease_seconds": int(lease_seconds)} if lease_seconds else {}
        return self._desktop_call("POST", desktop_id, "/renew", body)

    def revert(self, desktop_id, snapshot=""):
        body = {"snapshot": snapshot} if snapshot else {}
        return self._desktop_call("POST", desktop_id, "/revert", body)

    def save_snapshot(self, desktop_id, name):
        return self._at(desktop_id).request("POST", "/v1/desktops/%s/snapshots" % urllib.parse.quote(desktop_id, safe=""),
                                            {"name": name})

    def takeover(self, desktop_id, enabled=True):
        """Turn the live view's takeover on (or off) for a leased desktop."""
        return self._desktop_call("POST", desktop_id, "/takeover", {"enabled": bool(enabled)})

    def release(self, desktop_id):
        r = self._at(desktop_id).request("DELETE", "/v1/desktops/" + urllib.parse.quote(desktop_id, safe=""))
        self._owners.pop(desktop_id, None)
        return r

    def snapshots(self):
        return self.request("GET", "/v1/snapshots")

    def delete_snapshot(self, name):
        return self.request("DELETE", "/v1/snapshots/" + urllib.parse.quote(name, safe=""))

    def health(self):
        return self.request("GET", "/v1/health")
