"""SkyRL: a skyrl-gym text environment (BaseTextEnv: init(prompt), step(action) -> observations, reward,
done, metadata). The class subclasses skyrl_gym's BaseTextEnv when skyrl-gym is installed
(python/requirements/service.txt has it), so SkyRL's registry (`skyrl_gym.register`) takes it as it is.

Two modes: `llm` (each action is a ModelNew; the observation is the verdict) and `skill` (each action names
an action id of the observation's list: the agent steers kforge's skills)."""

import re

from kforge.service.adapters import client_from, extract_model_new, task_of

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError:  # a stand-in with the same shape where skyrl-gym is absent
    class BaseTextEnv:
        def __init__(self):
            self.turns, self.max_turns = 0, 1

    def BaseTextEnvStepOutput(**kw):
        return dict(kw)


def describe(obs):
    acts = "\n".join("%d: %s" % (a["id"], a["action"]) for a in obs.get("actions", []))
    last = (obs.get("last") or {}).get("result", {})
    return ("turn %s, last outcome %s, time %s s (%s); legal actions:\n%s" %
            (obs.get("turn"), last.get("outcome"), last.get("t_candidate"),
             "predicted" if not obs.get("measured") else "measured", acts))


class KforgeEnv(BaseTextEnv):
    def __init__(self, env_config=None, extras=None):
        super().__init__()
        env_config = env_config or {}
        extras = extras or {}
        self.mode = env_config.get("mode", "llm")
        self.max_turns = int(env_config.get("max_turns", 3))
        self.client = client_from(env_config)
        label = (extras.get("reward_spec") or {}).get("ground_truth") or extras.get("task")
        self.sid, self.first = self.client.create_session(task_of(label), mode=self.mode)
        self.best = -1.0

    def init(self, prompt):
        if self.mode == "skill":
            obs = self.first.get("observation", {})
            return prompt + [{"role": "user", "content": describe(obs)}], {"session": self.sid}
        return prompt, {"session": self.sid}

    def step(self, action):
        self.turns += 1
        if self.mode == "skill":
            m = re.findall(r"\d+", action or "")
            if not m:
                return BaseTextEnvStepOutput(observations=[{"role": "user", "content": "answer with an action id"}],
                                             reward=0.0, done=self.turns >= self.max_turns, metadata={})
            res = self.client.step(self.sid, int(m[-1]))
            if res.get("status") != "ok":
                return BaseTextEnvStepOutput(observations=[{"role": "user", "content": res.get("message", "")}],
                                             reward=0.0, done=self.turns >= self.max_turns, metadata={})
            obs = res["observation"]
            done = bool(obs.get("done")) or self.turns >= self.max_turns
            reward = float(obs.get("episode_reward", -1)) if done else 0.0
            return BaseTextEnvStepOutput(observations=[] if done else [{"role": "user", "content": describe(obs)}],
                                         reward=reward, done=done,
                                         metadata={"predicted": not obs.get("measured"), "session": self.sid})
        code = extract_model_new(action)
        if code is None:
            reward, text, meta = -1.0, "No ModelNew found: answer with a ```python block defining class ModelNew.", {}
        else:
            res = self.client.submit(self.sid, code)
            r = res.get("reward")
            reward = float(r) if r is not None else 0.0
            verdict = res.get("result", {})
            text = "outcome: %s. %s" % (verdict.get("outcome", res.get("status")), verdict.get("message") or "")
            meta = {"predicted": res.get("predicted"), "session": self.sid}
        self.best = max(self.best, reward)
        done = self.turns >= self.max_turns or reward >= 3
        return BaseTextEnvStepOutput(observations=[] if done else [{"role": "user", "content": text}],
                                     reward=reward, done=done, metadata=meta)

    def close(self):
        self.client.close_session(self.sid)
        self.client.close()
