"""Co-simulation server: ``hw/specdecode_top.py`` on Verilator, driven by the ``rtl`` backend.

The chip model (:mod:`sim.rtl`) is synchronous Python; cocotb runs
this module inside the simulator process. The cocotb test :func:`serve`
starts the clock, resets the design, connects back to the client over the
Unix socket named by ``COSIM_ADDR`` and serves requests until the client
says ``quit`` or goes away: one request per backend call, each driving the
top-level ports for as many clock cycles as the operation takes and
returning the results with the cycles it took on the simulated clock.

Only top-level ports of ``specdecode_top`` are read or written (the design
may be built without ``--public-flat-rw``).

Requests (dicts, ``cmd`` first; every reply has ``cycle``, the clock cycle
count since reset, and ``error`` (a traceback string) if the request failed)::

    ``seed``      ``seed`` (64-bit): seed the RNG lanes, wait until ``busy`` falls.
    ``tree``      ``beats``: draft beats ``(parent, token, pt, qt)`` of nodes
                  ``1 .. n-1``. One ``advance``, the tree, then the mask rows, the
                  result and the accepted tokens; ``t`` the cycle of each event.
                  With ``SELECT_LANES > 0``, ``res``: every node's residual
                  (``SELECT_LANES`` weights a beat), sent on ``tot`` before the
                  advance; from the result on, ``last``'s on ``w`` once; the extra
                  token in the same reply.
    ``extra``     ``beats``: weight beats (``LANES`` weights each) of one pass; the
                  server sends the pass twice and returns the extra token (the
                  two-pass sampler, ``SELECT_LANES = 0``).
    ``ops``       ``ops``: KV operations ``(op, seq, dst, layer, pos, owner,
                  committed, accept)``, one per cycle; their result beats.
    ``lookups``   ``queries``: ``(seq, layer, pos, view)``, alternately on the
                  ``draft`` and ``verify`` ports, two per cycle; the replies.
    ``idle``      ``cycles``: let that many cycles pass, every input idle.
    ``ocfg``, ``build``, ``dist``, ``verify``: the tree manager's built path
                  (the tree builder and the topology optimiser),
                  :mod:`sim.rtl.serve_builder`.
    ``quit``      end the test (the simulator exits).

``python -m sim.rtl.server <json>`` runs the server through
:func:`flows.toolchain.run` (the one place that sets Verilator's environment);
:mod:`sim.rtl` starts it in a child process.
"""

import json
import os
import sys
import traceback
from multiprocessing.connection import Client
from pathlib import Path

from flows import toolchain
from flows.layouts import pack, unpack
from hw.accept_sampler import result_layout as acc_result
from hw.accept_sampler import token_layout as acc_token
from hw.kv_pool import lookup_cycles, op_layout, query_layout, reply_layout
from hw.kv_pool import result_layout as kv_result
from hw.token_sampler import beat_layout
from hw.token_sampler import token_layout as extra_token
from hw.token_select import tot_layout
from hw.tree_manager import draft_layout
from hw.tree_mask_gen import row_layout
from sim.rtl.serve_builder import BuilderPorts

try:
    import cocotb
    from cocotb.clock import Clock
    from cocotb.simtime import get_sim_time
    from cocotb.triggers import FallingEdge, ReadOnly
except ImportError:  # pragma: no cover - imported outside the simulator
    cocotb = None

MODULE = "specdecode_top"


class Pin:
    """A top-level port: cached handle, integer reads and writes (writes only on change).

    Reads take the simulator's bit string directly (Verilator is two-state):
    several times cheaper than building a ``LogicArray`` per read."""

    __slots__ = ("h", "raw", "last")

    def __init__(self, dut, name: str) -> None:
        self.h = getattr(dut, name)
        self.raw = self.h._handle.get_signal_val_binstr
        self.last: int | None = None

    def get(self) -> int:
        return int(self.raw(), 2)

    def set(self, v: int) -> None:
        if v != self.last:
            self.h.value = v
            self.last = v


class Port:
    """A stream port's three pins."""

    def __init__(self, dut, name: str) -> None:
        self.valid = Pin(dut, f"{name}__valid")
        self.ready = Pin(dut, f"{name}__ready")
        self.payload = Pin(dut, f"{name}__payload")


class _Select:
    """The one-pass select's side of a tree request: ``last``'s residual on ``w``
    from the cycle after the result names it, once, and the extra token."""

    def __init__(self, srv: "Server", res: list[list[list[int]]]) -> None:
        self.srv, self.res = srv, res
        self.beats: list[int] | None = None
        self.k = 0
        self.token: int | None = None
        self.t_token = -1

    def sample(self, c: int) -> None:
        """At ``ReadOnly`` of cycle ``c``: a ``w`` beat taken, the extra token."""
        srv = self.srv
        if self.beats is not None and self.k < len(self.beats) and srv.w.ready.get():
            self.k += 1
        if self.token is None and srv.extra.valid.get():
            self.token = unpack(srv.L["extra"], srv.extra.payload.get())["token"]
            self.t_token = c

    def drive(self, result: dict | None) -> None:
        """After the edge: ``w``'s next beat (the first once ``result`` is known)."""
        w = self.srv.w
        if self.beats is None:
            if result is None:
                return
            bl = self.srv.L["beat"]
            node = self.res[result["last"]]
            self.beats = [
                pack(bl, {"w": b, "last": int(j == len(node) - 1)}) for j, b in enumerate(node)
            ]
        if self.k < len(self.beats):
            w.payload.set(self.beats[self.k])
            w.valid.set(1)
        else:
            w.valid.set(0)


class Server:
    """Drives ``specdecode_top``'s ports for each request (see the module docstring)."""

    def __init__(self, dut, p: dict) -> None:
        self.dut, self.p = dut, p
        N, TB_, PB = p["N_NODES"], p["TOKEN_BITS"], p["PROB_BITS"]
        self.L = {
            "draft": draft_layout(N, TB_, PB),
            "row": row_layout(N),
            "result": acc_result(N),
            "token": acc_token(TB_),
            "beat": beat_layout(p["SELECT_LANES"] or p["LANES"], p["WEIGHT_BITS"]),
            "tot": tot_layout(p["SELECT_LANES"] or 1, p["WEIGHT_BITS"], N),
            "extra": extra_token(TB_),
            "op": op_layout(p["SEQS"], N, p["LAYER_BITS"], p["POS_BITS"]),
            "res": kv_result(p["ENTRIES"], p["PAGES"]),
            "query": query_layout(p["SEQS"], N, p["LAYER_BITS"], p["POS_BITS"]),
            "reply": reply_layout(p["PAGES"]),
        }
        self.cycle = 0
        self.res_seen = -1  # cycle of the last KV result beat read
        self.seed_p = Port(dut, "tm_seed")
        self.busy = Pin(dut, "tm_busy")
        self.advance = Pin(dut, "tm_advance")
        self.i = Port(dut, "tm_i")
        self.rows = Port(dut, "tm_rows")
        self.result = Port(dut, "tm_result")
        self.tokens = Port(dut, "tm_tokens")
        self.w = Port(dut, "tm_w")
        self.tot = Port(dut, "tm_tot") if p["SELECT_LANES"] else None
        self.extra = Port(dut, "tm_extra")
        self.tm_error = Pin(dut, "tm_error")
        self.op = Port(dut, "kv_op")
        self.res = Port(dut, "kv_res")
        self.q = [Port(dut, "kv_draft_q"), Port(dut, "kv_verify_q")]
        self.r = [Port(dut, "kv_draft_r"), Port(dut, "kv_verify_r")]
        self.kv_error = Pin(dut, "kv_error")
        # every output stream always ready: the pool's inputs then never stall
        # (op.ready = ~r1_valid | move, move = r1_valid; q.ready = ~r.valid | r.ready)
        for port in (self.rows, self.result, self.tokens, self.extra, self.res, *self.r):
            port.ready.set(1)
        for port in (self.seed_p, self.i, self.w, self.op, *self.q):
            port.valid.set(0)
        if self.tot is not None:
            self.tot.valid.set(0)
        self.advance.set(0)
        self.builder = BuilderPorts(self, dut, Port, Pin)

    async def start(self) -> None:
        clk, rst = self.dut.clk, self.dut.rst
        cocotb.start_soon(Clock(clk, 2, unit="ns").start())
        rst.value = 1
        for _ in range(2):
            await FallingEdge(clk)
        rst.value = 0
        self.cycle = 0
        self.t0_ns = get_sim_time(unit="ns")

    def resync(self) -> None:
        """The cycle count from the simulated time (after waiting on a trigger
        other than the clock; called at a falling clock edge)."""
        self.cycle = round((get_sim_time(unit="ns") - self.t0_ns) / 2)

    async def tick(self) -> None:
        """To the next falling edge: one clock cycle later."""
        await FallingEdge(self.dut.clk)
        self.cycle += 1

    def _timeout(self, start: int, limit: int, what: str) -> None:
        if self.cycle - start > limit:
            raise TimeoutError(f"{what}: nothing after {limit} cycles (cycle {self.cycle})")

    # ------------------------------------------------------------------ tree manager
    async def do_seed(self, req: dict) -> dict:
        t0 = self.cycle
        self.seed_p.payload.set(int(req["seed"]))
        self.seed_p.valid.set(1)
        while True:  # the beat is taken when ready (= ~busy) at the edge
            await ReadOnly()
            taken = self.seed_p.ready.get()
            await self.tick()
            if taken:
                break
            self._timeout(t0, 100, "seed beat")
        self.seed_p.valid.set(0)
        limit = 32 * self.p["N_NODES"] + 100
        while self.busy.get():
            await self.tick()
            self._timeout(t0, limit, "seeding")
        return {"seeding": self.cycle - t0}

    async def do_tree(self, req: dict) -> dict:
        """One advance, then the tree on ``i``; collect rows, the result and the tokens."""
        draft = self.L["draft"]
        beats = [
            pack(draft, {"parent": a, "token": b, "pt": c, "qt": d, "end": 0})
            for a, b, c, d in req["beats"]
        ]
        beats.append(pack(draft, {"end": 1}))
        return await self.stream_tree(self.i, beats, req.get("res"))

    async def stream_tree(
        self, port: Port, beats: list[int], res: list[list[list[int]]] | None = None
    ) -> dict:
        """One advance, then ``beats`` on ``port`` (``i``, or ``pq`` for the held
        tree); collect rows, the result and the tokens. ``res`` (one-pass select):
        every node's residual beats, sent on ``tot`` first; ``last``'s go on ``w``
        from the cycle after the result, and the extra token is collected too.

        Event times are cycle numbers: the cycle at whose closing edge a beat
        is taken (every output is always ready, so taken = seen valid)."""
        L = self.L
        row_l, res_l, tok_l = L["row"], L["result"], L["token"]
        if res is not None:
            await self.send_totals(res)
        sel = _Select(self, res) if res is not None else None
        n = len(beats)
        # the lanes advance at the edge closing this cycle; out is the step's
        # randomness from the next cycle on, when the tree starts
        self.advance.set(1)
        await self.tick()
        self.advance.set(0)
        i, rows_p, result_p, tokens_p = port, self.rows, self.result, self.tokens
        t_in: list[int] = []
        rows: list[int] = []
        t_rows: list[int] = []
        toks: list[int] = []
        t_toks: list[int] = []
        result = None
        t_res = -1
        errors = 0
        k = 0
        t0 = self.cycle
        limit = 8 * n + 200 + (max(map(len, res)) if res else 0)
        if n:
            i.payload.set(beats[0])
            i.valid.set(1)
        while True:
            await ReadOnly()
            c = self.cycle
            if k < n and i.ready.get():
                t_in.append(c)
                k += 1
            if rows_p.valid.get():
                r = unpack(row_l, rows_p.payload.get())
                rows.append(r["row"])
                t_rows.append(c)
            if result_p.valid.get():
                result = unpack(res_l, result_p.payload.get())
                t_res = c
            if tokens_p.valid.get():
                toks.append(unpack(tok_l, tokens_p.payload.get())["token"])
                t_toks.append(c)
            if sel is not None:
                sel.sample(c)
            errors |= self.tm_error.get()
            await self.tick()
            if k < n:
                i.payload.set(beats[k])
            else:
                i.valid.set(0)
            if sel is not None:
                sel.drive(result)
            if errors:
                break
            if result is not None and len(toks) >= result["accepted"]:
                if sel is None or sel.token is not None:
                    break
            self._timeout(t0, limit, "tree result")
        i.valid.set(0)
        self.w.valid.set(0)
        out = {
            "rows": rows,
            "result": result,
            "tokens": toks,
            "tm_error": errors,
            "t_in": t_in,
            "t_rows": t_rows,
            "t_result": t_res,
            "t_tokens": t_toks,
            "t_start": t0,
        }
        if sel is not None:
            out.update(extra=sel.token, t_extra=sel.t_token)
        return out

    async def send_totals(self, res: list[list[list[int]]]) -> None:
        """Every node's residual beats on ``tot`` (spec §3.12's totals pass), node 0
        first, one a cycle while ``ready``."""
        tl = self.L["tot"]
        beats = [
            pack(tl, {"node": j, "w": b, "last": int(k == len(r) - 1)})
            for j, r in enumerate(res)
            for k, b in enumerate(r)
        ]
        tot = self.tot
        k, t0 = 0, self.cycle
        tot.payload.set(beats[0])
        tot.valid.set(1)
        while k < len(beats):
            await ReadOnly()
            k += tot.ready.get()
            await self.tick()
            if k < len(beats):
                tot.payload.set(beats[k])
            else:
                tot.valid.set(0)
            self._timeout(t0, 2 * len(beats) + 64, "totals")

    async def do_extra(self, req: dict) -> dict:
        """The residual weights twice on ``w`` (pass 1 sums, pass 2 selects); the token."""
        beat_l = self.L["beat"]
        one = req["beats"]
        beats = [
            pack(beat_l, {"w": b, "last": int(j == len(one) - 1)}) for j, b in enumerate(one)
        ] * 2
        n = len(beats)
        w, extra = self.w, self.extra
        t_in: list[int] = []
        token = None
        t_tok = -1
        errors = 0
        k = 0
        t0 = self.cycle
        limit = 4 * n + 200
        w.payload.set(beats[0])
        w.valid.set(1)
        while True:
            await ReadOnly()
            c = self.cycle
            if k < n and w.ready.get():
                t_in.append(c)
                k += 1
            if extra.valid.get():
                token = unpack(self.L["extra"], extra.payload.get())["token"]
                t_tok = c
            errors |= self.tm_error.get()
            await self.tick()
            if k < n:
                w.payload.set(beats[k])
            else:
                w.valid.set(0)
            if token is not None or errors:
                break
            self._timeout(t0, limit, "extra token")
        w.valid.set(0)
        return {
            "token": token,
            "tm_error": errors,
            "t_first": t_in[0] if t_in else -1,
            "t_token": t_tok,
        }

    # ------------------------------------------------------------------ KV pool
    async def do_ops(self, req: dict) -> dict:
        """Operations one per cycle (``op.ready`` is always high here); results in order.

        An operation driven in cycle ``c`` is taken at the edge closing ``c``;
        its result beat is valid in cycle ``c + 2`` (seen at that cycle's
        falling edge: registered outputs)."""
        op_l, res_l = self.L["op"], self.L["res"]
        names = ("op", "seq", "dst", "layer", "pos", "owner", "committed", "accept")
        ops = [pack(op_l, dict(zip(names, o, strict=True))) for o in req["ops"]]
        n = len(ops)
        op, res = self.op, self.res
        out: list[dict] = []
        t0 = self.cycle
        k = 0
        while len(out) < n:
            # (a result seen in this very cycle by the previous request is not new)
            if res.valid.get() and self.cycle != self.res_seen:
                r = unpack(res_l, res.payload.get())
                r["t"] = self.res_seen = self.cycle
                out.append(r)
            if k < n:
                op.payload.set(ops[k])
                op.valid.set(1)
                k += 1
            else:
                op.valid.set(0)
            if len(out) >= n:
                break
            await self.tick()
            self._timeout(t0, n + 50, "KV results")
        op.valid.set(0)  # the last result beat is taken at the edge closing this cycle
        return {"results": out, "t0": t0}

    async def do_lookups(self, req: dict) -> dict:
        """Queries two per cycle (``draft`` even, ``verify`` odd); replies
        ``lookup_cycles`` cycles later (1, or 2 above 256 nodes: SPEC §6)."""
        q_l, r_l = self.L["query"], self.L["reply"]
        qs = [
            pack(q_l, {"seq": s, "layer": la, "pos": po, "view": v})
            for s, la, po, v in req["queries"]
        ]
        n = len(qs)
        lat = lookup_cycles(self.p["N_NODES"])
        out: list[int] = [0] * n
        qp, rp = self.q, self.r
        t0 = self.cycle
        k = 0
        # per cycle in flight, oldest first: the (port, query index) driven then
        flight: list[list[tuple[int, int]]] = []
        while k < n or any(flight):
            if len(flight) == lat:
                for port, j in flight.pop(0):
                    if not rp[port].valid.get():
                        raise RuntimeError(f"lookup {j}: no reply {lat} cycle(s) after the query")
                    out[j] = rp[port].payload.get()
                if k >= n and not any(flight):
                    break  # the last replies are taken at the edge closing this cycle
            driven = []
            for port in (0, 1):
                if k < n:
                    qp[port].payload.set(qs[k])
                    qp[port].valid.set(1)
                    driven.append((port, k))
                    k += 1
                else:
                    qp[port].valid.set(0)
            flight.append(driven)
            await self.tick()
        for port in (0, 1):
            qp[port].valid.set(0)
        replies = [unpack(r_l, v) for v in out]
        return {
            "replies": [(r["hit"], r["error"], r["page"]) for r in replies],
            "issue": (n + 1) // 2,
            "t0": t0,
        }

    async def do_idle(self, req: dict) -> dict:
        """``cycles`` clock cycles with every input idle."""
        for _ in range(int(req["cycles"])):
            await self.tick()
        return {}

    async def serve(self, conn) -> None:
        handlers = {
            **self.builder.handlers(),
            "idle": self.do_idle,
            "seed": self.do_seed,
            "tree": self.do_tree,
            "extra": self.do_extra,
            "ops": self.do_ops,
            "lookups": self.do_lookups,
        }
        while True:
            try:
                req = conn.recv()
            except (EOFError, OSError):
                return  # the client went away: end the test (the simulator exits)
            cmd = req.get("cmd")
            if cmd == "quit":
                conn.send({"cycle": self.cycle})
                return
            try:
                if cmd not in handlers:
                    raise ValueError(f"cmd = {cmd!r}: unknown request")
                rep = await handlers[cmd](req)
            except Exception:  # reported to the client, which raises
                rep = {"error": traceback.format_exc()}
            rep["cycle"] = self.cycle
            conn.send(rep)


if cocotb is not None:

    @cocotb.test()
    async def serve(dut) -> None:
        """Serve the client at ``COSIM_ADDR`` until it quits or disconnects."""
        p = json.loads(os.environ["TB_PARAMS"])
        srv = Server(dut, p)
        await srv.start()
        conn = Client(os.environ["COSIM_ADDR"], family="AF_UNIX")
        try:
            conn.send({"hello": os.getpid(), "cycle": srv.cycle})
            await srv.serve(conn)
        finally:
            conn.close()


def main(argv: list[str] | None = None) -> int:
    """Run the server on a build: ``python -m sim.rtl.server '<json>'`` with ``build_dir``,
    ``test_dir``, ``params`` and ``addr`` (what :mod:`sim.rtl` passes)."""
    args = json.loads((argv if argv is not None else sys.argv[1:])[0])
    toolchain.run(
        Path(args["build_dir"]),
        MODULE,
        "sim.rtl.server",
        test_dir=Path(args["test_dir"]),
        extra_env={"TB_PARAMS": json.dumps(args["params"]), "COSIM_ADDR": args["addr"]},
        seed=0,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
