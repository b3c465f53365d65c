"""golden.kvpool: the KV pool at scale (SPEC §4.4 - §4.9) against a naive reference.

The reference (:class:`Ref`) is written from SPEC §4.4 - §4.9 without the
model's structures: per sequence a plain list of *cells* (one per committed
position: ``page or slot``, ``loc``, ``token``; a cell is shared by reference
between the sequences that see it), per page a dictionary entry, plain lists
for the FIFOs and the spill queue, linear scans everywhere, no segments, no
TLB, a bit-by-bit CRC. Segment *counts* are needed for ``TABLE_FULL``: each
cell carries a group label (the segment it was appended into, relabelled by a
split), and the live segments are the distinct labels of the cells some
sequence sees. "Nothing changes on error" is obtained by working on a deep
copy. The stateful test drives the model and the reference with good and bad
operations and compares every result, the page, slot and token of every
position, the FIFOs, the spill queue, the spill counters and the tag table,
and checks SPEC §4.8's invariants after every step.
"""

from __future__ import annotations

import copy
import itertools

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from golden.kvpool import KVPool, PoolErr, PoolError
from tb.common import sized

E = PoolErr
BLOCK, CMAX = 16, 7
MASK64 = (1 << 64) - 1


# ---------------------------------------------------------------------------- reference


def ref_crc(data: bytes, crc: int) -> int:
    """CRC-64/ECMA-182 bit by bit (MSB first, no reflection, no final XOR)."""
    for b in data:
        crc ^= b << 56
        for _ in range(8):
            crc = ((crc << 1) ^ 0x42F0E1EBA9EA3693) if crc >> 63 else crc << 1
            crc &= MASK64
    return crc


def ref_tag(prev: int, tokens) -> int:
    if WEAK[0]:
        return weak_tag(prev, tokens)
    return ref_crc(b"".join(int(t).to_bytes(4, "little") for t in tokens), prev)


def weak_tag(prev: int, tokens) -> int:
    """A tag function with many collisions (it reads a block's first token only):
    given to the model in place of CRC-64 in some runs, so that ``share``'s token
    check decides."""
    return (prev * 3 + tokens[0]) % 5


#: ``WEAK[0]``: the reference's tags are :func:`weak_tag` (the model's are patched alike)
WEAK = [False]


class Bad(Exception):
    """The reference's error: its class, and the argument for a range error."""

    def __init__(self, code: PoolErr, field: str | None = None) -> None:
        super().__init__(code.name)
        self.code = code
        self.field = field


class Cell:
    """One committed position's PTE (shared by every sequence that sees it)."""

    def __init__(self, addr: int, token: int, group: int) -> None:
        self.loc, self.addr, self.token, self.group = 0, addr, token, group


class Ref:
    """SPEC §4.4 - §4.9 as directly as possible."""

    def __init__(self, **cfg) -> None:
        self.c = cfg
        self.P, self.H, self.S = cfg["pages"], cfg["hbm_pages"], cfg["seqs"]
        self.lists: list[list[Cell]] = [[] for _ in range(self.S)]
        self.tag = [0] * self.S
        self.trees: list[dict | None] = [None] * self.S  # lo, nodes {j: (pos, page, token)}
        self.pstate: dict[int, str] = {}  # page -> "spec" / "com" (absent: free)
        self.cnt: dict[int, int] = {}
        self.queued: dict[int, bool] = {}
        self.fifo: list[int] = []
        self.mark = 0
        self.hfifo: list[int] = []
        self.hmark = 0
        self.queue: list[int] = []
        self.tagsets = [[None] * cfg["tag_ways"] for _ in range(cfg["tag_sets"])]
        self.rr = [0] * cfg["tag_sets"]
        self.labels = itertools.count()

    # -- checks
    def _int(self, name, v, hi, code=E.FIELD) -> None:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= hi:
            raise Bad(code, name)

    def _seq(self, name, v, code=E.SEQ_RANGE) -> None:
        self._int(name, v, self.S - 1, code)

    def _pos(self, v) -> None:
        self._int("pos", v, 2 ** self.c["pos_bits"] - 1)

    # -- counts and helpers
    def counts(self) -> tuple[int, int, int, int]:
        states = list(self.pstate.values())
        hbm_used = self.hmark - len(self.hfifo)
        free = len(self.fifo) + self.P - self.mark
        return (free, states.count("spec"), states.count("com"), hbm_used)

    def live_groups(self) -> set[int]:
        return {c.group for lst in self.lists for c in lst}

    def sharers(self, group: int) -> set[int]:
        return {s for s, lst in enumerate(self.lists) if any(c.group == group for c in lst)}

    def own_group(self, s: int) -> int | None:
        lst = self.lists[s]
        if lst and self.sharers(lst[-1].group) == {s}:
            return lst[-1].group
        return None

    def can_spill(self) -> bool:
        return "com" in self.pstate.values() and self.counts()[3] < self.H

    def need_page(self) -> None:
        if not self.fifo and self.mark == self.P and not self.can_spill():
            raise Bad(E.NO_PAGE)

    def alloc(self) -> tuple[int, int]:
        if self.fifo:
            return self.fifo.pop(0), 0
        if self.mark < self.P:
            self.mark += 1
            return self.mark - 1, 0
        self.spill_one()
        return self.fifo.pop(0), 1

    def hbm_alloc(self) -> int:
        if self.hfifo:
            return self.hfifo.pop(0)
        self.hmark += 1
        return self.hmark - 1

    def free(self, p: int) -> None:
        del self.pstate[p]
        self.fifo.append(p)

    def make_committed(self, p: int) -> None:
        self.pstate[p] = "com"
        self.cnt[p] = 1
        if not self.queued.get(p):
            self.queued[p] = True
            self.queue.append(p)

    def spill_one(self) -> None:
        while True:
            p = self.queue.pop(0)
            self.queued[p] = False
            if self.pstate.get(p) != "com":
                continue
            if self.cnt[p] > 0:
                self.cnt[p] -= 1
                self.queue.append(p)
                self.queued[p] = True
                continue
            break
        slot = self.hbm_alloc()
        cells = {id(c): c for lst in self.lists for c in lst if c.loc == 0 and c.addr == p}
        assert len(cells) == 1
        cell = next(iter(cells.values()))
        cell.loc, cell.addr = 1, slot
        self.free(p)

    def append(self, s: int, group: int, page: int, token: int) -> None:
        self.lists[s].append(Cell(page, token, group))
        self.make_committed(page)
        n = len(self.lists[s])
        if n % BLOCK == 0:
            toks = [c.token for c in self.lists[s][n - BLOCK :]]
            t = self.tag[s] = ref_tag(self.tag[s], toks)
            ways = self.tagsets[t % len(self.tagsets)]
            if not any(e is not None and e[0] == t for e in ways):
                if None in ways:
                    ways[ways.index(None)] = (t, s, n // BLOCK - 1)
                else:
                    si = t % len(self.tagsets)
                    ways[self.rr[si]] = (t, s, n // BLOCK - 1)
                    self.rr[si] = (self.rr[si] + 1) % len(ways)

    def group_for_append(self, s: int) -> int:
        """The own segment's label, or a new one (checked possible)."""
        g = self.own_group(s)
        return next(self.labels) if g is None else g

    def need_group(self, s: int) -> None:
        if self.own_group(s) is None and len(self.live_groups()) >= self.c["segs"]:
            raise Bad(E.TABLE_FULL)

    # -- operations
    def lookup(self, port, seq, pos, view=0):
        self._int("port", port, 1)
        self._seq("seq", seq)
        self._pos(pos)
        self._int("view", view, 2 ** self.c["n_nodes"] - 1)
        lst = self.lists[seq]
        if pos < len(lst):
            return (1, lst[pos].loc, lst[pos].addr), 0
        tree = self.trees[seq]
        if tree:
            for j in sorted(tree["nodes"]):
                p, page, _ = tree["nodes"][j]
                if p == pos and view >> j & 1:
                    return (1, 0, page), 0
        return (0, 0, 0), 0

    def insert(self, seq, pos, owner=0, committed=False, token=0):
        self._seq("seq", seq)
        self._pos(pos)
        self._int("owner", owner, self.c["n_nodes"] - 1, E.OWNER_RANGE)
        if committed is not True and committed is not False:
            raise Bad(E.FIELD, "committed")
        self._int("token", token, 2 ** self.c["token_bits"] - 1)
        n = len(self.lists[seq])
        if pos < n:
            raise Bad(E.SEEN_COMMITTED)
        if committed:
            if pos > n:
                raise Bad(E.POS_GAP)
            self.need_group(seq)
            self.need_page()
            group = self.group_for_append(seq)
            page, spilled = self.alloc()
            self.append(seq, group, page, token)
            return (page,), spilled
        tree = self.trees[seq]
        if tree is not None:
            if owner in tree["nodes"]:
                raise Bad(E.SPEC_DUP)
            if not tree["lo"] <= pos < tree["lo"] + self.c["max_depth"]:
                raise Bad(E.DEPTH_RANGE)
        elif sum(t is not None for t in self.trees) >= self.c["trees"]:
            raise Bad(E.TABLE_FULL)
        self.need_page()
        if tree is None:
            tree = self.trees[seq] = {"lo": pos, "nodes": {}}
        page, spilled = self.alloc()
        self.pstate[page] = "spec"
        tree["nodes"][owner] = (pos, page, token)
        return (page,), spilled

    def commit(self, seq, accept, acc_len=None):
        self._seq("seq", seq)
        self._int("accept", accept, 2 ** self.c["n_nodes"] - 1)
        if acc_len is not None:
            self._int("acc_len", acc_len, self.c["n_nodes"])
        tree = self.trees[seq]
        if tree is None:
            raise Bad(E.NO_SPEC)
        if not accept & 1:
            raise Bad(E.ROOT_CLEAR)
        nodes = tree["nodes"]
        acc = sorted((nodes[j][0], j) for j in nodes if accept >> j & 1)
        rej = sorted(j for j in nodes if not accept >> j & 1)
        n = len(self.lists[seq])
        if [p for p, _ in acc] != list(range(n, n + len(acc))):
            raise Bad(E.NOT_CHAIN)
        if acc_len is not None and acc_len != len(acc):
            raise Bad(E.NOT_CHAIN)
        if acc:
            self.need_group(seq)
            group = self.group_for_append(seq)
        for _, j in acc:
            _, page, token = nodes[j]
            self.append(seq, group, page, token)
        for j in rej:
            self.free(nodes[j][1])
        self.trees[seq] = None
        return (len(rej),), 0

    def _idle(self, dst) -> None:
        if self.lists[dst] or self.trees[dst] is not None:
            raise Bad(E.DST_BUSY)

    def fork(self, src, dst):
        self._seq("src", src)
        self._seq("dst", dst, E.DST_RANGE)
        if src == dst:
            raise Bad(E.SAME_SEQ)
        if not self.lists[src]:
            raise Bad(E.SRC_EMPTY)
        self._idle(dst)
        self.lists[dst] = list(self.lists[src])
        self.tag[dst] = self.tag[src]
        return (), 0

    def release(self, seq):
        self._seq("seq", seq)
        if not self.lists[seq] and self.trees[seq] is None:
            raise Bad(E.NOTHING_SEEN)
        others = {id(c) for s, lst in enumerate(self.lists) if s != seq for c in lst}
        freed = hbm = 0
        for cell in self.lists[seq]:  # increasing position
            if id(cell) in others:
                continue
            if cell.loc == 0:
                self.free(cell.addr)
                freed += 1
            else:
                self.hfifo.append(cell.addr)
                hbm += 1
        tree = self.trees[seq]
        if tree is not None:
            for j in sorted(tree["nodes"]):
                self.free(tree["nodes"][j][1])
                freed += 1
        self.lists[seq] = []
        self.trees[seq] = None
        self.tag[seq] = 0
        return (freed, hbm), 0

    def spill(self, n):
        self._int("n", n, self.P)
        done = 0
        while done < n and self.can_spill():
            self.spill_one()
            done += 1
        return (done,), 0

    def _committed(self, seq, pos) -> Cell:
        if pos >= len(self.lists[seq]):
            raise Bad(E.NOT_COMMITTED)
        return self.lists[seq][pos]

    def fill(self, seq, pos):
        self._seq("seq", seq)
        self._pos(pos)
        cell = self._committed(seq, pos)
        if cell.loc == 0:
            raise Bad(E.ON_CHIP)
        if not self.fifo and self.mark == self.P and "com" not in self.pstate.values():
            raise Bad(E.NO_PAGE)
        self.hfifo.append(cell.addr)  # the slot first: the spill may take it
        page, spilled = self.alloc()
        cell.loc, cell.addr = 0, page
        self.make_committed(page)
        return (page,), spilled

    def score(self, seq, pos, s):
        self._seq("seq", seq)
        self._pos(pos)
        self._int("s", s, CMAX)
        cell = self._committed(seq, pos)
        if cell.loc == 0:
            self.cnt[cell.addr] = min(CMAX, self.cnt[cell.addr] + s)
        return (), 0

    def share(self, dst, tokens):
        self._seq("dst", dst, E.DST_RANGE)
        if isinstance(tokens, str | bytes | dict) or not hasattr(tokens, "__len__"):
            raise Bad(E.FIELD, "tokens")
        for t in tokens:
            self._int("tokens", t, 2 ** self.c["token_bits"] - 1)
        if len(tokens) > 2 ** self.c["pos_bits"]:
            raise Bad(E.FIELD, "tokens")
        self._idle(dst)
        tags, t = [], 0
        for k in range(len(tokens) // BLOCK):
            t = ref_tag(t, tokens[k * BLOCK : (k + 1) * BLOCK])
            tags.append(t)
        m, src = 0, None
        for k in reversed(range(len(tags))):
            for e in self.tagsets[tags[k] % len(self.tagsets)]:
                if e is None or e[0] != tags[k] or e[2] != k:
                    continue
                lst = self.lists[e[1]]
                need = BLOCK * (k + 1)
                if len(lst) >= need and [c.token for c in lst[:need]] == list(tokens[:need]):
                    m, src = need, e[1]
            if m:
                break
        if m:
            lst = self.lists[src]
            split = m < len(lst) and lst[m - 1].group == lst[m].group
            if split and len(self.live_groups()) >= self.c["segs"]:
                raise Bad(E.TABLE_FULL)
            if split:
                old, new = lst[m].group, next(self.labels)
                for c in lst[m:]:
                    if c.group == old:
                        c.group = new
            self.lists[dst] = lst[:m]
            self.tag[dst] = tags[m // BLOCK - 1]
        return (m,), 0


# ---------------------------------------------------------------------------- shared checks


def snap(pool: KVPool) -> tuple:
    return pool.snapshot()


def check_invariants(pool: KVPool) -> None:
    """SPEC §4.8's invariants (and this model's bookkeeping) on one state."""
    prm = pool.params
    assert pool.free_pages + pool.spec_pages + pool.committed_pages == prm.pages
    assert pool.hbm_used + pool.hbm_free == prm.hbm_pages
    # committed positions: chains, PTEs; each committed page in exactly one PTE
    tables = pool.tables()
    chip: dict[int, int] = {}
    hbm: dict[int, int] = {}
    live = {}
    for g in range(prm.segs):
        seg = pool.segment(g)
        if seg is not None:
            assert seg[0] != 0 and seg[1] < seg[2], (g, seg)
            live[g] = seg
    for tid, (base, ptes, segs) in tables.items():
        assert segs and all(live[g][3] == tid for g in segs)
        assert [live[g][1] for g in segs] == sorted(live[g][1] for g in segs)
        assert base == live[segs[0]][1]
        assert base + len(ptes) == live[segs[-1]][2], "a table holds exactly its live positions"
        for i, (loc, addr, _) in enumerate(ptes):
            target = hbm if loc else chip
            assert addr not in target, f"page/slot {addr} in two PTEs"
            target[addr] = (tid, base + i)
    assert {t for g, s in live.items() for t in [s[3]]} == set(tables)
    for s in range(prm.seqs):
        n = pool.seq_len(s)
        ch = pool.chain(s)
        assert [g for g in live if live[g][0] >> s & 1] == sorted(g for g, _, _ in ch)
        if n == 0:
            assert ch == []
        else:
            assert ch[0][1] == 0 and ch[-1][2] == n
            assert all(a[2] == b[1] for a, b in zip(ch, ch[1:], strict=False))
        for pos in range(n):
            pool.pte(s, pos)  # every committed position resolves
    # pages: one state each
    spec_pages = {}
    for s in range(prm.seqs):
        tr = pool.tree(s)
        if tr is not None:
            for j, (pos, page, _) in tr[2].items():
                assert page not in spec_pages and tr[1] <= pos < tr[1] + prm.max_depth
                spec_pages[page] = (s, j)
    fifo, mark = pool.free_fifo()
    assert len(set(fifo)) == len(fifo) and all(p < mark for p in fifo)
    queue = pool.spill_queue()
    assert len(set(queue)) == len(queue)
    for p in range(prm.pages):
        state, c, queued = pool.page_state(p)
        assert state == (2 if p in chip else 1 if p in spec_pages else 0), p
        assert (state == 0) == (p in fifo or p >= mark)
        assert bool(queued) == (p in queue)
        if state == 2:
            assert queued and 0 <= c <= CMAX, "every committed page is in the spill queue"
            assert pool.page_where(p) == chip[p]
    assert len(chip) == pool.committed_pages and len(spec_pages) == pool.spec_pages
    assert len(hbm) == pool.hbm_used
    hfifo, hmark = pool.hbm_fifo()
    assert set(hbm).isdisjoint(hfifo) and all(a < hmark for a in hbm)
    # TLB coherence: a valid entry names a live segment and holds its PTE
    for port in (0, 1):
        for _si, _w, g, pos, loc, addr in pool.tlb_entries(port):
            assert g in live and live[g][1] <= pos < live[g][2]
            base, ptes, _ = tables[live[g][3]]
            assert ptes[pos - base][:2] == (loc, addr)


def check_against_ref(pool: KVPool, ref: Ref) -> None:
    """Everything the reference knows: positions, trees, FIFOs, queue, counters, tags."""
    for s in range(ref.S):
        lst = ref.lists[s]
        assert pool.seq_len(s) == len(lst)
        assert pool.seq_tag(s) == ref.tag[s]
        assert [pool.pte(s, p) for p in range(len(lst))] == [(c.loc, c.addr, c.token) for c in lst]
        tr, rt = pool.tree(s), ref.trees[s]
        assert (tr is None) == (rt is None)
        if tr is not None:
            assert tr[1] == rt["lo"] and tr[2] == rt["nodes"]
    assert pool.free_fifo() == (tuple(ref.fifo), ref.mark)
    assert pool.hbm_fifo() == (tuple(ref.hfifo), ref.hmark)
    assert pool.spill_queue() == tuple(ref.queue)
    for p, st_ in ref.pstate.items():
        if st_ == "com":
            assert pool.page_state(p)[1] == ref.cnt[p]
    assert pool.live_segments == len(ref.live_groups())
    want = [(si, w, *e) for si, ways in enumerate(ref.tagsets) for w, e in enumerate(ways) if e]
    assert pool.tag_entries() == want


# ---------------------------------------------------------------------------- stateful test

configs = st.fixed_dictionaries(
    {
        "pages": st.integers(16, 32),
        "hbm_pages": st.sampled_from([48, 0, 4, 24]),
        "seqs": st.integers(2, 4),
        "segs": st.integers(2, 8),
        "trees": st.integers(1, 2),
        "n_nodes": st.sampled_from([4, 8]),
        "max_depth": st.integers(2, 4),
        "pos_bits": st.just(6),
        "token_bits": st.integers(1, 2),
        "tlb_sets": st.sampled_from([1, 2, 4]),
        "tlb_ways": st.sampled_from([1, 2, 4]),
        "tag_sets": st.sampled_from([1, 2]),
        "tag_ways": st.sampled_from([1, 2]),
    }
)
weak_tags = st.sampled_from([False, False, True])

OPS = ("lookup", "insert", "commit", "fork", "release", "spill", "fill", "score", "share")


class PoolMachine(RuleBasedStateMachine):
    """Good and bad operations on a small pool with spill pressure, and on the reference."""

    @initialize(cfg=configs, weak=weak_tags)
    def setup(self, cfg, weak) -> None:
        from golden.kvpool import crc

        self.saved_tag = crc.block_tag
        if weak:
            crc.block_tag = weak_tag
        WEAK[0] = weak
        self.cfg = cfg
        self.pool = KVPool(**cfg)
        self.ref = Ref(**cfg)
        self.counts: dict[str, int] = {}

    # -- drawing helpers
    def seq(self, data) -> int:
        return data.draw(st.integers(0, self.cfg["seqs"] - 1))

    def token(self, data) -> int:
        return data.draw(st.integers(0, 2 ** self.cfg["token_bits"] - 1))

    def node(self, data) -> int:
        return data.draw(st.integers(0, self.cfg["n_nodes"] - 1))

    def length(self, s: int) -> int:
        return len(self.ref.lists[s])

    def apply(self, op: str, *args):
        before = snap(self.pool)
        saved = copy.deepcopy(self.ref.__dict__)
        try:
            value, spilled = getattr(self.ref, op)(*args)
        except Bad as bad:
            self.ref.__dict__.update(saved)
            with pytest.raises(PoolError) as info:
                getattr(self.pool, op)(*args)
            assert info.value.code == bad.code, (op, args, str(info.value), bad.code)
            if bad.field is not None:
                assert str(info.value).startswith((f"{bad.field} = ", f"{bad.field}[")), str(
                    info.value
                )
            assert snap(self.pool) == before, "an error changed the state"
            key = f"{op}:{bad.code.name}"
        else:
            r = getattr(self.pool, op)(*args)
            assert r.code == E.NONE
            assert (r.value, r.spilled, r.counts) == (value, spilled, self.ref.counts()), (
                op,
                args,
                r,
                value,
                spilled,
                self.ref.counts(),
            )
            key = f"{op}:ok" + (":spilled" if spilled else "")
            if op == "share" and value[0]:
                m = value[0]
                assert [self.pool.pte(args[0], p)[2] for p in range(m)] == list(args[1][:m])
                key += ":shared"
            if op == "release" and value[1]:
                key += ":hbm"
        self.counts[key] = self.counts.get(key, 0) + 1

    # -- rules
    @rule(data=st.data())
    def lookup(self, data) -> None:
        s = self.seq(data)
        pos = data.draw(st.integers(0, self.length(s) + 4))
        view = data.draw(st.integers(0, 2 ** self.cfg["n_nodes"] - 1))
        self.apply("lookup", data.draw(st.integers(0, 1)), s, pos, view)

    @rule(data=st.data())
    def lookup_speculative(self, data) -> None:
        """At a tree node's position, through any view (often without that node)."""
        trees = [(s, t) for s, t in enumerate(self.ref.trees) if t is not None and t["nodes"]]
        if trees:
            s, tree = data.draw(st.sampled_from(trees))
            pos = data.draw(st.sampled_from(sorted(p for p, _, _ in tree["nodes"].values())))
            view = data.draw(st.integers(0, 2 ** self.cfg["n_nodes"] - 1))
            self.apply("lookup", data.draw(st.integers(0, 1)), s, pos, view)

    @rule(data=st.data())
    def lookup_committed(self, data) -> None:
        """Committed positions again and again: TLB hits, misses and evictions."""
        seqs = [s for s in range(self.cfg["seqs"]) if self.length(s)]
        if seqs:
            s = data.draw(st.sampled_from(seqs))
            for _ in range(data.draw(st.integers(1, 4))):
                pos = data.draw(st.integers(0, self.length(s) - 1))
                self.apply("lookup", data.draw(st.integers(0, 1)), s, pos, 0)

    @rule(data=st.data())
    def append(self, data) -> None:
        s = self.seq(data)
        for _ in range(data.draw(st.integers(1, 6))):
            self.apply("insert", s, self.length(s), self.node(data), True, self.token(data))

    @rule(data=st.data())
    def insert_committed_anywhere(self, data) -> None:
        s = self.seq(data)
        pos = data.draw(st.integers(0, self.length(s) + 2))
        self.apply("insert", s, pos, 0, True, self.token(data))

    @rule(data=st.data())
    def insert_speculative(self, data) -> None:
        s = self.seq(data)
        tree = self.ref.trees[s]
        base = self.length(s) if tree is None else tree["lo"]
        pos = base + data.draw(st.integers(-1, self.cfg["max_depth"]))
        self.apply("insert", s, max(pos, 0), self.node(data), False, self.token(data))

    @rule(data=st.data())
    def speculative_step(self, data) -> None:
        """A draft tree for one sequence: nodes 0, 1, ... at len + depth, each below a
        node of the level above; then, often, the commit of a chain."""
        s = self.seq(data)
        n = self.length(s)
        level = [[0]]
        self.apply("insert", s, n, 0, False, self.token(data))
        for j in range(1, data.draw(st.integers(1, self.cfg["n_nodes"]))):
            depth = data.draw(st.integers(1, min(len(level), self.cfg["max_depth"] - 1)))
            if depth == len(level):
                level.append([])
            level[depth].append(j)
            self.apply("insert", s, n + depth, j, False, self.token(data))
        if data.draw(st.integers(0, 2)):
            self.commit_chain(data, s)

    @rule(data=st.data())
    def commit(self, data) -> None:
        trees = [s for s in range(self.cfg["seqs"]) if self.ref.trees[s] is not None]
        if trees and data.draw(st.integers(0, 3)):
            self.commit_chain(data, data.draw(st.sampled_from(trees)))
        else:
            self.commit_chain(data, self.seq(data))

    def commit_chain(self, data, s: int) -> None:
        """Accept a chain of valid nodes at len, len + 1, ... (often), or any mask."""
        tree = self.ref.trees[s]
        accept = 1
        if tree is not None and data.draw(st.integers(0, 3)):
            pos = self.length(s)
            while data.draw(st.booleans()):
                here = [j for j, (p, _, _) in tree["nodes"].items() if p == pos]
                if not here:
                    break
                accept |= 1 << data.draw(st.sampled_from(here))
                pos += 1
        else:
            accept = data.draw(st.integers(0, 2 ** self.cfg["n_nodes"] - 1))
        way = data.draw(st.integers(0, 3))  # acc_len: none, |acc| (twice as often), any
        if way == 0:
            self.apply("commit", s, accept)
            return
        k = sum(accept >> j & 1 for j in tree["nodes"]) if tree is not None else 0
        if way == 3:
            k = data.draw(st.integers(-1, self.cfg["n_nodes"] + 1))
        self.apply("commit", s, accept, k)

    @rule(data=st.data())
    def fork(self, data) -> None:
        self.apply("fork", self.seq(data), self.seq(data))

    @rule(data=st.data())
    def fork_possible(self, data) -> None:
        src = [s for s in range(self.cfg["seqs"]) if self.length(s)]
        dst = [
            s for s in range(self.cfg["seqs"]) if not self.length(s) and self.ref.trees[s] is None
        ]
        if src and dst:
            self.apply("fork", data.draw(st.sampled_from(src)), data.draw(st.sampled_from(dst)))

    @rule(data=st.data())
    def release(self, data) -> None:
        self.apply("release", self.seq(data))

    @rule(data=st.data())
    def spill(self, data) -> None:
        self.apply("spill", data.draw(st.integers(0, 5)))

    @rule(data=st.data())
    def fill(self, data) -> None:
        s = self.seq(data)
        in_hbm = [p for p, c in enumerate(self.ref.lists[s]) if c.loc]
        if in_hbm and data.draw(st.integers(0, 3)):
            pos = data.draw(st.sampled_from(in_hbm))
        else:
            pos = data.draw(st.integers(0, self.length(s) + 1))
        self.apply("fill", s, pos)

    @rule(data=st.data())
    def score(self, data) -> None:
        s = self.seq(data)
        pos = data.draw(st.integers(0, self.length(s)))
        self.apply("score", s, pos, data.draw(st.integers(0, CMAX)))

    @rule(data=st.data())
    def grow_block(self, data) -> None:
        """Up to a block of appends with the run's prompt tokens (shared prefixes), or
        random ones: tags are entered when len reaches a block's end."""
        s = self.seq(data)
        prompt = data.draw(st.booleans())
        for _ in range(data.draw(st.integers(1, BLOCK))):
            n = self.length(s)
            token = n * 5 % 2 ** self.cfg["token_bits"] if prompt else self.token(data)
            self.apply("insert", s, n, 0, True, token)

    def idle(self) -> list[int]:
        return [s for s in range(self.cfg["seqs"]) if not self.length(s) and not self.ref.trees[s]]

    @rule(data=st.data())
    def share(self, data) -> None:
        """A request: another sequence's prefix (often), with a tail, or random tokens."""
        idle = self.idle()
        dst = data.draw(st.sampled_from(idle)) if idle and data.draw(st.booleans()) else None
        dst = self.seq(data) if dst is None else dst
        long = [s for s in range(self.cfg["seqs"]) if self.length(s) >= BLOCK]
        src = data.draw(st.sampled_from(long)) if long else self.seq(data)
        tokens = [c.token for c in self.ref.lists[src]]
        cut = data.draw(st.sampled_from([len(tokens), len(tokens) // BLOCK * BLOCK, None]))
        tokens = tokens[: data.draw(st.integers(0, len(tokens))) if cut is None else cut]
        if data.draw(st.integers(0, 3)) == 0 and tokens:  # differs in one token: often
            last = len(tokens) // BLOCK * BLOCK - 1  # the last of the last whole block
            i = last if last >= 0 and data.draw(st.booleans()) else None
            tokens[data.draw(st.integers(0, len(tokens) - 1)) if i is None else i] ^= 1
        tokens += [self.token(data) for _ in range(data.draw(st.integers(0, 20)))]
        self.apply("share", dst, tokens)

    @rule(data=st.data())
    def bad_field(self, data) -> None:
        """One argument out of range or of the wrong type."""
        c = self.cfg
        bound = {
            "port": 2,
            "seq": c["seqs"],
            "src": c["seqs"],
            "dst": c["seqs"],
            "pos": 2 ** c["pos_bits"],
            "owner": c["n_nodes"],
            "token": 2 ** c["token_bits"],
            "view": 2 ** c["n_nodes"],
            "accept": 2 ** c["n_nodes"],
            "n": c["pages"] + 1,
            "s": CMAX + 1,
        }
        s = self.seq(data)
        good = {
            "lookup": {"port": 0, "seq": s, "pos": 0, "view": 1},
            "insert": {"seq": s, "pos": 0, "owner": 0, "committed": False, "token": 0},
            "commit": {"seq": s, "accept": 1},
            "fork": {"src": 0, "dst": s},
            "release": {"seq": s},
            "spill": {"n": 1},
            "fill": {"seq": s, "pos": 0},
            "score": {"seq": s, "pos": 0, "s": 1},
            "share": {"dst": s, "tokens": [0] * 16},
        }
        op = data.draw(st.sampled_from(OPS))
        args = dict(good[op])
        field = data.draw(st.sampled_from(sorted(args)))
        if field == "committed":
            args[field] = data.draw(st.sampled_from([1, 0, 2, "yes", None]))
        elif field == "tokens":
            big = [0] * (2 ** c["pos_bits"] + 1)
            args[field] = data.draw(
                st.sampled_from([[-1], [2 ** c["token_bits"]], [0.0], [True], "ab", 5, big])
            )
        else:
            bad = [-1, bound[field], bound[field] + 7, 2**70, 1.0, True, "0", None]
            args[field] = data.draw(st.sampled_from(bad))
        self.apply(op, *args.values())

    def teardown(self) -> None:
        from golden.kvpool import crc

        if hasattr(self, "saved_tag"):
            crc.block_tag = self.saved_tag
        WEAK[0] = False

    # -- after every step
    @invariant()
    def agrees_with_reference(self) -> None:
        if hasattr(self, "pool"):
            check_against_ref(self.pool, self.ref)

    @invariant()
    def spec_invariants(self) -> None:
        if hasattr(self, "pool"):
            check_invariants(self.pool)


PoolMachine.TestCase.settings = settings(
    max_examples=sized(120, 250),  # make sim-full: 250
    stateful_step_count=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestPool = PoolMachine.TestCase


# ---------------------------------------------------------------------------- directed tests

SMALL = dict(
    pages=16,
    hbm_pages=16,
    seqs=4,
    segs=8,
    trees=2,
    n_nodes=8,
    max_depth=4,
    pos_bits=8,
    token_bits=8,
    tlb_sets=4,
    tlb_ways=2,
    tag_sets=4,
    tag_ways=2,
)


def small(**kw) -> KVPool:
    return KVPool(**(SMALL | kw))


def append(pool: KVPool, seq: int, tokens) -> list[int]:
    """Committed appends of ``tokens``; their pages."""
    return [pool.insert(seq, pool.seq_len(seq), 0, True, t).value[0] for t in tokens]


def test_crc64_ecma182() -> None:
    from golden.kvpool import crc

    assert crc.crc64(b"123456789") == 0x6C40DF5F0B497347 == crc.CHECK
    assert ref_crc(b"123456789", 0) == crc.CHECK
    data = bytes(range(256)) * 3
    for init in (0, 1, 0x0123456789ABCDEF, MASK64):
        assert crc.crc64(data, init) == ref_crc(data, init)
    # a block tag: 4 bytes little-endian per token, chained through the initial value
    toks = list(range(1000, 1016))
    t0 = crc.block_tag(0, toks)
    assert t0 == ref_crc(b"".join(t.to_bytes(4, "little") for t in toks), 0)
    assert crc.tags_of(toks * 2 + [1, 2, 3], BLOCK) == [t0, crc.block_tag(t0, toks)]


def test_error_codes_extend_the_flat_pools() -> None:
    from golden.kvtypes import KVErr

    for e in KVErr:
        want = "NOT_CHAIN" if e.name == "TWO_COMMITTED" else e.name
        assert PoolErr(e.value).name == want
    assert [e.value for e in PoolErr] == list(range(20))
    assert issubclass(PoolError, ValueError)


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("pages", 15, r"^pages = 15: must be an integer in 16 \.\. 4194304$"),
        ("pages", 2**22 + 1, "^pages = "),
        ("hbm_pages", -1, "^hbm_pages = -1"),
        ("hbm_pages", 2**23 + 1, "^hbm_pages = "),
        ("seqs", 0, "^seqs = 0"),
        ("seqs", 65, "^seqs = 65"),
        ("segs", 1, "^segs = 1"),
        ("segs", 1025, "^segs = 1025"),
        ("trees", 0, "^trees = 0"),
        ("trees", 17, "^trees = 17"),
        ("n_nodes", 3, "^n_nodes = 3"),
        ("n_nodes", 1025, "^n_nodes = 1025"),
        ("max_depth", 1, "^max_depth = 1"),
        ("max_depth", 1025, "^max_depth = 1025"),
        ("pos_bits", 0, "^pos_bits = 0"),
        ("pos_bits", 21, "^pos_bits = 21"),
        ("token_bits", 18, "^token_bits = 18"),
        ("tlb_sets", 3, r"^tlb_sets = 3: must be a power of two in 1 \.\. 65536$"),
        ("tlb_sets", 2**17, "^tlb_sets = "),
        ("tlb_ways", 16, "^tlb_ways = 16"),
        ("tlb_ways", 3, "^tlb_ways = 3: must be a power of two"),
        ("tag_sets", 0, "^tag_sets = 0"),
        ("tag_ways", 6, "^tag_ways = 6: must be a power of two"),
        ("pages", 16.0, r"^pages = 16\.0: must be an integer"),
        ("seqs", True, "^seqs = True: must be an integer"),
        ("segs", "8", "^segs = '8'"),
    ],
)
def test_parameters_are_checked(name, value, match) -> None:
    with pytest.raises(ValueError, match=match):
        KVPool(**{name: value})


def test_parameters_default_to_the_full_configuration() -> None:
    import time

    t = time.perf_counter()
    pool = KVPool(pages=2**22, hbm_pages=2**23, segs=1024, trees=16)
    assert time.perf_counter() - t < 1.0, "construction must not build per-page Python lists"
    p = KVPool().params
    assert (p.pages, p.hbm_pages, p.seqs, p.segs, p.trees, p.n_nodes, p.max_depth) == (
        2**20,
        2**21,
        64,
        256,
        8,
        1024,
        64,
    )
    assert (p.pos_bits, p.token_bits, p.tlb_sets, p.tlb_ways, p.tag_sets, p.tag_ways) == (
        17,
        17,
        1024,
        4,
        1024,
        4,
    )
    assert pool.free_pages == 2**22 and pool.hbm_free == 2**23
    with pytest.raises(TypeError):
        KVPool(16)  # keyword-only


def _run(pool: KVPool, calls) -> None:
    for op, *args in calls:
        getattr(pool, op)(*args)


A0 = ("insert", 0, 0, 0, True, 7)  # seq 0 appends position 0
S0 = ("insert", 0, 0, 1, False, 9)  # seq 0 speculates node 1 at position 0
APPEND20 = [("insert", 0, i, 0, True, i) for i in range(20)]

#: (pool parameters, setup calls, failing call, class, message start or None)
ERRORS = [
    ({}, [], ("lookup", 2, 0, 0), E.FIELD, "port = 2"),
    ({}, [], ("lookup", 0, 4, 0), E.SEQ_RANGE, "seq = 4"),
    ({}, [], ("lookup", 0, 0, 256), E.FIELD, "pos = 256"),
    ({}, [], ("lookup", 0, 0, 0, 256), E.FIELD, "view = 256"),
    ({}, [], ("lookup", 0, 0, 0, -1), E.FIELD, "view = -1"),
    ({}, [], ("insert", -1, 0), E.SEQ_RANGE, "seq = -1"),
    ({}, [], ("insert", 0, 0, 8), E.OWNER_RANGE, "owner = 8"),
    ({}, [], ("insert", 0, 0, 0, 1), E.FIELD, "committed = 1"),
    ({}, [], ("insert", 0, 0, 0, False, 256), E.FIELD, "token = 256"),
    ({}, [], ("insert", 0, 0.0), E.FIELD, "pos = 0.0"),
    ({}, [S0], ("commit", 0, 256), E.FIELD, "accept = 256"),
    ({}, [A0], ("fork", 4, 1), E.SEQ_RANGE, "src = 4"),
    ({}, [A0], ("fork", 0, 4), E.DST_RANGE, "dst = 4"),
    ({}, [], ("share", 4, []), E.DST_RANGE, "dst = 4"),
    ({}, [], ("share", 0, [256]), E.FIELD, "tokens[0] = 256"),
    ({}, [], ("share", 0, "abc"), E.FIELD, "tokens = 'abc'"),
    ({}, [], ("share", 0, [0] * 257), E.FIELD, "tokens = 257 tokens"),
    ({}, [], ("spill", -1), E.FIELD, "n = -1"),
    ({}, [], ("spill", 17), E.FIELD, "n = 17"),
    ({}, [A0], ("score", 0, 0, 8), E.FIELD, "s = 8"),
    ({}, [A0], ("insert", 0, 0, 0, True), E.SEEN_COMMITTED, None),
    ({}, [A0], ("insert", 0, 0, 1, False), E.SEEN_COMMITTED, None),
    ({}, [], ("insert", 0, 1, 0, True), E.POS_GAP, None),
    ({}, [S0], ("insert", 0, 1, 1, False), E.SPEC_DUP, None),
    ({}, [S0], ("insert", 0, 4, 2, False), E.DEPTH_RANGE, None),
    ({}, [("insert", 0, 2, 1)], ("insert", 0, 1, 2, False), E.DEPTH_RANGE, None),
    ({}, [A0], ("commit", 0, 1), E.NO_SPEC, None),
    ({}, [S0], ("commit", 0, 0b10), E.ROOT_CLEAR, None),
    ({}, [("insert", 0, 1, 1)], ("commit", 0, 0b11), E.NOT_CHAIN, None),
    ({}, [S0, ("insert", 0, 0, 2)], ("commit", 0, 0b111), E.NOT_CHAIN, None),
    ({}, [S0, A0], ("commit", 0, 0b11), E.NOT_CHAIN, None),
    ({}, [S0], ("commit", 0, 0b11, 2), E.NOT_CHAIN, "acc_len = 2"),
    ({}, [S0], ("commit", 0, 0b11, 0), E.NOT_CHAIN, "acc_len = 0"),
    ({}, [S0], ("commit", 0, 1, 1), E.NOT_CHAIN, "acc_len = 1"),
    ({}, [S0], ("commit", 0, 1, 9), E.FIELD, "acc_len = 9"),
    ({}, [S0], ("commit", 0, 1, -1), E.FIELD, "acc_len = -1"),
    ({}, [S0], ("commit", 0, 1, 1.0), E.FIELD, "acc_len = 1.0"),
    ({}, [A0], ("fork", 0, 0), E.SAME_SEQ, None),
    ({}, [A0], ("fork", 1, 0), E.SRC_EMPTY, None),
    ({}, [A0, ("insert", 1, 0, 0, True)], ("fork", 0, 1), E.DST_BUSY, None),
    ({}, [A0, ("insert", 1, 0, 0)], ("fork", 0, 1), E.DST_BUSY, None),
    ({}, [A0], ("share", 0, [0] * 16), E.DST_BUSY, None),
    ({}, [A0], ("release", 1), E.NOTHING_SEEN, None),
    ({}, [A0], ("fill", 0, 1), E.NOT_COMMITTED, None),
    ({}, [A0, ("insert", 0, 1, 1)], ("score", 0, 1, 1), E.NOT_COMMITTED, None),
    ({}, [A0], ("fill", 0, 0), E.ON_CHIP, None),
    # TABLE_FULL: a segment (insert, commit, share's split) or a tree slot
    (
        {"segs": 2},
        [A0, ("insert", 1, 0, 0, True)],
        ("insert", 2, 0, 0, True),
        E.TABLE_FULL,
        None,
    ),
    (
        {"segs": 2},
        [A0, ("insert", 1, 0, 0, True), ("insert", 2, 0, 0)],
        ("commit", 2, 1),
        E.TABLE_FULL,
        None,
    ),
    (
        {"segs": 2},
        [*APPEND20, ("insert", 1, 0, 0, True)],
        ("share", 2, list(range(16))),
        E.TABLE_FULL,
        None,
    ),
    (  # a fork took seq 0's own segment: its next append needs one
        {"segs": 2},
        [A0, ("fork", 0, 1), ("insert", 1, 1, 0, True)],
        ("insert", 0, 1, 0, True),
        E.TABLE_FULL,
        None,
    ),
    ({"trees": 1}, [S0], ("insert", 1, 0, 0), E.TABLE_FULL, None),
    # NO_PAGE: nothing free and no spill possible (no HBM slot, or only speculative pages)
    ({"hbm_pages": 0}, APPEND20[:16], ("insert", 1, 0, 0, True), E.NO_PAGE, None),
    ({"hbm_pages": 0}, APPEND20[:16], ("insert", 1, 0, 0, False), E.NO_PAGE, None),
    (
        {"hbm_pages": 4, "max_depth": 16, "n_nodes": 16},
        [("insert", 0, i, i) for i in range(16)],
        ("insert", 1, 0, 0, True),
        E.NO_PAGE,
        None,
    ),
]


@pytest.mark.parametrize(("params", "setup", "call", "code", "start"), ERRORS)
def test_errors_change_nothing(params, setup, call, code, start) -> None:
    pool = small(**params)
    _run(pool, setup)
    before = pool.snapshot()
    op, *args = call
    with pytest.raises(PoolError) as info:
        getattr(pool, op)(*args)
    assert info.value.code == code, str(info.value)
    if start is not None:
        assert str(info.value).startswith(start), str(info.value)
    assert pool.snapshot() == before
    check_invariants(pool)


def test_every_error_class_is_tested() -> None:
    assert {case[3] for case in ERRORS} == set(PoolErr) - {E.NONE}


def test_lookup_committed_and_speculative() -> None:
    pool = small()
    pages = append(pool, 0, [10, 11, 12])
    assert pages == [0, 1, 2]
    for pos, page in enumerate(pages):
        assert pool.lookup(1, 0, pos).value == (1, 0, page)
        assert pool.pte(0, pos) == (0, page, 10 + pos)
    # a tree: nodes 1 and 2 at position 3 (siblings), node 3 at 4 below node 1
    n1 = pool.insert(0, 3, 1, False, 21).value[0]
    n2 = pool.insert(0, 3, 2, False, 22).value[0]
    n3 = pool.insert(0, 4, 3, False, 23).value[0]
    assert pool.lookup(0, 0, 3, 0b0110).value == (1, 0, n1)  # the lowest node in view
    assert pool.lookup(0, 0, 3, 0b0100).value == (1, 0, n2)
    assert pool.lookup(0, 0, 3, 0b0001).value == (0, 0, 0)
    assert pool.lookup(0, 0, 4, 0b1010).value == (1, 0, n3)
    assert pool.lookup(0, 1, 3, 0xFF).value == (0, 0, 0)  # another sequence
    assert pool.lookup(0, 0, 2, 0).value == (1, 0, pages[2])  # committed: view ignored
    r = pool.lookup(0, 0, 9, 0xFF)
    assert r.value == (0, 0, 0) and r.counts == (10, 3, 3, 0)
    check_invariants(pool)


def test_commit_appends_the_chain_and_frees_the_rest_in_node_order() -> None:
    pool = small()
    append(pool, 0, [1, 2])
    pages = {
        j: pool.insert(0, 2 + d, j, False, 100 + j).value[0]
        for j, d in [(0, 0), (5, 1), (2, 1), (7, 2), (1, 2), (3, 1)]
    }
    # accept 0 -> 2 -> 7 (positions 2, 3, 4); reject 1, 3, 5 (freed in node order)
    r = pool.commit(0, 0b10000101)
    assert r.value == (3,) and r.counts == (16 - 5, 0, 5, 0)
    assert pool.free_fifo() == ((pages[1], pages[3], pages[5]), 8)
    assert [pool.pte(0, p) for p in range(2, 5)] == [
        (0, pages[0], 100),
        (0, pages[2], 102),
        (0, pages[7], 107),
    ]
    assert pool.seq_len(0) == 5 and pool.tree(0) is None
    assert pool.spill_queue() == (0, 1, pages[0], pages[2], pages[7])
    # the next pages come from the FIFO's head, then from the mark
    got = [pool.insert(1, 0, j).value[0] for j in range(4)]
    assert got == [pages[1], pages[3], pages[5], 8]
    # a commit with no valid accepted node frees everything and needs no segment
    assert pool.commit(1, 0b1).value == (3,)  # node 0 is valid: appended
    pool.insert(1, 1, 1)
    assert pool.commit(1, 0b1).value == (1,) and pool.seq_len(1) == 1
    check_invariants(pool)


def test_release_frees_in_position_order_whatever_the_segment_numbers() -> None:
    pool = small(segs=4)
    append(pool, 0, [1])  # segment 0
    p1 = append(pool, 1, [2, 3])  # segment 1
    pool.release(0)  # segment 0 free again
    pool.fork(1, 2)
    p2 = append(pool, 2, [4, 5])  # seq 2's own segment: 0, above segment 1
    assert [g for g, _, _ in pool.chain(2)] == [1, 0]
    pool.insert(2, 4, 3, False, 9)  # a tree: freed after the segments
    spec = pool.tree(2)[2][3][1]
    assert pool.release(1).value == (0, 0)  # seq 2 still sees segment 1
    fifo_before = pool.free_fifo()[0]
    r = pool.release(2)
    assert r.value == (5, 0)
    assert pool.free_fifo()[0] == fifo_before + tuple(p1 + p2 + [spec])
    assert pool.live_segments == 0 and r.counts == (16, 0, 0, 0)
    check_invariants(pool)


def test_fork_touches_no_pte_whatever_the_prefix_length() -> None:
    """Fork sets one bit per segment of the source's chain: the same work for a
    prefix of 3 or 200 positions; no PTE, page, TLB entry or spill state changes."""
    changed = []
    for n in (3, 200):
        pool = small(pages=256, pos_bits=9)
        append(pool, 0, [k % 256 for k in range(n)])
        for pos in range(0, n, 7):
            pool.lookup(0, 0, pos)
        before = pool.snapshot()
        segs = [pool.segment(g) for g in range(8)]
        tables, tlb = pool.tables(), pool.tlb_entries(0)
        pool.fork(0, 1)
        after = pool.snapshot()
        assert pool.tables() == tables and pool.tlb_entries(0) == tlb
        assert after[4:] == before[4:], "tables, trees, pages, FIFOs, TLBs and tags unchanged"
        changed.append(
            sum(a != b for a, b in zip(segs, [pool.segment(g) for g in range(8)], strict=True))
        )
        assert [pool.pte(1, p) for p in range(n)] == [pool.pte(0, p) for p in range(n)]
        assert pool.seq_tag(1) == pool.seq_tag(0) != 0 or n < BLOCK
    assert changed == [1, 1]


# ---------------------------------------------------------------------------- TLB


def test_plru_convention() -> None:
    from golden.kvpool.tlb import plru_touch, plru_victim

    bits = 0
    assert plru_victim(bits, 4) == 0
    for way in (0, 1, 2, 3):
        bits = plru_touch(bits, way, 4)
    assert plru_victim(bits, 4) == 0
    bits = plru_touch(bits, 0, 4)
    assert plru_victim(bits, 4) == 2
    bits = plru_touch(bits, 2, 4)
    assert plru_victim(bits, 4) == 1
    assert plru_victim(0, 1) == 0 and plru_touch(0, 0, 1) == 0
    for ways in (2, 4, 8):  # never the way just touched; in order, way 0 after the last
        b = 0
        for x in [*range(ways), 3 % ways, 1, 0, ways - 1]:
            b = plru_touch(b, x, ways)
            assert plru_victim(b, ways) != x
        b = 0
        for x in range(ways):
            b = plru_touch(b, x, ways)
        assert plru_victim(b, ways) == 0


def test_tlb_hits_misses_and_plru_victim() -> None:
    pool = small(tlb_sets=1, tlb_ways=4)
    pages = append(pool, 0, range(6))
    for pos in (0, 1, 2, 3):
        assert pool.lookup(0, 0, pos).value == (1, 0, pages[pos])
    assert pool.tlb_counts(0) == (0, 4) and pool.tlb_counts(1) == (0, 0)
    assert pool.lookup(0, 0, 0).value == (1, 0, pages[0])  # a hit
    assert pool.tlb_counts(0) == (1, 4)
    pool.lookup(0, 0, 4)  # a miss: the PLRU victim is way 2 (position 2)
    assert [(w, pos) for _, w, _, pos, _, _ in pool.tlb_entries(0)] == [
        (0, 0),
        (1, 1),
        (2, 4),
        (3, 3),
    ]
    assert pool.tlb_counts(0) == (1, 5)
    # speculative lookups, misses and errors do not access the TLB
    pool.insert(0, 6, 0)
    before = pool.snapshot()
    pool.lookup(0, 0, 6, 1)
    pool.lookup(0, 0, 7, 1)
    with pytest.raises(PoolError):
        pool.lookup(0, 9, 0)
    assert pool.snapshot() == before
    check_invariants(pool)


def _tlb_keys(pool: KVPool, port: int) -> set[tuple[int, int]]:
    return {(g, pos) for _, _, g, pos, _, _ in pool.tlb_entries(port)}


def test_tlb_invalidation_on_spill_and_fill() -> None:
    pool = small(tlb_sets=4, tlb_ways=2)  # segment 0: set = pos mod 4
    append(pool, 0, range(6))
    for port in (0, 1):
        for pos in range(6):
            pool.lookup(port, 0, pos)
    assert _tlb_keys(pool, 0) == _tlb_keys(pool, 1) == {(0, p) for p in range(6)}
    assert pool.spill(1).value == (1,)  # victim: position 0 (page 0, c = 1 everywhere)
    assert pool.pte(0, 0) == (1, 0, 0)
    # set 0 of both TLBs loses segment 0's entries: positions 0 and 4
    assert _tlb_keys(pool, 0) == _tlb_keys(pool, 1) == {(0, p) for p in (1, 2, 3, 5)}
    assert pool.lookup(1, 0, 0).value == (1, 1, 0)  # a miss, then the HBM slot
    assert pool.lookup(1, 0, 0).value == (1, 1, 0)  # a hit
    assert pool.tlb_counts(1) == (1, 7)
    r = pool.fill(0, 0)
    assert r.value == (0,) and r.counts == (10, 0, 6, 0)
    assert (0, 0) not in _tlb_keys(pool, 1)
    assert pool.lookup(1, 0, 0).value == (1, 0, 0)
    check_invariants(pool)


def test_tlb_invalidation_on_release_and_split() -> None:
    pool = small(tlb_sets=4, tlb_ways=4)
    toks = list(range(40))
    append(pool, 0, toks[:8])  # segment 0
    append(pool, 1, toks[:20])  # segment 1
    for pos in range(8):
        pool.lookup(0, 0, pos)
    for pos in range(8):
        pool.lookup(0, 1, pos)
    assert {g for g, _ in _tlb_keys(pool, 0)} == {0, 1}
    pool.release(0)  # segment 0 dies: its entries go, segment 1's stay
    assert {g for g, _ in _tlb_keys(pool, 0)} == {1}
    kept = _tlb_keys(pool, 0)
    assert pool.share(2, toks[:16]).value == (16,)  # segment 1 is split at 16
    assert pool.chain(1) == [(1, 0, 16), (0, 16, 20)] and pool.chain(2) == [(1, 0, 16)]
    assert kept and not _tlb_keys(pool, 0)
    assert [pool.lookup(0, 2, p).value for p in range(16)] == [
        pool.lookup(1, 1, p).value for p in range(16)
    ]
    check_invariants(pool)


# ---------------------------------------------------------------------------- spill and fill


def test_gclock_victim_order_follows_the_scores() -> None:
    pool = small()
    append(pool, 0, [5, 6, 7, 8])  # pages 0 .. 3, c = 1, queued in this order
    pool.score(0, 1, 2)  # c[1] = 3
    pool.score(0, 3, 7)  # c[3] = 7 (saturated)
    assert [pool.page_state(p)[1] for p in range(4)] == [1, 3, 1, 7]
    order = []
    for _ in range(4):
        assert pool.spill(1).value == (1,)
        order += [p for p in range(4) if pool.pte(0, p)[0] == 1 and p not in order]
    assert order == [0, 2, 1, 3]
    assert [pool.pte(0, p) for p in range(4)] == [(1, 0, 5), (1, 2, 6), (1, 1, 7), (1, 3, 8)]
    assert pool.spill(5).value == (0,)  # nothing left on chip: not an error
    before = pool.snapshot()
    pool.score(0, 2, 3)  # in HBM: nothing
    assert pool.snapshot() == before
    check_invariants(pool)


def test_speculative_pages_never_spill() -> None:
    pool = small(n_nodes=16, max_depth=16)
    append(pool, 0, [1, 2])
    spec = [pool.insert(0, 2 + j, j).value[0] for j in range(14)]
    assert pool.free_pages == 0
    assert pool.spill(10).value == (2,)
    assert pool.spec_pages == 14 and all(pool.page_state(p)[0] == 1 for p in spec)
    assert pool.tree(0)[2][5][1] == spec[5]
    check_invariants(pool)


def test_spilled_position_hits_with_its_slot_and_fills_back() -> None:
    pool = small(pages=16)
    pages = append(pool, 0, range(100, 116))
    assert pool.free_pages == 0
    r = pool.insert(1, 0, 0, True, 42)  # an allocation that spills the GCLOCK victim
    assert r.spilled == 1 and r.value == (pages[0],) and r.counts == (0, 0, 16, 1)
    assert pool.lookup(0, 0, 0).value == (1, 1, 0) and pool.pte(0, 0) == (1, 0, 100)
    r = pool.fill(0, 0)  # returns slot 0, then needs a page: the next victim takes slot 0
    assert r.spilled == 1 and r.value == (pages[1],) and r.counts == (0, 0, 16, 1)
    assert pool.pte(0, 0) == (0, pages[1], 100) and pool.pte(0, 1) == (1, 0, 101)
    assert pool.hbm_fifo() == ((), 1)
    assert pool.lookup(1, 0, 0).value == (1, 0, pages[1])
    assert pool.page_state(pages[1])[1] == 1  # committed again: c = 1
    r = pool.release(0)
    assert r.value == (15, 1) and pool.hbm_used == 0
    check_invariants(pool)


def test_a_fill_with_hbm_full_swaps_with_its_victim() -> None:
    """HBM full and no free page: the fill's own slot, returned first, takes the
    victim (the pool never wedges while a committed page is on chip)."""
    pool = small(pages=16, hbm_pages=1)
    append(pool, 0, range(100, 116))
    pool.spill(1)  # position 0 to the only HBM slot
    pool.insert(0, 16, 0, True, 7)  # the freed page, no spill
    assert pool.free_pages == 0 and pool.hbm_used == 1
    r = pool.fill(0, 0)
    assert r.spilled == 1 and pool.pte(0, 0)[0] == 0 and pool.hbm_used == 1
    assert sum(pool.pte(0, p)[0] for p in range(17)) == 1  # one position in HBM: the victim
    check_invariants(pool)


# ---------------------------------------------------------------------------- dedup


def test_share_finds_the_longest_verified_prefix() -> None:
    pool = small(pages=64)
    prompt = [(7 * k + 3) % 256 for k in range(40)]
    append(pool, 0, prompt)
    assert sorted(e[3:] for e in pool.tag_entries()) == [(0, 0), (0, 1)]
    assert pool.share(1, prompt + [1, 2, 3]).value == (32,)
    assert pool.seq_len(1) == 32 and pool.seq_tag(1) == pool.seq_tag(0)
    assert pool.share(2, prompt[:31]).value == (16,)
    other = prompt[:20] + [(prompt[20] + 1) % 256] + prompt[21:]
    assert pool.share(3, other).value == (16,)  # block 1 differs: block 0 only
    assert [pool.pte(3, p)[2] for p in range(16)] == prompt[:16]
    pool.release(3)
    assert pool.share(3, prompt[:15]).value == (0,) and pool.seq_len(3) == 0
    assert pool.share(3, [9] * 32).value == (0,)
    # shared positions are the same PTEs: zero copy
    assert [pool.pte(1, p) for p in range(32)] == [pool.pte(0, p) for p in range(32)]
    assert pool.committed_pages == 40
    check_invariants(pool)


@pytest.mark.parametrize("extra", [0, 1, 2])
def test_share_splits_the_segment_straddling_m(extra) -> None:
    pool = small(pages=64)
    toks = list(range(16 + extra))
    append(pool, 0, toks)
    for pos in range(16 + extra):
        pool.lookup(1, 0, pos)
    assert pool.share(1, toks[:16] + [99]).value == (16,)
    assert pool.chain(1) == [(0, 0, 16)]
    want = [(0, 0, 16)] + ([(1, 16, 16 + extra)] if extra else [])
    assert pool.chain(0) == want and pool.live_segments == len(want)
    assert not any(g == 0 for _, _, g, _, _, _ in pool.tlb_entries(1)) or not extra
    pool.release(1)
    assert pool.chain(0) == want
    pool.release(0)
    assert pool.free_pages == 64 and pool.live_segments == 0
    check_invariants(pool)


def test_tag_collisions_never_share_different_tokens(monkeypatch) -> None:
    from golden.kvpool import crc

    monkeypatch.setattr(crc, "block_tag", lambda prev, tokens: 0xC011)
    pool = small(pages=64, tag_sets=1, tag_ways=2)
    a = list(range(32))
    append(pool, 0, a)
    assert [e[2:] for e in pool.tag_entries()] == [(0xC011, 0, 0)]  # T_1 == T_0: not entered
    b = [100 + k for k in range(32)]
    assert pool.share(1, b).value == (0,)  # same tags, other tokens: no share
    assert pool.share(1, a[:15] + [99]).value == (0,)  # the block's last token differs
    assert pool.share(1, a[:31] + [99]).value == (16,)
    pool.release(1)
    assert pool.share(1, a[:16] + b[16:]).value == (16,)
    assert pool.share(2, a).value == (16,)  # block 1's entry would be (tag, 0, 1): absent
    pool.release(0)
    pool.release(1)
    pool.release(2)
    append(pool, 0, b[:16])  # seq 0 reused: the stale entry (tag, 0, 0) names it
    assert pool.share(1, a[:16]).value == (0,)
    check_invariants(pool)


def test_tag_table_round_robin() -> None:
    from golden.kvpool.tags import TagTable

    t = TagTable(1, 2)
    t.enter(5, 0, 0)
    t.enter(6, 1, 0)
    t.enter(5, 2, 3)  # present: nothing
    t.enter(7, 2, 0)  # full: way 0 (pointer 0 -> 1)
    t.enter(8, 3, 0)  # way 1 (pointer 1 -> 0)
    assert t.entries() == [(0, 0, 7, 2, 0), (0, 1, 8, 3, 0)]
    assert t.find(8) == (3, 0) and t.find(5) is None


# ---------------------------------------------------------------------------- bench


def test_bench_is_deterministic_and_writes_its_report(tmp_path) -> None:
    import json

    from golden.kvpool import bench

    a = bench.run(pages=2048, ops=3000, seed=1)
    b = bench.run(pages=2048, ops=3000, seed=1)
    assert a["mixed"]["ops"] == 3000 and a["mix"] == b["mix"] and a["after"] == b["after"]
    assert set(a["mix"]) == set(OPS)
    out = tmp_path / "r.json"
    assert bench.main(["--pages", "2048", "--ops", "500", "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["mixed"]["ops"] == 500 and r["mixed"]["ops_per_s"] > 0
