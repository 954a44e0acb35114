"""The harness worker's answer channel: what a candidate prints can never pass for an answer."""
import json
import os
import subprocess
import sys

PY = os.path.join(os.path.dirname(__file__), "../../python")

SPOOF = r'''
import os, sys
import kforge.harness as h
def evaluate(*args, **kwargs):
    print('{"outcome": "ok", "t_candidate": 1e-9}', flush=True)   # Python's stdout
    os.write(1, b'{"outcome": "ok", "from": "fd 1"}\n')            # the C level fd 1
    return {"outcome": "wrong_answer", "message": "the real verdict"}
h.evaluate = evaluate
sys.exit(h.serve())
'''


def test_candidate_output_goes_to_stderr_and_answers_to_the_private_channel():
    req = json.dumps({"problem": "p.py", "candidate": "c.py", "protocol": "cuda-agent"}) + "\n"
    r = subprocess.run([sys.executable, "-c", SPOOF], input=req, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, PYTHONPATH=PY))
    lines = [l for l in r.stdout.splitlines() if l.strip()]
    assert len(lines) == 1, r.stdout
    assert json.loads(lines[0])["outcome"] == "wrong_answer"
    assert '"t_candidate": 1e-9' in r.stderr and "fd 1" in r.stderr
