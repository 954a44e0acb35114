"""FOR TESTS ONLY: a scripted stand-in for the GPU harness, so that the loop's logic, records, filters
and rewards can be checked end to end on a machine without a GPU. It replaces only the last step of
verify/profile (`kforge evaluate` on the GPU); the hash check and kforge's static checks run for real
before it. Every result it makes carries `scripted_harness: true`, and so do the header and the best
candidate of the trajectory; `kforge agent --test-harness-script` is the only way to turn it on.

The script is JSON: {"rules": [{"contains": TEXT, "verify": RESULT, "profile": RESULT}, ...],
"default": RESULT}: the first rule whose TEXT occurs in model_new.py answers."""
import json

from .rewards import milestone_reward_of_times


class ScriptedHarness:
    scripted = True

    def __init__(self, path):
        with open(path) as f:
            self.script = json.load(f)

    def evaluate(self, ws, profile):
        src = open(ws.model_new_py).read()
        chosen = self.script.get("default", {"outcome": "wrong_answer", "message": "scripted: no rule matched"})
        for rule in self.script.get("rules", []):
            if rule["contains"] in src:
                chosen = rule.get("profile" if profile else "verify") or rule.get("verify") or chosen
                break
        r = dict(chosen)
        r.setdefault("verified", r.get("outcome") != "compile_error")
        if not profile:
            for k in ("t_candidate", "t_eager", "t_compile"):
                r.pop(k, None)
        r["reward"] = milestone_reward_of_times(r) if r.get("outcome") == "ok" else -1
        r["device"] = "scripted (tests only)"
        return r
