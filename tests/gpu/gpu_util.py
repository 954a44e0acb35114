"""Helpers the GPU tests share: loading a problem or ModelNew file as a module, building problem files with kforge
side by side, and a median CUDA-event time."""
import concurrent.futures
import importlib.util
import os
import subprocess


def load(path, name):
    """The Python file at `path` as a fresh module called `name`."""
    spec = importlib.util.spec_from_file_location(name, str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def median_ms(fn, xs, reps=20, warm=0):
    """Median milliseconds of fn(*xs) over `reps` calls (CUDA events, L2 not flushed), after `warm` calls."""
    import torch
    for _ in range(warm):
        fn(*xs)
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*xs)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return sorted(times)[len(times) // 2]


def problem_text(body, shapes, names):
    """A KernelBench problem file: Model.forward(*names) runs `body` (lines), get_inputs() draws torch.randn of
    each shape."""
    forward = "\n".join("        " + line for line in body.split("\n"))
    return (f"import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, {', '.join(names)}):\n"
            f"{forward}\n\n\ndef get_inputs():\n    return [{', '.join(f'torch.randn{s}' for s in shapes)}]\n\n\n"
            "def get_init_inputs():\n    return []\n")


def check_like_reference(key, inputs, ref, new, tol, device="cuda"):
    """ModelNew `new` against Model `ref` on two fresh input sets from `inputs()` (seeds 1 and 2) at atol = rtol =
    tol, a second call equal to the first, and the answer after the first input changed in place; returns the last
    inputs (on `device`). Call under torch.no_grad()."""
    import torch
    for seed in (1, 2):
        torch.manual_seed(seed)
        xs = [x.to(device) for x in inputs()]
        got, want = new(*xs), ref(*xs)
        assert got.shape == want.shape, f"{key}: shape {tuple(got.shape)} vs {tuple(want.shape)}"
        assert torch.allclose(got, want, atol=tol, rtol=tol), \
            f"{key}: max abs difference {(got - want).abs().max().item():.3g} at {tol}"
        assert torch.equal(new(*xs), got), f"{key}: a second call differs"
    xs[0].mul_(-0.5)
    assert torch.allclose(new(*xs), ref(*xs), atol=tol, rtol=tol), f"{key}: stale after an in-place change"
    return xs


def build_all(kforge, tmp, sources, workers=8):
    """Writes each {name: problem text} under `tmp` and runs `kforge build` (cuda-agent) on them side by side, with a
    cache of their own; returns {name: (problem path, build folder)}. A failed build fails the caller."""
    env = {**os.environ, "KFORGE_CACHE": str(tmp / "cache")}

    def build(name, text):
        path = tmp / f"{name}.py"
        path.write_text(text)
        out = tmp / name
        run = subprocess.run([kforge, "build", str(path), "--protocol", "cuda-agent", "--out", str(out), "--force",
                              "-j", "2"], capture_output=True, text=True, timeout=600, env=env)
        assert run.returncode == 0, f"kforge build {name} failed:\n{run.stdout}{run.stderr}"
        return path, out

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        jobs = {name: pool.submit(build, name, text) for name, text in sources.items()}
        return {name: job.result() for name, job in jobs.items()}
