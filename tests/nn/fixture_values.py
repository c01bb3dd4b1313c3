# The inputs and the printing shared by the tests/nn/*_expected.py fixture scripts: scrambled
# inputs with distinct values, sine weights for gradients of sum(y * weights(y)), and C++ arrays.
import math

import torch


def formula(shape, f):
    return torch.tensor([f(k) for k in range(math.prod(shape))], dtype=torch.float64).view(shape)


def scrambled(shape):
    """((37 k) % 97 - 48) / 8: all values distinct for fewer than 97 elements."""
    return formula(shape, lambda k: ((37 * k) % 97 - 48) / 8)


def weights(t):
    """sin(0.7 k + 1), shaped like t."""
    return formula(t.shape, lambda k: math.sin(0.7 * k + 1))


def emit(name, t):
    """t's values as `inline const std::vector<double> name = {...};`."""
    flat = ", ".join(repr(float(v)) if t.is_floating_point() else str(int(v))
                     for v in t.flatten().tolist())
    print(f"inline const std::vector<double> {name} = {{{flat}}};")
