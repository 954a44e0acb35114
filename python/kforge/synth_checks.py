# The execution-based filters of `kforge synth` (the paper's rubric, section 3.1), run on the CPU.
"""Each synthesized task is loaded the way KernelBench's own loader does (the source is executed
into a fresh namespace, then `Model`, `get_inputs` and `get_init_inputs` are taken from it) and run
eagerly on the CPU. Full-size tasks are sized for an H200 and do not fit a CPU run, so the C++ side
sends the same source with its `batch_size` constant set small: every other size, and so the whole
per-sample computation, is the task's own (every synthesized operator keeps the batch dimension).

The stages, each answered as {"ok": bool, "message": str, ...}:
  eager           builds the model and runs forward (eval mode, no grad)
  compile         the same under torch.compile (torch 2.x only; skipped, and said so, on torch 1.x)
  deterministic   no stochastic operators: the same inputs give bit-identical outputs, in eval mode and,
                  for models whose modules depend on the mode, in training mode
  distinguishable outputs are finite, not constant, and two different input sets give outputs that
                  are not allclose at the cuda-agent tolerance (atol = rtol = 1e-2): otherwise a
                  candidate returning a constant would pass verification
"""
import contextlib
import math

import torch
import torch.nn.functional as F

ATOL = RTOL = 1e-2  # the cuda-agent protocol's tolerance: outputs must differ by more than it
_SEED_MASK = (1 << 63) - 1
_MODE_DEPENDENT = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.modules.instancenorm._InstanceNorm,
                   torch.nn.modules.dropout._DropoutNd)


def _fail(message, **extra):
    return dict({"ok": False, "message": message}, **extra)


def _pass(message="", **extra):
    return dict({"ok": True, "message": message}, **extra)


def _first_line(e):
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


@contextlib.contextmanager
def _sdpa_on_torch1():
    """torch 1.x lacks F.scaled_dot_product_attention: run tasks that use it with the importer's
    reference polyfill (the GPU machine's torch 2.x has the real one)."""
    from .import_ops import sdpa_polyfill
    added = not hasattr(F, "scaled_dot_product_attention")
    if added:
        F.scaled_dot_product_attention = sdpa_polyfill
    try:
        yield added
    finally:
        if added:
            del F.scaled_dot_product_attention


def load_like_kernelbench(source, name):
    """KernelBench's loader: exec the source into a dict and take the three names from it."""
    context = {}
    exec(compile(source, f"<{name}>", "exec"), context)  # noqa: S102 - the task is our own generated code
    missing = [k for k in ("Model", "get_inputs", "get_init_inputs") if k not in context]
    if missing:
        raise ValueError(f"the source defines no {', '.join(missing)}")
    return context["Model"], context["get_inputs"], context["get_init_inputs"]


def _tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _tensors(o)]
    return []


def _same(x, y):
    """Bit-identical values (NaN where the other has NaN counts as the same)."""
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    if x.is_floating_point():
        return bool(((x == y) | (torch.isnan(x) & torch.isnan(y))).all())
    return torch.equal(x, y)


def _identical(a, b):
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))


def _sig(x):
    """A number rounded to 3 significant digits (stable in the dataset's JSON)."""
    if x == 0 or not math.isfinite(x):
        return x if math.isfinite(x) else str(x)
    return float(f"{x:.3g}")


def distinguishable(out_a, out_b):
    """Finite, not constant, and not allclose across two input sets."""
    for t in out_a + out_b:
        if t.is_floating_point() and not torch.isfinite(t).all():
            return _fail("the output has inf or nan values")
    a = torch.cat([t.detach().double().flatten() for t in out_a])
    b = torch.cat([t.detach().double().flatten() for t in out_b])
    if a.numel() == 0:
        return _fail("the output is empty")
    if bool((a == a[0]).all()) and bool((b == b[0]).all()):
        return _fail("the output is constant")
    scale = float(a.abs().max())
    diff = float((a - b).abs().max())
    rel = diff / scale if scale > 0 else diff
    if torch.allclose(a, b, atol=ATOL, rtol=RTOL):
        return _fail(f"outputs for two different input sets agree within atol = rtol = {ATOL:g} "
                     f"(max difference {_sig(diff)}): a constant answer would pass verification",
                     max_diff=_sig(diff), rel_diff=_sig(rel))
    return _pass(max_diff=_sig(diff), rel_diff=_sig(rel))


def run_checks(source, seed, name):
    """All execution stages for one (scaled-down) task source; later stages are absent after a failure."""
    stages = {}
    seed = int(seed) & _SEED_MASK
    with _sdpa_on_torch1() as polyfilled, torch.no_grad():
        note = "F.scaled_dot_product_attention ran as kforge's polyfill (torch 1.x)" if polyfilled and \
            "scaled_dot_product_attention" in source else ""
        try:
            Model, get_inputs, get_init_inputs = load_like_kernelbench(source, name)
            torch.manual_seed(seed)
            model = Model(*get_init_inputs())
            model.eval()
            torch.manual_seed((seed + 1) & _SEED_MASK)
            inputs_a = list(get_inputs())
            torch.manual_seed((seed + 2) & _SEED_MASK)
            inputs_b = list(get_inputs())
            out_a = _tensors(model(*inputs_a))
        except Exception as e:  # the task's failure is data, not ours
            stages["eager"] = _fail(_first_line(e))
            return stages, None
        if not out_a:
            stages["eager"] = _fail("forward returned no tensor")
            return stages, None
        shapes = [list(t.shape) for t in out_a]
        stages["eager"] = _pass(note, output_shapes=shapes, output_dtype=str(out_a[0].dtype).replace("torch.", ""))

        stages["compile"] = compile_stage(model, inputs_a, out_a)
        if not stages["compile"]["ok"]:
            return stages, shapes

        stages["deterministic"] = deterministic_stage(model, inputs_a, out_a)
        if not stages["deterministic"]["ok"]:
            return stages, shapes

        try:
            model.eval()
            out_b = _tensors(model(*inputs_b))
        except Exception as e:
            stages["distinguishable"] = _fail(f"second input set: {_first_line(e)}")
            return stages, shapes
        stages["distinguishable"] = distinguishable(out_a, out_b)
    return stages, shapes


def compile_stage(model, inputs, reference):
    if not hasattr(torch, "compile"):
        return _pass(f"skipped: torch {torch.__version__} has no torch.compile", skipped=True)
    try:
        compiled = torch.compile(model)
        out = _tensors(compiled(*inputs))
    except Exception as e:
        return _fail(f"torch.compile: {_first_line(e)}")
    finally:
        torch._dynamo.reset()  # compiled code of earlier tasks would pile up in this worker
    if [list(t.shape) for t in out] != [list(t.shape) for t in reference]:
        return _fail("torch.compile gives outputs of other shapes than eager")
    return _pass()


def deterministic_stage(model, inputs, out_eval):
    try:
        again = _tensors(model(*inputs))
        if not _identical(out_eval, again):
            return _fail("the same inputs give different outputs in eval mode (a stochastic operator)")
        if not any(isinstance(m, _MODE_DEPENDENT) for m in model.modules()):
            return _pass("no mode-dependent modules: eval mode checked")
        state = {k: v.clone() for k, v in model.state_dict().items()}
        model.train()
        t1 = _tensors(model(*inputs))
        t2 = _tensors(model(*inputs))
        model.load_state_dict(state)  # running statistics as they were
        model.eval()
        if not _identical(t1, t2):
            return _fail("the same inputs give different outputs in training mode (a stochastic operator)")
        return _pass("eval and training mode checked")
    except Exception as e:
        model.eval()
        return _fail(f"repeated run: {_first_line(e)}")
