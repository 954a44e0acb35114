"""kforge's language-model agent (issue #23): a model writes and tunes CUDA kernels in a CUDA-Agent
workspace, in a ReAct loop over an OpenAI-compatible chat-completions server, with kforge as its
workbench (compile, verify and profile through kforge's oracle; kforge's import, skills, plan, build and
export as tools). Trajectories are JSON lines (trajectory.schema.json); docs/agent-llm.md has the rest.

    python -m kforge.llm_agent PROBLEM.py --llm URL --model NAME --out DIR
    kforge agent PROBLEM.py --llm URL --model NAME --out DIR        (the same, through the kforge binary)
"""

SCHEMA_VERSION = 1
SCHEMA_NAME = "kforge.llm_trajectory/%d" % SCHEMA_VERSION
