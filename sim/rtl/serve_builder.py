"""The co-simulation server's tree-builder requests (:mod:`sim.rtl.server`).

The tree manager's built path (``hw/tree_manager``: the tree builder, the
topology optimiser, the held tree and its ``pq`` join) driven through the
top's ``tm_*`` ports, one request per call:

``ocfg``    ``beat``: the topology optimiser's configuration beat (fields of
            ``hw.topology_optimiser.cfg_layout``); waits until the optimiser
            has solved and its first shape is ready. ``solve``: its cycles.
``build``   ``cfg``: the tree's ``bcfg`` beat (``mode, k, m, d, w, opt``);
            ``shape``: the parents of a software shape (static mode, ``opt =
            0``), else absent. Runs the builder until it needs a distribution
            or the tree is out (see :class:`BuildRun`).
``dist``    ``beats``: one distribution (``LANES`` probabilities per beat,
            :func:`hw.tree_builder.dist_layout`), for the oldest request not
            yet answered; continues the build as ``build`` does.
``verify``  ``beats``: ``(pt, qt)`` of the held tree's nodes ``1 .. n-1``;
            ``packet``: the tree sends the optimiser a step packet. One
            ``advance``, then the beats on ``pq``; collects the rows, the
            result and the tokens (as ``tree``), then, with ``packet``, waits
            until the optimiser has finished with the step's packet (``tm_opt_busy``
            low: the packet sent and the optimiser idle). ``optimise``: the
            cycles after the result beat's until then (0 without a packet).

Every ``build`` / ``dist`` reply has ``reqs`` (the requests taken since the
last reply, ``{node, parent, token}``), ``done``, and once done ``tree``
(``{parent, token, q, conf}`` of nodes ``1 .. n-1``), ``vrows`` (the
pre-verify rows, node 0 first) and the event cycles ``t_cfg``, ``t_first``
and ``t_last`` (the first and last distribution beats taken) and ``t_end``
(the tree's end beat).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from flows.layouts import pack, unpack
from hw.topology_optimiser import cfg_layout as opt_cfg_layout
from hw.tree_builder import dist_layout, out_layout, req_layout
from hw.tree_manager import bcfg_layout, pq_layout
from hw.tree_mask_gen import parent_layout, row_layout

try:
    from cocotb.triggers import FallingEdge, First, ReadOnly, Timer
except ImportError:  # pragma: no cover - imported outside the simulator
    FallingEdge = First = ReadOnly = Timer = None

__all__ = ["BuildRun", "BuilderPorts", "builder_layouts"]


def builder_layouts(p: dict) -> dict:
    """The built path's layouts for the top's parameters ``p``."""
    N, TB, PB = p["N_NODES"], p["TOKEN_BITS"], p["PROB_BITS"]
    node_bits = max((N - 1).bit_length(), (p["C_MAX"] - 1).bit_length(), 1)
    return {
        "bcfg": bcfg_layout(N),
        "shape": parent_layout(N),
        "req": req_layout(node_bits, TB),
        "dist": dist_layout(p["LANES"], PB),
        "tree": out_layout(N, TB, PB, p["CONF_BITS"]),
        "row": row_layout(N),
        "pq": pq_layout(PB),
        "ocfg": opt_cfg_layout(N, p["D_MAX"], p["R"], p["ACC_BITS"], p["NB"]),
    }


@dataclass
class BuildRun:
    """One tree's build in progress (kept between ``build`` and ``dist`` requests).

    ``unanswered``: requests taken whose distribution has not been streamed
    yet; ``queued``: beats of the distributions the client has sent and the
    builder has not taken yet.
    """

    unanswered: int = 0
    queued: deque = field(default_factory=deque)
    new_reqs: list = field(default_factory=list)
    tree: list = field(default_factory=list)
    vrows: list = field(default_factory=list)
    end: bool = False
    rows_done: bool = False
    t_cfg: int = -1
    t_first: int = -1
    t_last: int = -1
    t_end: int = -1
    errors: int = 0


class BuilderPorts:
    """The built path's requests on a :class:`sim.rtl.server.Server` (``srv``)."""

    def __init__(self, srv, dut, port, pin) -> None:
        self.srv = srv
        self.L = builder_layouts(srv.p)
        self.bcfg, self.shape = port(dut, "tm_bcfg"), port(dut, "tm_shape")
        self.req, self.dist = port(dut, "tm_req"), port(dut, "tm_dist")
        self.tree, self.vrows = port(dut, "tm_tree"), port(dut, "tm_vrows")
        self.pq, self.ocfg = port(dut, "tm_pq"), port(dut, "tm_ocfg")
        self.opt_busy = pin(dut, "tm_opt_busy")
        self.run: BuildRun | None = None
        for p in (self.req, self.tree, self.vrows):
            p.ready.set(1)
        for p in (self.bcfg, self.shape, self.dist, self.pq, self.ocfg):
            p.valid.set(0)

    def handlers(self) -> dict:
        return {
            "ocfg": self.do_ocfg,
            "build": self.do_build,
            "dist": self.do_dist,
            "verify": self.do_verify,
        }

    # ------------------------------------------------------------------ helpers
    async def _send(self, port, beats: list[int], what: str, limit: int = 1000) -> list[int]:
        """Beats one after another on ``port``; the cycles they were taken in."""
        srv, t0, taken = self.srv, self.srv.cycle, []
        for b in beats:
            port.payload.set(b)
            port.valid.set(1)
            while True:
                await ReadOnly()
                ok = port.ready.get()
                c = srv.cycle
                await srv.tick()
                if ok:
                    taken.append(c)
                    break
                srv._timeout(t0, limit, what)
        port.valid.set(0)
        return taken

    async def _optimiser_idle(self, limit: int) -> None:
        """Wait until ``tm_opt_busy`` is low, without a Python step per cycle (a
        value-change trigger), then to the next clock cycle; the server's cycle
        count is taken from the simulated time."""
        srv = self.srv
        await ReadOnly()
        if self.opt_busy.get():
            hit = await First(FallingEdge(self.opt_busy.h), Timer(2 * limit, unit="ns"))
            if isinstance(hit, Timer):
                raise TimeoutError(f"optimiser busy: still after {limit} cycles")
        await FallingEdge(srv.dut.clk)
        srv.resync()

    # ------------------------------------------------------------------ requests
    async def do_ocfg(self, req: dict) -> dict:
        beat = pack(self.L["ocfg"], req["beat"])
        t = await self._send(self.ocfg, [beat], "ocfg beat", limit=200)
        await self._optimiser_idle(int(req.get("limit", 1 << 26)))
        return {
            "t_cfg": t[0],
            "solve": self.srv.cycle - t[0] - 1,
            "tm_error": self.srv.tm_error.get(),
        }

    async def do_build(self, req: dict) -> dict:
        if self.run is not None:
            raise RuntimeError("build: the previous tree is still being built")
        run = self.run = BuildRun()
        (run.t_cfg,) = await self._send(self.bcfg, [pack(self.L["bcfg"], req["cfg"])], "bcfg")
        shape = req.get("shape")
        if shape is not None:
            beats = [pack(self.L["shape"], {"parent": a, "end": 0}) for a in shape[1:]]
            beats.append(pack(self.L["shape"], {"parent": 0, "end": 1}))
            self._shape_beats = deque(beats)
        else:
            self._shape_beats = deque()
        return await self._run(int(req.get("limit", 1 << 22)))

    async def do_dist(self, req: dict) -> dict:
        run = self.run
        if run is None or run.unanswered <= 0:
            raise RuntimeError("dist: no request is waiting for a distribution")
        dl = self.L["dist"]
        beats = req["beats"]
        for j, q in enumerate(beats):
            run.queued.append(pack(dl, {"q": q, "last": int(j == len(beats) - 1)}))
        return await self._run(int(req.get("limit", 1 << 22)))

    async def _run(self, limit: int) -> dict:
        """Clock the build until the tree is out or the builder waits for a
        distribution the client has not sent; reply with what happened."""
        srv, run, L = self.srv, self.run, self.L
        t0 = srv.cycle
        self._drive()
        while True:
            await ReadOnly()
            self._sample(run, L, srv.cycle)
            await srv.tick()
            self._drive()
            if run.errors:
                break
            if run.end and run.rows_done:
                break
            if run.unanswered > 0 and not run.queued:
                break
            srv._timeout(t0, limit, "tree build")
        self.dist.valid.set(0)
        self.shape.valid.set(0)
        rep = {"reqs": run.new_reqs, "done": run.end and run.rows_done, "tm_error": run.errors}
        run.new_reqs = []
        if rep["done"] or run.errors:
            rep.update(
                tree=run.tree, vrows=run.vrows, t_cfg=run.t_cfg, t_first=run.t_first,
                t_last=run.t_last, t_end=run.t_end,
            )  # fmt: skip
            self.run = None
        return rep

    def _drive(self) -> None:
        run = self.run
        if run.queued:
            self.dist.payload.set(run.queued[0])
            self.dist.valid.set(1)
        else:
            self.dist.valid.set(0)
        if self._shape_beats:
            self.shape.payload.set(self._shape_beats[0])
            self.shape.valid.set(1)
        else:
            self.shape.valid.set(0)

    def _sample(self, run: BuildRun, L: dict, c: int) -> None:
        """Read every built-path port in cycle ``c`` (after its settle)."""
        if self.req.valid.get():
            run.new_reqs.append(unpack(L["req"], self.req.payload.get()))
            run.unanswered += 1
        if run.queued and self.dist.ready.get():
            beat = run.queued.popleft()
            run.t_first = c if run.t_first < 0 else run.t_first
            run.t_last = c
            if unpack(L["dist"], beat)["last"]:
                run.unanswered -= 1
        if self._shape_beats and self.shape.ready.get():
            self._shape_beats.popleft()
        if self.tree.valid.get():
            b = unpack(L["tree"], self.tree.payload.get())
            if b["end"]:
                run.end, run.t_end = True, c
            else:
                run.tree.append({k: b[k] for k in ("parent", "token", "q", "conf")})
        if self.vrows.valid.get():
            r = unpack(L["row"], self.vrows.payload.get())
            run.vrows.append(r["row"])
            run.rows_done = run.rows_done or bool(r["last"])
        run.errors |= self.srv.tm_error.get()

    async def do_verify(self, req: dict) -> dict:
        """The held tree's ``pt``/``qt`` on ``pq``; rows, result, tokens; the
        optimiser's work on the step's packet."""
        pl = self.L["pq"]
        beats = [pack(pl, {"pt": a, "qt": b}) for a, b in req["beats"]]
        rep = await self.srv.stream_tree(self.pq, beats, req.get("res"))
        rep["optimise"] = 0
        if req.get("packet") and rep["result"] is not None and not rep["tm_error"]:
            await self._optimiser_idle(int(req.get("limit", 1 << 26)))
            rep["optimise"] = max(0, self.srv.cycle - rep["t_result"] - 1)
        return rep
