"""The two backends of :mod:`sim.backend` on one co-simulation, and :func:`open_rtl`."""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from golden import tree as _tree
from golden.draft import TreePolicy
from golden.kvcache import KVErr, KVError
from sim.backend import Query, TreeStep
from sim.rtl.build import DEFAULT_BUILD_ARGS, build_top, hdl_params
from sim.rtl.builder import BuiltTree, RTLTreePolicy, run_build
from sim.rtl.cosim import Cosim

_OPS = {"insert": 0, "commit": 1, "fork": 2, "release": 3}
_ERR_TEXT = {
    KVErr.SEQ_RANGE: "seq out of range",
    KVErr.DST_RANGE: "dst out of range",
    KVErr.OWNER_RANGE: "owner out of range",
    KVErr.SEEN_COMMITTED: "seq already sees a committed entry at (layer, pos)",
    KVErr.SPEC_DUP: "this speculative (seq, layer, pos, owner) entry already exists",
    KVErr.TABLE_FULL: "table full (no free entry)",
    KVErr.NO_PAGE: "no free page",
    KVErr.NO_SPEC: "seq has no speculative entry",
    KVErr.ROOT_CLEAR: "accept bit 0 (the root) is clear",
    KVErr.SAME_SEQ: "src and dst must differ",
    KVErr.SRC_EMPTY: "src sees no committed entry",
    KVErr.DST_BUSY: "dst already sees an entry",
    KVErr.NOTHING_SEEN: "seq sees no entry",
}


# ----------------------------------------------------------------------------- checks
def _int(name: str, value: object, lo: int, hi: int) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} = {value!r}: must be an integer, not a bool")
    try:
        v = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} = {value!r}: must be an integer") from None
    if not lo <= v <= hi:
        raise ValueError(f"{name} = {v}: out of range {lo} .. {hi}")
    return v


def _vec(name: str, values: Sequence[int], n: int, bits: int) -> list[int]:
    """``n`` integers of ``bits`` bits (index 0 included), ``ValueError`` naming the entry."""
    try:
        a = list(values)
    except TypeError:
        raise ValueError(f"{name} = {values!r}: must be a sequence of integers") from None
    if len(a) != n:
        raise ValueError(f"{name} has {len(a)} entries: expected {n}, one per node")
    hi = (1 << bits) - 1
    return [_int(f"{name}[{i}]", v, 0, hi) for i, v in enumerate(a)]


# ----------------------------------------------------------------------------- tree manager
class RTLTreeManager:
    """:class:`sim.backend.TreeManagerBackend` on the RTL tree manager (``tm_*`` ports).

    ``cycles`` of each :class:`~sim.backend.TreeStep` are counted on the
    simulated clock, each phase as :mod:`sim.cycles` defines it (its table;
    SPEC §6). With ``c(x)`` the cycle in which beat ``x`` is taken (at the
    edge closing it; every output is always ready) and ``E(x)`` that edge:

    * ``mask`` = ``load``: from the first draft beat's cycle to the last mask
      row's, inclusive (``c(row n-1) - c(beat 1) + 1``; ``n + 2``). The RTL
      streams the tree once: mask rows and sampler loading are one pass, so
      both phases are that pass;
    * ``decide``: the last node loaded (``E0``) to the result registered
      (``E3``; the result beat is then taken at ``E4``): ``c(result) - 1 -
      c(row n-1)`` (3);
    * ``tokens``: ``E3`` to the last accepted token (0 if none;
      ``accepted + 2``);
    * ``sampler``: the two-pass sampler (``SELECT_LANES = 0``): the first weight
      beat's edge to the extra token's (``2 * ceil(V / LANES) + 2``); the one-pass
      select (spec §3.12): the result beat's to the extra token's
      (``ceil(V / SELECT_LANES) + 6 .. + 8``, the model's ``+ 8`` at its worst).
      One-pass, every node's residual is asked for and sent on ``tot`` before
      the tree (the verifier's totals pass, under verification), and
      ``last``'s on ``w`` from the cycle after the result.

    ``last_post_verify`` is the step's critical path after verification as
    the RTL runs it: ``load``, then ``E0`` to the result beat (4: the result
    registered at ``E3`` is usable from the next cycle), then ``sampler``.
    It equals :attr:`sim.cycles.AcceptCycles.post_verify` (``load + decide +
    1 + sampler`` when the sampler is the longest branch; the model lacked the
    ``+ 1`` hand-off until this backend measured it).
    ``sim_cycles`` counts every simulated cycle spent on the tree manager
    (seeding, the ``advance`` cycle, the gaps between requests).
    """

    def __init__(self, sim: Cosim) -> None:
        h = sim.hdl
        self._sim = sim
        self.n_nodes = h["N_NODES"]
        self.token_bits = h["TOKEN_BITS"]
        self.prob_bits = h["PROB_BITS"]
        self.rand_bits = h["RAND_BITS"]
        self.weight_bits = h["WEIGHT_BITS"]
        self.lanes = h["LANES"]
        self.select_lanes = h["SELECT_LANES"]
        self.hdl = dict(h)
        self.sim_cycles = 0
        self.steps = 0
        self.last_post_verify = 0
        self.solve_cycles = 0
        self._seeded = False
        self._held: BuiltTree | None = None

    def seed(self, seed: int) -> None:
        """Seed the lanes (``32 * n_nodes`` cycles); then they run as ``LaneRNG(seed, n_nodes)``."""
        s = _int("seed", seed, 0, (1 << 64) - 1)
        c0 = self._sim.cycle
        self._sim.call("seed", seed=s)
        self.sim_cycles += self._sim.cycle - c0
        self._seeded = True

    def configure_optimiser(self, beat: dict) -> int:
        """Load the topology optimiser's configuration beat (``ocfg``) and wait for
        its first solve; returns the solve's cycles (also ``solve_cycles``)."""
        self._sim.check_open()
        c0 = self._sim.cycle
        r = self._sim.call("ocfg", beat=beat)
        if r["tm_error"]:
            self._sim._fail(f"topology optimiser error {r['tm_error']:#x} on {beat}")
        self.sim_cycles += self._sim.cycle - c0
        self.solve_cycles = r["solve"]
        return r["solve"]

    def hardware_policy(self, twin: TreePolicy) -> RTLTreePolicy:
        """The hardware builder's policy on this RTL: trees built by the tree
        manager, configured as the golden twin ``twin`` (:mod:`sim.rtl.builder`)."""
        return RTLTreePolicy(self, twin)

    def mask(self, parents: Sequence[int]) -> list[int]:
        """The rows the verifier uses: the held tree's pre-verify rows (``vrows``,
        the RTL's second mask generator) when the RTL built it; otherwise the RTL
        has no pre-verify pass and these are ``golden.tree.mask_rows``."""
        held = self._held
        if held is not None and list(parents)[1:] == held.parents:
            return list(held.vrows)
        return list(_tree.mask_rows(parents))

    def build_tree(
        self, cfg: dict, shape: list[int] | None, dist: Callable[[dict], list[int]]
    ) -> BuiltTree:
        """Build one tree on the RTL (:func:`sim.rtl.builder.run_build`) and hold it:
        the next :meth:`step` must be on this tree and sends only its ``pt``/``qt``."""
        self._sim.check_open()
        if self._held is not None:
            raise ValueError("build_tree: the tree built before was never verified (step)")
        c0 = self._sim.cycle
        self._held = run_build(self._sim, cfg, shape, dist, self.lanes)
        self.sim_cycles += self._sim.cycle - c0
        return self._held

    def step(
        self,
        parents: Sequence[int],
        tokens: Sequence[int],
        pt: Sequence[int],
        qt: Sequence[int],
        residual: Callable[[int], Sequence[int]],
    ) -> TreeStep:
        """One verification step on the RTL (see :class:`sim.backend.TreeManagerBackend`)."""
        self._sim.check_open()
        if not self._seeded:
            raise ValueError("seed: the lanes were never seeded (call seed(seed) first)")
        par = _tree.validate(parents, max_nodes=self.n_nodes)
        n = len(par)
        tok = _vec("tokens", tokens, n, self.token_bits)
        pt_ = _vec("pt", pt, n, self.prob_bits)
        qt_ = _vec("qt", qt, n, self.prob_bits)
        sim = self._sim
        c0 = sim.cycle
        held, self._held = self._held, None
        totals = self._totals(residual, n) if self.select_lanes else None
        if held is None:
            beats = [(par[i], tok[i], pt_[i], qt_[i]) for i in range(1, n)]
            r = sim.call("tree", beats=beats, res=totals)
        else:
            if par[1:] != held.parents or tok[1:] != held.tokens:
                raise ValueError(
                    "parents / tokens: not the tree the RTL built and holds "
                    f"(parents {held.parents}, tokens {held.tokens})"
                )
            pq = [(pt_[i], qt_[i]) for i in range(1, n)]
            r = sim.call("verify", beats=pq, packet=held.packet, res=totals)
        if r["tm_error"]:
            sim._fail(f"tree manager error {r['tm_error']:#x} on a valid tree {par}")
        result = r["result"]
        rows = r["rows"]
        if result is None or len(rows) != n:
            sim._fail(f"tree manager: {len(rows)} rows for {n} nodes, result {result}")
        last, path_mask, accepted = result["last"], result["path_mask"], result["accepted"]
        toks = r["tokens"][:accepted]
        if len(toks) != accepted:
            sim._fail(f"tree manager: {len(toks)} tokens for {accepted} accepted")
        t_in, t_rows, t_res = r["t_in"], r["t_rows"], r["t_result"]
        if totals is None:
            extra, sampler = self._two_pass(residual(last))
        else:  # the one-pass select: counted from the result beat (sim.cycles)
            if r["extra"] is None:
                sim._fail("token select: no extra token on valid totals")
            extra, sampler = r["extra"], r["t_extra"] - t_res
        load = t_rows[-1] - (t_in[0] if t_in else r["t_start"]) + 1
        cycles = {
            "mask": load,
            "load": load,
            "decide": t_res - 1 - t_rows[-1],
            "tokens": r["t_tokens"][accepted - 1] - (t_res - 1) if accepted else 0,
            "sampler": sampler,
        }
        if held is not None:
            cycles.update(build=held.cycles["build"], optimise=r["optimise"])
        self.last_post_verify = load + (t_res - t_rows[-1]) + sampler
        self.sim_cycles += sim.cycle - c0
        self.steps += 1
        return TreeStep(
            rows=rows,
            last=last,
            path_mask=path_mask,
            accepted_tokens=toks,
            extra=extra,
            cycles=cycles,
        )

    def _beats(self, weights: Sequence[int], lanes: int) -> list[list[int]]:
        """Checked residual weights in beats of ``lanes``, the last padded with zeros."""
        w = self._weights(weights)
        return [
            w[k : k + lanes] + [0] * (lanes - len(w[k : k + lanes]))
            for k in range(0, len(w), lanes)
        ]

    def _two_pass(self, weights: Sequence[int]) -> tuple[int, int]:
        """The two-pass sampler (``extra``): ``(token, cycles from the first beat)``."""
        x = self._sim.call("extra", beats=self._beats(weights, self.lanes))
        if x["tm_error"] or x["token"] is None:
            self._sim._fail(f"token sampler error {x['tm_error']:#x} on valid weights")
        return x["token"], x["t_token"] - x["t_first"]

    def _totals(self, residual: Callable[[int], Sequence[int]], n: int) -> list[list[list[int]]]:
        """Every node's residual (the verifier streams them all before the decision,
        spec §3.12), in beats of ``SELECT_LANES``."""
        return [self._beats(residual(j), self.select_lanes) for j in range(n)]

    def _weights(self, w: Sequence[int]) -> list[int]:
        """The verifier's residual weights, checked: ``1 .. 2**token_bits`` integers of
        ``weight_bits`` bits, not all zero."""
        a = np.asarray(w)
        if a.ndim != 1 or a.size == 0:
            raise ValueError(
                f"residual weights: shape {a.shape}, expected a non-empty 1-D sequence"
            )
        if a.size > (1 << self.token_bits):
            raise ValueError(
                f"residual weights: {a.size} entries, more than 2**token_bits = "
                f"{1 << self.token_bits}"
            )
        if not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"residual weights must be integers, got dtype {a.dtype}")
        bad = np.flatnonzero((a < 0) | (a >= (1 << self.weight_bits)))
        if bad.size:
            v = int(bad[0])
            raise ValueError(
                f"residual weights[{v}] = {int(a[v])}: out of range 0 .. 2**{self.weight_bits} - 1"
            )
        if not a.any():
            raise ValueError("residual weights are all zero (total == 0): nothing to sample")
        return [int(v) for v in a]


# ----------------------------------------------------------------------------- KV pool
class RTLKVPool:
    """:class:`sim.backend.KVBackend` on the RTL KV-cache pool (``kv_*`` ports).

    Argument checks follow ``golden.kvcache.BlockTable`` (same order, same
    ``KVError`` codes). A value the port cannot carry (wider than its field,
    a wrong type) is rejected here; one the port can carry goes to the RTL,
    whose ``code`` is raised. ``free_pages`` / ``valid_entries`` are the
    counts of the last result beat (the RTL's population counts).

    ``cycles`` counts the pool's port cycles (SPEC §6): one per operation
    (the cycle that takes it) and, per :meth:`lookups` call, ``ceil(q / 2)``
    (both lookup ports, one query each per cycle; a single :meth:`lookup` is
    one). ``sim_cycles`` counts every simulated cycle the requests took,
    result and reply latencies included; ``last_op_cycles`` is the last
    operation's, from its cycle to its result beat's, inclusive (SPEC §6: 1 +
    the 2-cycle result latency, :attr:`sim.cycles.AcceptCycles.commit`).
    """

    def __init__(self, sim: Cosim) -> None:
        h = sim.hdl
        self._sim = sim
        self.entries, self.pages, self.seqs = h["ENTRIES"], h["PAGES"], h["SEQS"]
        self.n_nodes, self.layer_bits, self.pos_bits = h["N_NODES"], h["LAYER_BITS"], h["POS_BITS"]
        self.cycles = 0
        self.sim_cycles = 0
        self.last_op_cycles = 0
        self.ops = 0
        self.queries = 0
        self._free = self.pages
        self._valid = 0
        sb = max(1, (self.seqs - 1).bit_length())
        nb = max(1, (self.n_nodes - 1).bit_length())
        mask = (1 << self.n_nodes) - 1
        # name -> (code, semantic max, port max)
        self._f = {
            "seq": (KVErr.SEQ_RANGE, self.seqs - 1, (1 << sb) - 1),
            "src": (KVErr.SEQ_RANGE, self.seqs - 1, (1 << sb) - 1),
            "dst": (KVErr.DST_RANGE, self.seqs - 1, (1 << sb) - 1),
            "layer": (KVErr.FIELD, (1 << self.layer_bits) - 1, (1 << self.layer_bits) - 1),
            "pos": (KVErr.FIELD, (1 << self.pos_bits) - 1, (1 << self.pos_bits) - 1),
            "owner": (KVErr.OWNER_RANGE, self.n_nodes - 1, (1 << nb) - 1),
            "view": (KVErr.FIELD, mask, mask),
            "accept": (KVErr.FIELD, mask, mask),
        }

    @property
    def free_pages(self) -> int:
        return self._free

    @property
    def valid_entries(self) -> int:
        return self._valid

    # ------------------------------------------------------------------ checks
    def _check(self, fields: Sequence[tuple[str, object]]) -> tuple[list[int], KVError | None]:
        """Fields in argument order -> ``(ints, deferred)``. Raises ``KVError`` for the
        first bad field unless the port can carry every field, in which case that
        first error is ``deferred`` (the RTL reports it, with golden's precedence)."""
        out: list[int] = []
        first: KVError | None = None
        carried = True
        for name, v in fields:
            if name == "committed":
                if isinstance(v, (bool, np.bool_)):
                    out.append(int(bool(v)))
                    continue
                try:
                    iv = operator.index(v)
                except TypeError:
                    iv = -1
                if iv not in (0, 1):
                    err = KVError(f"committed = {v!r}: must be a bool (or 0/1)", KVErr.FIELD)
                    if first is None:
                        raise err
                    carried = False
                    break
                out.append(iv)
                continue
            code, hi, port_hi = self._f[name]
            if isinstance(v, (bool, np.bool_)):
                err = KVError(f"{name} = {v!r}: must be an integer, not a bool", code)
                iv = None
            else:
                try:
                    iv = operator.index(v)
                    err = None
                except TypeError:
                    err = KVError(f"{name} = {v!r}: must be an integer", code)
                    iv = None
            if iv is not None and not 0 <= iv <= hi:
                err = KVError(f"{name} = {iv}: out of range 0..{hi}", code)
            if err is not None and first is None:
                first = err
            if iv is None or not 0 <= iv <= port_hi:
                carried = False
                break
            out.append(iv)
        if first is not None and not carried:
            raise first
        return out, first

    # ------------------------------------------------------------------ operations
    def _op(self, kind: str, args: dict, fields: list[tuple[str, object]]) -> dict:
        vals, _deferred = self._check(fields)
        v = dict(zip([f for f, _ in fields], vals, strict=True))
        op = (
            _OPS[kind],
            v.get("seq", v.get("src", 0)),
            v.get("dst", 0),
            v.get("layer", 0),
            v.get("pos", 0),
            v.get("owner", 0),
            v.get("committed", 0),
            v.get("accept", 0),
        )
        c0 = self._sim.cycle
        rep = self._sim.call("ops", ops=[op])
        self.sim_cycles += self._sim.cycle - c0
        self.cycles += 1
        self.ops += 1
        (r,) = rep["results"]
        self.last_op_cycles = r["t"] - rep["t0"] + 1
        if r["op"] != _OPS[kind]:
            self._sim._fail(f"KV result for op {r['op']}, expected {_OPS[kind]} ({kind})")
        self._free, self._valid = r["free_pages"], r["valid_entries"]
        if r["error"]:
            code = KVErr(r["code"])
            where = ", ".join(f"{k} = {a}" for k, a in args.items())
            raise KVError(f"{kind} ({where}): {_ERR_TEXT.get(code, code.name)} [RTL]", code)
        return r

    def insert(
        self, seq: int, layer: int, pos: int, owner: int = 0, committed: bool = False
    ) -> int:
        """Allocate the lowest free entry and page for ``(seq, layer, pos)``; the page."""
        args = {"seq": seq, "layer": layer, "pos": pos, "owner": owner, "committed": committed}
        r = self._op("insert", args, list(args.items()))
        return int(r["page"])

    def commit(self, seq: int, accept: int) -> list[int]:
        """Keep ``seq``'s speculative entries whose owner is in ``accept``; the freed pages."""
        args = {"seq": seq, "accept": accept}
        r = self._op("commit", args, list(args.items()))
        return _bits(r["freed"])

    def fork(self, src: int, dst: int) -> None:
        """Make every committed entry ``src`` sees visible to ``dst`` too."""
        args = {"src": src, "dst": dst}
        self._op("fork", args, list(args.items()))

    def release(self, seq: int) -> list[int]:
        """``seq`` stops seeing every entry; the freed pages."""
        args = {"seq": seq}
        r = self._op("release", args, list(args.items()))
        return _bits(r["freed"])

    # ------------------------------------------------------------------ lookups
    def lookup(self, seq: int, layer: int, pos: int, view: int = 0) -> int | None:
        """Page of ``(seq, layer, pos)`` through ``view``, or ``None`` (one query, one cycle)."""
        return self.lookups([(seq, layer, pos, view)])[0]

    def lookups(self, queries: Sequence[Query]) -> list[int | None]:
        """Many lookups, in order, two per cycle (``draft`` and ``verify`` ports)."""
        qs: list[tuple[int, int, int, int]] = []
        stop: KVError | None = None
        for q in queries:
            try:
                seq, layer, pos, view = q
            except (TypeError, ValueError):
                stop = KVError(f"query = {q!r}: must be (seq, layer, pos, view)", KVErr.FIELD)
                break
            try:
                vals, _ = self._check(
                    [("seq", seq), ("layer", layer), ("pos", pos), ("view", view)]
                )
            except KVError as e:
                stop = e
                break
            qs.append(tuple(vals))  # type: ignore[arg-type]
        out: list[int | None] = []
        if qs:
            c0 = self._sim.cycle
            rep = self._sim.call("lookups", queries=qs)
            self.sim_cycles += self._sim.cycle - c0
            self.cycles += rep["issue"]
            self.queries += len(qs)
            for (seq, _l, _p, _v), (hit, err, page) in zip(qs, rep["replies"], strict=True):
                if err:
                    raise KVError(
                        f"seq = {seq}: out of range 0..{self.seqs - 1} [RTL]", KVErr.SEQ_RANGE
                    )
                out.append(int(page) if hit else None)
        if stop is not None:
            raise stop
        return out


def _bits(mask: int) -> list[int]:
    return [p for p in range(mask.bit_length()) if (mask >> p) & 1]


# ----------------------------------------------------------------------------- entry point
@contextlib.contextmanager
def open_rtl(
    *,
    n_nodes: int = 64,
    entries: int = 256,
    pages: int = 256,
    seqs: int = 8,
    layer_bits: int = 5,
    pos_bits: int = 17,
    token_bits: int = 17,
    prob_bits: int = 16,
    rand_bits: int = 16,
    weight_bits: int = 16,
    lanes: int = 4,
    build_args: Sequence[str] = DEFAULT_BUILD_ARGS,
    timeout: float = 600.0,
    **builder: int,
) -> Iterator[tuple[RTLTreeManager, RTLKVPool]]:
    """Build (cached) and start one co-simulation of ``specdecode_top``; yield its backends.

    Parameters
    ----------
    n_nodes, entries, pages, seqs, layer_bits, pos_bits : int
        The HDL parameters of :class:`hw.specdecode_top.Top` (SPEC §5), in lower case.
    token_bits, prob_bits, rand_bits, weight_bits, lanes : int
        The HDL parameters of :class:`hw.specdecode_top.Top` (SPEC §5), in lower case.
    **builder : int
        The tree builder's and topology optimiser's HDL parameters, in lower
        case (``conf_bits``, ``c_max``, ``d_max``, ``r``, ``acc_bits``, ``nb``,
        ``win``); the blocks' defaults otherwise.
    build_args : sequence of str
        Verilator arguments (default :data:`DEFAULT_BUILD_ARGS`).
    timeout : float
        Seconds a single request may take before the simulation is declared
        hung and ended (the start-up may take :data:`START_TIMEOUT` if longer).

    Yields
    ------
    (RTLTreeManager, RTLKVPool)
        Both on the same simulation. It ends when the ``with`` block does,
        also on an exception.

    Raises
    ------
    ValueError
        A parameter out of range (named, value quoted).
    RTLSimError
        The simulator could not start, died or hung.
    """
    hdl = hdl_params(
        n_nodes=n_nodes,
        entries=entries,
        pages=pages,
        seqs=seqs,
        layer_bits=layer_bits,
        pos_bits=pos_bits,
        token_bits=token_bits,
        prob_bits=prob_bits,
        rand_bits=rand_bits,
        weight_bits=weight_bits,
        lanes=lanes,
        **builder,
    )
    if not timeout > 0:
        raise ValueError(f"timeout = {timeout!r}: must be > 0 seconds")
    bdir = build_top(hdl, build_args)
    sim = Cosim(hdl, bdir, timeout=timeout)
    try:
        yield RTLTreeManager(sim), RTLKVPool(sim)
    finally:
        sim.close()
