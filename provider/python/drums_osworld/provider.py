"""DrumsProvider and DrumsVMManager: OSWorld's Provider and VMManager over the
drums daemon.

A path (OSWorld's path_to_vm) is either a lease request, "drums:WIDTHxHEIGHT",
which get_vm_path returns and start_emulator turns into a leased desktop, or a
desktop id as the daemon issued it. revert_to_snapshot returns the new desktop
id when the daemon swapped in another desktop, and DesktopEnv uses that path
from then on.

Snapshots hold files only: save_state freezes the desktop's written files; a
desktop reverted to the snapshot starts a fresh desktop stack (no running
applications) over them.
"""

import os
import threading

from .daemon import Daemon, NotFound

# OSWorld's default ports inside a guest: every drums desktop has its own
# network namespace, so Chromium's debugging port and VLC's HTTP port are
# the guest's own, as in a VM. 8006 is the live view, as on OSWorld's docker
# provider: guestd serves noVNC's page there (view-only).
CHROMIUM_PORT = 9222
VNC_PORT = 8006
VLC_PORT = 8080

# OSWorld's default snapshot name. Unless a drums snapshot of that name was
# saved, it means a clean desktop.
DEFAULT_SNAPSHOT = "init_state"

PATH_PREFIX = "drums:"


def _env_int(name, default):
    v = os.environ.get(name, "")
    try:
        return int(v) if v else default
    except ValueError:
        raise ValueError("%s=%r: want an integer" % (name, v)) from None


def lease_path(width, height):
    """The path that asks start_emulator for a WIDTHxHEIGHT desktop."""
    return "%s%dx%d" % (PATH_PREFIX, int(width), int(height))


def _parse_lease_path(path):
    spec = path[len(PATH_PREFIX):]
    w, sep, h = spec.partition("x")
    try:
        if not sep:
            raise ValueError
        return int(w), int(h)
    except ValueError:
        raise ValueError("path %r: want %sWIDTHxHEIGHT or a drums desktop id" % (path, PATH_PREFIX)) from None


def _check_os(os_type):
    if os_type and str(os_type).lower() not in ("ubuntu", "linux"):
        raise ValueError("drums provides Linux desktops only; os_type=%r is not supported" % (os_type,))


class DrumsVMManager:
    """The VM registry of DesktopEnv: drums leases desktops on demand, so
    there is nothing to register; get_vm_path returns a lease request."""

    checked_and_cleaned = False

    def __init__(self, options=None):
        self.options = dict(options or {})

    def initialize_registry(self, *args, **kwargs):
        pass

    def add_vm(self, vm_path, *args, **kwargs):
        pass

    def delete_vm(self, vm_path, *args, **kwargs):
        pass

    def occupy_vm(self, vm_path, pid, *args, **kwargs):
        pass

    def list_free_vms(self, *args, **kwargs):
        return []

    def check_and_clean(self, *args, **kwargs):
        pass

    def get_vm_path(self, os_type=None, region=None, screen_size=None, **kwargs):
        _check_os(os_type or self.options.get("os_type"))
        size = screen_size or self.options.get("screen_size") or (1920, 1080)
        return lease_path(size[0], size[1])


class DrumsProvider:
    """OSWorld's Provider over the drums daemon: start_emulator leases a ready
    desktop, get_ip_address gives its address and ports, revert_to_snapshot
    reverts it, save_state saves its files as a snapshot and stop_emulator
    releases it. While it holds a desktop, a background thread renews the
    lease, so a process that dies stops renewing and the daemon takes the
    desktop back when the lease runs out."""

    # CUA's DesktopEnv forwards a proxy into docker containers when it sees a
    # container; drums has none.
    container = None

    def __init__(self, region=None, options=None, daemon=None):
        self.region = region
        self.options = dict(options or {})
        self.daemon = daemon or Daemon()
        self.lease_seconds = _env_int("DRUMS_LEASE_SECONDS", 600)
        self.image = os.environ.get("DRUMS_IMAGE", "")
        self._lock = threading.Lock()
        self._held = {}  # path -> desktop (the daemon's JSON object)
        self._stop_renew = None

    # -- helpers

    def _snapshot_for(self, name):
        """The daemon snapshot a DesktopEnv snapshot name means: a saved
        snapshot of that name, else a clean desktop for OSWorld's default."""
        if not name:
            return ""
        if name == DEFAULT_SNAPSHOT:
            names = {s["name"] for s in self.daemon.snapshots() or []}
            return name if name in names else ""
        return name

    def _size_for(self, path):
        if path.startswith(PATH_PREFIX):
            return _parse_lease_path(path)
        size = self.options.get("screen_size") or (1920, 1080)
        return int(size[0]), int(size[1])

    def _lease(self, path):
        w, h = self._size_for(path)
        snap = self._snapshot_for(self.options.get("snapshot_name", DEFAULT_SNAPSHOT))
        return self.daemon.lease(width=w, height=h, snapshot=snap,
                                 lease_seconds=self.lease_seconds, image=self.image)

    def _hold(self, path, desktop):
        with self._lock:
            self._held[path] = desktop
            if self._stop_renew is None:
                self._stop_renew = threading.Event()
                t = threading.Thread(target=self._renew_loop, args=(self._stop_renew,),
                                     name="drums-lease-renewal", daemon=True)
                t.start()

    def _desktop(self, path):
        with self._lock:
            d = self._held.get(path)
        if d is None:
            raise RuntimeError("drums: no desktop for path %r; call start_emulator first" % (path,))
        return d

    def _renew_loop(self, stop):
        # Renew at a third of the lease, so two renewals can fail (a busy
        # daemon) before the lease runs out.
        interval = max(self.lease_seconds / 3.0, 1.0)
        while not stop.wait(interval):
            with self._lock:
                ids = [d["id"] for d in self._held.values()]
            for desktop_id in ids:
                try:
                    self.daemon.renew(desktop_id, self.lease_seconds)
                except Exception:  # noqa: BLE001 - next round retries; stop_emulator ends it
                    pass

    # -- OSWorld's Provider interface

    def start_emulator(self, path_to_vm, headless=True, os_type="Ubuntu", *args, **kwargs):
        """Leases a ready desktop for path_to_vm (returns once its guest
        answers), or checks that the one already held is still leased."""
        _check_os(os_type)
        with self._lock:
            held = self._held.get(path_to_vm)
        if held is not None:
            try:
                d = self.daemon.get(held["id"])
                if d.get("state") == "leased":
                    self._hold(path_to_vm, d)
                    return
            except NotFound:
                pass
            with self._lock:
                self._held.pop(path_to_vm, None)
        if not path_to_vm.startswith(PATH_PREFIX):
            # A desktop id: one leased elsewhere (the drums CLI) or one this
            # provider lost; take it over if the daemon still has it leased.
            try:
                d = self.daemon.get(path_to_vm)
                if d.get("state") == "leased":
                    self._hold(path_to_vm, d)
                    return
            except NotFound:
                pass
        self._hold(path_to_vm, self._lease(path_to_vm))

    def get_ip_address(self, path_to_vm):
        """ADDRESS:SERVER:CHROMIUM:VNC:VLC, the five-field form DesktopEnv
        parses (a bare address would also do while guestd is on 5000). A
        daemon that publishes desktops on its node's address (drums serve
        --publish-address, as on Kubernetes) reports the node's address and
        a port of the desktop's own for each."""
        d = self._desktop(path_to_vm)
        p = d.get("ports")
        if p:
            return "%s:%d:%d:%d:%d" % (d["address"], p["guest"], p["chromium"], p["vnc"], p["vlc"])
        return "%s:%d:%d:%d:%d" % (d["address"], d["guest_port"], CHROMIUM_PORT, VNC_PORT, VLC_PORT)

    def save_state(self, path_to_vm, snapshot_name):
        """Saves the desktop's files as the named snapshot (replacing one of
        that name). Running processes are not saved."""
        d = self._desktop(path_to_vm)
        return self.daemon.save_snapshot(d["id"], snapshot_name or DEFAULT_SNAPSHOT)

    def revert_to_snapshot(self, path_to_vm, snapshot_name):
        """Reverts to a clean desktop, or to a saved snapshot of that name.
        Returns the new path (the new desktop id) when the daemon handed out
        another desktop, else None."""
        snap = self._snapshot_for(snapshot_name)
        with self._lock:
            held = self._held.get(path_to_vm)
        if held is None:
            self.options["snapshot_name"] = snapshot_name
            d = self._lease(path_to_vm)
        else:
            try:
                d = self.daemon.revert(held["id"], snap)
            except NotFound:
                if snap and not any(s["name"] == snap for s in self.daemon.snapshots() or []):
                    raise
                # The lease ran out (or the daemon lost it): a new desktop.
                self.options["snapshot_name"] = snapshot_name
                d = self._lease(path_to_vm)
        with self._lock:
            self._held.pop(path_to_vm, None)
        if held is not None and d["id"] == held["id"]:
            self._hold(path_to_vm, d)
            return None
        self._hold(d["id"], d)
        return d["id"]

    def stop_emulator(self, path_to_vm, region=None, *args, **kwargs):
        """Releases the desktop; releasing one already gone is fine."""
        with self._lock:
            d = self._held.pop(path_to_vm, None)
            if not self._held and self._stop_renew is not None:
                self._stop_renew.set()
                self._stop_renew = None
        if d is not None:
            self.daemon.release(d["id"])
