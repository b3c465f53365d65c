"""Lossless: speculative decoding emits exactly the target model's joint distribution.

For a toy 3-token vocabulary and bigram table models, ``N`` independent runs
(seeds ``0..N-1``) each generate ``L = 3`` tokens; the empirical distribution
of the 27 continuations is compared with the target's exact joint
distribution by a chi-square test (cells with expected count < 5 pooled) at
significance ``1e-4`` (Wilson-Hilferty critical value). The seeds are fixed,
so the test is deterministic. A deliberately broken decoder (the extra token
drawn from ``p_last`` instead of the residual) fails the same test.

The runs go through :func:`golden.batch.speculative_generate_batch` (seeds
``0..N-1`` in lock step); ``tests/test_batch.py`` proves it emits exactly the
tokens of :func:`golden.decoder.speculative_generate` for every seed.

Measured total-variation distances are printed with ``-s``.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from golden import walk
from golden.batch import speculative_generate_batch
from golden.models import TableModel

V, L, PROMPT = 3, 3, [0]
N = 3000
CHAIN = [-1, 0, 1]
TREE = [-1, 0, 0, 0, 1, 1, 2]
Z_1E4 = 3.719  # one-sided normal quantile for 1e-4


def models() -> tuple[TableModel, TableModel]:
    # a draft that disagrees with the target often, so rejections and residuals matter
    return TableModel.random(V, 11, concentration=0.8), TableModel.random(V, 23, concentration=0.8)


def chi2_critical(df: int, z: float = Z_1E4) -> float:
    h = 2.0 / (9.0 * df)
    return df * (1.0 - h + z * math.sqrt(h)) ** 3


def check(counts: Counter, joint: dict, n: int) -> tuple[float, float, float, float]:
    """Return (chi2, critical value, TV, expected TV under H0)."""
    obs = np.array([counts.get(k, 0) for k in joint], dtype=float)
    exp = np.array([joint[k] * n for k in joint])
    small = exp < 5
    if small.any():
        obs = np.append(obs[~small], obs[small].sum())
        exp = np.append(exp[~small], exp[small].sum())
    chi2 = float(((obs - exp) ** 2 / exp).sum())
    tv = 0.5 * sum(abs(counts.get(k, 0) / n - v) for k, v in joint.items())
    etv = 0.5 * sum(math.sqrt(2 * v * (1 - v) / (math.pi * n)) for v in joint.values())
    return chi2, chi2_critical(len(obs) - 1), tv, etv


def sample(tree, children: str, arith: str) -> Counter:
    target, draft = models()
    runs = speculative_generate_batch(
        target,
        draft,
        [PROMPT] * N,
        L,
        tree=tree,
        children=children,
        arith=arith,
        seeds=range(N),
    )
    return Counter(tuple(r.tokens[:L]) for r in runs)


@pytest.mark.parametrize("arith", ["float", "fixed"])
@pytest.mark.parametrize("children", ["iid", "swor", "topk"])
@pytest.mark.parametrize("shape", ["chain", "tree"])
def test_lossless(shape: str, children: str, arith: str) -> None:
    target, _ = models()
    joint = target.joint(PROMPT, L)
    counts = sample(CHAIN if shape == "chain" else TREE, children, arith)
    chi2, crit, tv, etv = check(counts, joint, N)
    name = f"{shape}/{children}/{arith}"
    print(f"{name}: chi2 {chi2:.1f} (crit {crit:.1f}) TV {tv:.4f} (E {etv:.4f})")
    assert chi2 < crit, f"chi2 {chi2:.1f} >= {crit:.1f}, TV {tv:.4f}: not the target distribution"


@pytest.mark.parametrize("children", ["iid", "topk"])
def test_broken_variant_fails(children: str, monkeypatch) -> None:
    """No residual: after a rejection the extra token comes from p_last. Must be caught."""

    extra = walk._extra_fast  # the decoders' extra token: (residual, p_last, u32, ...)

    def no_residual(res, p_last, u32, arith, weight_bits):
        return extra(p_last, p_last, u32, arith, weight_bits)

    monkeypatch.setattr(walk, "_extra_fast", no_residual)
    target, _ = models()
    joint = target.joint(PROMPT, L)
    counts = sample(CHAIN, children, "float")
    chi2, crit, tv, _ = check(counts, joint, N)
    print(f"broken/{children}: chi2 {chi2:.1f} (crit {crit:.1f}) TV {tv:.4f}")
    assert chi2 > 3 * crit, "the broken decoder was not detected: the test has no power"
