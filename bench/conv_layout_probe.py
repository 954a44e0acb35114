"""Is channels-last why torch.compile's convolutions beat eager's (and ours) on the H200? For each
problem: its first conv module timed on NCHW (contiguous) and on channels-last tensors (cuDNN, TF32
as torch's default), the layout conversions, the whole model eager and compiled, and the convolution
calls in Inductor's generated code (their buffers' strides say the layout it chose).

    python3 bench/conv_layout_probe.py PROBLEM.py [PROBLEM.py ...]
"""
import importlib.util
import os
import re
import statistics
import sys

import torch


def load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def timed(fn, trials=15):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(trials):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    from torch._inductor.utils import run_and_get_code
    print("torch", torch.__version__, torch.cuda.get_device_name(), "cudnn.allow_tf32", torch.backends.cudnn.allow_tf32)
    rows = []
    for path in sys.argv[1:]:
        mod = load(path)
        name = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)[:-3]
        torch.manual_seed(0)
        with torch.device("cuda"):
            model = mod.Model(*mod.get_init_inputs()).eval()
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
        conv = next(m for m in model.modules() if isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d,
                                                                 torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d,
                                                                 torch.nn.ConvTranspose3d)))
        x = inputs[0]
        fmt = {4: torch.channels_last, 5: torch.channels_last_3d}.get(x.dim())
        with torch.no_grad():
            t_nchw = timed(lambda: conv(x))
            row = {"problem": name, "conv_nchw": t_nchw}
            if fmt is not None:
                xc = x.contiguous(memory_format=fmt)
                conv_cl = type(conv)(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                                     **({"output_padding": conv.output_padding} if hasattr(conv, "output_padding") and "Transpose" in type(conv).__name__ else {}),
                                     groups=conv.groups, bias=conv.bias is not None, dilation=conv.dilation).cuda()
                conv_cl.load_state_dict(conv.state_dict())
                conv_cl = conv_cl.to(memory_format=fmt)
                row["conv_cl"] = timed(lambda: conv_cl(xc))
                row["to_cl"] = timed(lambda: x.contiguous(memory_format=fmt))
                y = conv_cl(xc)
                row["from_cl"] = timed(lambda: y.contiguous())
                row["max_diff"] = float((conv_cl(xc) - conv(x)).abs().max())
            row["eager"] = timed(lambda: model(*inputs))
            compiled = torch.compile(model)
            _, codes = run_and_get_code(compiled, *inputs)
            row["compile"] = timed(lambda: compiled(*inputs))
        calls = [l.strip() for c in codes for l in c.splitlines() if "convolution(" in l]
        strides = [l.strip() for c in codes for l in c.splitlines() if "assert_size_stride(primals_" in l or "assert_size_stride(arg" in l]
        rows.append(row)
        print("==== " + name)
        for l in calls[:3] + strides[:4]:
            print("    " + l[:220])
        print("    " + "  ".join("%s %.3f" % (k, v) for k, v in row.items() if isinstance(v, float)))
        torch._dynamo.reset()
        del model, inputs, compiled
        torch.cuda.empty_cache()
    print("\n| problem | conv NCHW ms | conv channels-last ms | to-cl ms | from-cl ms | eager ms | compile ms |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %.3f | %s | %s | %s | %.3f | %.3f |" % (
            r["problem"], r["conv_nchw"], *("%.3f" % r[k] if k in r else "-" for k in ("conv_cl", "to_cl", "from_cl")),
            r["eager"], r["compile"]))


if __name__ == "__main__":
    main()
