"""Writes observer_expected.h: PyTorch's quantization parameters for one fixed input, which
observer_test.cpp checks Kiln's observers against.

    /opt/ref/bin/python tests/quantization/observer_expected.py > tests/quantization/observer_expected.h
"""
import numpy as np
import torch
from torch.ao.quantization import observer as obs

rng = np.random.default_rng(7)
x = rng.normal(0.3, 1.0, 512).astype(np.float32)
x[::97] *= 6  # a few outliers, which the histogram observer clips
t = torch.from_numpy(x)


def qparams(o, *batches):
    for b in batches:
        o(b)
    s, z = o.calculate_qparams()
    return s.flatten().tolist(), z.flatten().tolist()


cases = {
    "minmax_affine_quint8": qparams(obs.MinMaxObserver(dtype=torch.quint8), t),
    "minmax_symmetric_qint8": qparams(
        obs.MinMaxObserver(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric), t),
    "minmax_reduce_range": qparams(obs.MinMaxObserver(dtype=torch.quint8, reduce_range=True), t),
    "moving_average": qparams(obs.MovingAverageMinMaxObserver(dtype=torch.quint8), t[:256], t[256:]),
    "per_channel_symmetric": qparams(
        obs.PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8,
                                     qscheme=torch.per_channel_symmetric), t.reshape(8, 64)),
    "per_channel_affine_axis1": qparams(
        obs.PerChannelMinMaxObserver(ch_axis=1, dtype=torch.quint8,
                                     qscheme=torch.per_channel_affine), t.reshape(64, 8)),
    "histogram_x86": qparams(obs.HistogramObserver(dtype=torch.quint8, reduce_range=True), t),
}


def floats(v):
    return ", ".join(f"{float(e):.9g}f" for e in v)


print("// Written by observer_expected.py (PyTorch " + torch.__version__ + "); do not edit.")
print("#pragma once")
print("#include <cstdint>")
print("#include <vector>")
print()
print("namespace kiln::observer_expected {")
print()
print("inline const std::vector<float> kInput = {" + floats(x) + "};")
print()
print("struct Case {")
print("  std::vector<double> scales;")
print("  std::vector<int64_t> zero_points;")
print("};")
for name, (s, z) in cases.items():
    print(f"inline const Case {name} = {{{{{', '.join(repr(float(e)) for e in s)}}}, "
          f"{{{', '.join(str(int(e)) for e in z)}}}}};")
print()
print("}  // namespace kiln::observer_expected")
