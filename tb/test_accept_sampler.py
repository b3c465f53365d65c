"""Testbench: acceptance sampler (hw/accept_sampler.py) against golden.accept (SPEC §3.2, §3.3, §6).

Driver: node beats on ``i`` (idle patterns) and, per tree, the uniforms on
``u`` (a small agent writes a tree's ``u`` in the cycle its first beat goes
up, holds it until its last beat is taken, and writes garbage between trees,
so a block that samples ``u`` late fails). Monitors: ``result`` and
``tokens`` (backpressure patterns on both) and ``error`` pulses. Model:
``golden.accept.decide_detail`` (``last``, ``path_mask``, ``path``) and
``golden.tree.mask_rows`` (the rows the driver sends; a tree is invalid where
``golden.tree.validate`` or ``mask_rows`` of its prefix disagrees with a beat).
Scoreboard: every valid tree's result beat and its path tokens in depth
order, in tree order; for an invalid tree one ``error`` pulse the second cycle
after its first bad beat is taken (its stage-1 check) and nothing emitted.

Trees overlap freely: the driver never waits for a result before sending the
next tree (the block takes the next tree while the previous one emits),
except in the ``latency`` test, which sends one tree at a time to measure the
unloaded latency against SPEC §6.
"""

import random

import numpy as np

from golden import accept as gaccept
from golden import tree as gtree
from hw.accept_sampler import node_layout, result_layout, token_layout
from tb.common import (
    TB,
    ErrorMon,
    StreamSink,
    StreamSource,
    params,
    random_tree,
    report,
    run_block,
    trees_for,
)

TREES = 1200  # full-speed run, per parameter set
TREES_PATTERNS = 150  # in each idle/backpressure run (6 runs)
TREES_ERRORS = 150  # in each error run (4 runs, ~30% invalid)
TREES_LATENCY = 60  # one at a time
#: cycles from a bad beat's stamp to its error pulse (checked in stage 1, pulsed after it)
ERROR_LATENCY = 2

# SPEC §6: accept bits 1 cycle after the last node is loaded, path and `last`
# within 2 more; the registered result beat then transfers on the next edge.
RESULT_LATENCY = 1 + 2 + 1  # edges from the last input transfer to the result transfer
TOKEN_LATENCY = 5  # the last token transfers TOKEN_LATENCY + accepted edges after the last input
TREE_GAP = 3  # best case: a tree's first beat 3 edges after the previous tree's last (n + 2)


# ----------------------------------------------------------------------------- stimulus
def random_probs(rng: random.Random, n: int, P: int, R: int) -> tuple[list, list, list]:
    """pt, qt, u per node with the corners: qt = 0, pt max, u = 0 / max, exact ties."""
    pmax, umax = (1 << P) - 1, (1 << R) - 1
    mode = rng.choice(["random", "random", "mixed", "mixed", "all", "none", "high"])
    pt, qt, u = [], [], []
    for _ in range(n):
        m = mode
        if mode == "mixed":
            m = rng.choice(["random", "qt0", "ptmax", "u0", "umax", "all", "none", "tie", "high"])
        a, b, c = rng.randint(0, pmax), rng.randint(0, pmax), rng.randint(0, umax)
        if m == "all":  # pt = qt = max: u * qt < pt << R for every u
            a = b = pmax
        elif m == "none":
            a = 0
        elif m == "qt0":
            b = 0
        elif m == "ptmax":
            a = pmax
        elif m == "u0":
            c = 0
        elif m == "umax":
            c = umax
        elif m == "high":  # accept likely: deep paths
            a = rng.randint(pmax // 2, pmax)
            b = rng.randint(0, a)
        elif m == "tie":  # u * qt within 1 of pt << R (equal: reject)
            prod = c * b
            a = min(pmax, max(0, (prod >> R) + rng.choice([-1, 0, 0, 1])))
            if rng.random() < 0.5 and R <= P:
                c = 1 << (R - 1)
                b = rng.randint(0, pmax // 2) * 2
                a = min(pmax, (c * b) >> R)
        pt.append(a)
        qt.append(b)
        u.append(c)
    return pt, qt, u


class Tree:
    """One tree as sent: beats, u, and (when valid) the golden decision."""

    def __init__(self, tid: int, beats: list[dict], u: list[int], N: int, R: int, P: int) -> None:
        self.tid, self.beats, self.u = tid, beats, u
        for b in beats:
            b["_tree"] = tid
        self.bad_at = first_invalid(beats, N)
        self.valid = self.bad_at is None
        self.decision = None
        self.tokens: list[int] = []
        if self.valid:
            n = len(beats)
            par = [-1] + [b["parent"] for b in beats[1:]]
            d = gaccept.decide_detail(
                par,
                np.array([b["pt"] for b in beats], dtype=np.int64),
                np.array([b["qt"] for b in beats], dtype=np.int64),
                np.array(u[:n], dtype=np.int64),
                rand_bits=R,
                prob_bits=P,
            )
            self.decision = d
            self.tokens = [beats[j]["token"] for j in d.path[1:]]


def first_invalid(beats: list[dict], N: int) -> int | None:
    """Index of the first beat the block must reject (SPEC §2: index, parent, node count,
    row; the rows built one node at a time, linear in the tree). A tree with none is
    checked against ``golden.tree`` once: it validates and its rows are golden's."""
    par, rows = [-1], [1]
    for k, b in enumerate(beats):
        if k >= N or b["node"] != k:
            return k
        if k:
            p = b["parent"]
            if not 0 <= p < k:
                return k
            par.append(p)
            rows.append(rows[p] | (1 << k))
        if b["row"] != rows[k]:
            return k
    gtree.validate(par, max_nodes=N)
    assert rows == gtree.mask_rows(par), "the testbench's rows differ from golden's"
    return None


def valid_tree(rng: random.Random, tid: int, N: int, T: int, P: int, R: int) -> Tree:
    par = random_tree(rng, N)
    n = len(par)
    rows = gtree.mask_rows(par)
    pt, qt, u = random_probs(rng, n, P, R)
    beats = [
        {
            "node": k,
            "parent": par[k] if k else rng.randrange(1 << _b(N)),  # root: ignored
            "token": rng.randrange(1 << T),
            "pt": pt[k],
            "qt": qt[k],
            "row": rows[k],
            "last": int(k == n - 1),
        }
        for k in range(n)
    ]
    u_all = [rng.randrange(1 << R) for _ in range(N)]  # u[0] and unused lanes: garbage
    u_all[1:n] = u[1:]
    return Tree(tid, beats, u_all, N, R, P)


def bad_tree(rng: random.Random, tid: int, N: int, T: int, P: int, R: int) -> Tree:
    """A tree with one defect: node out of sequence, parent >= node, too many nodes, bad row."""
    B = _b(N)
    kind = rng.choice(["seq", "parent", "many", "row", "row0"])
    if kind == "many":
        n = N + rng.randint(1, 3)
        par = [-1] + [rng.randint(0, i - 1) for i in range(1, N)]
        t = valid_tree(rng, tid, N, T, P, R)
        rows = gtree.mask_rows(par)
        beats = []
        for k in range(n):
            beats.append(
                {
                    "node": k % (1 << B),
                    "parent": par[k] if 0 < k < N else rng.randrange(1 << B),
                    "token": rng.randrange(1 << T),
                    "pt": rng.randrange(1 << P),
                    "qt": rng.randrange(1 << P),
                    "row": rows[k] if k < N else rng.randrange(1 << N),
                    "last": int(k == n - 1),
                }
            )
        return Tree(tid, beats, t.u, N, R, P)
    t = valid_tree(rng, tid, N, T, P, R)
    beats = t.beats
    n = len(beats)
    if kind in ("seq", "row0") or n == 1:
        k = 0 if kind == "row0" else rng.randrange(n)
    else:
        k = rng.randint(1, n - 1)
    b = beats[k]
    if kind == "seq":
        b["node"] = rng.choice([x for x in range(1 << B) if x != k])
    elif kind == "parent" and k >= 1:
        b["parent"] = rng.randint(k, (1 << B) - 1)
    elif kind == "row0" or k == 0:
        b["row"] = rng.choice([0, 3, rng.randrange(1 << N) | 2, 1 << rng.randrange(N)])
        if b["row"] == 1:
            b["row"] = 0
    else:
        b["row"] ^= 1 << rng.randrange(N)
    return Tree(tid, beats, t.u, N, R, P)


def _b(n: int) -> int:
    return max(1, (n - 1).bit_length())


# ----------------------------------------------------------------------------- agents
class UDriver:
    """Writes a tree's ``u`` when its first beat goes up; garbage between trees."""

    def __init__(self, tb: TB, src: StreamSource, trees: dict, N: int, R: int) -> None:
        self.tb, self.src, self.trees, self.N, self.R = tb, src, trees, N, R
        self.shape_w = R
        self.cur = None  # tree id whose u is on the port, "x" for garbage
        self.writes = 0
        tb.add(self)

    def _write(self, vals: list[int]) -> None:
        v = 0
        for k, x in enumerate(vals):
            v |= x << (k * self.R)
        self.tb.dut.u.value = v
        self.writes += 1

    def drive(self) -> None:
        cur = self.src.current
        if cur is not None:
            if cur["_tree"] != self.cur:
                self.cur = cur["_tree"]
                self._write(self.trees[self.cur].u)
        elif self.cur != "x" and (not self.src.sent or self.src.sent[-1][1]["last"]):
            self.cur = "x"  # between trees: u may change, so change it
            self._write([self.tb.rng.randrange(1 << self.R) for _ in range(self.N)])

    def sample(self) -> None:
        pass


# ----------------------------------------------------------------------------- scoreboard
class Scoreboard:
    """Result and token streams, tree by tree, against golden.accept."""

    def __init__(self, tb: TB) -> None:
        self.tb = tb
        self.trees: list[Tree] = []
        self.checked = self.mismatches = 0

    def fail(self, msg: str) -> None:
        self.mismatches += 1
        if self.mismatches <= 5:
            self.tb.log.error("seed %d: %s", self.tb.seed, msg)

    def expected_results(self) -> int:
        return sum(t.valid for t in self.trees)

    def expected_tokens(self) -> int:
        return sum(len(t.tokens) for t in self.trees if t.valid)

    def check(self, sent: list, results: list, tokens: list, pulses: list) -> None:
        valid = [t for t in self.trees if t.valid]
        if len(results) != len(valid):
            self.fail(f"{len(results)} result beats, want {len(valid)}")
        want_tok = [
            (tok, int(k == len(t.tokens) - 1)) for t in valid for k, tok in enumerate(t.tokens)
        ]
        got_tok = [(b["token"], b["last"]) for _, b in tokens]
        if len(got_tok) != len(want_tok):
            self.fail(f"{len(got_tok)} token beats, want {len(want_tok)}")
        k = 0
        for t, (_, r) in zip(valid, results, strict=False):
            d = t.decision
            want = {"last": d.last, "path_mask": d.path_mask, "accepted": d.accepted}
            if r != want:
                self.fail(f"tree {t.tid} (n={len(t.beats)}): result {r}, want {want}")
            got = got_tok[k : k + len(t.tokens)]
            wt = want_tok[k : k + len(t.tokens)]
            if got != wt:
                self.fail(f"tree {t.tid}: tokens {got}, want {wt} (path {d.path})")
            k += len(t.tokens)
            self.checked += 1
        # error pulses: one per invalid tree, the second cycle after its first bad beat is
        # taken (``sent`` stamps the cycle whose closing edge takes a beat)
        stamps = {}
        i = 0
        for t in self.trees:
            stamps[t.tid] = [c for c, _ in sent[i : i + len(t.beats)]]
            i += len(t.beats)
        want_err = [stamps[t.tid][t.bad_at] + ERROR_LATENCY for t in self.trees if not t.valid]
        if pulses != want_err:
            self.fail(f"error pulses at {pulses[:8]}..., want {want_err[:8]}...")


# ----------------------------------------------------------------------------- runs
async def settle(
    tb: TB, src: StreamSource, res, tok, sb: Scoreboard, quiet: int = 300, step: int = 4
) -> None:
    """Wait until every beat is sent and every expected output has arrived, or
    until nothing moves for ``quiet`` cycles (then the scoreboard tells what is
    missing, instead of a bare timeout)."""
    nr, nt = sb.expected_results(), sb.expected_tokens()
    seen, since = -1, tb.cycle
    while not (src.idle and len(res.received) >= nr and len(tok.received) >= nt):
        act = len(src.sent) + len(res.received) + len(tok.received)
        if act != seen:
            seen, since = act, tb.cycle
        elif tb.cycle - since > quiet:
            tb.log.error("seed %d: no progress for %d cycles", tb.seed, quiet)
            return
        await tb.cycles(step)


async def run(
    dut,
    test: str,
    idle: str,
    backpressure: str,
    n_trees: int,
    bad_rate: float,
    one_at_a_time: bool = False,
) -> None:
    p = params()
    N, T, P, R = p["N_NODES"], p["TOKEN_BITS"], p["PROB_BITS"], p["RAND_BITS"]
    n_trees = trees_for(n_trees, N)  # 1,024 nodes: 552 trees over the ten runs
    tb = TB(dut)
    src = StreamSource(tb, "i", node_layout(N, T, P), idle)
    trees: dict[int, Tree] = {}
    UDriver(tb, src, trees, N, R)
    res = StreamSink(tb, "result", result_layout(N), backpressure)
    tok = StreamSink(tb, "tokens", token_layout(T), backpressure)
    err = ErrorMon(tb)
    sb = Scoreboard(tb)
    tb.dut.u.value = 0
    await tb.start()
    for tid in range(n_trees):
        mk = bad_tree if tb.rng.random() < bad_rate else valid_tree
        t = mk(tb.rng, tid, N, T, P, R)
        trees[tid] = t
        sb.trees.append(t)
        for b in t.beats:
            src.send(b)
        if one_at_a_time:
            await settle(tb, src, res, tok, sb)
            await tb.cycles(3)
    await settle(tb, src, res, tok, sb)
    await tb.cycles(30)  # anything extra would show up here
    sb.check(src.sent, res.received, tok.received, err.pulses)

    # latency and throughput, from the transfer stamps
    lat_res, lat_tok, first_tok, mid_gaps, tree_gaps = [], [], [], [], []
    if sb.mismatches:  # the streams do not line up with the trees: no timing
        sb.trees = []
    i = r = 0
    k = 0
    prev_end = None
    for t in sb.trees:
        stamps = [c for c, _ in src.sent[i : i + len(t.beats)]]
        i += len(t.beats)
        mid_gaps += [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
        if prev_end is not None:
            tree_gaps.append(stamps[0] - prev_end)
        prev_end = stamps[-1]
        if not t.valid:
            continue
        lat_res.append(res.received[r][0] - stamps[-1])
        r += 1
        if t.tokens:
            lat_tok.append(tok.received[k + len(t.tokens) - 1][0] - stamps[-1] - len(t.tokens))
            first_tok.append(tok.received[k][0] - stamps[-1])
        k += len(t.tokens)
    latency = ""
    if idle == "none" and backpressure == "none" and lat_res and not sb.mismatches:
        if one_at_a_time:
            if set(lat_res) != {RESULT_LATENCY}:
                sb.fail(f"result latency {sorted(set(lat_res))}, SPEC §6 allows {RESULT_LATENCY}")
            if lat_tok and set(lat_tok) != {TOKEN_LATENCY}:
                sb.fail(f"last token at {sorted(set(lat_tok))} + accepted, want {TOKEN_LATENCY}")
            latency = (
                f"result {lat_res[0]} (<= {RESULT_LATENCY}), first token {min(first_tok)}, "
                f"last token {lat_tok[0]}+accepted"
            )
        else:
            if min(lat_res) != RESULT_LATENCY:
                sb.fail(f"best result latency {min(lat_res)}, want {RESULT_LATENCY}")
            if mid_gaps and max(mid_gaps) != 1:
                sb.fail("beats of one tree not taken back to back at full speed")
            if not bad_rate and tree_gaps and min(tree_gaps) != TREE_GAP:
                sb.fail(f"best gap between trees {min(tree_gaps)}, documented {TREE_GAP}")
            latency = (
                f"result {min(lat_res)}..{max(lat_res)}, tree gap "
                f"{min(tree_gaps) if tree_gaps else '-'}..{max(tree_gaps) if tree_gaps else '-'}"
            )
        tb.log.info("latency: %s", latency)
    report(
        "accept_sampler",
        test,
        checked=sb.checked,
        mismatches=sb.mismatches,
        rejected=len(err.pulses),
        latency=latency,
    )
    assert sb.mismatches == 0, f"seed {tb.seed}: {sb.mismatches} mismatches"
    assert sb.checked > 0, f"seed {tb.seed}: nothing checked"


try:
    import cocotb
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def full_speed(dut) -> None:
        """Random trees back to back, no stalls, overlapping; throughput checked."""
        await run(dut, "full_speed", "none", "none", TREES, 0.0)

    @cocotb.test()
    async def latency(dut) -> None:
        """One tree at a time, no stalls: the SPEC §6 latency, exactly."""
        await run(dut, "latency", "none", "none", TREES_LATENCY, 0.0, one_at_a_time=True)

    @cocotb.test()
    @cocotb.parametrize(idle=["none", "random", "sparse"], backpressure=["random", "half"])
    async def patterns(dut, idle: str, backpressure: str) -> None:
        await run(dut, f"{idle}/{backpressure}", idle, backpressure, TREES_PATTERNS, 0.0)

    @cocotb.test()
    @cocotb.parametrize(idle=["none", "random"], backpressure=["none", "random"])
    async def errors(dut, idle: str, backpressure: str) -> None:
        """Invalid trees mixed with valid ones: error, nothing wrong, next tree fine."""
        await run(dut, f"{idle}/{backpressure}/errors", idle, backpressure, TREES_ERRORS, 0.3)


# ----------------------------------------------------------------------------- pytest
import pytest  # noqa: E402

from tb.common import FULL_ONLY, N_NODES_SETS  # noqa: E402


@pytest.mark.parametrize("n_nodes", [*N_NODES_SETS, pytest.param(1024, marks=FULL_ONLY)])
def test_accept_sampler(n_nodes: int) -> None:
    run_block("accept_sampler", {"N_NODES": n_nodes}, "tb.test_accept_sampler")


def test_accept_sampler_odd_widths() -> None:
    """N_NODES not a power of 2 and non-default widths (found a token-memory bug)."""
    run_block(
        "accept_sampler",
        {"N_NODES": 5, "TOKEN_BITS": 3, "PROB_BITS": 9, "RAND_BITS": 24},
        "tb.test_accept_sampler",
    )
