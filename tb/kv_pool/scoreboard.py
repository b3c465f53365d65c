"""The KV pool testbench's library: the golden-backed model, the operation
generator, the scoreboard, the table comparison and the :class:`Bench` harness.

Testbench: the shared KV-cache pool (hw/kv_pool/) against golden.kvcache.BlockTable.

Scoreboard (``random_ops``): a generator draws each operation from the golden
table's current state (weights in :data:`WEIGHTS`, fill and drain phases so
that the table runs from empty to full and back), both lookup ports query
every cycle their idle pattern allows, the golden ``BlockTable`` predicts every
result and reply, in the order the RTL takes them (a lookup sees the state
before an operation taken in the same cycle), and a monitor checks:

* every result (error code, page, entry, freed pages, counts after the
  operation) and every lookup reply;
* every cycle, the ``error`` pulse (one cycle after an operation or query
  with an error) and the status counts: ``free_pages + valid_entries == PAGES``
  (leak check) and both equal to the golden counts one cycle earlier;
* every :data:`STATE_EVERY` operations and at the end, the whole table
  (``valid``, ``committed``, ``seqs``, ``layer``, ``pos``, ``owner``,
  ``page`` of every valid entry, and the free-page bitmap) read from the RTL's
  registers (``valid_now`` / ``free_now``: with a pending insert resolved): a
  committed entry the RTL lost or changed is a mismatch.
"""

import time
from collections import deque

from golden.kvcache import BlockTable, KVErr, KVError
from hw.kv_pool import Op, op_layout, query_layout, reply_layout, result_layout
from tb.common import TB, StreamSink, StreamSource, params, random_tree, report

#: random operations per parameter set in ``make test`` (the issue asks >= 100k);
#: ``make soak`` runs 1M at the defaults
OPS = 100_000
#: full-table comparison period, in operations
STATE_EVERY = 2_000
#: operation mix (relative weights) of the random test
WEIGHTS = {
    "insert": 45,
    "insert_committed": 10,
    "commit": 12,
    "fork": 6,
    "release": 7,
    "bad": 3,  # any opcode with random (often out-of-range or conflicting) fields
}


# ----------------------------------------------------------------------------- model
class Model:
    """The golden table, predicting RTL results and replies (the reference model)."""

    def __init__(self, p: dict) -> None:
        self.p = p
        self.reset()

    def reset(self) -> None:
        p = self.p
        self.bt = BlockTable(
            p["ENTRIES"], p["PAGES"], p["SEQS"], p["N_NODES"], p["LAYER_BITS"], p["POS_BITS"]
        )

    def counts(self) -> tuple[int, int]:
        return self.bt.free_pages, self.bt.valid_entries

    def query(self, q: dict) -> dict:
        try:
            pg = self.bt.lookup(q["seq"], q["layer"], q["pos"], q["view"])
        except KVError as e:
            assert e.code == KVErr.SEQ_RANGE, e
            return {"hit": 0, "error": 1, "page": 0}
        return {"hit": int(pg is not None), "error": 0, "page": pg or 0}

    def op(self, o: dict) -> dict:
        bt, kind = self.bt, Op(o["op"])
        out = {"op": kind.value, "error": 0, "code": 0, "page": 0, "entry": 0, "freed": 0}
        try:
            if kind is Op.INSERT:
                pg = bt.insert(o["seq"], o["layer"], o["pos"], o["owner"], bool(o["committed"]))
                out["page"], out["entry"] = pg, bt.page_owner(pg)
            elif kind is Op.COMMIT:
                out["freed"] = sum(1 << p for p in bt.commit(o["seq"], o["accept"]))
            elif kind is Op.FORK:
                bt.fork(o["seq"], o["dst"])
            else:
                out["freed"] = sum(1 << p for p in bt.release(o["seq"]))
        except KVError as e:
            if e.code == KVErr.TWO_COMMITTED:
                raise AssertionError(f"stimulus bug: {e}") from None
            out["error"], out["code"] = 1, int(e.code)
        out["free_pages"], out["valid_entries"] = self.counts()
        return out


def two_committed(bt: BlockTable, seq: int, accept: int) -> bool:
    """Would ``commit(seq, accept)`` leave ``seq`` two committed entries at one key?
    (The check the RTL leaves to its caller; the generator avoids such commits.)"""
    if not 0 <= seq < bt.seqs:
        return False
    ents = [bt.entry(i) for i in bt.sees(seq)]
    keys: set[tuple[int, int]] = set()
    for e in ents:
        if e.committed:
            keys.add((e.layer, e.pos))
    for e in ents:
        if not e.committed and (accept >> e.owner) & 1:
            if (e.layer, e.pos) in keys:
                return True
            keys.add((e.layer, e.pos))
    return False


# ----------------------------------------------------------------------------- stimulus
class Stimulus:
    """Random operations and queries drawn from the golden table's current state."""

    def __init__(self, rng, p: dict, model: Model, weights: dict | None = None) -> None:
        self.rng, self.p, self.model = rng, p, model
        self.w = dict(weights or WEIGHTS)
        self.n = 0
        self.draining = False
        self.sb = max(1, (p["SEQS"] - 1).bit_length())
        self.ob = max(1, (p["N_NODES"] - 1).bit_length())
        # a small key space, so that entries collide (but large enough for a big
        # table to fill: ~cap / (2 SEQS) positions); corners at the top of each field
        cap = min(p["ENTRIES"], p["PAGES"])
        top = (1 << p["POS_BITS"]) - 1
        self.layers = [0, 1, 2, (1 << p["LAYER_BITS"]) - 1]
        self.poss = sorted({min(i, top) for i in range(max(6, cap // (2 * p["SEQS"])))} | {top})
        self.tree = random_tree(rng, p["N_NODES"])

    def seq(self) -> int:
        r = self.rng
        return r.randrange(1 << self.sb) if r.random() < 0.05 else r.randrange(self.p["SEQS"])

    def key(self) -> tuple[int, int]:
        r = self.rng
        lb, pb = self.p["LAYER_BITS"], self.p["POS_BITS"]
        layer = r.choice(self.layers) if r.random() < 0.9 else r.randrange(1 << lb)
        pos = r.choice(self.poss) if r.random() < 0.9 else r.randrange(1 << pb)
        return layer & ((1 << self.p["LAYER_BITS"]) - 1), pos & ((1 << self.p["POS_BITS"]) - 1)

    def row(self) -> int:
        """A mask row of the current random tree (an ancestor chain)."""
        if self.rng.random() < 0.05:
            self.tree = random_tree(self.rng, self.p["N_NODES"])
        par = self.tree
        i = self.rng.randrange(len(par))
        m = 0
        while i >= 0:
            m |= 1 << i
            i = par[i]
        return m

    def op(self) -> dict:
        r, p, bt = self.rng, self.p, self.model.bt
        self.n += 1
        # fill until full (a few inserts bounce), then drain to an eighth, and again
        cap = min(p["ENTRIES"], p["PAGES"])
        if not self.draining and bt.valid_entries >= cap and r.random() < 0.15:
            self.draining = True
        elif self.draining and bt.valid_entries <= cap // 8:
            self.draining = False
        draining = self.draining
        w = dict(self.w)
        if p["SEQS"] == 1:
            w["fork"] = 0  # always an error with one sequence ("bad" still tries)
        if not draining:  # fill: few releases, or a large table never fills
            w["release"] = max(1, w["release"] // 4)
            if cap > 64:  # ... or none, and few commits (each frees the rejected entries)
                w["release"] = 0
                w["commit"] = 1
        else:
            w["insert"] //= 4
            w["insert_committed"] //= 4
            w["release"] *= 3
            w["commit"] *= 2
        kinds = list(w)
        kind = r.choices(kinds, weights=[w[k] for k in kinds])[0]
        layer, pos = self.key()
        o = {
            "op": 0,
            "seq": self.seq(),
            "dst": r.randrange(1 << self.sb),
            "layer": layer,
            "pos": pos,
            "owner": r.randrange(p["N_NODES"]),
            "committed": 0,
            "accept": 0,
        }
        if kind in ("insert", "insert_committed"):
            o["op"] = Op.INSERT.value
            o["committed"] = int(kind == "insert_committed")
            if r.random() < 0.02:
                o["owner"] = r.randrange(1 << self.ob)
        elif kind == "commit":
            o["op"] = Op.COMMIT.value
            busy = [s for s in range(p["SEQS"]) if bt.speculative(s)]
            if busy and r.random() < 0.9:
                o["seq"] = r.choice(busy)
            o["accept"] = self.row() if r.random() < 0.95 else r.randrange(1 << p["N_NODES"])
            if r.random() < 0.03:
                o["accept"] &= ~1
        elif kind == "fork":
            o["op"] = Op.FORK.value
            if r.random() < 0.9 and p["SEQS"] > 1:  # a legal fork, the common case
                free = [s for s in range(p["SEQS"]) if not bt.sees(s)]
                src = [s for s in range(p["SEQS"]) if len(bt.sees(s)) > len(bt.speculative(s))]
                if free:
                    o["dst"] = r.choice(free)
                if src:
                    o["seq"] = r.choice(src)
        elif kind == "release":
            o["op"] = Op.RELEASE.value
            busy = [s for s in range(p["SEQS"]) if bt.sees(s)]
            if busy and r.random() < 0.9:
                o["seq"] = r.choice(busy)
        else:
            o["op"] = r.randrange(4)
            o["seq"] = r.randrange(1 << self.sb)
            o["owner"] = r.randrange(1 << self.ob)
            o["committed"] = r.randrange(2)
            o["accept"] = r.randrange(1 << p["N_NODES"])
            if not draining and cap > 64 and o["op"] == Op.RELEASE.value:
                o["op"] = Op.FORK.value  # a large table fills only without releases
        if o["op"] == Op.COMMIT.value and two_committed(bt, o["seq"], o["accept"]):
            o["accept"] = 1  # keep only the root's entries: always legal
            if two_committed(bt, o["seq"], 1):
                o["op"] = Op.RELEASE.value
        return o

    def query(self) -> dict:
        """Mostly keys that exist (hits through a random view), some random ones."""
        r, bt = self.rng, self.model.bt
        q = {"seq": self.seq(), "layer": 0, "pos": 0, "view": 0}
        q["layer"], q["pos"] = self.key()
        if bt.valid_entries and r.random() < 0.7:
            e = bt.entry(r.randrange(bt.entries))
            if e.valid:
                q["layer"], q["pos"] = e.layer, e.pos
                seqs = [s for s in range(self.p["SEQS"]) if (e.seqs >> s) & 1]
                q["seq"] = r.choice(seqs)
                if not e.committed and r.random() < 0.7:
                    q["view"] = (self.row() | (1 << e.owner)) if r.random() < 0.5 else 1 << e.owner
        if not q["view"] and r.random() < 0.5:
            q["view"] = self.row()
        return q


class GenSource(StreamSource):
    """A stream source that asks ``gen()`` for its next beat when it runs dry,
    so that each beat is drawn from the state the RTL will act on."""

    def __init__(self, tb: TB, name: str, shape, idle: str, gen, count: int) -> None:
        super().__init__(tb, name, shape, idle)
        self.gen, self.remaining = gen, count

    def drive(self) -> None:
        if not self.queue and self.current is None and self.remaining > 0:
            self.queue.append(self.gen())
            self.remaining -= 1
        super().drive()


class Scoreboard:
    """Applies, each cycle, the queries and then the operation the RTL took to the
    model, queues the expected replies / results, and checks the status counts."""

    def __init__(self, tb: TB, p: dict, model: Model, op_src, q_srcs, res_sink, r_sinks) -> None:
        self.tb, self.p, self.model = tb, p, model
        self.op_src, self.q_srcs = op_src, q_srcs
        self.exp_res: deque = deque()
        self.exp_r = [deque() for _ in q_srcs]
        self.seen_ops = 0
        self.seen_q = [0 for _ in q_srcs]
        self.checked = 0
        self.mismatches: list[str] = []
        self.leaks = 0
        self.prev_counts = model.counts()
        self.err_next = False  # the error pulse due in the next cycle
        self.dut = tb.dut
        res_sink.on_beat = self._on_res
        for k, s in enumerate(r_sinks):
            s.on_beat = lambda cyc, v, k=k: self._on_reply(k, cyc, v)
        self.max_lat = [0, 0, 0]
        tb.add(self)

    def fail(self, msg: str) -> None:
        self.mismatches.append(f"cycle {self.tb.cycle}: {msg}")
        if len(self.mismatches) <= 5:
            self.tb.log.error("seed %d: %s", self.tb.seed, msg)

    def _on_res(self, cyc: int, v: dict) -> None:
        if not self.exp_res:
            self.fail(f"unexpected result {v}")
            return
        taken, o, exp = self.exp_res.popleft()
        self.max_lat[0] = max(self.max_lat[0], cyc - taken)
        self.checked += 1
        if v != exp:
            diff = {k: (v[k], exp[k]) for k in exp if v[k] != exp[k]}
            self.fail(f"op {o} (taken cycle {taken}): rtl vs golden {diff}")

    def _on_reply(self, k: int, cyc: int, v: dict) -> None:
        if not self.exp_r[k]:
            self.fail(f"port {k}: unexpected reply {v}")
            return
        taken, q, exp = self.exp_r[k].popleft()
        self.max_lat[1 + k] = max(self.max_lat[1 + k], cyc - taken)
        self.checked += 1
        if v != exp:
            self.fail(f"port {k} query {q} (taken cycle {taken}): rtl {v} vs golden {exp}")

    def drive(self) -> None:
        pass

    def sample(self) -> None:
        if self.dut.rst.value == 1:  # synchronous reset: the table empties
            self.model.reset()
            self.prev_counts = self.model.counts()
            self.err_next = False
            return
        # the error pulse: one cycle after an operation or query with an error
        if int(self.dut.error.value) != self.err_next:
            self.fail(f"error output {int(self.dut.error.value)}, expected {int(self.err_next)}")
        self.err_next = False
        # status registers: the counts of the state one cycle earlier
        fp, ve = int(self.dut.free_pages.value), int(self.dut.valid_entries.value)
        if fp + ve != self.p["PAGES"]:
            self.leaks += 1
            self.fail(f"free_pages {fp} + valid_entries {ve} != PAGES {self.p['PAGES']}")
        if (fp, ve) != self.prev_counts:
            self.fail(f"status counts {(fp, ve)} != golden {self.prev_counts}")
        self.prev_counts = self.model.counts()
        cyc = self.tb.cycle
        for k, src in enumerate(self.q_srcs):  # lookups see the state before the op
            while self.seen_q[k] < len(src.sent):
                c, q = src.sent[self.seen_q[k]]
                self.seen_q[k] += 1
                exp = self.model.query(q)
                self.err_next |= bool(exp["error"])
                self.exp_r[k].append((c, q, exp))
        while self.seen_ops < len(self.op_src.sent):
            c, o = self.op_src.sent[self.seen_ops]
            self.seen_ops += 1
            assert c == cyc
            exp = self.model.op(o)
            self.err_next |= bool(exp["error"])
            self.exp_res.append((c, o, exp))

    @property
    def pending(self) -> bool:
        return bool(self.exp_res) or any(self.exp_r)


# ----------------------------------------------------------------------------- RTL state
def read_table(dut, p: dict) -> tuple[list[tuple], int]:
    """The RTL's valid entries ``(i, committed, seqs, layer, pos, owner, page)`` and
    its free-page bitmap, from the architectural state (``valid_now``, ``free_now``:
    the registers with an insert pending from the last edge resolved) and the
    registers (the fields are stored as bit planes:
    ``<field>_b<k>`` holds bit ``k`` of that field of every entry)."""
    valid, com = int(dut.valid_now.value), int(dut.committed.value)
    nb = {
        "seqs": p["SEQS"],
        "layer": p["LAYER_BITS"],
        "pos": p["POS_BITS"],
        "owner": max(1, (p["N_NODES"] - 1).bit_length()),
    }
    planes = {f: [int(getattr(dut, f"{f}_b{k}").value) for k in range(n)] for f, n in nb.items()}

    def get(f: str, i: int) -> int:
        return sum(((pl >> i) & 1) << k for k, pl in enumerate(planes[f]))

    out = []
    for i in range(p["ENTRIES"]):
        if (valid >> i) & 1:
            out.append(
                (i, bool((com >> i) & 1), get("seqs", i), get("layer", i), get("pos", i),
                 get("owner", i), i)
            )  # fmt: skip
    return out, int(dut.free_now.value)


def golden_table(bt: BlockTable) -> tuple[list[tuple], int]:
    out = [
        (i, e.committed, e.seqs, e.layer, e.pos, e.owner, e.page)
        for i, e in enumerate(bt.entries_snapshot())
        if e.valid
    ]
    return out, bt.free_page_mask


def compare_table(dut, p: dict, bt: BlockTable) -> list[str]:
    """Differences between the RTL's table and the golden one (empty: identical);
    a committed golden entry missing or changed in the RTL is reported as lost."""
    (rt, rfree), (gt, gfree) = read_table(dut, p), golden_table(bt)
    msgs = []
    rd, gd = {e[0]: e for e in rt}, {e[0]: e for e in gt}
    for i in sorted(set(rd) | set(gd)):
        if rd.get(i) != gd.get(i):
            lost = gd.get(i) is not None and gd[i][1]
            msgs.append(
                f"{'LOST COMMITTED ' if lost else ''}entry {i}: rtl {rd.get(i)} golden {gd.get(i)}"
            )
    if rfree != gfree:
        msgs.append(f"free-page bitmap rtl {rfree:#x} golden {gfree:#x}")
    return msgs


# ----------------------------------------------------------------------------- harness
class Bench:
    """TB + drivers + monitors + scoreboard for one test."""

    def __init__(self, dut, idle: str = "none", backpressure: str = "none", qidle=None) -> None:
        self.p = p = params()
        self.tb = tb = TB(dut)
        self.model = Model(p)
        self.stim = Stimulus(tb.rng, p, self.model)
        ol = op_layout(p["SEQS"], p["N_NODES"], p["LAYER_BITS"], p["POS_BITS"])
        ql = query_layout(p["SEQS"], p["N_NODES"], p["LAYER_BITS"], p["POS_BITS"])
        self.op = GenSource(tb, "op", ol, idle, self.stim.op, 0)
        self.qs = [
            GenSource(tb, name, ql, qidle or idle, self.stim.query, 0)
            for name in ("draft_q", "verify_q")
        ]
        self.res = StreamSink(tb, "res", result_layout(p["ENTRIES"], p["PAGES"]), backpressure)
        self.rs = [
            StreamSink(tb, name, reply_layout(p["PAGES"]), backpressure)
            for name in ("draft_r", "verify_r")
        ]
        self.sb = Scoreboard(tb, p, self.model, self.op, self.qs, self.res, self.rs)

    async def start(self) -> None:
        await self.tb.start()

    def send(self, kind: Op, **fields) -> None:
        o = {"op": kind.value, "seq": 0, "dst": 0, "layer": 0, "pos": 0, "owner": 0}
        o.update(committed=0, accept=0)
        o.update(fields)
        self.op.send(o)

    def query(self, port: int, seq: int, layer: int, pos: int, view: int = 0) -> None:
        self.qs[port].send({"seq": seq, "layer": layer, "pos": pos, "view": view})

    async def drain(self, timeout: int = 10_000) -> None:
        tb = self.tb
        await tb.wait_for(
            lambda: self.op.idle and all(q.idle for q in self.qs) and not self.sb.pending,
            timeout,
            "all results",
        )

    def check_table(self) -> None:
        for msg in compare_table(self.tb.dut, self.p, self.model.bt):
            self.sb.fail(msg)

    def finish(self, test: str, **extra) -> None:
        sb = self.sb
        report(
            "kv_pool",
            test,
            checked=sb.checked,
            mismatches=len(sb.mismatches),
            latency=f"res {sb.max_lat[0]}, lookup {max(sb.max_lat[1:])}",
            **extra,
        )
        assert not sb.mismatches, (
            f"seed {self.tb.seed}: {len(sb.mismatches)} mismatches, first: {sb.mismatches[:3]}"
        )

    async def random_ops(self, n: int, qn: int | None = None, progress: bool = False) -> int:
        """Run ``n`` random operations (and as many queries per port, by default),
        comparing the whole table every :data:`STATE_EVERY` operations."""
        qn = n if qn is None else qn
        self.op.remaining += n
        for q in self.qs:
            q.remaining += qn
        start, t0, lost = len(self.op.sent), time.time(), 0
        nxt = STATE_EVERY
        while len(self.op.sent) - start < n:
            await self.tb.wait_for(
                lambda nxt=nxt: len(self.op.sent) - start >= nxt or self.op.remaining == 0,
                10**7,
            )
            if len(self.op.sent) - start >= nxt:
                # at a falling edge the registers hold every operation the
                # scoreboard has applied (those taken at earlier rising edges)
                await self.tb.cycles(1)
                msgs = compare_table(self.tb.dut, self.p, self.model.bt)
                lost += sum(m.startswith("LOST") for m in msgs)
                for m in msgs:
                    self.sb.fail(m)
                nxt += STATE_EVERY
                if progress:
                    done = len(self.op.sent) - start
                    self.tb.log.info(
                        "%d / %d operations, %.0f ops/s, %d valid entries",
                        done,
                        n,
                        done / (time.time() - t0),
                        self.model.bt.valid_entries,
                    )
            if self.op.remaining == 0:
                break
        await self.drain(100_000)
        msgs = compare_table(self.tb.dut, self.p, self.model.bt)
        lost += sum(m.startswith("LOST") for m in msgs)
        for m in msgs:
            self.sb.fail(m)
        return lost


#: what the scoreboard reads besides the ports (a lean Verilator build: every
#: other signal is Verilator's to optimise, see flows.toolchain.build)
PUBLIC = ("valid_now", "committed", "free_now", "seqs_b*", "layer_b*", "pos_b*", "owner_b*")
