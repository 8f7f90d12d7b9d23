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


def element_centre(tree, role, name):
    """The centre of the first element with tag role and name attribute
    name in the accessibility tree, and its height (drums' tasks/element.go
    does the same for the native runner)."""
    import lxml.etree

    for el in lxml.etree.fromstring(tree.encode()).iter(role):
        if el.get("name") != name:
            continue
        # cp:screencoord and cp:size, whichever component URI the tree
        # binds cp to.
        cp = {lxml.etree.QName(k).localname: v for k, v in el.attrib.items() if "component" in (lxml.etree.QName(k).namespace or "")}
        x, y = (int(v) for v in cp.get("screencoord", "").strip("()").split(","))
        w, h = (int(v) for v in cp.get("size", "").strip("()").split(","))
        if w <= 0 or h <= 0:
            raise ValueError("%s %r is not on the screen" % (role, name))
        return x + w // 2, y + h // 2, h
    raise ValueError("no %s named %r in the accessibility tree" % (role, name))


def solve(env, actions):
    """Sends a solution's actions as an agent would: env.step of pyautogui
    code or WAIT/DONE/FAIL; a click on an accessibility element becomes a
    click at its centre in the tree observed just before it; a setup-style
    step runs through the setup controller."""
    for i, a in enumerate(actions):
        try:
            if isinstance(a, dict) and "click" in a:
                c = a["click"]
                x, y, h = element_centre(env.controller.get_accessibility_tree(), c["role"], c.get("name", ""))
                if c.get("above"):
                    y -= h // 2 + c["above"]
                a = "import pyautogui; pyautogui.click(%d, %d, clicks=%d, button=%r)" % (
                    x, y, c.get("clicks") or 1, c.get("button") or "left")
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
