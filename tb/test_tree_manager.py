"""Testbench: the token tree manager (hw/tree_manager/), whole steps, both tree sources.

``steps``: external trees on ``i``. Per step one ``advance`` of the RNG lanes, a
random draft tree with random ``pt``/``qt`` (corners included) through mask
generator and acceptance sampler, then a random residual weight vector
through the token sampler. Model: ``golden.rng.LaneRNG`` (the lanes),
``golden.tree.mask_rows``, ``golden.accept.decide_detail`` and
``golden.sampler.sample_weights``: the chip's accept phase of SPEC §1 bit for bit.

``built`` (full speed, and idle / backpressure patterns on every port): the
topology optimiser configured (a random valid configuration, as
``tb/test_topology_optimiser.py`` makes them), then a mix of steps: static
trees on the optimiser's shapes (``opt = 1``), static trees on a software
shape (``opt = 0``), dynamic trees and external trees on ``i``; once each, an
invalid ``bcfg`` (static ``opt = 1``, static ``opt = 0``, dynamic), an invalid
``ocfg``, a valid reconfiguration between steps and one while an ``opt = 1``
tree is between its build and its result. The builder's requests are
answered by :class:`tb.tree_builder_stim.Draft` (seeded distributions by
path). Per step, against the golden twins: the built tree, beat for beat,
and the requests (``golden.topk.build_static`` / ``golden.dynamic.build_dynamic``
via :func:`tb.tree_builder_stim.finish`); ``vrows`` and ``rows``
(``golden.tree.mask_rows``, depths); the decision, the accepted tokens and
the extra token (random ``pt``/``qt``); for ``opt = 1`` steps the step packet
(``path_beats`` of the built tree and the decision) and, after it, the
status (``opt_mode``, ``opt_budget``, ``opt_expected``) against
``golden.builder.FixedTopologyOptimiser`` fed the same steps; every shape the
optimiser emits and its status; exactly one ``error.build`` / ``error.opt``
pulse per invalid beat and none else, and the next tree right. At full speed:
the join's latency (a ``pq`` beat to its row, against an ``i`` beat to its
row) and the step packet's (``result`` taken to the packet's first beat; the
packet's last beat to the optimiser's next shape). Helpers:
:mod:`tb.tree_manager_stim`.
"""

from collections import Counter, deque

from golden import accept, tree
from golden.draft import StepRecord
from golden.rng import LaneRNG
from hw.accept_sampler import result_layout
from hw.accept_sampler import token_layout as acc_token_layout
from hw.topology_optimiser import cfg_layout as opt_cfg_layout
from hw.tree_builder import dist_layout, out_layout, req_layout
from hw.tree_manager import bcfg_layout, draft_layout, pq_layout
from hw.tree_mask_gen import parent_layout, row_layout
from sim.cycles import ONE_PASS_LATENCY
from tb.common import TB, StreamSink, StreamSource, params, random_step, report, run_block, sized
from tb.topology_optimiser_stim import (
    bad_configs,
    base_cfg,
    golden_for,
    path_beats,
    random_cfg,
    small_m,
)
from tb.tree_builder_stim import Cfg, dynamic_case, finish, random_shape, shape_beats, static_case
from tb.tree_manager_stim import (
    DraftQ,
    Errors,
    Extra,
    OptP,
    Strobe,
    Taps,
    expect_rows,
    opt_status,
    random_pq,
    static_opt_case,
)

#: external steps (random trees; chains and stars of ``N_NODES`` among them), 220 at 1,024
STEPS = 150
#: steps of a built-path run (mixed sources)
BUILT_STEPS = sized(150, 1000)


def _steps(n_nodes: int) -> tuple[int, int]:
    """(external, built-path) steps at ``n_nodes``: at 1,024, 220 random external trees
    (at least 200) and 40 built steps per pattern (the builder's own testbench runs
    its 1,024-node trees)."""
    return (220, 40) if n_nodes >= 1024 else (STEPS, BUILT_STEPS)


#: cycles from the ``result`` beat taken to the step packet's first beat taken (full speed)
PACKET_LATENCY = 1
#: cycles from the packet's last beat to the optimiser's next shape, no re-solve (its bound)
SHAPE_LATENCY = 7
#: the taps the testbench reads besides the ports (``hw.tree_manager.TreeManager.taps``)
TAPS = ("tap_*",)


# ----------------------------------------------------------------------------- built path
class Built:
    """Drivers, monitors and the golden twins of the built-path run."""

    def __init__(self, dut, pattern: str) -> None:
        P = params()
        self.N, self.TB, self.PB = P["N_NODES"], P["TOKEN_BITS"], P["PROB_BITS"]
        self.RB, self.LANES, self.WB = P["RAND_BITS"], P["LANES"], P["WEIGHT_BITS"]
        N, T, PB, pat = self.N, self.TB, self.PB, pattern
        self.full_speed = pattern == "none"
        self.cfg, self.op = Cfg(), OptP()
        op = self.op
        self.dut, tb = dut, TB(dut)
        self.tb, self.rng = tb, tb.rng
        self.seed_src = StreamSource(tb, "seed", 64)
        self.i_src = StreamSource(tb, "i", draft_layout(N, T, PB), pat)
        self.bcfg = StreamSource(tb, "bcfg", bcfg_layout(N), pat)
        self.shape = StreamSource(tb, "shape", parent_layout(N), pat)
        self.dist = StreamSource(tb, "dist", dist_layout(self.LANES, PB), pat)
        self.pq = StreamSource(tb, "pq", pq_layout(PB), pat)
        self.ocfg = StreamSource(tb, "ocfg", opt_cfg_layout(N, op.D, op.R, op.A, op.NB), pat)
        self.rows = StreamSink(tb, "rows", row_layout(N), pat)
        self.res = StreamSink(tb, "result", result_layout(N), pat)
        self.toks = StreamSink(tb, "tokens", acc_token_layout(T), pat)
        self.x = Extra(tb, pat)
        self.tree = StreamSink(tb, "tree", out_layout(N, T, PB, P["CONF_BITS"]), pat)
        self.vrows = StreamSink(tb, "vrows", row_layout(N), pat)
        self.req = StreamSink(tb, "req", req_layout(self.cfg.req_bits, T), pat)
        self.draft = DraftQ(tb, self.cfg, self.dist)
        self.req.on_beat = self.draft.on_req
        self.adv = Strobe(tb, dut.advance)
        self.taps, self.errs = Taps(tb, N), Errors(tb)
        self.gold = None
        self.shape_q: deque = deque()  # the optimiser's shapes the next opt = 1 trees use
        self.emissions: list[tuple[list[int], tuple]] = []  # every shape it must emit
        self.packets: list[list[dict]] = []  # every packet the block must send
        self.mism = self.checked = 0
        self.kinds: Counter = Counter()
        self.lat: dict[str, list[int]] = {k: [] for k in ("i", "pq", "i_end", "pq_end")}
        self.lat.update(packet=[], shape=[], solve=[], select=[])
        self.bad = {"build": 0, "opt": 0, "token": 0}

    def fail(self, msg: str) -> None:
        self.mism += 1
        if self.mism <= 8:
            self.tb.log.error("seed %d: %s", self.tb.seed, msg)

    def ok(self, cond: bool, msg: str) -> None:
        if cond:
            self.checked += 1
        else:
            self.fail(msg)

    async def start(self) -> None:
        tb = self.tb
        await tb.start()
        seed = self.rng.randrange(1 << 64)
        self.seed_src.send(seed)
        await tb.wait_for(lambda: self.seed_src.idle, what="seed")
        await tb.cycles(2)
        await tb.wait_for(lambda: self.dut.busy.value == 0, what="seeding")
        self.lanes = LaneRNG(seed, self.N)

    def _status(self) -> tuple[int, int, int]:
        d = self.dut
        return int(d.opt_mode.value), int(d.opt_budget.value), int(d.opt_expected.value)

    async def _opt_idle(self) -> None:
        await self.tb.cycles(2)
        await self.tb.wait_for(lambda: self.dut.opt_busy.value == 0, what="optimiser idle")

    async def configure(self, c: dict, valid: bool = True) -> None:
        """An ``ocfg`` beat; valid: the loop restarts on its first shape."""
        n_err, n_sh, before = len(self.errs.pulses["opt"]), len(self.taps.shapes), self._status()
        self.ocfg.send(c)
        await self.tb.wait_for(lambda: self.ocfg.idle, what="ocfg taken")
        await self._opt_idle()
        if valid:
            self.gold = golden_for(c, self.op)
            self.shape_q.clear()  # shapes not yet used are dropped
            self.shape_q.append(self.gold.shape())
            self.emissions.append((self.gold.shape(), opt_status(self.gold)))
            self.ok(self._status() == opt_status(self.gold), f"status after ocfg {c}")
        else:
            self.bad["opt"] += 1
            await self.tb.cycles(20)
            self.ok(
                len(self.errs.pulses["opt"]) == n_err + 1
                and len(self.taps.shapes) == n_sh
                and self._status() == before,
                f"invalid ocfg {c}: one error.opt, no shape, status kept",
            )

    async def bad_bcfg(self, what: str) -> None:
        """A ``bcfg`` beat the builder refuses: one ``error.build``, no tree."""
        n_err, n_tree, n_req = len(self.errs.pulses["build"]), len(self.tree.received), 0
        n_req = len(self.req.received)
        if what == "static opt":
            self.bcfg.send({"mode": 0, "k": 0, "m": 0, "d": 0, "w": 0, "opt": 1})
        elif what == "static":
            self.bcfg.send({"mode": 0, "k": 17, "m": 0, "d": 0, "w": 0, "opt": 0})
            for b in shape_beats(random_shape(self.rng, self.N, 3)):
                self.shape.send(b)
        else:
            self.bcfg.send({"mode": 1, "k": 2, "m": 0, "d": 1, "w": 1, "opt": 0})
        self.bad["build"] += 1
        await self.tb.wait_for(lambda: len(self.errs.pulses["build"]) > n_err, what="error.build")
        await self.tb.wait_for(
            lambda: self.bcfg.idle and self.shape.idle and self.dut.build_busy.value == 0,
            what="builder idle",
        )
        await self.tb.cycles(20)
        self.ok(
            len(self.errs.pulses["build"]) == n_err + 1
            and len(self.tree.received) == n_tree
            and len(self.req.received) == n_req,
            f"invalid bcfg ({what}): one error.build, no tree, no request",
        )

    async def _advance(self) -> list[int]:
        self.adv.fire()
        await self.tb.cycles(3)
        out = self.lanes.next()
        self._lane0 = int(out[0])
        return (out >> (32 - self.RB)).astype(int).tolist()

    async def verify(self, par, tok, pt, qt, u, src: StreamSource, k0: int) -> object:
        """The tree on the verify path (its beats from ``src``, the first at index
        ``k0`` of ``src.sent``): rows, result and accepted tokens."""
        tb, n = self.tb, len(par)
        # counted, not read from the sinks: with ``pq`` sent early the tree can be
        # verified (result, rows, tokens) before this is called
        n_rows, n_tok = self.rows_seen, self.toks_seen
        n_res = self.res_seen
        await tb.wait_for(lambda: len(self.res.received) > n_res, what="result")
        self.res_seen += 1
        d = accept.decide_detail(par, pt, qt, u[:n], rand_bits=self.RB, prob_bits=self.PB)
        want = {"last": d.last, "path_mask": d.path_mask, "accepted": d.accepted}
        self.ok(self.res.received[-1][1] == want, f"result {self.res.received[-1][1]} != {want}")
        await tb.wait_for(lambda: len(self.rows.received) >= n_rows + n, what="rows")
        rows = self.rows.received[n_rows : n_rows + n]
        self.rows_seen += n
        self.ok([r for _, r in rows] == expect_rows(par), f"rows of {par}")
        await tb.wait_for(lambda: len(self.toks.received) >= n_tok + d.accepted, what="tokens")
        got = [(t["token"], t["last"]) for _, t in self.toks.received[n_tok : n_tok + d.accepted]]
        self.toks_seen += d.accepted
        want_t = [(tok[j], int(x == d.accepted)) for x, j in enumerate(d.path[1:], 1)]
        self.ok(got == want_t, f"tokens {got} != {want_t}")
        if self.full_speed and n > 1:  # first node beat -> row 0, last node beat -> last row
            key = "i" if src is self.i_src else "pq"
            beats = src.sent[k0:]
            self.lat[key].append(rows[0][0] - beats[0][0])
            self.lat[key + "_end"].append(rows[-1][0] - beats[n - 2][0])
        return d

    def before(self, par, pt, qt, u, ext: bool = False) -> int:
        """The extra token's residuals, sent before the tree is verified (:class:`Extra`);
        returns the decision's ``last`` (golden). One-pass at full speed (the
        latency run), ``last``'s weights go on ``w`` now, else after the result.
        ``ext`` steps of a one-pass run may leave ``last``'s total out, or send
        one node's totals from another vector."""
        d = accept.decide_detail(par, pt, qt, u[: len(par)], rand_bits=self.RB, prob_bits=self.PB)
        x, r = self.x, self.rng.random()
        skip = d.last if ext and x.one_pass and r < 0.08 else None
        self._n_x, self._n_err = len(x.extra.received), len(self.errs.pulses["token"])
        x.before(len(par), skip=skip, stale=ext and x.one_pass and 0.08 <= r < 0.2)
        self._early_w = x.one_pass and self.full_speed
        if self._early_w:
            x.after(d.last)
        return d.last

    async def extra_token(self, last: int) -> None:
        """The extra token of a decision ending at ``last``, or the selection's
        ``error.token`` and no token."""
        x, tb, n_x, n_err = self.x, self.tb, self._n_x, self._n_err
        if not self._early_w:
            x.after(last)
        want = x.want(last, self._lane0)
        if want is None:  # refused: one error pulse, the w stream dropped, nothing emitted
            self.bad["token"] += 1
            self.kinds["refused selection"] += 1
            await tb.wait_for(lambda: len(self.errs.pulses["token"]) > n_err, what="error.token")
            await tb.wait_for(lambda: x.w_src.idle, what="w dropped")
            await tb.cycles(12)
            self.ok(len(x.extra.received) == n_x, "a token after a refused selection")
            return
        await tb.wait_for(lambda: len(x.extra.received) > n_x, what="extra token")
        self.ok(x.extra.received[n_x][1]["token"] == want, "extra token")
        if self._early_w:  # the result taken -> the extra token taken, past ceil(V / LANES)
            n_beats = -(-len(x.res[last]) // x.L)
            self.lat["select"].append(x.extra.received[n_x][0] - self.res.received[-1][0] - n_beats)

    async def step_ext(self) -> None:
        u = await self._advance()
        par, tok, pt, qt = random_step(self.rng, self.N, self.PB, self.TB)
        last = self.before(par, pt, qt, u, ext=True)
        k0 = len(self.i_src.sent)
        if self.full_speed:  # the totals first: the tree's beats back to back (its latency)
            await self.x.drained()
        for i in range(1, len(par)):
            self.i_src.send({"parent": par[i], "token": tok[i], "pt": pt[i], "qt": qt[i], "end": 0})
        await self.x.drained()
        self.i_src.send({"end": 1})
        await self.verify(par, tok, pt, qt, u, self.i_src, k0)
        await self.extra_token(last)

    async def _send_pq(self, pt: list[int], qt: list[int]) -> None:
        """The held tree's ``pq`` beats, the last once every total is sent (one-pass)."""
        for i in range(1, len(pt)):
            if i == len(pt) - 1:
                await self.x.drained()
            self.pq.send({"pt": pt[i], "qt": qt[i]})

    def _case(self, kind: str):
        cfg, rng = self.cfg, self.rng
        if kind == "static opt":
            return static_opt_case(rng, cfg, self.shape_q.popleft(), self.op.R)
        if kind == "static":
            return finish(static_case(rng, cfg), cfg, rng)
        return finish(dynamic_case(rng, cfg, max_reqs=12), cfg, rng)

    async def step_built(self, kind: str, reconf: dict | None = None) -> None:
        """One built tree (``kind``: ``static opt``, ``static``, ``dynamic``);
        ``reconf``: a valid ``ocfg`` sent once the tree is held."""
        tb, rng = self.tb, self.rng
        c = self._case(kind)
        self.draft.add(c)
        n, n_tree, n_vrows = len(c.out), len(self.tree.received), len(self.vrows.received)
        u = await self._advance()
        opt = int(kind == "static opt")
        if n == 1:  # root-only: verified when held, so its totals are sent before it is built
            await self.x.drained()
        self.bcfg.send({"mode": c.mode, "k": c.k, "m": c.m, "d": c.d, "w": c.w, "opt": opt})
        if kind == "static":
            for b in shape_beats(c.shape):
                self.shape.send(b)
        pt, qt = random_pq(rng, n, self.PB)
        par = [-1] + [b["parent"] for b in c.out[:-1]]
        last = self.before(par, pt, qt, u)
        k0 = len(self.pq.sent)
        early = not self.full_speed and reconf is None and rng.random() < 0.3
        if early:  # pq waits until the tree is held (the totals sent before the last)
            await self._send_pq(pt, qt)
        await tb.wait_for(lambda: len(self.tree.received) >= n_tree + n, what="built tree")
        got = self.tree.received[n_tree : n_tree + n]
        beats = [b for _, b in got]
        self.ok(beats == c.out, f"{kind} tree {beats[:5]}... != {c.out[:5]}...")
        tok = [0] + [b["token"] for b in beats[:-1]]
        await tb.wait_for(lambda: len(self.vrows.received) >= n_vrows + n, what="vrows")
        vr = [r for _, r in self.vrows.received[n_vrows : n_vrows + n]]
        self.ok(vr == expect_rows(par), f"vrows of {par}")
        old = None
        if reconf is not None:
            old = (self.gold, len(self.emissions))
            await self.configure(reconf)
            old += (self.ocfg.sent[-1][0],)
        if early:
            self.ok(all(cyc > got[-1][0] for cyc, _ in self.pq.sent[k0:]), "pq before held")
        else:
            await self._send_pq(pt, qt)
        n_pk = len(self.taps.packets)
        d = await self.verify(par, tok, pt, qt, u, self.pq, k0)
        if opt:
            await self._packet(par, d, n_pk, old)
        await self.extra_token(last)

    async def _packet(self, par: list[int], d, n_pk: int, old: tuple | None) -> None:
        """The step packet of an ``opt = 1`` tree and the optimiser's status after
        it. ``old``: the tree was built on the shape of a configuration replaced
        since (``(golden twin, emissions then, cycle the new one was taken)``):
        no packet, unless it was taken before the new configuration (a root-only
        tree's result can come first), by the old one."""
        g = self.gold
        t_res = self.res.received[-1][0]
        await self._opt_idle()
        record = StepRecord(par, [0] * len(par), d.last, d.path, d.accepted, [])
        if old is not None:
            g_old, k_em, t_cfg = old
            pk = self.taps.packets[n_pk:]
            if len(pk) == 1 and pk[0][1] < t_cfg and len(par) == 1:
                g_old.observe(record)
                self.packets.append(path_beats(par, d.path))
                self.emissions.insert(k_em, (g_old.shape(), opt_status(g_old)))
                self.kinds["packet before reconf"] += 1
            else:
                self.ok(not pk, "a packet for a tree of a replaced configuration")
            return
        g.observe(record)
        self.packets.append(path_beats(par, d.path))
        self.shape_q.append(g.shape())
        self.emissions.append((g.shape(), opt_status(g)))
        self.ok(
            self._status() == opt_status(g),
            f"status {self._status()} after step {g.n_observed}, want {opt_status(g)}",
        )
        if self.full_speed and len(self.taps.packets) == n_pk + 1:
            first, last, _ = self.taps.packets[-1]
            self.lat["packet"].append(first - t_res)
            shape_at = self.taps.shapes[-1][0] - last
            self.lat["solve" if g.n_observed % g.update_every == 0 else "shape"].append(shape_at)

    def finish(self, test: str) -> None:
        for t, c in enumerate(self.draft.queue):
            self.ok(self.draft.got[t] == c.reqs, f"requests of tree {t}: {self.draft.got[t][:6]}")
        self.ok(not self.draft.stray, f"stray requests {self.draft.stray[:4]}")
        got_pk = [b for _, _, b in self.taps.packets]
        self.ok(got_pk == self.packets, f"{len(got_pk)} packets, want {len(self.packets)}")
        got_sh = [(s, st) for _, s, st in self.taps.shapes]
        self.ok(got_sh == self.emissions, f"shapes emitted {got_sh[-3:]} != {self.emissions[-3:]}")
        counts = self.errs.counts()
        want = {f: self.bad.get(f, 0) for f in counts}
        self.ok(counts == want, f"error pulses {counts}, want {want}")
        lat = {k: (min(v), max(v)) for k, v in self.lat.items() if v}
        text = ""
        if lat:
            text = ", ".join(f"{k} {a}..{b}" for k, (a, b) in lat.items())
            self.tb.log.info("cycles: %s", text)
        if "pq" in lat and "i" in lat:  # the join adds no cycle: pq beats as fast as i's
            self.ok(
                lat["pq"][1] <= lat["i"][0] and lat["pq_end"][1] <= lat["i_end"][0],
                f"join latency: pq {lat['pq']}, {lat['pq_end']} against i {lat['i']}, "
                f"{lat['i_end']}",
            )
        if "packet" in lat:  # the root's beat the cycle after the result is taken
            self.ok(lat["packet"][1] <= PACKET_LATENCY, f"packet after result: {lat['packet']}")
        if "select" in lat:  # the one-pass select at its worst: the chip model's count
            want_sel = ONE_PASS_LATENCY["rtl"]
            got_sel = lat["select"]
            self.ok(got_sel[1] == want_sel, f"result to token + {got_sel}, not {want_sel}")
        if "shape" in lat:  # the optimiser's own bound (no re-solve)
            self.ok(lat["shape"][1] <= SHAPE_LATENCY, f"shape after packet: {lat['shape']}")
        self.tb.log.info("steps %s, checked %d", dict(self.kinds), self.checked)
        report("tree_manager", test, checked=self.checked, mismatches=self.mism, latency=text)
        assert self.mism == 0, f"seed {self.tb.seed}: {self.mism} mismatches"


async def built_run(h: Built) -> None:
    rng, op = h.rng, h.op
    n_steps = _steps(h.N)[1]
    await h.start()
    h.rows_seen = h.res_seen = h.toks_seen = 0
    await h.configure(random_cfg(rng, op, small_m(op)))
    events = {
        3: "bad static opt",
        7: "bad ocfg",
        11: "bad dynamic",
        15: "bad static",
        n_steps // 2: "reconf",
        n_steps // 2 + 6: "reconf owed",
    }
    kinds = ["static opt"] * 4 + ["static"] * 2 + ["dynamic"] * 2 + ["ext"] * 2
    for step in range(n_steps):
        ev = events.get(step, "")
        kind = rng.choice(kinds)
        if ev.startswith("bad ") and ev != "bad ocfg":
            await h.bad_bcfg(ev[4:])
            kind = "static opt" if ev == "bad static opt" else kind
        elif ev == "bad ocfg":
            name, c = rng.choice(bad_configs(op, base_cfg(op)))
            h.tb.log.info("invalid ocfg: %s", name)
            await h.configure(c, valid=False)
        elif ev == "reconf":
            await h.configure(random_cfg(rng, op, small_m(op)))
        if ev == "reconf owed":  # a reconfiguration while an opt = 1 tree is held
            h.kinds["reconf owed"] += 1
            await h.step_built("static opt", reconf=random_cfg(rng, op, small_m(op)))
            continue
        h.kinds[kind] += 1
        if kind == "ext":
            await h.step_ext()
        else:
            await h.step_built(kind)


try:
    import cocotb
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def steps(dut) -> None:
        P = params()
        N, TB_, PB, RB = P["N_NODES"], P["TOKEN_BITS"], P["PROB_BITS"], P["RAND_BITS"]
        tb = TB(dut)
        seed_src = StreamSource(tb, "seed", 64)
        src = StreamSource(tb, "i", draft_layout(N, TB_, PB), "random")
        rows = StreamSink(tb, "rows", row_layout(N), "random")
        res = StreamSink(tb, "result", result_layout(N), "random")
        toks = StreamSink(tb, "tokens", acc_token_layout(TB_), "random")
        x = Extra(tb, "random")
        adv = Strobe(tb, dut.advance)
        await tb.start()
        seed = tb.rng.randrange(1 << 64)
        seed_src.send(seed)
        await tb.wait_for(lambda: not seed_src.queue and seed_src.current is None, what="seed")
        await tb.cycles(2)
        await tb.wait_for(lambda: dut.busy.value == 0, what="seeding")
        lanes = LaneRNG(seed, N)
        mism = checked = tot_tokens = 0
        for step in range(_steps(N)[0]):
            adv.fire()
            await tb.cycles(3)
            out = lanes.next()
            u_all = (out >> (32 - RB)).astype(int).tolist()
            par, tok, pt, qt = random_step(tb.rng, N, PB, TB_)
            x.before(len(par))
            for i in range(1, len(par)):
                src.send({"parent": par[i], "token": tok[i], "pt": pt[i], "qt": qt[i], "end": 0})
            await x.drained()
            src.send({"end": 1})
            n_res = len(res.received)
            await tb.wait_for(lambda n=n_res: len(res.received) > n, what="result")
            u = u_all[: len(par)]
            d = accept.decide_detail(par, pt, qt, u, rand_bits=RB, prob_bits=PB)
            got = res.received[-1][1]
            want = {"last": d.last, "path_mask": d.path_mask, "accepted": d.accepted}
            if got != want:
                mism += 1
                tb.log.error("seed %d step %d: result %s, want %s", tb.seed, step, got, want)
            tot_tokens += d.accepted
            await tb.wait_for(lambda t=tot_tokens: len(toks.received) >= t, what="tokens")
            x.after(d.last)
            n_x = len(x.extra.received)
            await tb.wait_for(lambda n=n_x: len(x.extra.received) > n, what="extra token")
            want_x = x.want(d.last, int(out[0]))
            if x.extra.received[-1][1]["token"] != want_x:
                mism += 1
                tb.log.error(
                    "seed %d step %d: extra %s, want %d",
                    tb.seed,
                    step,
                    x.extra.received[-1][1],
                    want_x,
                )
            checked += 1
        # the accepted tokens, all steps, in order; the rows mirror every tree
        want_toks = []
        want_rows = 0
        # (recomputed from what was sent: the sources keep their history)
        sent = [b for _, b in src.sent]
        k = 0
        lanes = LaneRNG(seed, N)
        while k < len(sent):
            par, tk, pts, qts = [-1], [0], [0], [0]
            while not sent[k]["end"]:
                b = sent[k]
                par.append(b["parent"]), tk.append(b["token"]), pts.append(b["pt"])
                qts.append(b["qt"])
                k += 1
            k += 1
            u = (lanes.next() >> (32 - RB)).astype(int).tolist()[: len(par)]
            d = accept.decide_detail(par, pts, qts, u, rand_bits=RB, prob_bits=PB)
            want_toks += [tk[j] for j in d.path[1:]]
            want_rows += len(par)
            if [
                r["row"] for _, r in rows.received[want_rows - len(par) : want_rows]
            ] != tree.mask_rows(par):
                mism += 1
        if [t["token"] for _, t in toks.received] != want_toks:
            mism += 1
            tb.log.error("seed %d: accepted token stream differs", tb.seed)
        report("tree_manager", "steps", checked=checked, mismatches=mism, latency="")
        assert mism == 0, f"seed {tb.seed}: {mism} mismatches"

    @cocotb.test()
    @cocotb.parametrize(pattern=["none", "random"])
    async def built(dut, pattern: str) -> None:
        """Built, given and refused trees mixed; the optimiser's loop (module docstring)."""
        h = Built(dut, pattern)
        await built_run(h)
        h.finish(f"built {pattern}")


# ----------------------------------------------------------------------------- pytest
import pytest  # noqa: E402

from tb.common import FULL_ONLY  # noqa: E402

#: ``make test``'s set: small builder and optimiser (a quick Verilator build)
SMALL = {
    "N_NODES": 8,
    "LANES": 2,
    "TOKEN_BITS": 4,
    "CONF_BITS": 16,
    "C_MAX": 32,
    "D_MAX": 3,
    "R": 2,
    "ACC_BITS": 8,
    "NB": 2,
    "WIN": 4,
}
PARAM_SETS = [
    pytest.param({**SMALL, "SELECT_LANES": 4}, id="N8_S4"),
    pytest.param(SMALL, id="N8", marks=FULL_ONLY),
    pytest.param(
        {"N_NODES": 16, "LANES": 1, "TOKEN_BITS": 5, "C_MAX": 64, "D_MAX": 4, "R": 3, "NB": 3},
        id="N16",
        marks=FULL_ONLY,
    ),
    pytest.param({}, id="defaults", marks=FULL_ONLY),
    pytest.param({"SELECT_LANES": 64}, id="defaults_S64", marks=FULL_ONLY),
    pytest.param({"N_NODES": 1024, "SELECT_LANES": 64}, id="N1024_S64", marks=FULL_ONLY),
]


@pytest.mark.parametrize("hdl", PARAM_SETS)
def test_tree_manager(hdl: dict) -> None:
    run_block("tree_manager", hdl, "tb.test_tree_manager", public=TAPS)
