# drums tasks run --via-python: one worker process holding one OSWorld
# DesktopEnv(provider_name="drums"). It reads task requests as JSON lines on
# stdin and answers one JSON line per task on the stdout it was started
# with; OSWorld's own printing goes to stderr (the worker's log).
#
#   drums (Go)                                   this worker
#     | argv[1]: {"cache_dir", "width", "height"}   |
#     | <--- {"ready": true} or {"fatal": "..."}    |
#     | {"path", "settle"} ------------------------> | reset(task) = setup
#     |                                              | _get_obs()
#     | <--- {"setup_ok", "score", ...}             | evaluate() before acting
#     |    (with "solution": [actions]: env.step of  | each action, evaluate()
#     |     each, then "score_after")                | again
#     | {"metric": {"func", "result", ...}} -------> | metrics.<func>(...)
#     | <--- {"metric_score"} or {"metric_raised"}   |
#     | stdin closed -----------------------------> | env.close()
#
# With "metrics_only" in argv[1] the worker holds no DesktopEnv and answers
# only metric calls: drums' native runner asks it for OSWorld's score of
# each metric over drums' own getters' values.
import json
import os
import re
import sys
import time
import traceback

_answers = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr


def reply(obj):
    _answers.write(json.dumps(obj) + "\n")
    _answers.flush()


def describe(exc):
    return "%s: %s" % (type(exc).__name__, exc)


def metric_call(m):
    """desktop_env.evaluators.metrics.<func>(result[, expected], **options),
    as DesktopEnv.evaluate calls a metric."""
    from desktop_env.evaluators import metrics

    try:
        func = getattr(metrics, m["func"])
        args = [m["result"]] + ([m["expected"]] if "expected" in m else [])
        return {"metric_score": float(func(*args, **(m.get("options") or {})))}
    except BaseException as exc:
        return {"metric_raised": describe(exc)}


def click_code(tree, click):
    """The pyautogui code of a click on the centre of the element a
    solution's click names (drums' ClickCode in tasks/osworld/element.go
    does the same for the native runner): the first element, in document
    order, with tag click["role"] and name attribute click["name"], inside
    the application named click["app"] when given, that is on the screen
    (a position and a positive size in the tree)."""
    import xml.etree.ElementTree as ET

    role, name, app = click["role"], click.get("name", ""), click.get("app")
    root = ET.fromstring(tree)
    scopes, where = [root], "the accessibility tree"
    if app:
        where = "application %s" % json.dumps(app)
        scopes = [a for a in root.iter("application") if a.get("name", "") == app]
        if not scopes:
            raise ValueError("no %s in the accessibility tree" % where)
    found = [el for s in scopes for el in s.iter(role) if el.get("name", "") == name]
    if not found:
        raise ValueError("no %s named %s in %s" % (role, json.dumps(name), where))
    first = None
    for el in found:
        try:
            x, y, w, h = extents(el)
        except ValueError as exc:
            first = first or exc
            continue
        return "import pyautogui; pyautogui.click(%d, %d, clicks=%d, button=%s)" % (
            x + w // 2, y + h // 2, click.get("clicks") or 1, json.dumps(click.get("button") or "left"))
    raise ValueError("%s %s: none of %d in %s is on the screen, the first %s" % (role, json.dumps(name), len(found), where, first))


# COORD_PAIR reads cp:screencoord and cp:size, "(x, y)".
COORD_PAIR = re.compile(r"\((-?\d+), (-?\d+)\)")


def extents(el):
    """x, y, width and height of el from cp:screencoord and cp:size,
    whichever component URI the tree binds cp to; ValueError when it has
    none, or no size."""
    cp = {k.rpartition("}")[2]: v for k, v in el.attrib.items() if k.startswith("{") and "component" in k.partition("}")[0]}
    pos, size = COORD_PAIR.match(cp.get("screencoord", "")), COORD_PAIR.match(cp.get("size", ""))
    if not pos:
        raise ValueError("has no screen position (cp:screencoord %s)" % json.dumps(cp.get("screencoord", "")))
    if not size:
        raise ValueError("has no size (cp:size %s)" % json.dumps(cp.get("size", "")))
    x, y, w, h = (int(v) for v in pos.groups() + size.groups())
    if w <= 0 or h <= 0:
        raise ValueError("has size %dx%d" % (w, h))
    return x, y, w, h


def solve(env, actions):
    """Sends a solution's actions as an agent would: env.step of pyautogui
    code or WAIT/DONE/FAIL; a click on an accessibility element becomes a
    click at its centre in the tree observed just before it; a setup-style
    step runs through the setup controller."""
    for i, a in enumerate(actions):
        try:
            if isinstance(a, dict) and "click" in a:
                a = click_code(env.controller.get_accessibility_tree(), a["click"])
            if isinstance(a, dict):
                env.setup_controller.setup([a])
            else:
                env.step(a)
        except BaseException as exc:
            raise RuntimeError("action %d: %s" % (i + 1, describe(exc))) from exc


def main():
    cfg = json.loads(sys.argv[1])
    env = None
    try:
        if cfg.get("metrics_only"):
            from desktop_env.evaluators import metrics  # noqa: F401 - import errors are fatal
        else:
            env = start_env(cfg)
    except BaseException as exc:  # report anything, even SystemExit
        reply({"fatal": describe(exc), "trace": traceback.format_exc()[-3000:]})
        return 1
    reply({"ready": True})
    try:
        for line in sys.stdin:
            req = json.loads(line)
            if "metric" in req:
                reply(metric_call(req["metric"]))
                continue
            res = {}
            start = time.time()
            try:
                with open(req["path"]) as f:
                    task = json.load(f)
                try:
                    env.reset(task_config=task)
                    res["setup_ok"] = True
                except BaseException as exc:
                    res["setup_ok"] = False
                    res["setup_error"] = describe(exc)
                if res["setup_ok"]:
                    time.sleep(req.get("settle", 0))
                    try:
                        obs = env._get_obs()
                        res["screenshot_bytes"] = len(obs.get("screenshot") or b"")
                        res["a11y_bytes"] = len(obs.get("accessibility_tree") or "")
                    except BaseException as exc:
                        res["obs_error"] = describe(exc)
                    try:
                        res["score"] = float(env.evaluate())
                        details = getattr(env, "last_eval_details", None)
                        if details:
                            res["details"] = json.loads(json.dumps(details, default=str))
                    except BaseException as exc:
                        res["eval_error"] = describe(exc)
                    if req.get("solution"):
                        try:
                            if (task.get("evaluator") or {}).get("postconfig"):
                                # evaluate() ran the postconfig (a save, an
                                # application restarted): the agent starts
                                # from a desktop reset and set up again.
                                env.is_environment_used = True
                                env.reset(task_config=task)
                                time.sleep(req.get("settle", 0))
                            solve(env, req["solution"])
                            try:
                                res["score_after"] = float(env.evaluate())
                            except BaseException as exc:
                                res["after_error"] = describe(exc)
                        except BaseException as exc:
                            res["solution_error"] = describe(exc)
            except BaseException as exc:
                res["error"] = describe(exc)
                res["trace"] = traceback.format_exc()[-3000:]
            # The next task starts from a clean desktop whatever happened.
            env.is_environment_used = True
            res["seconds"] = time.time() - start
            reply(res)
    finally:
        if env is not None:
            env.close()
    return 0


def start_env(cfg):
    import drums_osworld  # noqa: F401 - registers provider_name="drums"
    from desktop_env.desktop_env import DesktopEnv

    return DesktopEnv(
        provider_name="drums",
        action_space="pyautogui",
        cache_dir=cfg["cache_dir"],
        screen_size=(cfg["width"], cfg["height"]),
        require_a11y_tree=True,
        os_type="Ubuntu",
    )


if __name__ == "__main__":
    sys.exit(main())
