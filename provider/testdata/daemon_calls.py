"""Calls drums_osworld's Daemon for provider/openapi_test.go, which checks
each request it sends against provider/openapi.json.

First line out: Daemon's public methods and the exception class of each
error code daemon.py branches on. Then one call a line in, JSON
{"method", "kwargs", "token"?}, and one answer a line out, {"result"} or
{"error": {"class", "status", "code", "message"}}. The daemon's address and
token come from DRUMS_URL and DRUMS_TOKEN, as Daemon reads them; "token"
overrides the token.
"""

import inspect
import json
import sys

from drums_osworld import daemon


def main():
    methods = sorted(n for n, _ in inspect.getmembers(daemon.Daemon, inspect.isfunction) if not n.startswith("_"))
    codes = {code: cls.__name__ for code, cls in daemon._BY_CODE.items()}
    print(json.dumps({"methods": methods, "codes": codes}), flush=True)
    for line in sys.stdin:
        call = json.loads(line)
        d = daemon.Daemon(token=call.get("token"))
        try:
            out = {"result": getattr(d, call["method"])(**call["kwargs"])}
        except daemon.DaemonError as e:
            out = {"error": {"class": type(e).__name__, "status": e.status, "code": e.code, "message": e.message}}
        print(json.dumps(out), flush=True)


main()
