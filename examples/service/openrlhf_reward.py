"""OpenRLHF remote reward / agent function for kforge serve:
    --remote_rm_url examples/service/openrlhf_reward.py        (reward_func: one reward per sample)
    --agent_func_path examples/service/openrlhf_reward.py      (step: multi-turn, kforge's verdict as feedback)
with KFORGE_SERVICE_URL and KFORGE_SERVICE_TOKEN in the environment; each sample's label names the task."""

from kforge.service.adapters.openrlhf import reward_func, step  # noqa: F401
