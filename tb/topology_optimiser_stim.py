"""Stimulus and configurations of the topology optimiser's testbench
(:mod:`tb.test_topology_optimiser`), pure Python (no simulator).

:class:`P`, the run's parameter set; :func:`random_cfg` (with
:func:`random_prior`), a valid random configuration; :func:`golden_for`, the
golden policy (``golden.builder.FixedTopologyOptimiser``) of a configuration;
:func:`prune`, :func:`accepted_path` and :func:`path_beats`, a step built on
a shape and its packet on ``step``; :func:`small_m`, the largest ``M`` of the
random runs; :func:`base_cfg` and :func:`bad_configs`, the invalid
configurations of the error run (every field out of range, one at a time).
"""

import random

from golden import tree as gtree
from golden.builder import FixedTopologyOptimiser
from hw.topology.dp import dp_cycles
from hw.topology_optimiser import U_MAX
from tb.common import params

__all__ = [
    "P",
    "random_prior",
    "random_cfg",
    "golden_for",
    "prune",
    "accepted_path",
    "path_beats",
    "DP_BUDGET",
    "small_m",
    "bad_configs",
    "base_cfg",
]


class P:
    """The parameter set of this run."""

    def __init__(self) -> None:
        p = params()
        self.N, self.D, self.R = p["N_MAX"], p["D_MAX"], p["R"]
        self.A, self.NB, self.WIN = p["ACC_BITS"], p["NB"], p["WIN"]
        self.one = 1 << self.A


def random_prior(rng: random.Random, P: P) -> list[int]:
    """``R`` entries in ``0 .. 2**A`` summing to at most ``2**A``: random, exactly
    one, zeros inside and at the end, all zero, a single rank, tiny entries."""
    R, one = P.R, P.one
    kind = rng.choice(["random", "exact", "exact", "zeros", "tail", "single", "tiny", "none"])
    if kind == "none":
        return [0] * R
    if kind == "single":
        p = [0] * R
        p[rng.randrange(R)] = rng.randint(1, one)
        return p
    if kind == "tiny":
        return [rng.randint(0, 3) for _ in range(R)]
    w = [rng.random() ** 2 for _ in range(R)]
    if kind == "zeros":
        w = [x if rng.random() < 0.5 else 0.0 for x in w]
    if kind == "tail":
        k = rng.randint(1, R)
        w = w[:k] + [0.0] * (R - k)
    if not any(w):
        w[0] = 1.0
    total = sum(w) / (1.0 if kind == "exact" else rng.uniform(0.2, 1.0))
    p = [min(one, int(x / total * one)) for x in w]
    if kind == "exact":  # the rest to the last non-zero entry: sums to exactly 2**A
        i = max(i for i, x in enumerate(p) if x or w[i])
        p[i] += one - sum(p)
    return p


def random_cfg(rng: random.Random, P: P, m_max: int | None = None) -> dict:
    """A valid configuration (budgets and costs such that plain decoding is
    sometimes cheaper, sometimes never)."""
    top = min(P.N, m_max or P.N)
    mm = rng.choice([top, rng.randint(2, top), rng.randint(2, min(top, 6))])
    nb = rng.randint(1, min(P.NB, mm - 1))
    budgets = sorted(rng.sample(range(2, mm + 1), nb))
    cost0 = rng.randint(20, 200)
    kind = rng.choice(["linear", "linear", "flat", "random"])
    if kind == "linear":  # a step costs more with more nodes
        slope = rng.choice([1, 4, 20, 80])
        costs = [cost0 + slope * b + rng.randint(0, 9) for b in budgets]
    elif kind == "flat":  # speculation as cheap as plain decoding (ties too)
        costs = [cost0 + rng.choice([0, 0, 1]) for _ in budgets]
    else:
        costs = [min(rng.randint(1, 1 << rng.randint(1, 32)), (1 << 32) - 1) for _ in budgets]
        cost0 = rng.choice([1, cost0, (1 << 32) - 1])
    return {
        "m": mm,
        "d": rng.randint(1, P.D),
        "u": rng.choice([1, 1, 2, 3, 4, 5]),
        "pw": rng.choice([0, 1, 2, 2, 8, rng.randint(0, 255), 255]),
        "fallback": int(rng.random() < 0.75),
        "probe": rng.randint(1, mm - 1),
        "nb": nb,
        "budget": budgets + [0] * (P.NB - nb),
        "cost": costs + [0] * (P.NB - nb),
        "cost_plain": cost0,
        "prior": random_prior(rng, P),
    }


def golden_for(c: dict, P: P) -> FixedTopologyOptimiser:
    """The golden policy of configuration ``c`` (the prior as ``prior_b / 2**A``)."""
    nb = c["nb"]
    return FixedTopologyOptimiser(
        c["m"],
        c["d"],
        [x / P.one for x in c["prior"]],
        c["cost"][:nb],
        c["cost_plain"],
        budgets=c["budget"][:nb],
        update_every=c["u"],
        window=P.WIN,
        prior_weight=c["pw"],
        ranks=P.R,
        fallback=bool(c["fallback"]),
        probe_depth=c["probe"],
        acc_bits=P.A,
    )


def prune(rng: random.Random, shape: list[int]) -> list[int]:
    """``shape`` with random subtrees dropped: each node keeps a prefix of its
    children (ranks unchanged), §2 order kept."""
    kids = gtree.children_lists(shape)
    keep = [False] * len(shape)
    keep[0] = True
    for a in range(len(shape)):  # parents come first
        if keep[a] and kids[a]:
            c = len(kids[a]) if rng.random() < 0.5 else rng.randint(0, len(kids[a]))
            for ch in kids[a][:c]:
                keep[ch] = True
    new = {}
    out = []
    for i, p in enumerate(shape):
        if keep[i]:
            new[i] = len(out)
            out.append(-1 if p < 0 else new[p])
    return out


def accepted_path(rng: random.Random, tree: list[int], alpha: float) -> list[int]:
    """Root first; at each node its children are tried in rank order, each
    accepted with probability ``alpha``."""
    kids = gtree.children_lists(tree)
    path = [0]
    while True:
        nxt = next((c for c in kids[path[-1]] if rng.random() < alpha), None)
        if nxt is None:
            return path
        path.append(nxt)


def path_beats(tree: list[int], path: list[int]) -> list[dict]:
    """The packet of ``path`` on ``step``: per node its rank (0 on the root), its
    children in ``tree`` and ``last``."""
    kids = gtree.children_lists(tree)
    rank = gtree.sibling_rank(tree)
    return [
        {"rank": rank[a] if t else 0, "kids": len(kids[a]), "last": int(t == len(path) - 1)}
        for t, a in enumerate(path)
    ]


#: most DP cycles a random run's configuration may cost (``M`` is capped to stay below)
DP_BUDGET = 10000


def small_m(P: P) -> int:
    """Largest ``M`` of the random runs: the largest whose DP (``D = D_MAX``, ``K = R``)
    stays within :data:`DP_BUDGET` cycles (every ``M`` of the small sets)."""
    ok = [mm for mm in range(3, P.N + 1) if dp_cycles(mm, P.D, min(P.R, mm - 1)) <= DP_BUDGET]
    return max(ok, default=2)


def bad_configs(P: P, base: dict) -> list[tuple[str, dict]]:
    """Every field of ``base`` out of range, one at a time (where the field can
    hold the bad value)."""
    N, D, NB, R, one = P.N, P.D, P.NB, P.R, P.one
    mm = base["m"]
    nw = N.bit_length()
    out: list[tuple[str, dict]] = []

    def add(name: str, **fields) -> None:
        c = {**base, **{k: list(v) if isinstance(v, list) else v for k, v in fields.items()}}
        out.append((name, c))

    add("m = 1", m=1, probe=1, budget=[0] * NB, nb=1)  # nb's budget 0 is bad too; m first
    add("m = 0", m=0)
    if N + 1 < 1 << nw:
        add("m = N_MAX + 1", m=N + 1)
    add("d = 0", d=0)
    if D + 1 < 1 << D.bit_length():
        add("d = D_MAX + 1", d=D + 1)
    add("u = 0", u=0)
    add("u = 2**16 + 1", u=U_MAX + 1)
    add("probe = 0", probe=0)
    add("probe = m", probe=mm)
    add("nb = 0", nb=0)
    if NB + 1 < 1 << NB.bit_length():
        add("nb = NB + 1", nb=NB + 1)
    b = list(base["budget"])
    nb = base["nb"]
    add("budget 1", budget=[1] + b[1:])
    add("budget > m", budget=b[: nb - 1] + [mm + 1] + b[nb:])
    if nb >= 2:
        add("budgets not increasing", budget=[b[1], b[0]] + b[2:])
        add("budgets equal", budget=[b[0], b[0]] + b[2:])
    c = list(base["cost"])
    add("a used cost of 0", cost=c[: nb - 1] + [0] + c[nb:])
    add("cost_plain = 0", cost_plain=0)
    add("prior entry > 2**A", prior=[one + 1] + [0] * (R - 1))
    if R >= 2:
        add("prior sum > 2**A", prior=[one // 2 + 1, one // 2] + [0] * (R - 2))
    else:
        add("prior = 2**A + 1", prior=[one + 1])
    return out


def base_cfg(P: P) -> dict:
    """A valid configuration that uses every budget entry it can."""
    mm = min(P.N, 12)
    nb = min(P.NB, mm - 1)
    budgets = list(range(mm - nb + 1, mm + 1))
    return {
        "m": mm,
        "d": min(P.D, 3),
        "u": 2,
        "pw": 2,
        "fallback": 1,
        "probe": 1,
        "nb": nb,
        "budget": budgets + [0] * (P.NB - nb),
        "cost": [100 + 10 * x for x in budgets] + [0] * (P.NB - nb),
        "cost_plain": 100,
        "prior": [P.one // (2 * P.R)] * P.R,
    }
