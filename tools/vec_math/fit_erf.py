#!/usr/bin/env python3
"""Fits the polynomials of the CPU's vectorised erf and normal cdf (kiln/backend/cpu/vec_math.h).

erf_parts (the erf op):
    erf(z)  = z * P(z^2)          for 0 <= z < 1   (P of degree 6)
    erfc(z) = exp(-z^2) * Q(1/z)  for z >= 1       (Q of degree 9, fitted on [1, 6])
normal_at (gelu and its derivative), one formula for every z = |x| / sqrt(2) with |x| <= 13:
    erfc(z) / 2 = t * exp(-z^2) * S(t),  t = 1 / (1 + z/2)   (S of degree 8, fitted on those z)
exp_normal_range (its exp with an eight-entry table of 2^(j/8)):
    exp(r) = E(r) for |r| <= ln2/16                          (E of degree 3)

Least squares in relative error on Chebyshev nodes, with mpmath as the exact reference. Prints
the coefficients as float literals, highest degree first (the order vec_math.h's Horner loops
use), and the largest error of the float32 evaluation. Needs numpy and mpmath:

    python3 tools/vec_math/fit_erf.py
"""
import mpmath
import numpy as np

NODES = 4000


def fit(f, lo, hi, degree, variable):
    k = np.arange(NODES)
    x = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / NODES)
    y = np.array([float(f(mpmath.mpf(v))) for v in x])
    vander = np.vander(variable(x), degree + 1)
    coeffs, *_ = np.linalg.lstsq(vander / y[:, None], np.ones_like(y), rcond=None)
    return coeffs.astype(np.float32)


def horner32(coeffs, v):
    p = np.full_like(v, coeffs[0])
    for c in coeffs[1:]:
        p = (p * v + c).astype(np.float32)
    return p


def main():
    p = fit(lambda z: mpmath.erf(z) / z, 1e-6, 1.0, 6, lambda x: x * x)
    q = fit(lambda z: mpmath.erfc(z) * mpmath.exp(z * z), 1.0, 6.0, 9, lambda x: 1 / x)
    # S on the t of z in [0, 13 / sqrt(2)]: Chebyshev nodes in t, not z.
    t_min = 1 / (1 + 13 / np.sqrt(2) / 2)
    k = np.arange(NODES)
    t = (1 + t_min) / 2 + (1 - t_min) / 2 * np.cos(np.pi * (k + 0.5) / NODES)
    z = 2 / t - 2
    y = np.array([float(mpmath.erfc(v) * mpmath.exp(v * v) / 2 * (1 + v / 2)) for v in map(mpmath.mpf, z)])
    sc, *_ = np.linalg.lstsq(np.vander(t, 9) / y[:, None], np.ones_like(y), rcond=None)
    sc = sc.astype(np.float32)
    e = fit(lambda r: mpmath.exp(r), -np.log(2) / 16 * 1.02, np.log(2) / 16 * 1.02, 3, lambda x: x)
    for name, c in (("P", p), ("Q", q), ("S", sc), ("E", e)):
        print(name + ":", ", ".join("%.9ef" % v for v in c))

    z = np.linspace(1e-6, 1.0, 20001, dtype=np.float32)
    got = z * horner32(p, z * z)
    want = np.array([float(mpmath.erf(mpmath.mpf(float(v)))) for v in z])
    print("erf below 1: max relative error %.2e" % np.max(np.abs(got - want) / want))
    z = np.linspace(1.0, 6.0, 20001, dtype=np.float32)
    got = np.exp(-(z * z).astype(np.float64)).astype(np.float32) * horner32(q, (1 / z).astype(np.float32))
    want = np.array([float(mpmath.erfc(mpmath.mpf(float(v)))) for v in z])
    print("erfc from 1 to 6: max relative error %.2e" % np.max(np.abs(got - want) / want))
    z = np.linspace(0.0, 13 / np.sqrt(2), 20001, dtype=np.float32)
    t = (1 / (1 + z / 2)).astype(np.float32)
    got = horner32(sc, t)
    want = np.array([float(mpmath.erfc(v) * mpmath.exp(v * v) / 2 * (1 + v / 2)) for v in map(mpmath.mpf, z.astype(float))])
    print("S from 0 to 13/sqrt(2): max relative error %.2e" % np.max(np.abs(got - want) / want))
    r = np.linspace(-np.log(2) / 16, np.log(2) / 16, 20001).astype(np.float32)
    want = np.exp(r.astype(np.float64))
    print("E on [-ln2/16, ln2/16]: max relative error %.2e" % np.max(np.abs(horner32(e, r) - want) / want))


if __name__ == "__main__":
    main()
