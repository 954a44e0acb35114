"""OpenRLHF: a remote reward function (`--remote_rm_url reward.py`: reward_func(queries, prompts, labels)
returning {"rewards", "scores", "extra_logs"}) and an agent function (`--agent_func_path`: async
step(observation, action, label, **kwargs)). OpenRLHF is not installed here (it needs DeepSpeed and vLLM);
tests call these with its call shape. torch tensors are returned where torch is importable, as OpenRLHF
expects."""

from kforge.service.adapters import client_from, extract_model_new, score_submission

_CLIENT = None


def _client():
    global _CLIENT
    if _CLIENT is None:
        _CLIENT = client_from()
    return _CLIENT


def _tensor(values):
    try:
        import torch
        return torch.tensor(values, dtype=torch.float32)
    except ImportError:  # pragma: no cover
        return values


def reward_func(queries, prompts, labels, **kwargs):
    rewards, predicted = [], []
    for query, prompt, label in zip(queries, prompts, labels):
        answer = query[len(prompt):] if query.startswith(prompt) else query
        r, info = score_submission(_client(), label, answer)
        rewards.append(r)
        predicted.append(1.0 if info.get("predicted") else 0.0)
    t = _tensor(rewards)
    return {"rewards": t, "scores": t, "extra_logs": {"kforge_predicted": _tensor(predicted)}}


async def step(observation, action, label, **kwargs):
    """One turn of OpenRLHF's agent function: the action (the model's answer) is evaluated; the feedback is
    the verdict, done when the candidate earns the top reward."""
    import asyncio
    r, info = await asyncio.to_thread(score_submission, _client(), label, action)
    feedback = "\n\nkforge: outcome %s, reward %s%s\n" % (info.get("outcome"), r,
                                                          " (predicted: no GPU)" if info.get("predicted") else "")
    return {"rewards": _tensor([r]), "scores": _tensor([r]), "environment_feedback": feedback,
            "done": r >= 3 or extract_model_new(action) is None, "sampling_params": kwargs.get("sampling_params"),
            "extra_logs": {"kforge_predicted": _tensor([1.0 if info.get("predicted") else 0.0])}}
