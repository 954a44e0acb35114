"""torch.compile(model, backend="kforge") on the GPU (ctest label gpu; skipped without an NVIDIA GPU): outputs
match eager within the protocol's tolerance, the parts are taken and verified, a second process builds
nothing (cache hit), and the speed-up vs torch.compile's default backend is printed per model."""
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(HERE, "..", "..", "python")
FRONTDOOR = os.path.join(HERE, "..", "frontdoor")

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/nvidia0"), reason="needs an NVIDIA GPU")

# One script per model, run twice in fresh processes on one cache folder.
SCRIPT = textwrap.dedent("""
    import json, sys, time, torch
    import kforge.torch_backend as kb
    from kforge import core
    sys.path.insert(0, {frontdoor!r})
    import models
    name = {name!r}
    if name == "resnet18":
        import torchvision
        m, x = torchvision.models.resnet18(), torch.randn(8, 3, 224, 224)
    else:
        m, x = getattr(models, name)(), torch.randn(*{shape!r})
    torch.manual_seed(0)
    m, x = m.cuda().eval(), x.cuda()

    def bench(f):
        for _ in range(3):
            f(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(20):
            f(x)
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / 20

    with torch.no_grad():
        ref = m(x)
        fk = torch.compile(m, backend="kforge", options={{"strict": False}})
        got = fk(x)
        flat = lambda o: list(o) if isinstance(o, (tuple, list)) else [o]
        ok = all(torch.allclose(a, b, atol=1e-2, rtol=1e-2) for a, b in zip(flat(got), flat(ref)))
        t_k = bench(fk)
        torch._dynamo.reset()
        t_c = bench(torch.compile(m))
    print(kb.summary(), file=sys.stderr)
    parts = [p for g in kb.SESSION for p in g.parts]
    print(json.dumps({{"ok": ok, "calls": [c.argv[1] for c in core.CALLS], "taken": sum(p.taken for p in parts),
                      "verified": [p.verified for p in parts if p.taken], "hits": [p.cache_hit for p in parts],
                      "t_kforge": t_k, "t_compile": t_c}}))
""")

ZOO = [("ConvBnRelu", (8, 3, 64, 64)), ("WithFft", (64, 16)), ("WithBreak", (64, 16)), ("resnet18", ())]


@pytest.mark.parametrize("name,shape", ZOO, ids=[z[0] for z in ZOO])
def test_model_matches_eager_and_second_process_builds_nothing(tmp_path, name, shape):
    if name == "resnet18":
        pytest.importorskip("torchvision")
    code = SCRIPT.format(frontdoor=FRONTDOOR, name=name, shape=shape)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, KFORGE_COMPILE_CACHE=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1800)
        assert p.returncode == 0, p.stderr[-3000:]
        print(p.stderr[-2000:])
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["ok"] and second["ok"]
    assert first["taken"] >= 1 and all(first["verified"])
    assert second["calls"] == [] and all(second["hits"])
    print(f"{name}: kforge {first['t_kforge'] * 1e3:.3f} ms, torch.compile {first['t_compile'] * 1e3:.3f} ms, "
          f"speed-up {first['t_compile'] / first['t_kforge']:.2f}x")
