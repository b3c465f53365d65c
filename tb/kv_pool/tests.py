"""The KV pool's cocotb tests (run by ``tb/kv_pool/test_kv_pool.py`` and
``make soak``; library in :mod:`tb.kv_pool.scoreboard`).

Directed tests: a whole speculative step through the verifier's view masks,
prefix sharing, every operation and a lookup in the cycle right after an
insert (while it is pending, ``pending_insert``), forks right after the
operation that filled or emptied their ``dst`` (``back_to_back_fork``),
fill to full and overflow,
every error class of SPEC §4.3
with the table unchanged, reset in the middle of a run, the SPEC §6 cycle
counts, and what the RTL does with a commit the golden model rejects as
leaving two committed entries at one position (documented deviation).

Environment: ``KV_OPS`` (random operations, default :data:`OPS`),
``KV_REPORT`` (a JSON file for ``make soak``'s figures).

"""

import json
import os
import time

import pytest

from golden import tree
from golden.kvcache import KVErr, KVError
from hw.kv_pool import ErrorCode, Op, op_layout, query_layout, reply_layout, result_layout
from hw.kv_pool.staged import lookup_cycles
from tb.common import TB, params, random_tree, report
from tb.kv_pool.scoreboard import OPS, Bench, Model, read_table

try:
    import cocotb
    from cocotb.triggers import FallingEdge, ReadOnly
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    @cocotb.parametrize(
        (("idle", "backpressure"), [("none", "none"), ("random", "random"), ("sparse", "half")])
    )
    async def random_ops(dut, idle: str, backpressure: str) -> None:
        """The scoreboard test; the no-stall run carries most of the operations."""
        total = int(os.environ.get("KV_OPS", OPS))
        n = total if idle == "none" else max(1, total // 20)
        # the lookup ports query every other cycle (both in the same cycles, and in
        # the cycles the op port takes an operation): half the cocotb cost per cycle
        b = Bench(dut, idle, backpressure, qidle="half" if idle == "none" else None)
        await b.start()
        t0 = time.time()
        qn = n // 2 if idle == "none" else n  # queries every other cycle: half as many
        lost = await b.random_ops(n, qn, progress=n >= 200_000)
        dt = time.time() - t0
        ops = len(b.op.sent)
        b.tb.log.info(
            "%d operations, %d lookups in %.1f s (%.0f ops/s); leaks %d, lost committed %d",
            ops, sum(len(q.sent) for q in b.qs), dt, ops / dt, b.sb.leaks, lost,
        )  # fmt: skip
        codes = {}
        for _c, v in b.res.received:
            name = ErrorCode(v["code"]).name
            codes[name] = codes.get(name, 0) + 1
        b.tb.log.info("result codes: %s", codes)
        out = os.environ.get("KV_REPORT")
        if out and idle == "none":
            rec = {
                "params": b.p,
                "operations": ops,
                "lookups": sum(len(q.sent) for q in b.qs),
                "seconds": round(dt, 1),
                "ops_per_s": round(ops / dt),
                "leaks": b.sb.leaks,
                "lost_committed": lost,
                "mismatches": len(b.sb.mismatches),
                "codes": codes,
                "seed": b.tb.seed,
            }
            with open(out, "w") as f:
                json.dump(rec, f, indent=1)
        b.finish(f"random_ops {idle}/{backpressure}", leaks=b.sb.leaks, lost=lost)

    @cocotb.test()
    async def speculative_step(dut) -> None:
        """Whole steps: a committed prefix, a draft tree's entries over several layers,
        verifier lookups through each node's view, commit of the accepted path:
        exactly the rejected pages come back, the accepted entries are visible
        without a view. Expectations from the tree itself (and the scoreboard
        compares every beat with golden)."""
        b = Bench(dut)
        p, tb = b.p, b.tb
        await b.start()
        n_layers = 3 if min(p["ENTRIES"], p["PAGES"]) >= 64 else 2
        tip = 3  # positions 0 .. tip - 1 committed
        room = min(p["ENTRIES"], p["PAGES"]) // n_layers - tip
        n_max = min(p["N_NODES"], room, (1 << p["POS_BITS"]) - tip - 1)  # + 1: the query past
        for _rep in range(6):
            seq = tb.rng.randrange(p["SEQS"])
            par = random_tree(tb.rng, n_max)
            n = len(par)
            dep = tree.depths(par)
            # node i is owner off + i: the high owners (and view bits) too, half the time
            off = tb.rng.choice([0, tb.rng.randrange(p["N_NODES"] - n + 1)])
            rows = [r << off for r in tree.mask_rows(par)]
            for layer in range(n_layers):
                for ps in range(tip):
                    b.send(Op.INSERT, seq=seq, layer=layer, pos=ps, committed=1)
            k0 = len(b.res.received) + n_layers * tip
            for layer in range(n_layers):
                for i in range(n):
                    b.send(Op.INSERT, seq=seq, layer=layer, pos=tip + dep[i], owner=off + i)
            await b.drain()
            res = [v for _c, v in b.res.received[k0:]]
            assert not any(r["error"] for r in res), f"seed {tb.seed}: {res}"
            page = {(layer, i): res[layer * n + i]["page"] for layer in range(n_layers)
                    for i in range(n)}  # fmt: skip
            # verifier: node i sees its ancestors' entries at depths 0 .. dep[i] and
            # nothing deeper; the prefix is visible to every view
            k0 = len(b.rs[1].received)
            want = []
            for i in range(n):
                for layer in range(n_layers):
                    for d in range(dep[i] + 2):
                        b.query(1, seq, layer, tip + d, rows[i])
                        anc = i
                        while anc >= 0 and dep[anc] > d:
                            anc = par[anc]
                        want.append(page[(layer, anc)] if d <= dep[i] else None)
                    b.query(1, seq, layer, tip - 1, rows[i])
                    want.append("prefix")
            await b.drain()
            got = [v for _c, v in b.rs[1].received[k0:]]
            for w, r in zip(want, got, strict=True):
                if w is None:
                    assert not r["hit"], f"seed {tb.seed}: a view saw a non-ancestor: {r}"
                elif w == "prefix":
                    assert r["hit"], f"seed {tb.seed}: prefix not visible"
                else:
                    assert r["hit"] and r["page"] == w, f"seed {tb.seed}: {r} != page {w}"
            last = tb.rng.randrange(n)
            kept = {pg for (_l, i), pg in page.items() if (rows[last] >> (off + i)) & 1}
            rejected = set(page.values()) - kept
            b.send(Op.COMMIT, seq=seq, accept=rows[last] | 1)  # accept[0]: SPEC §4.3
            await b.drain()
            r = b.res.received[-1][1]
            assert r["freed"] == sum(1 << pg for pg in rejected), f"seed {tb.seed}: freed"
            assert r["valid_entries"] == b.model.bt.valid_entries
            # accepted entries now visible without a view, rejected ones to nobody
            k0 = len(b.rs[0].received)
            for layer in range(n_layers):
                for d in range(dep[last] + 2):
                    b.query(0, seq, layer, tip + d, 0)
            await b.drain()
            got = [v["hit"] for _c, v in b.rs[0].received[k0:]]
            assert got == ([1] * (dep[last] + 1) + [0]) * n_layers, f"seed {tb.seed}: {got}"
            b.check_table()
            b.send(Op.RELEASE, seq=seq)
            await b.drain()
            assert b.res.received[-1][1]["free_pages"] == p["PAGES"]
        b.finish("speculative_step")

    @cocotb.test()
    async def prefix_sharing(dut) -> None:
        """fork, speculate on both sequences, commit both, release one: the shared
        prefix stays (no page copied, none freed) until its last sequence goes."""
        b = Bench(dut)
        p, tb = b.p, b.tb
        if p["SEQS"] < 2:
            b.finish("prefix_sharing (SEQS = 1: n/a)")
            return
        await b.start()
        for ps in range(4):
            b.send(Op.INSERT, seq=0, layer=0, pos=ps, committed=1)
        b.send(Op.FORK, seq=0, dst=1)
        for s in (0, 1):
            b.send(Op.INSERT, seq=s, layer=0, pos=4, owner=0)
            b.send(Op.INSERT, seq=s, layer=0, pos=5, owner=1)
            b.send(Op.COMMIT, seq=s, accept=0b01 if s else 0b11)
        await b.drain()
        assert all(not v["error"] for _c, v in b.res.received), f"seed {tb.seed}"
        assert b.res.received[-1][1]["free_pages"] == p["PAGES"] - 7, "4 shared + 3 kept"
        b.send(Op.RELEASE, seq=0)
        await b.drain()
        assert b.res.received[-1][1]["freed"].bit_count() == 2  # seq 0's own entries
        for ps in range(5):
            b.query(0, 1, 0, ps)
        await b.drain()
        assert all(r["hit"] for _c, r in b.rs[0].received[-5:]), f"seed {tb.seed}"
        b.send(Op.RELEASE, seq=1)
        await b.drain()
        assert b.res.received[-1][1]["free_pages"] == p["PAGES"]
        b.check_table()
        b.finish("prefix_sharing")

    @cocotb.test()
    async def pending_insert(dut) -> None:
        """An insert's conflict checks finish in the cycle after its take, where the
        insert is *pending* (``hw.kv_pool``): every operation and lookup of that
        cycle must see it resolved. Back-to-back pairs (insert, then an operation
        that depends on it, with a lookup of the new key in the same cycle), each
        checked against the golden model: a duplicate of the pending insert, a
        key it holds committed, the entry a rejected insert leaves free, a
        commit / fork / release / busy ``dst`` that involves it, and the last
        free entry or page taken (or not) by it."""
        b = Bench(dut)
        p, tb = b.p, b.tb
        await b.start()
        seqs, n_k = p["SEQS"], [0]

        def key() -> tuple[int, int]:
            n_k[0] += 1
            return unique_key(p, n_k[0], 1)

        sent, probes = [0], []  # beats queued on each source; (op, query) in one cycle

        def solo(kind: Op, query: tuple = (0, 0, 0), **fields) -> None:
            """An operation and, in the same cycle on both lookup ports, ``query``
            (the three sources stay in step: every operation comes with a query)."""
            b.send(kind, **fields)
            for port in (0, 1):
                b.query(port, *query, 0b11)
            sent[0] += 1

        def pair(first: dict, then: dict) -> None:
            """``first``, then ``then`` in the next cycle with, on both lookup
            ports, a query of the first's key in that cycle."""
            f, t = dict(first), dict(then)
            solo(f.pop("op"), **f)
            probes.append(sent[0])
            solo(t.pop("op"), (f.get("seq", 0), f["layer"], f["pos"]), **t)

        o1 = 2 % p["N_NODES"]
        for rnd in range(3):
            s, s2 = rnd % seqs, (rnd + 1) % seqs
            la, pa = key()
            lb, pb = key()
            ins = {"op": Op.INSERT, "seq": s, "layer": la, "pos": pa, "owner": 1}
            # a speculative duplicate of the pending insert: SPEC_DUP
            pair(dict(ins), dict(ins))
            # a committed key, then a speculative and a committed insert of it
            com = {"op": Op.INSERT, "seq": s, "layer": lb, "pos": pb, "committed": 1}
            pair(dict(com), {**com, "committed": 0, "owner": o1})
            pair({**com, "owner": 1}, dict(com))
            # a rejected insert, then one that takes the entry it left free
            lc, pc = key()
            pair(dict(ins), {"op": Op.INSERT, "seq": s, "layer": lc, "pos": pc, "owner": o1})
            # a rejected insert, then no insert: its page is free again
            pair(dict(ins), {"op": Op.RELEASE, "seq": s2})
            # commit right after a speculative insert: keep it (owner 0) or drop it
            ld, pd = key()
            spec = {"op": Op.INSERT, "seq": s, "layer": ld, "pos": pd, "owner": 0}
            pair(dict(spec), {"op": Op.COMMIT, "seq": s, "accept": 0b1})
            le, pe = key()
            drop = {"op": Op.COMMIT, "seq": s, "accept": 1}
            pair({**spec, "layer": le, "pos": pe, "owner": 1}, drop)
            if seqs > 1:
                # fork from a sequence whose only committed entry is pending
                solo(Op.RELEASE, seq=s)
                solo(Op.RELEASE, seq=s2)
                lf, pf = key()
                pair({**com, "layer": lf, "pos": pf}, {"op": Op.FORK, "seq": s, "dst": s2})
                # fork into a sequence whose only entry is pending: DST_BUSY
                solo(Op.RELEASE, seq=s2)
                lg, pg = key()
                fork = {"op": Op.FORK, "seq": s, "dst": s2}
                pair({**com, "seq": s2, "layer": lg, "pos": pg}, fork)
            # release a sequence right after its only entry's insert
            solo(Op.RELEASE, seq=s)
            lh, ph = key()
            pair({**spec, "layer": lh, "pos": ph}, {"op": Op.RELEASE, "seq": s})
            solo(Op.RELEASE, seq=s2)
            await b.drain()
            b.check_table()
        # the last free entry / page: taken by an accepted pending insert (the next
        # one finds none), or left by a rejected one (the next one takes it)
        cap = min(p["ENTRIES"], p["PAGES"])
        for k in range(cap - 1):
            layer, ps = unique_key(p, k)
            solo(Op.INSERT, seq=k % seqs, layer=layer, pos=ps, owner=k % p["N_NODES"], committed=1)
        la, pa = key()
        last = {"op": Op.INSERT, "seq": 0, "layer": la, "pos": pa, "owner": 1}
        lb, pb = key()
        pair(dict(last), {**last, "layer": lb, "pos": pb})
        solo(Op.COMMIT, seq=0, accept=1)  # drops the last one (seq 0's only speculative)
        l0, p0 = unique_key(p, 0)  # committed for seq 0: SEEN_COMMITTED
        pair({**last, "layer": l0, "pos": p0}, dict(last))
        # full again: a conflict outranks TABLE_FULL / NO_PAGE (golden precedence)
        solo(Op.INSERT, seq=0, layer=l0, pos=p0, owner=1)  # SEEN_COMMITTED
        solo(Op.INSERT, seq=0, layer=la, pos=pa, owner=1)  # SPEC_DUP
        solo(Op.INSERT, seq=0, layer=la, pos=pa, owner=1, committed=1)  # full: no dup check
        await b.drain()
        tail = [r["code"] for _c, r in b.res.received[-3:]]
        full = ErrorCode.TABLE_FULL if p["ENTRIES"] <= p["PAGES"] else ErrorCode.NO_PAGE
        want = [ErrorCode.SEEN_COMMITTED.value, ErrorCode.SPEC_DUP.value, full.value]
        assert tail == want, f"seed {tb.seed}: {tail} != {want}"
        b.check_table()
        for k in probes:  # the probe and the operation after the insert: one cycle
            assert b.op.sent[k][0] == b.qs[0].sent[k][0] == b.qs[1].sent[k][0], (
                f"probe {k} out of step"
            )
        codes = {r["code"] for _c, r in b.res.received}
        need = {ErrorCode.SPEC_DUP, ErrorCode.SEEN_COMMITTED}
        need |= {ErrorCode.TABLE_FULL if p["ENTRIES"] <= p["PAGES"] else ErrorCode.NO_PAGE}
        if seqs > 1:
            need.add(ErrorCode.DST_BUSY)
        assert {c.value for c in need} <= codes, f"seed {tb.seed}: codes {sorted(codes)}"
        b.finish("pending_insert")

    @cocotb.test()
    async def back_to_back_fork(dut) -> None:
        """A fork's ``dst`` check in the cycle right after an operation that changed
        whether ``dst`` sees an entry (``TARGET="fpga"`` reads it from per-group
        copies of the last cycle's state, with that cycle's sequence and fork
        target kept apart): a fork into the ``dst`` the last fork filled
        (DST_BUSY), and into a sequence a commit or a release just emptied (it
        succeeds). Each pair in consecutive cycles, checked against golden."""
        b = Bench(dut)
        p = b.p
        await b.start()
        if p["SEQS"] < 3:
            b.finish("back_to_back_fork")
            return
        n_k = [0]

        def key() -> tuple[int, int]:
            n_k[0] += 1
            return unique_key(p, n_k[0], 1)

        def ins(seq: int, committed: int, owner: int = 1) -> None:
            la, pa = key()
            b.send(Op.INSERT, seq=seq, layer=la, pos=pa, owner=owner, committed=committed)

        async def pair(first: tuple, then: tuple) -> None:
            """``first`` and ``then`` in consecutive cycles, then the whole table
            compared (a fork applied despite its error would show there)."""
            for kind, fields in (first, then):
                b.send(kind, **fields)
            await b.drain()
            b.check_table()

        for rnd in range(3):
            s0, s1, s2 = rnd % 3, (rnd + 1) % 3, (rnd + 2) % 3
            ins(s0, 1)
            ins(s2, 1)
            # fork s0 -> s1, then s2 -> s1 the next cycle: DST_BUSY
            await pair((Op.FORK, {"seq": s0, "dst": s1}), (Op.FORK, {"seq": s2, "dst": s1}))
            # release s1, then fork into it the next cycle: accepted
            await pair((Op.RELEASE, {"seq": s1}), (Op.FORK, {"seq": s0, "dst": s1}))
            b.send(Op.RELEASE, seq=s1)
            # s1's only entry speculative, dropped by a commit, then a fork into s1
            ins(s1, 0, owner=1)
            await pair((Op.COMMIT, {"seq": s1, "accept": 1}), (Op.FORK, {"seq": s0, "dst": s1}))
            # and kept by a commit: the fork right after is DST_BUSY
            b.send(Op.RELEASE, seq=s1)
            ins(s1, 0, owner=0)
            await pair((Op.COMMIT, {"seq": s1, "accept": 1}), (Op.FORK, {"seq": s2, "dst": s1}))
            for s in range(3):
                b.send(Op.RELEASE, seq=s)
        codes = [r["code"] for _c, r in b.res.received]
        assert codes.count(ErrorCode.DST_BUSY.value) == 6, f"seed {b.tb.seed}: {codes}"
        b.finish("back_to_back_fork")

    def unique_key(p: dict, k: int, layer_base: int = 0) -> tuple[int, int]:
        """The ``k``-th distinct ``(layer, pos)``, layers from ``layer_base`` up."""
        per = 1 << p["POS_BITS"]
        return (layer_base + k // per) % (1 << p["LAYER_BITS"]), k % per

    @cocotb.test()
    async def fill_and_overflow(dut) -> None:
        """Insert until the table or the pool is full; the next inserts fail and
        change nothing; release everything; the pool is whole again."""
        b = Bench(dut)
        p, tb = b.p, b.tb
        await b.start()
        cap = min(p["ENTRIES"], p["PAGES"])
        for k in range(cap + 2):
            layer, ps = unique_key(p, k)
            b.send(Op.INSERT, seq=k % p["SEQS"], layer=layer, pos=ps, owner=k % p["N_NODES"])
        await b.drain()
        res = [v for _c, v in b.res.received]
        assert all(not r["error"] for r in res[:cap]), f"seed {tb.seed}"
        assert [r["entry"] for r in res[:cap]] == list(range(cap))
        want = ErrorCode.TABLE_FULL if p["ENTRIES"] <= p["PAGES"] else ErrorCode.NO_PAGE
        assert [r["code"] for r in res[cap:]] == [want.value] * 2, res[cap:]
        assert res[-1]["valid_entries"] == cap
        b.check_table()
        for s in range(min(p["SEQS"], cap)):
            b.send(Op.RELEASE, seq=s)
        await b.drain()
        assert b.res.received[-1][1]["free_pages"] == p["PAGES"]
        assert b.res.received[-1][1]["valid_entries"] == 0
        b.finish("fill_and_overflow")

    @cocotb.test()
    async def error_classes(dut) -> None:
        """Every error class reachable at these parameters: its code, and the whole
        table unchanged (compared register by register)."""
        b = Bench(dut)
        p, tb = b.p, b.tb
        S, N = p["SEQS"], p["N_NODES"]
        sb = max(1, (S - 1).bit_length())
        ob = max(1, (N - 1).bit_length())
        await b.start()
        seen_codes: set[str] = set()

        async def expect(code: ErrorCode, kind: Op, **f) -> None:
            before = read_table(dut, p)
            b.send(kind, **f)
            await b.drain()
            r = b.res.received[-1][1]
            assert r["error"] == 1 and r["code"] == code.value, (
                f"seed {tb.seed}: {code.name} expected, got {ErrorCode(r['code']).name}"
            )
            assert read_table(dut, p) == before, f"seed {tb.seed}: {code.name} changed the table"
            seen_codes.add(code.name)

        # empty table
        await expect(ErrorCode.NOTHING_SEEN, Op.RELEASE, seq=0)
        await expect(ErrorCode.NO_SPEC, Op.COMMIT, seq=0, accept=1)
        if S > 1:
            await expect(ErrorCode.SRC_EMPTY, Op.FORK, seq=0, dst=1)
        # seq 0: committed (1, 0..2), speculative (1, 3) of node 1
        for ps in range(3):
            b.send(Op.INSERT, seq=0, layer=1, pos=ps, committed=1)
        b.send(Op.INSERT, seq=0, layer=1, pos=3, owner=1)
        await b.drain()
        await expect(ErrorCode.SEEN_COMMITTED, Op.INSERT, seq=0, layer=1, pos=0)
        await expect(ErrorCode.SEEN_COMMITTED, Op.INSERT, seq=0, layer=1, pos=2, committed=1)
        await expect(ErrorCode.SPEC_DUP, Op.INSERT, seq=0, layer=1, pos=3, owner=1)
        await expect(ErrorCode.ROOT_CLEAR, Op.COMMIT, seq=0, accept=0b10)
        await expect(ErrorCode.SAME_SEQ, Op.FORK, seq=0, dst=0)
        if S < (1 << sb) or S == 1:  # a seq value the port can carry but SEQS excludes
            bad = S
            await expect(ErrorCode.SEQ_RANGE, Op.INSERT, seq=bad)
            await expect(ErrorCode.SEQ_RANGE, Op.COMMIT, seq=bad, accept=1)
            await expect(ErrorCode.SEQ_RANGE, Op.FORK, seq=bad, dst=0)
            await expect(ErrorCode.SEQ_RANGE, Op.RELEASE, seq=bad)
            await expect(ErrorCode.DST_RANGE, Op.FORK, seq=0, dst=bad)
            b.query(0, bad, 1, 0)
            await b.drain()
            assert b.rs[0].received[-1][1]["error"] == 1
        if N < (1 << ob):
            await expect(ErrorCode.OWNER_RANGE, Op.INSERT, seq=0, owner=N)
        if S > 1:
            b.send(Op.INSERT, seq=S - 1, layer=2, pos=9, owner=0)
            await b.drain()
            await expect(ErrorCode.DST_BUSY, Op.FORK, seq=0, dst=S - 1)
        # full table / no free page
        cap = min(p["ENTRIES"], p["PAGES"])
        k = 0
        while b.model.bt.valid_entries < cap:
            layer, ps = unique_key(p, k, layer_base=3)
            b.send(Op.INSERT, seq=0, layer=layer, pos=ps, owner=1)
            await b.drain()
            k += 1
        want = ErrorCode.TABLE_FULL if p["ENTRIES"] <= p["PAGES"] else ErrorCode.NO_PAGE
        await expect(want, Op.INSERT, seq=0, layer=0, pos=7)
        tb.log.info("error classes checked: %s", sorted(seen_codes))
        b.check_table()
        b.finish("error_classes", classes=len(seen_codes))

    @cocotb.test()
    async def reset_mid_run(dut) -> None:
        """Random operations, a synchronous reset in the middle, random operations:
        after the reset the table is empty and every page free."""
        b = Bench(dut, "random", "random")
        p, tb = b.p, b.tb
        await b.start()
        await b.random_ops(800)
        await tb.reset()  # the scoreboard resets the model with the RTL
        await ReadOnly()
        assert int(dut.valid_now.value) == 0 and int(dut.free_now.value) == (1 << p["PAGES"]) - 1
        await FallingEdge(tb.clk)
        await b.random_ops(800)
        b.check_table()
        b.finish("reset_mid_run")

    class Pins:
        """Direct pin access for the cycle-exact tests (no agents)."""

        def __init__(self, dut, p: dict) -> None:
            self.dut, self.p = dut, p
            self.ol = op_layout(p["SEQS"], p["N_NODES"], p["LAYER_BITS"], p["POS_BITS"])
            self.ql = query_layout(p["SEQS"], p["N_NODES"], p["LAYER_BITS"], p["POS_BITS"])
            self.rl = result_layout(p["ENTRIES"], p["PAGES"])
            self.yl = reply_layout(p["PAGES"])
            for name in ("res", "draft_r", "verify_r"):
                getattr(dut, f"{name}__ready").value = 1
            for name in ("op", "draft_q", "verify_q"):
                getattr(dut, f"{name}__valid").value = 0

        async def cycle(self, op: dict | None = None, q: dict | None = None) -> dict:
            """One cycle: present ``op`` / ``q`` (or nothing) from the falling edge;
            return what the outputs show in this cycle."""
            from tb.common import pack, unpack

            d = self.dut
            await FallingEdge(d.clk)
            d.op__valid.value = int(op is not None)
            if op is not None:
                base = {"seq": 0, "dst": 0, "layer": 0, "pos": 0, "owner": 0}
                d.op__payload.value = pack(self.ol, {**base, "committed": 0, "accept": 0, **op})
            d.draft_q__valid.value = int(q is not None)
            if q is not None:
                d.draft_q__payload.value = pack(self.ql, {"view": 0, **q})
            await ReadOnly()
            return {
                "op_ready": int(d.op__ready.value),
                "res": unpack(self.rl, d.res__payload.value) if d.res__valid.value else None,
                "rep": (
                    unpack(self.yl, d.draft_r__payload.value) if d.draft_r__valid.value else None
                ),
                "counts": (int(d.free_pages.value), int(d.valid_entries.value)),
            }

    @cocotb.test()
    async def cycle_counts(dut) -> None:
        """SPEC §6, cycle by cycle: inserts one per cycle; every operation visible to
        a lookup in the next cycle (a lookup in the same cycle sees the state
        before); lookup replies 1 cycle (``TARGET="fpga"`` or ``N_NODES > 256``: 2,
        ``hw.kv_pool.lookup_cycles``), results 2 cycles after; status counts 1
        cycle behind the state."""
        p = params()
        lat = lookup_cycles(p["N_NODES"], p.get("TARGET", "asic"))

        async def steps(*cycles: tuple) -> tuple[list, list]:
            """Cycles of (operation, query), then ``lat`` idle ones: every cycle's
            outputs and the replies, in query order, checked ``lat`` cycles after."""
            outs = [await pins.cycle(o, q) for o, q in cycles]
            outs += [await pins.cycle() for _ in range(lat)]
            qi = [k + lat for k, (_, q) in enumerate(cycles) if q is not None]
            ri = [k for k, o in enumerate(outs) if o["rep"]]
            assert ri == qi, f"lookup replies not {lat} cycle(s) after the query: {ri} != {qi}"
            return outs, [outs[k]["rep"] for k in ri]

        tb = TB(dut)
        await tb.start()
        pins = Pins(dut, p)
        S, P = p["SEQS"], p["PAGES"]
        n = min(p["ENTRIES"], P, 16) - 4  # room left for the steps below
        outs = []
        for k in range(n):  # back to back, committed
            outs.append(await pins.cycle({"op": Op.INSERT.value, "pos": k, "committed": 1}))
        for _ in range(3):
            outs.append(await pins.cycle())
        assert all(o["op_ready"] for o in outs[:n]), "insert stalled"
        got = [(k, o["res"]["page"]) for k, o in enumerate(outs) if o["res"]]
        assert got == [(k + 2, k) for k in range(n)], f"results not 2 cycles after: {got}"
        assert outs[n + 1]["counts"] == (P - n, n)  # status: state of the previous cycle
        assert outs[n]["counts"] == (P - n + 1, n - 1)

        # insert (speculative, node 2) then lookups through node 2's view
        q = {"seq": 0, "layer": 1, "pos": 3, "view": 0b101}
        i, r = await steps(
            ({"op": Op.INSERT.value, "layer": 1, "pos": 3, "owner": 2}, q), (None, q)
        )
        assert i[0]["op_ready"] and r[0]["hit"] == 0, "same-cycle lookup saw the insert"
        assert r[1]["hit"] == 1, "insert not visible in 1 cycle"
        # commit with node 2 rejected: visible the very next cycle as a miss
        d, r = await steps(({"op": Op.COMMIT.value, "accept": 0b011}, q), (None, q))
        assert d[0]["op_ready"] and r[0]["hit"] == 1, "same-cycle lookup saw the commit"
        assert r[1]["hit"] == 0, "commit not effective in 1 cycle"
        if S > 1:
            q = {"seq": 1, "layer": 0, "pos": 0}
            _, r = await steps(({"op": Op.FORK.value, "seq": 0, "dst": 1}, q), (None, q))
            assert r[0]["hit"] == 0 and r[1]["hit"] == 1, "fork not effective in 1 cycle"
            q = {"seq": 0, "layer": 0, "pos": 0}
            _, r = await steps(({"op": Op.RELEASE.value, "seq": 0}, q), (None, q))
            assert r[0]["hit"] == 1 and r[1]["hit"] == 0, "release not effective in 1 cycle"
        report("kv_pool", "cycle_counts", checked=n + 6, mismatches=0,
               latency=f"lookup {lat}, op 1, result 2, insert 1/cycle")  # fmt: skip

    @cocotb.test()
    async def two_committed_deviation(dut) -> None:
        """A commit the golden model rejects (it would leave two committed entries at
        one position): the RTL commits both, as documented, and lookups return the
        lower-numbered entry's page."""
        p = params()
        if p["N_NODES"] < 3:
            return
        tb = TB(dut)
        await tb.start()
        pins = Pins(dut, p)
        bt = Model(p).bt
        for owner in (1, 2):
            bt.insert(0, 0, 1, owner)
            await pins.cycle({"op": Op.INSERT.value, "pos": 1, "owner": owner})
        with pytest.raises(KVError) as info:
            bt.commit(0, 0b111)
        assert info.value.code == KVErr.TWO_COMMITTED
        await pins.cycle({"op": Op.COMMIT.value, "accept": 0b111})
        outs = [await pins.cycle() for _ in range(3)]
        res = [o["res"] for o in outs if o["res"]]
        assert res and res[-1]["error"] == 0 and res[-1]["freed"] == 0, res
        assert int(dut.committed.value) & 0b11 == 0b11, "both entries committed"
        await pins.cycle(None, {"seq": 0, "layer": 0, "pos": 1})
        rep = (await pins.cycle())["rep"] or (await pins.cycle())["rep"]  # lookup latency 1 or 2
        assert rep["hit"] == 1 and rep["page"] == 0, rep
        report("kv_pool", "two_committed_deviation", checked=3, mismatches=0)
