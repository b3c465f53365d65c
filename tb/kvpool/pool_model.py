"""The scaled pool's testbench model: its beats packed and unpacked, and the scoreboard.

Pure Python (no simulator): :class:`PoolFormat` packs and unpacks the beats
of ``hw.kvpool.layouts`` by the layouts' field offsets (the flattened
``<port>__payload`` vectors of the Verilog); :class:`Scoreboard` steps
:class:`golden.kvpool.KVPool` on the transactions in the order the pool
accepts them (SPEC §4.6 - §4.8; the ordering rule of ``hw.kvpool.layouts``:
in one cycle lookup port 0's, port 1's, then the operation's) and keeps, per
output stream (``r0``, ``r1``, ``res``), the beats the pool owes, in order.
A beat the pool delivers is compared, every field, with the head of its
queue. :mod:`tb.kvpool.pool_stim` chooses the transactions; the cocotb side
(:mod:`tb.kvpool.pool_tb`) and the pure-Python self-check
(:func:`tb.kvpool.pool_stim.self_check`) both feed this scoreboard.

How a beat maps to golden (the RTL's contract, not the RTL's logic): a query
``(seq, pos, view)`` on port ``k`` is ``lookup(k, seq, pos, view)``; its
reply is ``{error 0, hit, loc, addr}``, or ``{error 1, 0, 0, 0}`` when golden
raises (``seq >= SEQS``, the only field a query can hold out of range). An
operation beat calls the golden operation of its opcode with the fields that
opcode uses (``committed`` as a ``bool``); its result is ``{op, error 0,
code 0, value, value2, spilled, counts}`` with ``value`` / ``value2`` golden's
``value`` tuple (0 where it has none), or, when golden raises a
:class:`golden.kvpool.PoolError`, ``{op, error 1, code, value 0, value2 0,
spilled 0}`` with the counts as they were. A share carries its tokens (the
``n`` beats the pool takes on ``tok`` after the operation) in the beat's
dict as ``tokens`` (not a field of the layout; :meth:`PoolFormat.carry`
keeps it across packing): golden's ``share(dst, tokens)`` runs when the
operation is accepted.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field

from flows.layouts import pack, unpack
from golden.kvpool import KVPool, PoolErr, PoolError, crc
from hw.common import idx_bits
from hw.kvpool.layouts import (
    PoolOp,
    pool_op_layout,
    pool_query_layout,
    pool_reply_layout,
    pool_result_layout,
)

__all__ = [
    "OPS",
    "CODES",
    "Expected",
    "PoolFormat",
    "Scoreboard",
    "golden_of",
    "reachable_codes",
]

#: opcode names by value
OPS: dict[int, str] = {int(o.value): o.name for o in PoolOp}
#: error-class names by code
CODES: dict[int, str] = {int(c): c.name for c in PoolErr}
COUNT_FIELDS = ("free_pages", "spec_pages", "committed_pages", "hbm_used")
_INS, _COM, _FORK, _REL = (
    int(o.value) for o in (PoolOp.INSERT, PoolOp.COMMIT, PoolOp.FORK, PoolOp.RELEASE)
)
_SPILL, _FILL, _SCORE, _SHARE = (
    int(o.value) for o in (PoolOp.SPILL, PoolOp.FILL, PoolOp.SCORE, PoolOp.SHARE)
)
BLOCK = 16  # positions per dedup block (SPEC §4.6 *Tags*)
#: the RTL's tag table when a parameter set does not name it (ScaledPool's defaults)
TAG_DEFAULTS = {"TAG_SETS": 1024, "TAG_WAYS": 4}


def golden_of(p: dict[str, int]) -> KVPool:
    """A golden pool for the RTL parameters ``p`` (uppercase names; ``TAG_SETS`` /
    ``TAG_WAYS`` the RTL's defaults when ``p`` does not name them)."""
    tag = TAG_DEFAULTS | {k: p[k] for k in TAG_DEFAULTS if k in p}
    return KVPool(
        pages=p["PAGES"],
        hbm_pages=p["HBM_PAGES"],
        seqs=p["SEQS"],
        segs=p["SEGS"],
        trees=p["TREES"],
        n_nodes=p["N_NODES"],
        max_depth=p["MAX_DEPTH"],
        pos_bits=p["POS_BITS"],
        token_bits=p["TOKEN_BITS"],
        tlb_sets=p["TLB_SETS"],
        tlb_ways=p["TLB_WAYS"],
        tag_sets=tag["TAG_SETS"],
        tag_ways=tag["TAG_WAYS"],
    )


def reachable_codes(p: dict[str, int]) -> set[int]:
    """The error classes the RTL's ports can provoke with parameters ``p``: every class
    but ``NOT_CHAIN`` (the RTL trusts the sampler) and the range classes whose field
    cannot hold a value out of range (``SEQS`` / ``N_NODES`` a power of two,
    ``n``'s field holding nothing above ``PAGES``)."""
    out = {int(c) for c in PoolErr} - {0, int(PoolErr.NOT_CHAIN)}
    if 1 << idx_bits(p["SEQS"]) == p["SEQS"]:
        out -= {int(PoolErr.SEQ_RANGE), int(PoolErr.DST_RANGE)}
    if 1 << idx_bits(p["N_NODES"]) == p["N_NODES"]:
        out.discard(int(PoolErr.OWNER_RANGE))
    op_l = pool_op_layout(p["SEQS"], p["N_NODES"], p["POS_BITS"], p["TOKEN_BITS"], p["PAGES"])
    if (1 << op_l["n"].width) - 1 <= 1 << p["POS_BITS"]:  # cannot happen (the layout)
        out.discard(int(PoolErr.FIELD))
    return out


class PoolFormat:
    """The four layouts of a parameter set and their packing (flat ints <-> dicts)."""

    def __init__(self, p: dict[str, int]) -> None:
        self.p = p
        self.op_l = pool_op_layout(
            p["SEQS"], p["N_NODES"], p["POS_BITS"], p["TOKEN_BITS"], p["PAGES"]
        )
        self.res_l = pool_result_layout(p["PAGES"], p["HBM_PAGES"], p["POS_BITS"])
        self.q_l = pool_query_layout(p["SEQS"], p["N_NODES"], p["POS_BITS"])
        self.r_l = pool_reply_layout(p["PAGES"], p["HBM_PAGES"])
        self.widths = {
            "op": {n: f.width for n, f in self.op_l},
            "q": {n: f.width for n, f in self.q_l},
        }

    def offsets(self, which: str) -> dict[str, tuple[int, int]]:
        """``{field: (offset, width)}`` of layout ``which`` (op, res, q, r)."""
        lay = {"op": self.op_l, "res": self.res_l, "q": self.q_l, "r": self.r_l}[which]
        return {n: (f.offset, f.width) for n, f in lay}

    def pack_op(self, op: dict[str, int]) -> int:
        return pack(self.op_l, op)

    def pack_query(self, q: dict[str, int]) -> int:
        return pack(self.q_l, q)

    def unpack_op(self, raw: int) -> dict[str, int]:
        return unpack(self.op_l, raw)

    def carry(self, op: dict, beat: dict) -> dict:
        """``beat`` (an unpacked operation) with ``op``'s keys that are no field of the
        layout (a share's ``tokens``, the stimulus' class ``cls``)."""
        return beat | {k: v for k, v in op.items() if k not in self.widths["op"]}

    def unpack_query(self, raw: int) -> dict[str, int]:
        return unpack(self.q_l, raw)

    def unpack_result(self, raw: int) -> dict[str, int]:
        return unpack(self.res_l, raw)

    def unpack_reply(self, raw: int) -> dict[str, int]:
        return unpack(self.r_l, raw)

    def pack_result(self, r: dict[str, int]) -> int:
        return pack(self.res_l, r)

    def pack_reply(self, r: dict[str, int]) -> int:
        return pack(self.r_l, r)


@dataclass
class Expected:
    """A beat the pool owes: the transaction, its accept cycle, the golden beat."""

    index: int  # the transaction's number in acceptance order (since the last reset)
    cycle: int
    stream: str  # r0, r1, res
    tx: dict[str, int]
    beat: dict[str, int]
    kind: str  # lookup: tlb_hit, tlb_miss, spec, miss, error; op: its name (+ /error)


@dataclass
class Stats:
    """What the scoreboard saw: coverage counters and latencies by kind."""

    cover: Counter = field(default_factory=Counter)
    latency: dict[str, list[int]] = field(default_factory=dict)  # kind -> [min, max, sum, n]

    def lat(self, kind: str, cycles: int) -> None:
        v = self.latency.get(kind)
        if v is None:
            self.latency[kind] = [cycles, cycles, cycles, 1]
        else:
            v[0], v[1], v[2], v[3] = min(v[0], cycles), max(v[1], cycles), v[2] + cycles, v[3] + 1


class Scoreboard:
    """Golden stepped in acceptance order; the beats owed per stream; the comparisons.

    ``accept_query`` / ``accept_op`` take a transaction as accepted (its fields
    as a dict, i.e. unpacked from the payload the pool saw) in cycle ``cycle``;
    ``deliver(stream, cycle, raw)`` compares a delivered payload with the
    oldest beat owed on ``stream`` and returns the error messages (empty: it
    matched). ``reset`` recreates golden and forgets what was owed.
    """

    def __init__(self, p: dict[str, int]) -> None:
        self.p = p
        self.fmt = PoolFormat(p)
        self.stats = Stats()
        self.owed: dict[str, deque[Expected]] = {"r0": deque(), "r1": deque(), "res": deque()}
        self.history: deque[tuple[int, str, dict[str, int]]] = deque(maxlen=64)
        self.transactions = 0  # in total (across resets)
        self.mismatch: Counter = Counter()  # (kind, field) -> beats that differed there
        self.reset()

    def reset(self) -> None:
        self.golden = golden_of(self.p)
        for q in self.owed.values():
            q.clear()
        self.index = 0
        self.ops = 0  # operations accepted since the reset (the stimulus' cache key)
        self.history.clear()

    @property
    def pending(self) -> int:
        return sum(len(q) for q in self.owed.values())

    def counts(self) -> dict[str, int]:
        g = self.golden
        return {k: getattr(g, k) for k in COUNT_FIELDS}

    def tlb_counts(self) -> dict[str, int]:
        out = {}
        for port in (0, 1):
            h, m = self.golden.tlb_counts(port)
            out[f"hits{port}"], out[f"misses{port}"] = h & 0xFFFFFFFF, m & 0xFFFFFFFF
        return out

    # ------------------------------------------------------------------ transactions
    def _owe(self, stream: str, cycle: int, tx: dict, beat: dict, kind: str) -> Expected:
        e = Expected(self.index, cycle, stream, tx, beat, kind)
        self.owed[stream].append(e)
        self.history.append((cycle, stream, tx))
        self.index += 1
        self.transactions += 1
        self.stats.cover[kind] += 1
        return e

    def accept_query(self, port: int, q: dict[str, int], cycle: int = 0) -> Expected:
        g = self.golden
        before = g.tlb_counts(port)
        try:
            hit, loc, addr = g.lookup(port, q["seq"], q["pos"], q["view"]).value
        except PoolError:
            beat = {"error": 1, "hit": 0, "loc": 0, "addr": 0}
            return self._owe(f"r{port}", cycle, q, beat, "lookup/error")
        after = g.tlb_counts(port)
        if after[0] != before[0]:
            kind = "lookup/tlb_hit"
        elif after[1] != before[1]:
            kind = "lookup/tlb_miss"
        else:
            kind = "lookup/spec" if hit else "lookup/miss"
        if hit and loc:
            self.stats.cover["lookup/hbm"] += 1
        beat = {"error": 0, "hit": hit, "loc": loc, "addr": addr}
        return self._owe(f"r{port}", cycle, q, beat, kind)

    def _call(self, op: dict[str, int]):
        g, k = self.golden, op["op"]
        if k == _INS:
            return g.insert(op["seq"], op["pos"], op["owner"], bool(op["committed"]), op["token"])
        if k == _COM:
            return g.commit(op["seq"], op["accept"], op["acc_len"])
        if k == _FORK:
            return g.fork(op["seq"], op["dst"])
        if k == _REL:
            return g.release(op["seq"])
        if k == _SPILL:
            return g.spill(op["n"])
        if k == _FILL:
            return g.fill(op["seq"], op["pos"])
        if k == _SCORE:
            return g.score(op["seq"], op["pos"], op["s"])
        tokens = op.get("tokens")
        if tokens is None or len(tokens) != op["n"]:
            raise ValueError(f"share with n = {op['n']} carries {tokens!r} (the bench feeds them)")
        return g.share(op["dst"], tokens)

    def _share_cover(self, op: dict) -> tuple[int, int]:
        """Before golden's share: ``(live segments, the longest M a tag entry offers)``
        (coverage only: a candidate the token check then rejects is counted)."""
        g = self.golden
        tags = crc.tags_of(list(op.get("tokens", ()))[: 1 << self.p["POS_BITS"]], BLOCK)
        offer = 0
        for k in range(len(tags) - 1, -1, -1):
            e = g._tags.find(tags[k])
            if e is not None and e[1] == k and g.seq_len(e[0]) >= BLOCK * (k + 1):
                offer = BLOCK * (k + 1)
                break
        return g.live_segments, offer

    def accept_op(self, op: dict[str, int], cycle: int = 0) -> Expected:
        name = OPS[op["op"]].lower()
        self.ops += 1
        cov = self.stats.cover
        share = op["op"] == _SHARE
        if share:
            live, offer = self._share_cover(op)
            if "cls" in op:
                cov[f"share/cls/{op['cls']}"] += 1
        try:
            r = self._call(op)
        except PoolError as e:
            code = int(e.code)
            cov[f"code/{CODES[code]}"] += 1
            if share:
                cov[f"share/code/{CODES[code]}"] += 1
            beat = {"op": op["op"], "error": 1, "code": code, "value": 0, "value2": 0, "spilled": 0}
            return self._owe("res", cycle, op, beat | self.counts(), f"{name}/error")
        v = r.value
        beat = {
            "op": op["op"],
            "error": 0,
            "code": 0,
            "value": v[0] if v else 0,
            "value2": v[1] if len(v) > 1 else 0,
            "spilled": r.spilled,
            **dict(zip(COUNT_FIELDS, r.counts, strict=True)),
        }
        cov["alloc_spills"] += r.spilled
        if share:
            m = beat["value"]
            cov["share/hit" if m else "share/miss"] += 1
            cov["share/split"] += self.golden.live_segments - live
            cov["share/rejected"] += offer > m  # a tag named a candidate, its tokens differed
        if op["op"] == _SPILL:
            cov["spill_victims"] += beat["value"]
        if op["op"] == _REL:
            cov["release_hbm_slots"] += beat["value2"]
        if op["op"] == _INS:
            cov["insert/committed" if op["committed"] else "insert/spec"] += 1
        return self._owe("res", cycle, op, beat, name)

    # ------------------------------------------------------------------ outputs
    def deliver(self, stream: str, cycle: int, raw: int) -> list[str]:
        """Compare the beat ``raw`` the pool delivered on ``stream`` in ``cycle``."""
        fmt = self.fmt
        got = fmt.unpack_result(raw) if stream == "res" else fmt.unpack_reply(raw)
        owed = self.owed[stream]
        if not owed:
            self.mismatch[f"{stream}:unexpected"] += 1
            return [f"{stream}: unexpected beat {got} (nothing owed)"]
        e = owed.popleft()
        self.stats.lat(e.kind, cycle - e.cycle)
        bad = [k for k, want in e.beat.items() if got[k] != want]
        if not bad:
            return []
        for k in bad:
            self.mismatch[f"{e.kind}:{k}"] += 1
        diff = ", ".join(f"{k} = {got[k]}, want {e.beat[k]}" for k in bad)
        return [
            f"{stream} beat of transaction #{e.index} ({e.kind}, accepted in cycle {e.cycle}: "
            f"{self.describe(e.tx)}): {diff}"
        ]

    def describe(self, tx: dict[str, int]) -> str:
        """A transaction as a golden call (what a reproduction runs)."""
        if "op" not in tx:
            return f"lookup(seq={tx['seq']}, pos={tx['pos']}, view={tx['view']:#x})"
        k = tx["op"]
        args = {
            _INS: ("seq", "pos", "owner", "committed", "token"),
            _COM: ("seq", "accept", "acc_len"),
            _FORK: ("seq", "dst"),
            _REL: ("seq",),
            _SPILL: ("n",),
            _FILL: ("seq", "pos"),
            _SCORE: ("seq", "pos", "s"),
            _SHARE: ("dst", "n", "tokens"),
        }.get(k, tuple(tx))
        return f"{OPS[k].lower()}(" + ", ".join(f"{a}={tx[a]}" for a in args) + ")"
