"""veRL: a custom reward function (config `custom_reward_function.path/name`, called as
compute_score(data_source, solution_str, ground_truth, extra_info)) and a multi-turn interaction with
veRL's BaseInteraction call shape (start_interaction, generate_response, calculate_score,
finalize_interaction). veRL itself is not installed here (it needs vLLM or SGLang); tests call these with
its call shape (tests/service/test_adapters.py)."""

import asyncio
import uuid

from kforge.service.adapters import client_from, extract_model_new, score_submission, task_of

_CLIENT = None


def _client(config=None):
    global _CLIENT
    if _CLIENT is None or config:
        _CLIENT = client_from(config)
    return _CLIENT


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """veRL's reward-function signature: a float (the paper's milestone reward, -1..3)."""
    reward, info = score_submission(_client(kwargs.get("service")), ground_truth, solution_str)
    return {"score": reward, "predicted": bool(info.get("predicted")), "outcome": info.get("outcome") or ""}


class KforgeInteraction:
    """veRL BaseInteraction's shape: each turn, the model's last message is submitted as a ModelNew; the reply
    is the evaluation's verdict (compiler / checker / timing) for the next turn."""

    def __init__(self, config):
        self.config = config
        self.max_turns = int(config.get("max_turns", 3))
        self.sessions = {}

    async def start_interaction(self, instance_id=None, ground_truth=None, **kwargs):
        instance_id = instance_id or uuid.uuid4().hex
        sid, _ = await asyncio.to_thread(_client(self.config).create_session, task_of(ground_truth), "llm")
        self.sessions[instance_id] = {"session": sid, "turns": 0, "best": -1.0}
        return instance_id

    async def generate_response(self, instance_id, messages, **kwargs):
        st = self.sessions[instance_id]
        st["turns"] += 1
        last = next((m["content"] for m in reversed(messages) if m.get("role") == "assistant"), "")
        code = extract_model_new(last)
        if code is None:
            return st["turns"] >= self.max_turns, "No ModelNew found: answer with a ```python block defining " \
                                                  "class ModelNew.", -1.0, {}
        res = await asyncio.to_thread(_client(self.config).submit, st["session"], code)
        r = res.get("reward")
        score = float(r) if r is not None else 0.0
        st["best"] = max(st["best"], score)
        verdict = res.get("result", {})
        text = "outcome: %s. %s" % (verdict.get("outcome", res.get("status")), verdict.get("message") or res.get("note") or "")
        done = st["turns"] >= self.max_turns or score >= 3
        return done, text, score, {"predicted": res.get("predicted")}

    async def calculate_score(self, instance_id, **kwargs):
        return self.sessions[instance_id]["best"]

    async def finalize_interaction(self, instance_id, **kwargs):
        st = self.sessions.pop(instance_id, None)
        if st:
            await asyncio.to_thread(_client(self.config).close_session, st["session"])
