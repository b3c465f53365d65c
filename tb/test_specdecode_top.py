"""The chip top (hw/specdecode_top.py) through the chip model's ``rtl`` backend (sim/rtl/).

One co-simulation of ``specdecode_top`` per test module and xdist worker, at
a small, odd parameter set (every range error reachable in the RTL:
``SEQS = 6`` and ``N_NODES = 12`` leave port values past the ranges;
``PAGES < ENTRIES`` makes "no free page" distinct from "table full"):

* tree manager: random seeded steps (random, chain, star, full, deep and
  single-node trees; ``pt``/``qt`` corners; random residual weights) against
  ``golden.tree.mask_rows``, ``golden.rng.LaneRNG``, ``golden.accept.decide``
  and ``golden.sampler.sample_weights``, with every phase's cycle count
  against :func:`sim.cycles.accept_cycles`; reseeding; every bad input;
* KV pool: a random operation mix against ``golden.kvcache.BlockTable``
  (results, freed pages, errors and their codes, counts, batched lookups
  through view masks), the table compared by lookups at the end, and the
  SPEC §6 cycle counts;
* the co-simulation itself: a killed simulator, a hung one and a closed
  one raise :class:`sim.rtl.RTLSimError` instead of hanging.

Seeds: ``SIM_SEED`` fixes them; every randomised test prints its seed on
failure.
"""

import gc
import math
import os
import random
import shutil
import signal
import time
import warnings

import numpy as np
import pytest

from golden import accept, tree
from golden.kvcache import BlockTable, KVErr, KVError
from golden.rng import LaneRNG
from golden.sampler import sample_weights
from sim.backend import KVBackend, TreeManagerBackend
from sim.cycles import accept_cycles
from sim.rtl import RTLSimError, RTLTreeManager, hdl_params, open_rtl
from tb.common import SKIP_UNLESS_FULL, random_step, random_tree

#: the co-simulated parameter set (lower-case ``open_rtl`` names); the tree builder and
#: the topology optimiser, which these tests do not drive, at small sizes (``tests/
#: test_chip_rtl.py`` runs them at the defaults): a fifth less Verilog to build. The
#: extra token by the one-pass token select (``select_lanes``; the two-pass sampler is
#: the default top's, in tests/test_chip_rtl.py)
HP = dict(
    n_nodes=12, entries=48, pages=40, seqs=6, layer_bits=3, pos_bits=6, lanes=3, token_bits=17,
    conf_bits=16, c_max=32, d_max=3, r=2, acc_bits=8, nb=2, win=4, select_lanes=8,
)  # fmt: skip
#: the one-pass select's sampler cycles: the model's bound (``ceil(V / L) + 8``) or up to
#: this many fewer (``+ 6 .. + 8`` on the RTL, tb/test_tree_manager.py)
SELECT_SLACK = 2
STEPS = 200
OPS = 4000


def _seed() -> int:
    s = os.environ.get("SIM_SEED")
    return int(s) if s else random.randrange(1 << 30)


@pytest.fixture(scope="module")
def rtl():
    # the testbenches' C++ flags (the model at toolchain.MODEL_OPT, the shared run-time
    # library), not the chip model's -CFLAGS -O1: no run-time library of its own to compile
    with open_rtl(**HP, build_args=()) as backends:
        yield backends


# ----------------------------------------------------------------------------- tree manager
def _vocab(rng: random.Random) -> int:
    return rng.choice([1, 2, rng.randint(1, 40), rng.randint(40, 300)])


def _weights(rng: random.Random, wb: int, V: int) -> list[int]:
    w = [rng.randrange(1 << wb) if rng.random() < 0.7 else 0 for _ in range(V)]
    w[rng.randrange(V)] = rng.randint(1, (1 << wb) - 1)
    return w


def test_protocols(rtl) -> None:
    tm, kv = rtl
    assert isinstance(tm, TreeManagerBackend)
    assert isinstance(kv, KVBackend)
    assert (tm.n_nodes, tm.prob_bits, tm.rand_bits, tm.weight_bits) == (12, 16, 16, 16)


def test_tree_steps_match_golden(rtl) -> None:
    _tree_steps(rtl[0], STEPS)


@pytest.mark.full  # a top of 1,024 nodes: a build of minutes (make sim-full)
@SKIP_UNLESS_FULL
def test_tree_steps_at_1024_nodes() -> None:
    """The top at ``N_NODES = 1,024`` (the one-pass select at 64 lanes): 220 random trees,
    1,024-node chains and stars among them, against golden."""
    hp = {**HP, "n_nodes": 1024, "select_lanes": 64}
    with open_rtl(**hp, build_args=(), timeout=1800) as (tm, kv):
        _tree_steps(tm, 220)
        _kv_views(kv, hp, 400)


def _kv_views(kv, p: dict, n_lookups: int) -> None:
    """Speculative entries of owners across the whole node range, and lookups through
    random views and mask rows, against golden (the pool's lookup latency is
    ``hw.kv_pool.lookup_cycles``: 2 above 256 nodes)."""
    seed = _seed()
    rng = random.Random(seed)
    N, S = p["n_nodes"], p["seqs"]
    bt = BlockTable(p["entries"], p["pages"], S, N, p["layer_bits"], p["pos_bits"])
    _empty(kv)
    for _ in range(p["entries"] - 4):
        args = (rng.randrange(S), rng.randrange(2), rng.randrange(4), rng.randrange(N), False)
        want, wcode = _gold(bt.insert, *args)
        try:
            got, gcode = kv.insert(*args), None
        except KVError as e:
            got, gcode = None, e.code
        assert (got, gcode) == (want, wcode), f"seed {seed}: insert {args}"
    par = random_tree(rng, N)
    rows = tree.mask_rows(par)
    qs = [
        (rng.randrange(S), rng.randrange(2), rng.randrange(4),
         rng.choice([rng.choice(rows), rng.randrange(1 << N), (1 << N) - 1]))
        for _ in range(n_lookups)
    ]  # fmt: skip
    want = [bt.lookup(*q) for q in qs]
    assert kv.lookups(qs) == want, f"seed {seed}"
    assert sum(w is not None for w in want) > n_lookups // 10, f"seed {seed}: too few hits"
    _empty(kv)


def _tree_steps(tm: RTLTreeManager, n_steps: int) -> None:
    """``n_steps`` random steps (a reseed half-way) against golden: rows, decision, tokens,
    the extra token, the residuals asked for, every phase's cycles."""
    seed = _seed()
    rng = random.Random(seed)
    N, PB, RB, WB, TB_ = tm.n_nodes, tm.prob_bits, tm.rand_bits, tm.weight_bits, tm.token_bits
    lane_seed = rng.randrange(1 << 64)
    tm.seed(lane_seed)
    lanes = LaneRNG(lane_seed, N)
    sl = tm.select_lanes
    one_pass = sl > 0
    sampler = "one_pass" if one_pass else "two_pass"
    bad = []
    for step in range(n_steps):
        if step == n_steps // 2:  # reseed mid-run
            lane_seed = rng.choice([0, 1, (1 << 64) - 1, rng.randrange(1 << 64)])
            tm.seed(lane_seed)
            lanes = LaneRNG(lane_seed, N)
        par, tok, pt, qt = random_step(rng, N, PB, TB_)
        V = _vocab(rng)
        ws = [_weights(rng, WB, V) for _ in par]  # every node's residual: one-pass asks all
        asked: list[int] = []

        def residual(last: int, ws=ws, asked=asked) -> list[int]:
            asked.append(last)
            return ws[last]

        got = tm.step(par, tok, pt, qt, residual)
        out = lanes.next()
        u = (out >> np.uint32(32 - RB)).astype(int).tolist()[: len(par)]
        d = accept.decide_detail(par, pt, qt, u, rand_bits=RB, prob_bits=PB)
        want = {
            "rows": tree.mask_rows(par),
            "last": d.last,
            "path_mask": d.path_mask,
            "accepted_tokens": [tok[j] for j in d.path[1:]],
            "extra": sample_weights(ws[d.last], int(out[0])),
            "asked": list(range(len(par))) if one_pass else [d.last],
        }
        have = {
            "rows": got.rows,
            "last": got.last,
            "path_mask": got.path_mask,
            "accepted_tokens": got.accepted_tokens,
            "extra": got.extra,
            "asked": asked,
        }
        if (got.last, got.path_mask) != accept.decide(par, pt, qt, u, rand_bits=RB, prob_bits=PB):
            bad.append((step, "decide"))
        for k in want:
            if have[k] != want[k]:
                bad.append((step, k, have[k], want[k]))
        model = accept_cycles(len(par), V, sl or tm.lanes, d.accepted, sampler=sampler)
        cyc = dict(got.cycles)
        s_rtl = cyc.pop("sampler")
        if not model.sampler - (SELECT_SLACK if one_pass else 0) <= s_rtl <= model.sampler:
            bad.append((step, "cycles[sampler]", s_rtl, model.sampler, len(par), V))
        for k, v in cyc.items():
            if v != getattr(model, k):
                bad.append((step, f"cycles[{k}]", v, getattr(model, k), len(par), V))
        # the measured critical path through the sampler: the model's post_verify
        # when the sampler is the longest branch (sim.cycles: decide + 1 hand-off)
        if tm.last_post_verify != model.load + model.decide + 1 + s_rtl:
            bad.append((step, "post_verify", tm.last_post_verify, model.post_verify))
    assert not bad, f"seed {seed}: {len(bad)} mismatches, first {bad[:5]}"
    assert set(got.cycles) == {"mask", "load", "decide", "sampler", "tokens"}


def test_tree_bad_input(rtl) -> None:
    tm, _kv = rtl
    seed = _seed()
    rng = random.Random(seed)
    lane_seed = rng.randrange(1 << 64)
    tm.seed(lane_seed)
    lanes = LaneRNG(lane_seed, tm.n_nodes)
    par, tok, pt, qt = [-1, 0, 0, 1], [0, 5, 6, 7], [0, 100, 200, 300], [0, 400, 500, 600]

    def w(last: int) -> list[int]:
        return [1, 2, 3]

    cases = [
        (([-1, 0, 2, 1], tok, pt, qt, w), r"parents\[2\] = 2"),
        (([0, 0, 0, 1], tok, pt, qt, w), r"parents\[0\] = 0"),
        (([-1] + [0] * tm.n_nodes, [0] * 13, [0] * 13, [0] * 13, w), "N_NODES = 12"),
        ((par, tok[:3], pt, qt, w), "tokens has 3 entries"),
        ((par, [0, 5, 1 << 17, 7], pt, qt, w), r"tokens\[2\] = 131072"),
        ((par, tok, [0, 100, 1 << 16, 300], qt, w), r"pt\[2\] = 65536"),
        ((par, tok, pt, [0, -1, 500, 600], w), r"qt\[1\] = -1"),
        ((par, tok, pt, [0, True, 500, 600], w), r"qt\[1\] = True"),
        ((par, tok, pt, [0, 1.5, 500, 600], w), r"qt\[1\] = 1.5"),
    ]
    for args, msg in cases:
        with pytest.raises(ValueError, match=msg):
            tm.step(*args)
    # bad residual weights: nothing drawn. Two-pass: the tree was decided (the lanes
    # moved); one-pass: every node's residual is checked before the tree is sent
    bad_w = [
        ([0, 0, 0], "all zero"),
        ([], "non-empty"),
        ([1, 1 << 16], r"weights\[1\] = 65536"),
        ([1, -2], r"weights\[1\] = -2"),
        ([0.5, 1.0], "integers"),
        ([1] * ((1 << 17) + 1), "2\\*\\*token_bits"),
    ]
    for ws, msg in bad_w:
        with pytest.raises(ValueError, match=msg):
            tm.step(par, tok, pt, qt, lambda last, ws=ws: ws)
        if not tm.select_lanes:
            lanes.next()
    with pytest.raises(ValueError, match="seed = "):
        tm.seed(1 << 64)
    with pytest.raises(ValueError, match="seed = "):
        tm.seed(-1)
    # nothing left half done: the next step matches golden
    got = tm.step(par, tok, pt, qt, w)
    out = lanes.next()
    u = (out >> np.uint32(16)).astype(int).tolist()[:4]
    assert (got.last, got.path_mask) == accept.decide(par, pt, qt, u), f"seed {seed}"
    assert got.extra == sample_weights([1, 2, 3], int(out[0])), f"seed {seed}"


def test_step_before_seed(rtl) -> None:
    tm, _kv = rtl
    fresh = RTLTreeManager(tm._sim)
    with pytest.raises(ValueError, match="never seeded"):
        fresh.step([-1], [0], [0], [0], lambda last: [1])


# ----------------------------------------------------------------------------- KV pool
def _empty(kv) -> None:
    """Release every sequence (the pool is shared by this module's tests)."""
    for s in range(HP["seqs"]):
        try:
            kv.release(s)
        except KVError as e:
            assert e.code == KVErr.NOTHING_SEEN, e


def _gold(fn, *args):
    """``(value, None)`` or ``(None, code)``."""
    try:
        return fn(*args), None
    except KVError as e:
        return None, e.code


def test_kv_views_match_golden(rtl) -> None:
    _kv_views(rtl[1], HP, 200)


def test_kv_random_ops_match_golden(rtl) -> None:
    _tm, kv = rtl
    seed = _seed()
    rng = random.Random(seed)
    p = HP
    bt = BlockTable(
        p["entries"], p["pages"], p["seqs"], p["n_nodes"], p["layer_bits"], p["pos_bits"]
    )
    _empty(kv)  # the pool is shared by the module's tests
    assert kv.valid_entries == 0 and kv.free_pages == p["pages"], f"seed {seed}"
    S, N = p["seqs"], p["n_nodes"]
    LAY, POS = 3, 6  # a few layers and positions: many key collisions
    bad: list = []
    kinds = {
        "insert": 40,
        "insert_c": 12,
        "commit": 12,
        "fork": 6,
        "release": 6,
        "lookups": 14,
        "bad": 10,
    }
    names, weights = zip(*kinds.items(), strict=True)
    counts: dict[str, int] = {}
    cycles0 = kv.cycles
    expect_cycles = 0

    def view_of() -> int:
        par = random_tree(rng, N)
        rows = tree.mask_rows(par)
        return rng.choice(rows) if rng.random() < 0.8 else rng.randrange(1 << N)

    for k in range(OPS):
        kind = rng.choices(names, weights)[0]
        seq = rng.randrange(S)
        if kind == "lookups":
            qs = [
                (rng.randrange(S), rng.randrange(LAY), rng.randrange(POS), view_of())
                for _ in range(rng.randint(1, 9))
            ]
            want = [bt.lookup(*q) for q in qs]
            got = kv.lookups(qs)
            expect_cycles += math.ceil(len(qs) / 2)
            if got != want:
                bad.append((k, kind, qs, got, want))
            counts[kind] = counts.get(kind, 0) + 1
            continue
        if kind in ("insert", "insert_c"):
            args = (
                seq,
                rng.randrange(LAY),
                rng.randrange(POS),
                rng.randrange(N),
                kind == "insert_c",
            )
            fn = "insert"
        elif kind == "commit":
            spec = bt.speculative(seq)
            if spec and rng.random() < 0.9:
                par = random_tree(rng, N)
                acc = rng.choice(tree.mask_rows(par))
            else:
                acc = rng.randrange(1 << N)
            args, fn = (seq, acc), "commit"
            # the RTL leaves the two-committed check to its caller (documented deviation)
            if _gold(bt.copy().commit, *args)[1] == KVErr.TWO_COMMITTED:
                continue
        elif kind == "fork":
            args, fn = (seq, rng.randrange(S)), "fork"
        elif kind == "release":
            args, fn = (seq,), "release"
        else:  # values the RTL flags (seq 6..7, owner 12..15) or the client rejects
            fn = rng.choice(["insert", "commit", "fork", "release", "lookup"])
            big_seq = rng.choice([6, 7, 8, 100, -1, True, 2.0])
            if fn == "insert":
                args = rng.choice(
                    [
                        (big_seq, 0, 0, 0, False),
                        (seq, 0, 0, rng.choice([12, 15, 16, -1, 99]), False),
                        (seq, rng.choice([8, -1]), 0, 0, False),
                        (seq, 0, rng.choice([64, -3]), 0, True),
                        (seq, 0, 0, 0, rng.choice([2, -1, "x"])),
                        (7, 9, 0, 0, False),  # RTL-range seq, then a field no port carries
                        (6, 0, 0, 99, False),
                    ]
                )
            elif fn == "commit":
                args = rng.choice([(big_seq, 1), (seq, 1 << N), (seq, -1), (7, 1 << N)])
            elif fn == "fork":
                args = rng.choice([(big_seq, 0), (seq, big_seq), (seq, seq), (6, 7)])
            elif fn == "release":
                args = (big_seq,)
            else:
                args = rng.choice(
                    [(big_seq, 0, 0, 0), (seq, 0, 0, 1 << N), (6, 0, 0, 0), (7, 8, 0, 0)]
                )
        want, wcode = _gold(getattr(bt, fn), *args)
        c0 = kv.cycles
        try:
            got, gcode = getattr(kv, fn)(*args), None
        except KVError as e:
            got, gcode = None, e.code
        sent = kv.cycles - c0
        expect_cycles += sent
        counts[f"{kind}:{wcode.name if wcode else 'ok'}"] = (
            counts.get(f"{kind}:{wcode.name if wcode else 'ok'}", 0) + 1
        )
        if (got, gcode) != (want, wcode):
            bad.append((k, fn, args, (got, gcode), (want, wcode)))
        if (kv.free_pages, kv.valid_entries) != (bt.free_pages, bt.valid_entries):
            bad.append(
                (k, "counts", (kv.free_pages, kv.valid_entries), (bt.free_pages, bt.valid_entries))
            )
        if bad:
            break
        if bt.free_pages == 0 and rng.random() < 0.5:  # drain a full table now and then
            s = rng.choice([s for s in range(S) if bt.sees(s)])
            assert kv.release(s) == bt.release(s)
            expect_cycles += 1
    assert not bad, f"seed {seed}: first mismatch {bad[0]}"
    assert kv.cycles - cycles0 == expect_cycles, f"seed {seed}"
    # the whole table, by lookups: every key of every sequence, all views
    qs = [(s, la, po, (1 << N) - 1) for s in range(S) for la in range(LAY) for po in range(POS)]
    assert kv.lookups(qs) == [bt.lookup(*q) for q in qs], f"seed {seed}"
    # the mix reached the corners (a generator that never fills the table proves little)
    seen = set(counts)
    for want_kind in ("insert:ok", "insert_c:ok", "commit:ok", "fork:ok", "release:ok", "lookups"):
        assert want_kind in seen, f"seed {seed}: no {want_kind} in {sorted(seen)}"
    for code in ("SEQ_RANGE", "OWNER_RANGE", "FIELD", "DST_RANGE"):
        assert f"bad:{code}" in seen, f"seed {seed}: no bad:{code} in {sorted(seen)}"


def test_kv_errors_name_fields(rtl) -> None:
    _tm, kv = rtl
    with pytest.raises(KVError, match="seq = 100") as e:
        kv.insert(100, 0, 0)
    assert e.value.code == KVErr.SEQ_RANGE
    with pytest.raises(KVError, match="seq = 6") as e:  # carried by the port, flagged by the RTL
        kv.insert(6, 0, 0)
    assert e.value.code == KVErr.SEQ_RANGE and "[RTL]" in str(e.value)
    with pytest.raises(KVError, match="owner = 13") as e:
        kv.insert(0, 0, 0, 13)
    assert e.value.code == KVErr.OWNER_RANGE
    with pytest.raises(KVError, match="layer = 8") as e:
        kv.insert(0, 8, 0)
    assert e.value.code == KVErr.FIELD
    with pytest.raises(KVError, match="view = ") as e:
        kv.lookups([(0, 0, 0, 0), (0, 0, 0, 1 << 12)])
    assert e.value.code == KVErr.FIELD
    with pytest.raises(KVError, match="query = "):
        kv.lookups([(0, 0, 0)])
    with pytest.raises(KVError, match="committed = "):
        kv.insert(0, 0, 0, 0, 3)
    with pytest.raises(KVError, match="dst = 7") as e:
        kv.fork(0, 7)
    assert e.value.code == KVErr.DST_RANGE


def test_kv_cycles(rtl) -> None:
    """SPEC §6: an operation is one cycle, its result 2 later; inserts 1 per cycle
    sustained; lookups one per port per cycle, the reply one cycle after."""
    _tm, kv = rtl
    seq = 5
    _empty(kv)
    c0 = kv.cycles
    kv.insert(seq, 1, 1, 1)
    assert kv.cycles - c0 == 1
    kv.commit(seq, 0b11)
    assert kv.last_op_cycles == accept_cycles(3, 4).commit == 3
    c0 = kv.cycles
    assert kv.lookups([(seq, 1, 1, 0)] * 5) == [kv.lookup(seq, 1, 1)] * 5
    assert kv.cycles - c0 == 3 + 1
    # sustained: a batch of inserts on the raw request, one result per cycle
    ops = [(0, seq, 0, 2, p, 0, 0, 0) for p in range(6)]
    rep = kv._sim.call("ops", ops=ops)
    ts = [r["t"] for r in rep["results"]]
    assert ts == list(range(rep["t0"] + 2, rep["t0"] + 8)), ts
    assert [r["page"] for r in rep["results"]] == sorted(r["page"] for r in rep["results"])
    rep = kv._sim.call("lookups", queries=[(seq, 2, p, 1) for p in range(6)])
    assert rep["issue"] == 3
    assert [h for h, _e, _p in rep["replies"]] == [1] * 6
    kv.release(seq)


# ----------------------------------------------------------------------------- the co-simulation
def _alive(pgid: int, wait: float = 5.0) -> list[int]:
    """Processes of group ``pgid`` that are not zombies, after up to ``wait`` seconds
    for killed ones to finish exiting."""
    deadline = time.monotonic() + wait
    while True:
        left = _group(pgid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def _group(pgid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in "ZX":
            out.append(int(d))
    return out


def test_killed_simulation_raises() -> None:
    with open_rtl(**HP, build_args=()) as (tm, kv):
        sim = kv._sim
        pid = sim.pid
        assert kv.insert(0, 0, 0) == 0
        os.killpg(pid, signal.SIGKILL)
        t = time.monotonic()
        with pytest.raises(RTLSimError, match="simulator"):
            kv.insert(0, 0, 1)
        assert time.monotonic() - t < 10
        with pytest.raises(RTLSimError, match="closed"):
            tm.seed(1)
    assert not _alive(pid)
    assert (sim.run_dir / "sim.log").exists(), "logs kept after a failure"
    shutil.rmtree(sim.run_dir)


def test_hung_simulation_times_out() -> None:
    with open_rtl(**HP, build_args=(), timeout=3) as (_tm, kv):
        pid = kv._sim.pid
        os.killpg(pid, signal.SIGSTOP)
        t = time.monotonic()
        with pytest.raises(RTLSimError, match="no reply within 3 s"):
            kv.lookups([(0, 0, 0, 0)])
        assert time.monotonic() - t < 15
    assert not _alive(pid)
    shutil.rmtree(kv._sim.run_dir)


def test_closed_simulation_raises() -> None:
    with open_rtl(**HP, build_args=()) as (tm, kv):
        pid = kv._sim.pid
        kv.insert(1, 0, 0)
    assert not _alive(pid)
    assert not kv._sim.run_dir.exists(), "logs removed after a clean close"
    with pytest.raises(RTLSimError, match="closed"):
        kv.insert(0, 0, 0)
    with pytest.raises(RTLSimError, match="closed"):
        tm.step([-1], [0], [0], [0], lambda last: [1])


def test_exception_in_block_ends_simulation() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with open_rtl(**HP, build_args=()) as (_tm, kv):
            pid = kv._sim.pid
            raise RuntimeError("boom")
    assert not _alive(pid)


def test_open_rtl_bad_parameters() -> None:
    for kw, msg in [
        ({"n_nodes": 3}, "n_nodes = 3"),
        ({"n_nodes": 1025}, "n_nodes = 1025"),
        ({"select_lanes": 3}, "select_lanes = 3"),
        ({"entries": 1}, "entries = 1"),
        ({"seqs": 65}, "seqs = 65"),
        ({"lanes": True}, "lanes = True"),
        ({"pos_bits": "8"}, "pos_bits = '8'"),
        ({"timeout": 0}, "timeout = 0"),
    ]:
        with pytest.raises(ValueError, match=msg):
            with open_rtl(**kw):
                pass
    with pytest.raises(ValueError, match="unknown parameter"):
        hdl_params(nodes=4)


def test_top_params_match_signature() -> None:
    from amaranth.hdl import UnusedElaboratable

    from flows import verilog
    from hw.specdecode_top import PARAMS, Top

    assert verilog.block_params("specdecode_top") == {k: p.default for k, p in PARAMS.items()}
    # a component built and never elaborated is reported when collected: expected here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        top = Top(N_NODES=8, ENTRIES=16, PAGES=16)
        names = set(top.signature.members)
        del top
        gc.collect()
    assert {"tm_i", "tm_w", "tm_extra", "kv_op", "kv_res", "kv_verify_q", "kv_error"} <= names
