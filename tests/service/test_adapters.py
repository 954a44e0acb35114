"""The trainer adapters against a running kforge serve, called with each trainer's call shape and loaded
from the example configs (examples/service/). veRL and OpenRLHF are not installed here (they need vLLM /
DeepSpeed): the tests are doubles of their call shape. SkyRL's environment subclasses the real
skyrl_gym BaseTextEnv (skyrl-gym from PyPI, python/requirements/service.txt)."""

import pytest

from conftest import needs_service

needs_service()

import asyncio  # noqa: E402
import importlib.util  # noqa: E402
import os  # noqa: E402

import yaml  # noqa: E402

from conftest import PROBLEM, REPO, Server, headers, httpx  # noqa: E402

TOKEN = "tok-adapter"
SRC = (REPO / "tests" / "problems" / PROBLEM).read_text()
GOOD = "Here is my kernel:\n```python\n" + SRC + "\n\nclass ModelNew(Model):\n    pass\n```\n"
BAD = "```python\nimport os\nclass ModelNew:\n    def forward(self, x):\n        return os.environ\n```"


@pytest.fixture(scope="module")
def server(kforge_bin, tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("adapters") / "srv", ["--build-workers", "2"], {TOKEN: "trainer"})
    s.start()
    old = {k: os.environ.get(k) for k in ("KFORGE_SERVICE_URL", "KFORGE_SERVICE_TOKEN")}
    os.environ.update(KFORGE_SERVICE_URL=s.url, KFORGE_SERVICE_TOKEN=TOKEN)
    yield s
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    s.stop()


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, REPO / path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_verl_reward_function_from_the_example_config(server):
    cfg = yaml.safe_load((REPO / "examples" / "service" / "verl.yaml").read_text())
    fn = getattr(load(cfg["custom_reward_function"]["path"], "verl_reward"), cfg["custom_reward_function"]["name"])
    good = fn("kernelbench", GOOD, PROBLEM, extra_info={"index": 0})
    # No GPU: a clean ModelNew is not verified, so no reward beyond 0, and the result says predicted.
    assert good == {"score": 0.0, "predicted": True, "outcome": "unverified"}
    assert fn("kernelbench", BAD, PROBLEM)["score"] == -1.0  # forbidden by the static checks
    assert fn("kernelbench", "I could not do it.", PROBLEM)["score"] == -1.0


def test_verl_interaction_shape(server):
    from kforge.service.adapters.verl import KforgeInteraction
    cfg = yaml.safe_load((REPO / "examples" / "service" / "verl.yaml").read_text())["interaction"][0]
    it = KforgeInteraction(dict(cfg["config"], url=server.url, token=TOKEN))

    async def episode():
        iid = await it.start_interaction(None, ground_truth=PROBLEM)
        done, reply, score, meta = await it.generate_response(iid, [{"role": "assistant", "content": BAD}])
        assert not done and score == -1.0 and "forbidden" in reply
        done, reply, score, meta = await it.generate_response(iid, [{"role": "assistant", "content": GOOD}])
        assert score == 0.0 and meta["predicted"] is True and "unverified" in reply
        best = await it.calculate_score(iid)
        await it.finalize_interaction(iid)
        return best

    assert asyncio.run(episode()) == 0.0


def test_skyrl_env_skill_mode(server):
    from skyrl_gym.envs.base_text_env import BaseTextEnv
    from kforge.service.adapters.skyrl import KforgeEnv
    cfg = yaml.safe_load((REPO / "examples" / "service" / "skyrl.yaml").read_text())
    env_config = dict(cfg["environment"]["skyrl_gym"]["kforge"], url=server.url, token=TOKEN, max_turns=2)
    env = KforgeEnv(env_config, {"reward_spec": {"ground_truth": PROBLEM}})
    assert isinstance(env, BaseTextEnv)
    prompt, meta = env.init([{"role": "system", "content": "optimize"}])
    assert "legal actions" in prompt[-1]["content"]
    out = env.step("I pick 0")
    for _ in range(env.max_turns):
        if out["done"]:
            break
        assert out["reward"] == 0.0 and "legal actions" in out["observations"][0]["content"]
        out = env.step("0")
    assert out["done"] is True and out["metadata"]["predicted"] is True
    r = httpx.get(server.url + "/v1/sessions/%s/reward" % env.sid, headers=headers(TOKEN)).json()
    assert out["reward"] == r["reward"]  # the episode's reward, as the server has it
    env.close()


def test_openrlhf_reward_func_from_the_example_file(server):
    mod = load("examples/service/openrlhf_reward.py", "openrlhf_reward")
    prompts = ["Write ModelNew for relu_tanh.\n", "Again:\n"]
    out = mod.reward_func([prompts[0] + GOOD, prompts[1] + BAD], prompts, [PROBLEM, PROBLEM])
    assert out["rewards"].tolist() == [0.0, -1.0]
    assert out["extra_logs"]["kforge_predicted"].tolist() == [1.0, 1.0]  # no GPU: nothing measured
    step = asyncio.run(mod.step("obs", GOOD, PROBLEM))
    assert step["rewards"].tolist() == [0.0] and "unverified" in step["environment_feedback"]
