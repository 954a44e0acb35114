"""Converted trajectories load with the trainers' own data loaders (issue #23; ctest llm_loader_verl and
llm_loader_openrlhf, label llm). Each test skips when its trainer is not installed: neither is a kforge
requirement (docs/agent-llm.md says what installs and how).

The trajectories are real: kforge agent's loop (`python -m kforge.llm_agent`, what `kforge agent` execs)
runs against the scripted OpenAI-protocol server with the real file tools (no GPU and no kforge binary
needed), the records are checked against the schema, and `kforge agent convert` writes what the trainers
read. No model can be fetched here, so the tokenizer is built on the spot: a byte-level BPE trained on the
converted text, with a ChatML chat template that writes tools and tool calls as Qwen3's does (a tool call's
arguments string as it is, an object as JSON). The assertions are on what the loaders produce: one
sample per episode, exactly the assistant turns (their text and tool calls, byte for byte) under the loss
mask, and the system, user and tool messages in the input but outside the loss."""
import json
import os
import subprocess
import sys
import tempfile
from types import SimpleNamespace

import pytest

from conftest import GOOD_CU, REPO, RELU, Server, call, turn

sys.path.insert(0, str(REPO / "python"))
from kforge.llm_agent import tools as agent_tools  # noqa: E402

# HF datasets (OpenRLHF reads JSON lines through it) caches what it loads: not in the user's home.
os.environ.setdefault("HF_DATASETS_CACHE", os.path.join(tempfile.gettempdir(), "kforge-tests-hf-datasets"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SCHEMA = json.loads((REPO / "python/kforge/llm_agent/trajectory.schema.json").read_text())

# Two episodes: one the model ends with an answer; one cut by the turn budget, so that it ends on tool
# messages. Several calls in one turn, a message with both text and calls, and a malformed call.
EPISODES = {
    "answered": ([turn(call("read", path="SKILL.md"), content="Reading the rules first."),
                  turn(call("write", path="kernels/relu.cu", content=GOOD_CU),
                       call("grep", pattern="relu_kernel", files="kernels/*.cu")),
                  turn(call("edit", path="kernels/relu.cu", old_string="// a ReLU kernel",
                            new_string="// ReLU: y = max(x, 0)")),
                  turn(call("glob", pattern="kernels/*.cu", path="kernels")),  # unknown argument: invalid
                  {"content": "Done: the ReLU kernel is in kernels/relu.cu."}], []),
    "turn_budget": ([turn(call("glob", pattern="*.py"), content="Looking around."),
                     turn(call("read", path="model.py", offset=1, limit=5), call("glob", pattern="kernels/*"))],
                    ["--max-turns", "2"]),
}

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# ChatML, tools in the system turn, tool calls as Qwen3 writes them. No whitespace control: trim_blocks
# (on in transformers) would eat a newline after a block tag, hence the {{ '\n' }}.
CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n{% if messages[0].role == 'system' %}{{ messages[0].content }}\n\n{% endif %}"
    "# Tools\n<tools>{% for tool in tools %}{{ '\\n' }}{{ tool | tojson }}{% endfor %}{{ '\\n' }}</tools><|im_end|>\n"
    "{% elif messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n{% endif %}"
    "{% for message in messages %}"
    "{% if message.role == 'system' %}"
    "{% if not loop.first %}<|im_start|>system\n{{ message.content }}<|im_end|>\n{% endif %}"
    "{% elif message.role == 'assistant' %}<|im_start|>assistant\n{{ message.content }}"
    "{% for tc in message.tool_calls or [] %}<tool_call>{\"name\": \"{{ tc.function.name }}\", \"arguments\": "
    "{% if tc.function.arguments is string %}{{ tc.function.arguments }}{% else %}{{ tc.function.arguments | tojson }}"
    "{% endif %}}</tool_call>{% endfor %}<|im_end|>\n"
    "{% else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def tiny_tokenizer(texts):
    """A byte-level BPE (any text round-trips exactly) trained on `texts`, as a transformers tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=600, special_tokens=SPECIAL_TOKENS,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                       show_progress=False))
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=CHAT_TEMPLATE, clean_up_tokenization_spaces=False)


def arguments_text(tc):
    a = tc["function"]["arguments"]  # the JSON text the model wrote; an object as the template writes it
    return a if isinstance(a, str) else json.dumps(a, ensure_ascii=False)


def assistant_text(m):
    """What the template writes for an assistant message after '<|im_start|>assistant\\n': the tokens a
    trainer must train on."""
    calls = "".join('<tool_call>{"name": "%s", "arguments": %s}</tool_call>' % (tc["function"]["name"],
                                                                              arguments_text(tc))
                    for tc in m.get("tool_calls") or [])
    return (m["content"] or "") + calls + "<|im_end|>"


def run_episode(tmp, name, steps, extra):
    out = tmp / name
    with Server(tmp, {"steps": steps}, name=name) as s:
        env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
        p = subprocess.run([sys.executable, "-m", "kforge.llm_agent", str(RELU), "--llm", s.url, "--model",
                            "scripted-model", "--out", str(out), "--request-timeout", "5", "--backoff", "0.01",
                            "--device", "cpu", "--no-bwrap"] + extra,
                           capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return out / "trajectory.jsonl"


_CONVERTED = {}


@pytest.fixture
def converted(tmp_path_factory):
    """Once per session, on first use (a test skips before asking for it: running the agent costs seconds)."""
    def get():
        if "data" not in _CONVERTED:
            _CONVERTED["data"] = make_converted(tmp_path_factory.mktemp("loaders"))
        return _CONVERTED["data"]
    return get


def make_converted(tmp):
    """Trajectories of the scripted episodes, schema-checked, and `kforge agent convert` of them as JSON
    lines and as Parquet (when pyarrow is there)."""
    import jsonschema
    trajs = [run_episode(tmp, name, steps, extra) for name, (steps, extra) in EPISODES.items()]
    v = jsonschema.Draft202012Validator(SCHEMA)
    for t in trajs:
        for e in (json.loads(l) for l in t.read_text().splitlines()):
            assert not [x.message for x in v.iter_errors(e)], e
    files = {"jsonl": tmp / "sft.jsonl", "parquet": tmp / "sft.parquet"}
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    for kind, f in list(files.items()):
        p = subprocess.run([sys.executable, "-m", "kforge.llm_agent", "convert"] + [str(t) for t in trajs] +
                           ["-o", str(f)], capture_output=True, text=True, env=env)
        if kind == "parquet" and p.returncode == 2 and "pyarrow" in p.stderr:
            files.pop(kind)
            continue
        assert p.returncode == 0, p.stdout + p.stderr
    rows = [json.loads(l) for l in files["jsonl"].read_text().splitlines()]
    # what the episodes must have given: the scripted calls, a tool message for each, the final answer
    assert [r["meta"]["stop_reason"] for r in rows] == ["model_stopped", "max_turns"]
    calls = [tc for m in rows[0]["messages"] for tc in m.get("tool_calls") or []]
    assert [tc["function"]["name"] for tc in calls] == ["read", "write", "grep", "edit", "glob"]
    assert json.loads(arguments_text(calls[1]))["content"] == GOOD_CU
    assert sum(m["role"] == "tool" for m in rows[0]["messages"]) == 5
    assert rows[0]["messages"][-1] == {"role": "assistant", "content": "Done: the ReLU kernel is in kernels/relu.cu."}
    # --max-turns 2 ended the second episode on the results of the model's last calls: the converter leaves
    # those two out (nothing answers them)
    assert rows[1]["messages"][-1]["role"] == "assistant" and rows[1]["meta"]["trailing_dropped"] == 2
    assert rows[0]["meta"]["trailing_dropped"] == 0
    return SimpleNamespace(files=files, rows=rows, tokenizer=tiny_tokenizer([json.dumps(r) for r in rows]))


def check_sample(tok, row, ids, loss_ids, tools_in_input):
    """`ids` the sample's tokens, `loss_ids` those the loss is on (each a list of ints)."""
    text, trained = tok.decode(ids), tok.decode(loss_ids)
    msgs = row["messages"]
    # the loss is on the assistant turns, all of them and only them (a loader may leave out the newline
    # after the last <|im_end|>)
    assert trained.replace("<|im_end|>\n", "<|im_end|>") == "".join(
        assistant_text(m) for m in msgs if m["role"] == "assistant")
    # the system, user and tool messages are in the input, outside the loss
    for m in msgs:
        if m["role"] != "assistant":
            assert m["content"] in text, (m["role"], m["content"][:80])
            assert len(m["content"]) < 20 or m["content"] not in trained, (m["role"], m["content"][:80])
    assert text.count("<|im_start|>tool\n") == sum(m["role"] == "tool" for m in msgs) > 0
    if tools_in_input:
        for t in agent_tools.TOOL_SPECS:
            assert '"name": "%s", "description": %s' % (t["function"]["name"],
                                                        json.dumps(t["function"]["description"])) in text


def drop_none(x):
    if isinstance(x, dict):
        return {k: drop_none(v) for k, v in x.items() if v is not None}
    if isinstance(x, list):
        return [drop_none(v) for v in x]
    return x


def test_verl_multiturn_sft_dataset(converted):
    pytest.importorskip("verl", reason="veRL is not installed (pip install verl: docs/agent-llm.md)")
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset
    converted = converted()
    if "parquet" not in converted.files:
        pytest.fail("veRL is installed but kforge agent convert could not write Parquet (pyarrow missing)")
    tok = converted.tokenizer
    ds = MultiTurnSFTDataset(str(converted.files["parquet"]), tok,
                             {"messages_key": "messages", "tools_key": "tools", "max_length": 16384,
                              "truncation": "error", "pad_mode": "no_padding"})
    assert len(ds) == len(converted.rows) == 2
    for k, row in enumerate(converted.rows):
        item = ds[k]  # veRL also checks that its per-message tokens equal the whole conversation's
        ids, mask = item["input_ids"], item["loss_mask"]
        assert ids.shape == mask.shape
        check_sample(tok, row, ids.tolist(), ids[mask == 1].tolist(), tools_in_input=True)
        # The tool schemas reach the template. Parquet gives all the structs of a list one type, so every
        # tool's `properties` carries the other tools' names too, as nulls (veRL does not drop them): the
        # same schemas once the nulls are dropped. They are in the prompt, never under the loss.
        assert drop_none(ds.tools[k]) == row["tools"]
        # the messages come back as written, but for the null fields Parquet adds (tool_calls: None, ...)
        assert [drop_none(m) for m in ds.messages[k]] == [drop_none(m) for m in row["messages"]]


def test_openrlhf_sft_dataset(converted):
    pytest.importorskip("openrlhf", reason="OpenRLHF is not installed (docs/agent-llm.md: pip install --no-deps)")
    from openrlhf.datasets import SFTDataset
    from openrlhf.datasets.utils import blending_datasets
    converted = converted()
    data = SimpleNamespace(input_key="messages", output_key=None, apply_chat_template=True,
                           tokenizer_chat_template=None, multiturn=True)

    class Strategy:  # what OpenRLHF's SFTDataset and blending_datasets read of its DeepSpeed strategy
        args = SimpleNamespace(data=data, use_ms=False)

        def print(self, *a):
            pass

        def is_rank_0(self):
            return True

    tok = converted.tokenizer
    train = blending_datasets(str(converted.files["jsonl"]), None, Strategy(), dataset_split="train")
    ds = SFTDataset(train, tok, 16384, Strategy(), num_processors=1, multiturn=True)
    assert len(ds) == len(converted.rows) == 2
    for k, row in enumerate(converted.rows):
        input_ids, attention_mask, loss_mask = ds[k]
        ids, mask = input_ids[0], loss_mask[0]
        assert attention_mask[0].all()
        # loss_mask[t] marks the prediction of token t + 1
        check_sample(tok, row, ids.tolist(), ids[1:][mask[:-1] == 1].tolist(), tools_in_input=False)
