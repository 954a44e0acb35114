"""Load on a running kforge serve: N concurrent sessions, each reset, one step and one evaluate, through the
client (idempotency keys, 429 and reconnects retried). Prints throughput and p50/p99 of the step and
evaluate calls. On the GPU machine: python -m kforge.service.loadtest --url URL --token T --sessions 64.

`events` (a dict of callables keyed by the count of finished sessions) lets a test kill a worker or the
server while the load runs."""

import argparse
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from kforge.service.client import Client


def percentile(values, q):
    v = sorted(values)
    if not v:
        return None
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def run(url, token, sessions=64, problem="relu_tanh.py", action=0, events=None, timeout=900, evaluate=True):
    """Each session: create (its reset is an evaluation), step `action` (an evaluation), and, with `evaluate`,
    evaluate (a fresh evaluation of the current schedule). Returns (figures, results by session, errors)."""
    events = dict(events or {})
    lat = {"create": [], "step": [], "evaluate": []}
    done, errors, results = [0], [], {}
    lock = threading.Lock()
    stats = {"retries_429": 0, "retries_connection": 0}

    def one(i):
        c = Client(url, token, timeout=timeout, retry_for=timeout)
        try:
            t0 = time.time()
            sid, first = c.create_session({"kind": "kernelbench", "problem": problem})
            t1 = time.time()
            stepped = c.step(sid, action)
            t2 = time.time()
            evaluated = c.evaluate(sid) if evaluate else None
            t3 = time.time()
            with lock:
                lat["create"].append(t1 - t0)
                lat["step"].append(t2 - t1)
                if evaluate:
                    lat["evaluate"].append(t3 - t2)
                results[sid] = {"first": first, "step": stepped, "evaluate": evaluated}
        except Exception as e:  # recorded: the test asserts there are none
            with lock:
                errors.append("%s: %s" % (type(e).__name__, e))
        finally:
            with lock:
                for k in stats:
                    stats[k] += c.stats[k]
                done[0] += 1
                fire = events.pop(done[0], None)
            c.close()
            if fire:
                fire()

    start = time.time()
    with ThreadPoolExecutor(max_workers=sessions) as ex:
        list(ex.map(one, range(sessions)))
    wall = time.time() - start
    figures = {"sessions": sessions, "wall_s": round(wall, 2), "errors": len(errors),
               "sessions_per_s": round(sessions / wall, 3),
               "evaluations_per_s": round((3 if evaluate else 2) * (sessions - len(errors)) / wall, 3), **stats}
    for k, v in lat.items():
        if not v:
            continue
        figures["%s_p50_s" % k] = round(percentile(v, 0.5) or 0, 3)
        figures["%s_p99_s" % k] = round(percentile(v, 0.99) or 0, 3)
    return figures, results, errors


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m kforge.service.loadtest")
    ap.add_argument("--url", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--problem", default="relu_tanh.py")
    ap.add_argument("--no-evaluate", action="store_true", help="create and step only")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args(argv)
    figures, _, errors = run(a.url, a.token, a.sessions, a.problem, evaluate=not a.no_evaluate)
    print(json.dumps(figures, indent=1))
    for e in errors[:10]:
        print("error:", e, file=sys.stderr)
    if a.json:
        open(a.json, "w").write(json.dumps(figures, indent=1) + "\n")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
