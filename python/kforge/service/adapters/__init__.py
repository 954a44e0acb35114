"""Adapters of kforge serve for RL trainers: veRL (reward function, multi-turn interaction), SkyRL (a
skyrl-gym text environment) and OpenRLHF (remote reward function, agent step). Each reads its server from
KFORGE_SERVICE_URL and KFORGE_SERVICE_TOKEN (or its config), and finds the ModelNew in the model's text."""

import os
import re

from kforge.service.client import Client

FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


def extract_model_new(text):
    """The last fenced code block that defines ModelNew (or the whole text when it is bare code); None if none."""
    blocks = [b for b in FENCE.findall(text or "") if "class ModelNew" in b]
    if blocks:
        return blocks[-1]
    return text if text and "class ModelNew" in text else None


def task_of(label):
    """A task spec from a trainer's label / ground truth: a dict as it is, a KernelBench path, or a problem's code."""
    if isinstance(label, dict):
        return label
    label = str(label)
    if "class Model" in label:
        return {"kind": "file", "code": label}
    return {"kind": "kernelbench", "problem": label}


def client_from(config=None):
    config = config or {}
    url = config.get("url") or os.environ.get("KFORGE_SERVICE_URL", "http://127.0.0.1:8765")
    token = config.get("token") or os.environ.get("KFORGE_SERVICE_TOKEN", "")
    return Client(url, token, timeout=float(config.get("timeout", 600)))


def score_submission(client, label, text, protocol="cuda-agent"):
    """(reward, info) of one LLM answer: a session for the label's task, its ModelNew submitted. No ModelNew is
    reward -1 (the paper's incorrect); a result without a measurement (no GPU) is 0.0, and info says predicted."""
    code = extract_model_new(text)
    if code is None:
        return -1.0, {"outcome": "no_model_new", "predicted": False}
    sid, _ = client.create_session(task_of(label), mode="llm", protocol=protocol)
    try:
        res = client.submit(sid, code)
    finally:
        client.close_session(sid)
    if res.get("status") != "ok":
        return -1.0, {"outcome": res.get("status"), "message": res.get("message"), "predicted": False}
    r = res.get("reward")
    return (float(r) if r is not None else 0.0), {"outcome": res["result"].get("outcome"),
                                                   "predicted": res.get("predicted"), "session": sid}
