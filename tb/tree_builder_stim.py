"""Stimulus, golden model and draft side of the tree builder's testbench
(``tb/test_tree_builder.py``; SPEC §3.6-§3.9).

* :class:`Cfg`: the run's parameter set (``TB_PARAMS``, :func:`tb.common.params`).
* :class:`Case`: one tree, its configuration and distributions; the random
  generators (:func:`static_case`, :func:`dynamic_case`, :func:`ngram_case`,
  :func:`bad_case`, :func:`make_cases`) and the SPEC check vectors
  (:func:`spec_cases`).
* Golden: :func:`finish` fills a case's expected requests and ``o`` beats from
  ``golden.topk.build_static`` (:func:`expect_static`) or
  ``golden.dynamic.build_dynamic`` (:func:`expect_dynamic`), both fed
  :func:`dist_for` (a deterministic function of the tree and the path: a
  seeded table, or the n-gram draft quantised with ``golden.sampler.quantize``).
* Drivers: :class:`Draft` answers every request on ``req`` with its path's
  distribution as ``dist`` beats (:func:`dist_beats`), a too-long one for a
  ``dist`` case's bad request; :func:`shape_beats` a static shape.
"""

import random
from dataclasses import dataclass, field

from golden.dynamic import build_dynamic
from golden.topk import build_static, topk
from hw.tree_builder import MODE_DYNAMIC, MODE_STATIC, worst_candidates
from tb.common import TB, StreamSource, params

#: SPEC §3.8's check vector: shape, K, distributions by path, parents, tokens
SPEC_STATIC = (
    [-1, 0, 0, 1, 2],
    2,
    {(): [0, 5, 0, 9], (3,): [0, 0, 0, 0], (1,): [2, 2, 0, 0]},
    [-1, 0, 0, 2],
    [3, 1, 0],
)
#: SPEC §3.9's check vector (PROB_BITS 16, CONF_BITS 32, D 3, K 2, W 2)
SPEC_DYNAMIC_DISTS = {
    (): [0, 40000, 20000, 0],
    (1,): [10000, 0, 0, 5000],
    (2,): [0, 0, 60000, 0],
    (2, 2): [30000, 30000, 0, 0],
    (1, 0): [0, 65535, 0, 0],
}
SPEC_DYNAMIC = [  # (M, parents, tokens)
    (6, [-1, 0, 0, 2, 3, 3], [1, 2, 2, 0, 1]),
    (8, [-1, 0, 0, 1, 2, 4, 4, 3], [1, 2, 0, 2, 0, 1, 1]),
]
SPEC_DYNAMIC_CONF = [2621439999, 1310719999, 399999999, 199999999, 1199999999]


class Cfg:
    """The parameter set of this run."""

    def __init__(self) -> None:
        p = params()
        self.N, self.L, self.TB = p["N_NODES"], p["LANES"], p["TOKEN_BITS"]
        self.PB, self.CW, self.CMAX = p["PROB_BITS"], p["CONF_BITS"], p["C_MAX"]
        self.vocab = 1 << self.TB
        self.qmax = (1 << self.PB) - 1
        self.mbits = self.N.bit_length()
        self.req_bits = max(max(1, (self.N - 1).bit_length()), max(1, (self.CMAX - 1).bit_length()))
        self.ngram = self.TB >= 8


_NGRAM = None


def ngram_draft():
    """The n-gram draft model (cached on disk, trained once)."""
    global _NGRAM
    if _NGRAM is None:
        from golden.models import default_ngram_pair

        _NGRAM = default_ngram_pair()[1]
    return _NGRAM


# ----------------------------------------------------------------------------- cases
@dataclass
class Case:
    """One tree: its configuration, its distributions and what the block must do."""

    mode: int
    k: int
    vocab: int
    seed: int
    dist_kind: str
    shape: list[int] | None = None
    m: int = 0
    d: int = 0
    w: int = 0
    kind: str = "valid"  # "valid", "cfg", "shape", "dist"
    bad_req: int = -1  # request answered with a too-long distribution
    table: dict | None = None  # explicit distributions by path (check vectors)
    prefix: list[int] = field(default_factory=list)  # n-gram context before the root
    reqs: list[tuple[int, int, int]] = field(default_factory=list)  # expected requests
    out: list[dict] = field(default_factory=list)  # expected o beats
    cands: int = 0  # dynamic: candidates created (root excluded)
    label: str = ""

    @property
    def requests(self) -> bool:
        """Whether the tree issues requests (its first is the root's)."""
        return self.kind in ("valid", "dist") and len(self.reqs) > 0


def dist_for(case: Case, cfg: Cfg, path: tuple[int, ...]) -> list[int]:
    """The quantised draft distribution of ``path`` in ``case`` (deterministic)."""
    if case.table is not None:
        return list(case.table.get(path, [0] * case.vocab))
    if case.dist_kind == "ngram":
        from golden.sampler import quantize

        ctx = (case.prefix + list(path))[-3:]
        row = ngram_draft().probs([ctx])[0]
        return [int(v) for v in quantize(row, cfg.PB)]
    rng = random.Random((case.seed * 1_000_003) ^ hash(path))
    V, qmax, kind = case.vocab, cfg.qmax, case.dist_kind
    if kind == "mixed":
        kind = rng.choice(["random", "ties", "sparse", "zeros", "peaked", "full"])
    if kind == "zeros" and rng.random() < 0.35:
        return [0] * V
    if kind == "random" or kind == "zeros":
        return [rng.randint(0, qmax) if rng.random() < 0.8 else 0 for _ in range(V)]
    if kind == "ties":
        vals = [0] + [rng.randint(1, qmax) for _ in range(rng.randint(1, 3))]
        return [rng.choice(vals) for _ in range(V)]
    if kind == "sparse":
        out = [0] * V
        for _ in range(rng.randint(0, 3)):
            out[rng.randrange(V)] = rng.randint(1, qmax)
        return out
    if kind == "peaked":
        out = [rng.randint(0, qmax >> 6) for _ in range(V)]
        out[rng.randrange(V)] = rng.randint(qmax >> 1, qmax)
        return out
    if kind == "full":
        return [qmax] * V
    raise AssertionError(kind)


def dist_beats(q: list[int], lanes: int) -> list[dict]:
    """A distribution as ``dist`` beats, the last zero-padded."""
    nb = -(-len(q) // lanes)
    qq = list(q) + [0] * (nb * lanes - len(q))
    return [{"q": qq[b * lanes : (b + 1) * lanes], "last": int(b == nb - 1)} for b in range(nb)]


def _ranks(shape: list[int]) -> list[int]:
    kids: dict[int, int] = {}
    out = [0]
    for i in range(1, len(shape)):
        out.append(kids.get(shape[i], 0))
        kids[shape[i]] = out[-1] + 1
    return out


def expect_static(case: Case, cfg: Cfg) -> None:
    """Golden's static build of ``case`` (valid shape and K): requests and o beats."""
    shape, k = case.shape, case.k
    ranks = _ranks(shape)
    paths: dict[int, tuple[int, ...]] = {0: ()}

    def path(a: int) -> tuple[int, ...]:
        if a not in paths:
            pp = path(shape[a])
            ents = topk(dist_for(case, cfg, pp), k, prob_bits=cfg.PB)
            paths[a] = pp + (ents[ranks[a]].token,)
        return paths[a]

    class Dists:
        def __getitem__(self, a: int) -> list[int]:
            return dist_for(case, cfg, path(a))

    b = build_static(shape, Dists(), k, prob_bits=cfg.PB, conf_bits=cfg.CW)
    has_kids = set(shape[1:])
    case.reqs = []
    for x, s in enumerate(b.source):
        if s in has_kids:
            case.reqs.append((s, shape[s] if s else 0, b.tokens[x] if x else 0))
    case.out = _beats(b.parents, b.tokens, b.q, b.confidence)
    return b


def expect_dynamic(case: Case, cfg: Cfg):
    """Golden's dynamic build of ``case``: requests and o beats."""
    seen: list[tuple[int, ...]] = []

    def dist(paths: list[list[int]]) -> list[list[int]]:
        out = []
        for p in paths:
            seen.append(tuple(p))
            out.append(dist_for(case, cfg, tuple(p)))
        return out

    b = build_dynamic(
        dist, case.m, case.d, case.k, case.w, prob_bits=cfg.PB, conf_bits=cfg.CW, root_token=0
    )
    case.reqs = [
        (a, b.cand_parents[a] if a else 0, p[-1] if p else 0)
        for a, p in zip(b.expanded, seen, strict=True)
    ]
    case.out = _beats(b.parents, b.tokens, b.q, b.confidence)
    case.cands = len(b.cand_parents) - 1
    return b


def _beats(parents, tokens, qs, confs) -> list[dict]:
    out = [
        {"parent": parents[i], "end": 0, "token": tokens[i], "q": qs[i], "conf": confs[i]}
        for i in range(1, len(parents))
    ]
    return out + [{"parent": 0, "end": 1, "token": 0, "q": 0, "conf": 0}]


def random_shape(rng: random.Random, n_max: int, k: int) -> list[int]:
    """A parent list of ``1 .. n_max`` nodes, no node with more than ``k`` children."""
    kind = rng.choice(["random", "random", "chain", "star", "bushy", "deep", "single"])
    n = 1 if kind == "single" else rng.choice([n_max, rng.randint(1, n_max), rng.randint(2, 6)])
    n = max(1, min(n, n_max))
    par, kids = [-1], [0]
    for i in range(1, n):
        ok = [j for j in range(i) if kids[j] < k]
        if kind == "chain":
            p = i - 1 if kids[i - 1] < k else rng.choice(ok)
        elif kind == "star" or kind == "bushy":
            p = ok[0] if kind == "star" or rng.random() < 0.6 else rng.choice(ok)
        elif kind == "deep":
            near = [j for j in ok if j >= i - 3]
            p = rng.choice(near or ok)
        else:
            p = rng.choice(ok)
        par.append(p)
        kids[p] += 1
        kids.append(0)
    return par


def pick_k(rng: random.Random, lo: int = 1) -> int:
    r = rng.random()
    if r < 0.15:
        return max(lo, 1)
    if r < 0.3:
        return 16
    return rng.randint(max(1, lo), 16)


def pick_vocab(rng: random.Random, cfg: Cfg) -> int:
    r = rng.random()
    if r < 0.25:
        return rng.randint(1, 4)  # tiny: K often above the support
    if r < 0.4:
        return min(cfg.vocab, 256)  # the whole vocabulary (at most 256: beats cost time)
    return rng.randint(1, min(cfg.vocab, 48))


def static_case(rng: random.Random, cfg: Cfg) -> Case:
    k = pick_k(rng)
    shape = random_shape(rng, cfg.N, k)
    kids = max([shape[1:].count(j) for j in range(len(shape))] + [0])
    if rng.random() < 0.3 and kids:
        k = kids  # the tightest K
    kind = rng.choice(["mixed"] * 3 + ["random", "ties", "zeros", "sparse", "full"])
    return Case(MODE_STATIC, k, pick_vocab(rng, cfg), rng.getrandbits(32), kind, shape=shape)


def dynamic_case(rng: random.Random, cfg: Cfg, max_reqs: int = 40) -> Case:
    while True:
        k = pick_k(rng)
        m = rng.choice([1, 2, cfg.N, rng.randint(1, cfg.N), rng.randint(2, min(cfg.N, 12))])
        d = rng.choice([1, 2, 3, rng.randint(1, min(cfg.N - 1, 8)), rng.randint(1, cfg.N - 1)])
        w = rng.choice([1, 2, k, rng.randint(1, 4), rng.randint(1, 16)])
        r = min(d, m - 1)
        if worst_candidates(m, d, k, w) <= cfg.CMAX and 1 + w * max(0, r - 1) <= max_reqs:
            break
    kind = rng.choice(["mixed"] * 3 + ["random", "ties", "zeros", "sparse", "peaked", "full"])
    return Case(MODE_DYNAMIC, k, pick_vocab(rng, cfg), rng.getrandbits(32), kind, m=m, d=d, w=w)


def ngram_case(rng: random.Random, cfg: Cfg) -> Case:
    prompts = ["def ", "    return ", "import ", "class ", "for i in ", "self.", "if x == "]
    prefix = [ord(c) for c in rng.choice(prompts)]
    if rng.random() < 0.5:
        c = static_case(rng, cfg)
    else:
        c = dynamic_case(rng, cfg, max_reqs=12)
    c.vocab, c.dist_kind, c.prefix = 256, "ngram", prefix
    return c


def bad_case(rng: random.Random, cfg: Cfg) -> Case:
    """An invalid tree: a bad cfg field or bound, a bad shape, or a too-long distribution."""
    what = rng.choice(["cfg", "cfg", "shape", "shape", "dist", "dist"])
    if what == "dist" and cfg.vocab > 4096:
        what = "cfg"
    if what == "cfg":
        c = static_case(rng, cfg) if rng.random() < 0.5 else dynamic_case(rng, cfg)
        c.kind = "cfg"
        bad_k = rng.choice([0, 17, 31])
        c.label = "cfg:k"
        if c.mode == MODE_STATIC or rng.random() < 0.2:
            c.k = bad_k
        else:
            field_ = rng.choice(["m", "d", "w", "bound"])
            c.label = f"cfg:{field_}"
            top = (1 << cfg.mbits) - 1
            if field_ == "m":
                c.m = rng.choice([0] + list(range(cfg.N + 1, top + 1)))
            elif field_ == "d":
                c.d = rng.choice([0] + list(range(cfg.N, top + 1)))
            elif field_ == "w":
                c.w = rng.choice([0, 17, 31])
            else:
                for _ in range(1000):
                    m, d = rng.randint(2, cfg.N), rng.randint(1, cfg.N - 1)
                    k, w = rng.randint(1, 16), rng.randint(1, 16)
                    if worst_candidates(m, d, k, w) > cfg.CMAX:
                        c.m, c.d, c.k, c.w = m, d, k, w
                        break
                else:
                    c.k, c.label = bad_k, "cfg:k"
        return c
    if what == "shape":
        c = static_case(rng, cfg)
        c.kind = "shape"
        sh = c.shape
        how = rng.choice(["parent", "size", "rank"])
        c.label = f"shape:{how}"
        if how == "size":
            n = cfg.N + 1 + rng.randint(0, 2)
            c.shape = [-1] + [rng.randint(0, min(i, cfg.N) - 1) for i in range(1, n)]
        elif how == "rank" and c.k < 16:
            c.shape = random_shape(rng, cfg.N, 16)
            kids = max(c.shape[1:].count(j) for j in range(len(c.shape))) if len(c.shape) > 1 else 0
            if kids >= 2:
                c.k = rng.randint(1, kids - 1)
            else:  # one more child of the root than K
                c.k = rng.randint(1, min(15, cfg.N - 2))
                c.shape = [-1] + [0] * (c.k + 1)
        else:
            c.label = "shape:parent"
            if len(sh) < 2:
                sh = [-1, 0]
            x = rng.randint(1, len(sh) - 1)
            sh = list(sh)
            sh[x] = rng.randint(x, cfg.N - 1)
            c.shape = sh
        return c
    c = static_case(rng, cfg) if rng.random() < 0.5 else dynamic_case(rng, cfg)
    if c.mode == MODE_STATIC and len(c.shape) < 2:
        c.shape = [-1, 0]
    if c.mode == MODE_DYNAMIC and c.m < 2:
        c.m = 2
    c.kind, c.label = "dist", "dist"
    return c


def finish(case: Case, cfg: Cfg, rng: random.Random) -> Case:
    """The expected requests and beats of ``case`` (golden)."""
    if case.kind in ("cfg", "shape"):
        return case
    if case.mode == MODE_STATIC:
        expect_static(case, cfg)
    else:
        expect_dynamic(case, cfg)
    if case.kind == "dist":
        if not case.reqs:  # nothing to answer badly: make it a valid tree
            case.kind = "valid"
        else:
            case.bad_req = rng.randrange(len(case.reqs))
    return case


def spec_cases(cfg: Cfg) -> list[Case]:
    """SPEC §3.8's and (PROB_BITS 16, CONF_BITS 32, N_NODES >= 8) §3.9's check vectors."""
    out = []
    shape, k, table, parents, tokens = SPEC_STATIC
    if cfg.N >= len(shape) and cfg.vocab >= 4:
        c = finish(
            Case(MODE_STATIC, k, 4, 0, "table", shape=shape, table=table, label="spec38"),
            cfg,
            random.Random(0),
        )
        want = [
            {"parent": p, "end": 0, "token": t} for p, t in zip(parents[1:], tokens, strict=True)
        ]
        got = [{x: b[x] for x in ("parent", "end", "token")} for b in c.out[:-1]]
        assert got == want, f"golden disagrees with SPEC §3.8: {got}"
        out.append(c)
    if cfg.PB == 16 and cfg.CW == 32 and cfg.N >= 8 and cfg.vocab >= 4:
        for m, parents, tokens in SPEC_DYNAMIC:
            c = Case(MODE_DYNAMIC, 2, 4, 0, "table", m=m, d=3, w=2, table=SPEC_DYNAMIC_DISTS)
            c.label = f"spec39_M{m}"
            b = expect_dynamic(c, cfg)
            assert b.parents == parents and b.tokens[1:] == tokens, "golden disagrees with §3.9"
            assert b.cand_conf[1:6] == SPEC_DYNAMIC_CONF
            out.append(c)
    return out


def make_cases(rng: random.Random, cfg: Cfg, n: int, bad_rate: float) -> list[Case]:
    out = []
    for _ in range(n):
        r = rng.random()
        if r < bad_rate:
            c = bad_case(rng, cfg)
        elif cfg.ngram and r < bad_rate + 0.25:
            c = ngram_case(rng, cfg)
        elif rng.random() < 0.5:
            c = static_case(rng, cfg)
        else:
            c = dynamic_case(rng, cfg)
        out.append(finish(c, cfg, rng))
    return out


# ----------------------------------------------------------------------------- agents
class Draft:
    """The draft side: answers each request with its path's distribution, in order."""

    def __init__(self, tb: TB, cfg: Cfg, src: StreamSource, cases: list[Case]) -> None:
        self.tb, self.cfg, self.src = tb, cfg, src
        self.queue = [c for c in cases if c.requests]
        self.t = -1  # index into queue of the tree being drafted
        self.paths: dict[int, tuple[int, ...]] = {}
        self.got: list[list[tuple[int, int, int]]] = [[] for _ in self.queue]
        self.req_cycles: list[list[int]] = [[] for _ in self.queue]
        self.dist_end: list[int] = [0] * len(self.queue)  # beats sent per tree (to find the last)
        self.beats: list[int] = [0] * len(self.queue)
        self.stray: list[tuple[int, int, int]] = []

    def on_req(self, cycle: int, r: dict) -> None:
        node, parent, token = r["node"], r["parent"], r["token"]
        if node == 0:
            self.t += 1
            self.paths = {0: ()}
        if not 0 <= self.t < len(self.queue):
            self.stray.append((node, parent, token))
            return
        case = self.queue[self.t]
        if node != 0:
            self.paths[node] = self.paths.get(parent, ()) + (token,)
        idx = len(self.got[self.t])
        self.got[self.t].append((node, parent, token))
        self.req_cycles[self.t].append(cycle)
        if idx == case.bad_req:
            q = [1] * (self.cfg.vocab + 1 + self.tb.rng.randint(0, 2 * self.cfg.L))
        else:
            q = dist_for(case, self.cfg, self.paths[node])
        beats = dist_beats(q, self.cfg.L)
        self.beats[self.t] += len(beats)
        for b in beats:
            self.src.send(b)


def shape_beats(shape: list[int]) -> list[dict]:
    return [{"parent": p, "end": 0} for p in shape[1:]] + [{"parent": 0, "end": 1}]
