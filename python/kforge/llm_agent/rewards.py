"""The milestone reward (CUDA Agent paper, Eq. 1) as kforge computes it in C++
(sandbox::milestone_reward_of_times, src/sandbox/result.cpp): the real path takes the `reward` that
`kforge evaluate --json` reports; this mirror serves results that did not come from kforge's harness
(the scripted harness of the tests) and episode summaries. tests/llm checks the two agree on a table."""


# kforge's failure outcomes (sandbox::Outcome): the candidate's fault, reward -1.
FAILURES = ("compile_error", "wrong_answer", "runtime_fault", "timeout", "resource_exhausted", "forbidden")


def milestone_reward_of_times(result):
    if result.get("outcome") != "ok":
        return -1
    t, te, tc = result.get("t_candidate"), result.get("t_eager"), result.get("t_compile")
    if t is None or te is None:
        return 1
    beats_eager = t < 0.95 * te
    beats_compile = tc is not None and t < 0.95 * tc
    if beats_eager and beats_compile:
        return 3
    if beats_eager:
        return 2
    return 1


def result_reward(result):
    """The reward of one evaluation: -1 for a failure, None when nothing was verified (static checks
    alone, no GPU), else the milestone reward (kforge's own where it reported one)."""
    outcome = result.get("outcome")
    if outcome in FAILURES:
        return -1
    if outcome != "ok":
        return None  # no_gpu, compiled, error of kforge itself: nothing was judged
    if not result.get("verified", False):
        return None
    if result.get("reward") is not None:
        return result["reward"]
    return milestone_reward_of_times(result)
