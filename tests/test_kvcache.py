"""golden.kvcache: the KV block table (SPEC §4) against a plain dictionary model.

The model below is written from SPEC §4 independently of ``golden.kvcache``:
a list of dicts (``None`` = invalid entry), linear scans everywhere, and
"nothing changes on error" obtained by working on a deep copy. The stateful
test drives both with every operation, valid and invalid, and checks after
every operation that they agree on the result and on the whole table, and
that SPEC §4.3's invariants hold.
"""

from __future__ import annotations

import copy
import random
import re
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from golden import tree
from golden.kvcache import BlockTable, Entry, KVErr, KVError
from tb.common import sized

# ---------------------------------------------------------------------------- model


class Bad(Exception):
    """The model's 'error': bad input, nothing changes. ``field``: the range-checked field."""

    def __init__(self, why: str, field: str | None = None) -> None:
        super().__init__(why)
        self.field = field


class Model:
    """SPEC §4 as directly as possible: a list of dicts, scanned linearly."""

    def __init__(self, entries, pages, seqs, n_nodes, layer_bits, pos_bits) -> None:
        self.E, self.P, self.S, self.N = entries, pages, seqs, n_nodes
        self.LB, self.PB = layer_bits, pos_bits
        self.ents: list[dict | None] = [None] * entries

    # -- helpers
    def _int(self, field, v, hi) -> None:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < hi:
            raise Bad("range", field)

    def _key(self, seq, layer, pos) -> None:
        self._int("seq", seq, self.S)
        self._int("layer", layer, 2**self.LB)
        self._int("pos", pos, 2**self.PB)

    def _sees(self, e, seq) -> bool:
        return e is not None and (e["seqs"] >> seq) & 1 == 1

    def snapshot(self) -> tuple:
        return tuple(
            (False, False, 0, 0, 0, 0, 0)
            if e is None
            else (True, e["committed"], e["seqs"], e["layer"], e["pos"], e["owner"], e["page"])
            for e in self.ents
        )

    # -- operations (SPEC §4.2)
    def lookup(self, seq, layer, pos, view=0):
        self._key(seq, layer, pos)
        self._int("view", view, 2**self.N)
        for e in self.ents:
            if (
                self._sees(e, seq)
                and e["layer"] == layer
                and e["pos"] == pos
                and (e["committed"] or (view >> e["owner"]) & 1)
            ):
                return e["page"]
        return None

    def insert(self, seq, layer, pos, owner=0, committed=False):
        self._key(seq, layer, pos)
        self._int("owner", owner, self.N)
        if committed not in (True, False) or isinstance(committed, float):
            raise Bad("range", "committed")
        for e in self.ents:
            if self._sees(e, seq) and (e["layer"], e["pos"]) == (layer, pos):
                if e["committed"]:
                    raise Bad("already sees committed")
                if not committed and e["owner"] == owner:
                    raise Bad("speculative duplicate")
        if None not in self.ents:
            raise Bad("table full")
        used = {e["page"] for e in self.ents if e is not None}
        free = [p for p in range(self.P) if p not in used]
        if not free:
            raise Bad("no free page")
        i = self.ents.index(None)
        self.ents[i] = dict(
            committed=bool(committed),
            seqs=1 << seq,
            layer=layer,
            pos=pos,
            owner=owner,
            page=free[0],
        )
        return free[0]

    def commit(self, seq, accept):
        self._int("seq", seq, self.S)
        self._int("accept", accept, 2**self.N)
        spec = [i for i, e in enumerate(self.ents) if self._sees(e, seq) and not e["committed"]]
        if not spec:
            raise Bad("no speculative entry")
        if not accept & 1:
            raise Bad("bit 0")
        freed = []
        for i in spec:
            e = self.ents[i]
            if (accept >> e["owner"]) & 1:
                e["committed"] = True
            else:
                freed.append(e["page"])
                self.ents[i] = None
        keys = [(e["layer"], e["pos"]) for e in self.ents if self._sees(e, seq) and e["committed"]]
        if len(keys) != len(set(keys)):
            raise Bad("two committed")
        return sorted(freed)

    def fork(self, src, dst):
        self._int("src", src, self.S)
        self._int("dst", dst, self.S)
        if src == dst:
            raise Bad("src == dst")
        shared = [e for e in self.ents if self._sees(e, src) and e["committed"]]
        if not shared:
            raise Bad("src sees no committed")
        if any(self._sees(e, dst) for e in self.ents):
            raise Bad("dst sees an entry")
        for e in shared:
            e["seqs"] |= 1 << dst

    def release(self, seq):
        self._int("seq", seq, self.S)
        if not any(self._sees(e, seq) for e in self.ents):
            raise Bad("sees nothing")
        freed = []
        for i, e in enumerate(self.ents):
            if self._sees(e, seq):
                e["seqs"] &= ~(1 << seq)
                if e["seqs"] == 0:
                    freed.append(e["page"])
                    self.ents[i] = None
        return sorted(freed)


# ---------------------------------------------------------------------------- shared checks


def as_tuples(snap) -> tuple:
    return tuple((e.valid, e.committed, e.seqs, e.layer, e.pos, e.owner, e.page) for e in snap)


def state(t: BlockTable) -> tuple:
    """Everything observable about a table (to check that an error changed nothing)."""
    return (
        t.entries_snapshot(),
        t.free_pages,
        t.valid_entries,
        t.free_entries,
        t.free_page_mask,
        t.free_entry_mask,
        tuple(t.page_owner(p) for p in range(t.pages)),
        tuple(tuple(t.sees(s)) for s in range(t.seqs)),
    )


def check_invariants(t: BlockTable) -> None:
    """SPEC §4.3's invariants on one table state (plus this model's consequences)."""
    snap = t.entries_snapshot()
    assert len(snap) == t.entries
    valid = [(i, e) for i, e in enumerate(snap) if e.valid]
    assert t.valid_entries == len(valid)
    assert t.free_pages + t.valid_entries == t.pages
    assert t.free_entries + t.valid_entries == t.entries
    pages = [e.page for _, e in valid]
    assert len(set(pages)) == len(pages), "a page owned by two valid entries"
    for p in range(t.pages):
        owners = [i for i, e in valid if e.page == p]
        assert t.page_owner(p) == (owners[0] if owners else None)
        assert ((t.free_page_mask >> p) & 1) == (not owners)
    for i, e in enumerate(snap):
        assert ((t.free_entry_mask >> i) & 1) == (not e.valid)
        if not e.valid:
            assert e == Entry(False, False, 0, 0, 0, 0, 0)
            continue
        assert e.page == i, "entry i holds page i (consequence of lowest-free allocation)"
        assert e.seqs != 0 and e.seqs < 1 << t.seqs
        assert 0 <= e.owner < t.n_nodes
        if not e.committed:
            assert e.seqs.bit_count() == 1, "a speculative entry has exactly one sequence"
    for s in range(t.seqs):
        keys = [(e.layer, e.pos) for _, e in valid if e.committed and (e.seqs >> s) & 1]
        assert len(keys) == len(set(keys)), f"seq {s} sees two committed entries at one key"
        assert t.sees(s) == [i for i, e in valid if (e.seqs >> s) & 1]


def check_committed_history(before, after, op: str, args: tuple, result) -> None:
    """A committed entry changes only its seqs mask (fork/release), and is freed only
    by the release of its last sequence."""
    for i, b in enumerate(before):
        if not (b.valid and b.committed):
            continue
        a = after[i]
        if op == "release" and b.seqs == 1 << args[0]:
            assert not a.valid and b.page in result
            continue
        seqs = b.seqs
        if op == "fork" and (b.seqs >> args[0]) & 1:
            seqs |= 1 << args[1]
        if op == "release":
            seqs &= ~(1 << args[0])
        assert a == Entry(True, True, seqs, b.layer, b.pos, b.owner, b.page), (op, args, b, a)


# ---------------------------------------------------------------------------- stateful test

configs = st.fixed_dictionaries(
    {
        "entries": st.integers(4, 16),
        "pages": st.integers(4, 16),
        "seqs": st.integers(1, 3),
        "n_nodes": st.integers(4, 8),
        "layer_bits": st.integers(1, 2),
        "pos_bits": st.integers(1, 3),
    }
)

OPS = ("lookup", "insert", "commit", "fork", "release")


class BlockTableMachine(RuleBasedStateMachine):
    """Random valid and invalid operations on a small table and on the model."""

    @initialize(cfg=configs, data=st.data())
    def setup(self, cfg, data) -> None:
        self.cfg = cfg
        self.t = BlockTable(**cfg)
        self.m = Model(**cfg)
        self.counts: dict[str, int] = {}
        n = cfg["n_nodes"]
        # One draft tree per run: its mask rows are the views and accepts of the run.
        self.parents = [-1] + [data.draw(st.integers(0, i - 1)) for i in range(1, n)]
        self.rows = tree.mask_rows(self.parents)
        self.depths = tree.depths(self.parents)

    # -- drawing helpers
    def seq(self, data):
        return data.draw(st.integers(0, self.cfg["seqs"] - 1))

    def layer(self, data):
        return data.draw(st.integers(0, 2 ** self.cfg["layer_bits"] - 1))

    def pos(self, data):
        return data.draw(st.integers(0, min(2 ** self.cfg["pos_bits"], 6) - 1))

    def node(self, data):
        return data.draw(st.integers(0, self.cfg["n_nodes"] - 1))

    def mask(self, data):
        """A tree-mask row (most often), or any mask, or any mask with the root bit."""
        kind = data.draw(st.integers(0, 3))
        if kind >= 2:
            return self.rows[self.node(data)]
        m = data.draw(st.integers(0, 2 ** self.cfg["n_nodes"] - 1))
        return m | kind

    def seqs_where(self, pred) -> list[int]:
        return [s for s in range(self.cfg["seqs"]) if pred(s)]

    def sees_any(self, s: int, committed: bool | None = None) -> bool:
        return any(
            e is not None
            and (e["seqs"] >> s) & 1
            and (committed is None or e["committed"] == committed)
            for e in self.m.ents
        )

    # -- the one place that runs an operation on both
    def apply(self, op: str, *args):
        before = self.t.entries_snapshot()
        full_before = state(self.t)
        saved = copy.deepcopy(self.m.ents)
        try:
            expected = getattr(self.m, op)(*args)
        except Bad as bad:
            self.m.ents = saved
            with pytest.raises(ValueError) as info:
                getattr(self.t, op)(*args)
            if bad.field is not None:
                assert str(info.value).startswith(f"{bad.field} = "), str(info.value)
            assert state(self.t) == full_before, "an error changed the table"
            key = f"{op}:error:{bad.field or bad}"
        else:
            got = getattr(self.t, op)(*args)
            assert got == expected, (op, args, got, expected)
            check_committed_history(before, self.t.entries_snapshot(), op, args, got)
            key = f"{op}:ok"
        self.counts[key] = self.counts.get(key, 0) + 1

    # -- rules: valid-range arguments (semantically good or bad)
    @rule(data=st.data())
    def lookup(self, data) -> None:
        self.apply("lookup", self.seq(data), self.layer(data), self.pos(data), self.mask(data))

    @rule(data=st.data())
    def lookup_existing(self, data) -> None:
        valid = [e for e in self.m.ents if e is not None]
        if valid:
            e = data.draw(st.sampled_from(valid))
            self.apply("lookup", self.seq(data), e["layer"], e["pos"], self.mask(data))

    @rule(data=st.data())
    def insert(self, data) -> None:
        committed = data.draw(st.integers(0, 3)) == 0
        args = self.seq(data), self.layer(data), self.pos(data), self.node(data)
        self.apply("insert", *args, committed)

    @rule(data=st.data())
    def insert_at_existing(self, data) -> None:
        """Another entry at a key already in use: duplicates, siblings, committed over spec."""
        valid = [e for e in self.m.ents if e is not None]
        if valid:
            e = data.draw(st.sampled_from(valid))
            seq = data.draw(st.sampled_from(self.seqs_where(lambda s: (e["seqs"] >> s) & 1)))
            owner = e["owner"] if data.draw(st.booleans()) else self.node(data)
            committed = data.draw(st.integers(0, 3)) == 0
            self.apply("insert", seq, e["layer"], e["pos"], owner, committed)

    @rule(data=st.data())
    def commit(self, data) -> None:
        self.apply("commit", self.seq(data), self.mask(data))

    @rule(data=st.data())
    def commit_speculating(self, data) -> None:
        """Commit a sequence that has speculative entries: through a tree row, a row with
        every owner added (siblings at one position collide), or a row without the root."""
        seqs = self.seqs_where(lambda s: self.sees_any(s, committed=False))
        if seqs:
            seq = data.draw(st.sampled_from(seqs))
            owners = [e["owner"] for e in self.m.ents if e is not None and e["seqs"] == 1 << seq]
            accept = self.rows[self.node(data)]
            kind = data.draw(st.integers(0, 3))
            if kind == 1:
                accept |= sum(1 << o for o in owners)
            elif kind == 2:
                accept &= ~1
            self.apply("commit", seq, accept)

    @rule(data=st.data())
    def insert_duplicate(self, data) -> None:
        """Insert an existing speculative (seq, layer, pos, owner) again."""
        spec = [e for e in self.m.ents if e is not None and not e["committed"]]
        if spec:
            e = data.draw(st.sampled_from(spec))
            seq = e["seqs"].bit_length() - 1
            self.apply("insert", seq, e["layer"], e["pos"], e["owner"], data.draw(st.booleans()))

    @rule(data=st.data())
    def speculative_step(self, data) -> None:
        """Insert the entries of the run's tree (its first n nodes) for one sequence at one
        layer, owners = node ids, positions tip + depth; then commit one node's row."""
        n = data.draw(st.integers(1, self.cfg["n_nodes"]))
        seq, layer = self.seq(data), self.layer(data)
        if data.draw(st.booleans()):
            tip = self.pos(data)
        else:  # the natural tip: just after the sequence's committed positions
            seen = [e["pos"] for e in self.m.ents if e is not None and (e["seqs"] >> seq) & 1]
            tip = max(seen, default=-1) + 1
        for i in range(n):
            if tip + self.depths[i] < 2 ** self.cfg["pos_bits"]:
                self.apply("insert", seq, layer, tip + self.depths[i], i)
                check_invariants(self.t)
        if data.draw(st.booleans()):  # else: leave the step open (commit_speculating)
            self.apply("commit", seq, self.rows[data.draw(st.integers(0, n - 1))])

    @rule(data=st.data())
    def fork(self, data) -> None:
        self.apply("fork", self.seq(data), self.seq(data))

    @rule(data=st.data())
    def fork_possible(self, data) -> None:
        """Fork from a sequence that sees committed entries to one that sees nothing."""
        src = self.seqs_where(lambda s: self.sees_any(s, committed=True))
        dst = self.seqs_where(lambda s: not self.sees_any(s))
        if src and dst:
            self.apply("fork", data.draw(st.sampled_from(src)), data.draw(st.sampled_from(dst)))

    @rule(data=st.data())
    def release(self, data) -> None:
        self.apply("release", self.seq(data))

    @rule(data=st.data())
    def release_seen(self, data) -> None:
        seqs = self.seqs_where(self.sees_any)
        if seqs:
            self.apply("release", data.draw(st.sampled_from(seqs)))

    # -- rule: one argument out of range (or of the wrong type)
    @rule(data=st.data())
    def bad_field(self, data) -> None:
        c = self.cfg
        bound = {
            "seq": c["seqs"],
            "src": c["seqs"],
            "dst": c["seqs"],
            "layer": 2 ** c["layer_bits"],
            "pos": 2 ** c["pos_bits"],
            "owner": c["n_nodes"],
            "view": 2 ** c["n_nodes"],
            "accept": 2 ** c["n_nodes"],
        }
        seq = self.seq(data)
        good = {
            "lookup": {"seq": seq, "layer": 0, "pos": 0, "view": 1},
            "insert": {"seq": seq, "layer": 0, "pos": 0, "owner": 0, "committed": False},
            "commit": {"seq": seq, "accept": 1},
            "fork": {"src": 0, "dst": seq},
            "release": {"seq": seq},
        }
        op = data.draw(st.sampled_from(OPS))
        args = dict(good[op])
        field = data.draw(st.sampled_from(sorted(args)))
        if field == "committed":
            args[field] = data.draw(st.sampled_from([2, -1, 0.5, "yes", None]))
        else:
            bad = [-1, bound[field], bound[field] + 7, -(2**70), 2**70, 1.0, True, "0"]
            args[field] = data.draw(st.sampled_from(bad))
        self.apply(op, *args.values())

    # -- invariants after every rule
    @invariant()
    def agrees_with_model(self) -> None:
        if hasattr(self, "t"):
            assert as_tuples(self.t.entries_snapshot()) == self.m.snapshot()

    @invariant()
    def spec_invariants(self) -> None:
        if hasattr(self, "t"):
            check_invariants(self.t)

    @invariant()
    def copy_is_equal_and_independent(self) -> None:
        if hasattr(self, "t") and self.t.valid_entries:
            c = self.t.copy()
            assert state(c) == state(self.t)
            seq = next(s for s in range(self.t.seqs) if self.t.sees(s))
            c.release(seq)
            assert as_tuples(self.t.entries_snapshot()) == self.m.snapshot()


BlockTableMachine.TestCase.settings = settings(
    max_examples=sized(100, 200),  # make sim-full: 200 (decision 0054)
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestBlockTable = BlockTableMachine.TestCase


# ---------------------------------------------------------------------------- directed tests


def test_speculative_step() -> None:
    """A whole step: committed prefix, a tree's entries for 2 layers, lookups through
    each node's view, commit of the accepted path's row, then the next step."""
    parents = [-1, 0, 0, 1, 1, 2, 3, 3, 5]
    n = len(parents)
    rows, dep = tree.mask_rows(parents), tree.depths(parents)
    t = BlockTable(64, 64, 2, 16)
    tip = 5
    prefix = {}
    for pos in range(tip):
        for layer in range(2):
            prefix[layer, pos] = t.insert(0, layer, pos, committed=True)
    assert sorted(prefix.values()) == list(range(2 * tip))
    page = {}
    for i in range(n):
        for layer in range(2):
            page[i, layer] = t.insert(0, layer, tip + dep[i], owner=i)
    assert sorted(page.values()) == list(range(2 * tip, 2 * tip + 2 * n))
    check_invariants(t)

    def ancestor_at(i: int, d: int) -> int | None:
        while i != -1 and dep[i] > d:
            i = parents[i]
        return i if i != -1 and dep[i] == d else None

    for i in range(n):
        for layer in range(2):
            for pos in range(tip):
                assert t.lookup(0, layer, pos, rows[i]) == prefix[layer, pos]
            for d in range(max(dep) + 2):
                a = ancestor_at(i, d)
                want = None if a is None else page[a, layer]
                assert t.lookup(0, layer, tip + d, rows[i]) == want, (i, layer, d)
                assert t.lookup(0, layer, tip + d) is None  # speculative: invisible to view 0
                assert t.lookup(1, layer, tip + d, rows[i]) is None  # other sequence
    last = 6  # path 0 -> 1 -> 3 -> 6
    path = [0, 1, 3, 6]
    rejected = sorted(page[i, layer] for i in range(n) if i not in path for layer in range(2))
    freed = t.commit(0, rows[last])
    assert freed == rejected
    assert t.free_pages == 64 - 2 * tip - 2 * len(path)
    for a in path:
        for layer in range(2):
            assert t.lookup(0, layer, tip + dep[a]) == page[a, layer]
    check_invariants(t)
    # Next step: the root is the token after the accepted path; pages come back lowest first.
    tip2 = tip + dep[last] + 1
    assert t.insert(0, 0, tip2, owner=0) == rejected[0]
    assert t.insert(0, 1, tip2, owner=0) == rejected[1]
    with pytest.raises(ValueError, match="already sees a committed"):
        t.insert(0, 0, tip + dep[last], owner=0)  # accepted positions are committed now
    assert t.commit(0, 1) == []
    check_invariants(t)


def test_prefix_sharing() -> None:
    t = BlockTable(32, 32, 3, 4, layer_bits=2, pos_bits=4)
    prefix = [t.insert(0, 0, p, committed=True) for p in range(4)]
    t.insert(0, 0, 4, owner=0)  # speculative: fork must not share it
    t.fork(0, 1)
    assert [t.lookup(1, 0, p) for p in range(4)] == prefix
    assert t.lookup(1, 0, 4, 0b1111) is None
    assert t.lookup(0, 0, 4, 0b1) is not None
    assert all(t.entries_snapshot()[p].seqs == 0b11 for p in prefix)
    # both speculate at the same (layer, pos, owner): allowed, one entry each
    s1 = [t.insert(1, 0, 4, owner=0), t.insert(1, 0, 5, owner=1), t.insert(1, 0, 5, owner=2)]
    s0 = [t.lookup(0, 0, 4, 1), t.insert(0, 0, 5, owner=1)]
    assert t.lookup(1, 0, 5, 0b011) == s1[1]
    assert t.lookup(1, 0, 5, 0b101) == s1[2]
    assert t.lookup(0, 0, 5, 0b111) == s0[1]
    assert t.commit(0, 0b1) == [s0[1]]
    assert t.commit(1, 0b11) == [s1[2]]
    t.fork(1, 2)
    assert [t.lookup(2, 0, p) for p in range(6)] == prefix + s1[:2]
    check_invariants(t)
    used = t.pages - t.free_pages
    assert t.release(0) == [s0[0]]  # the prefix is still seen by 1 and 2
    assert t.release(1) == []  # everything 1 sees, 2 sees
    assert t.pages - t.free_pages == used - 1
    assert t.release(2) == sorted(prefix + s1[:2])
    assert t.free_pages == t.pages and t.valid_entries == 0
    check_invariants(t)


@pytest.mark.parametrize(
    ("entries", "pages", "match"),
    [
        (4, 8, r"table full \(entries = 4"),
        (8, 4, r"no free page \(pages = 4"),
        (6, 6, "table full"),
    ],
)
def test_fill_and_overflow(entries: int, pages: int, match: str) -> None:
    t = BlockTable(entries, pages, 2, 4, layer_bits=3, pos_bits=3)
    n = min(entries, pages)
    assert [t.insert(0, 0, p, owner=p % 4) for p in range(n)] == list(range(n))
    assert t.free_pages == pages - n and t.valid_entries == n
    before = state(t)
    for args in [(0, 1, 0), (1, 0, 0)]:
        with pytest.raises(ValueError, match=match):
            t.insert(*args)
        with pytest.raises(ValueError, match=match):
            t.insert(*args, committed=True)
    assert state(t) == before
    assert t.release(0) == list(range(n))
    assert t.free_pages == pages
    assert t.insert(1, 7, 7, owner=3) == 0
    check_invariants(t)


def test_allocation_is_lowest_free() -> None:
    t = BlockTable(8, 8, 8, 8)
    assert [t.insert(s, 0, 0) for s in range(8)] == list(range(8))
    assert t.release(5) == [5]
    assert t.release(2) == [2]
    assert t.release(6) == [6]
    assert [t.insert(7, 1, k, owner=k) for k in range(3)] == [2, 5, 6]
    assert [t.page_owner(p) for p in range(8)] == list(range(8))
    assert t.commit(7, 0b011) == [6]  # entries 2 (owner 0) and 5 (owner 1) kept
    assert t.commit(3, 0b1) == []
    assert t.insert(0, 3, 3) == 6
    check_invariants(t)
    # pages above the entry count are never used: entry i holds page i
    t = BlockTable(4, 64, 1, 4)
    assert [t.insert(0, 0, p) for p in range(4)] == [0, 1, 2, 3]
    assert t.free_pages == 60


def test_committed_insert_over_speculative_is_allowed() -> None:
    """The SPEC forbids only a committed duplicate and a speculative duplicate; a committed
    insert where seq sees the key only speculatively is allowed, and then only a commit
    that drops the speculative entry succeeds."""
    t = BlockTable(8, 8, 1, 4)
    spec = t.insert(0, 0, 3, owner=1)
    com = t.insert(0, 0, 3, owner=0, committed=True)
    assert t.lookup(0, 0, 3) == com
    assert t.lookup(0, 0, 3, 0b10) == spec  # lowest-numbered entry wins
    before = state(t)
    with pytest.raises(ValueError, match="two committed entries"):
        t.commit(0, 0b11)
    assert state(t) == before
    assert t.commit(0, 0b01) == [spec]
    check_invariants(t)


def _table(*ops) -> BlockTable:
    t = BlockTable(8, 8, 3, 4, layer_bits=2, pos_bits=3)
    for op, *args in ops:
        getattr(t, op)(*args)
    return t


COMMITTED = ("insert", 0, 1, 2, 0, True)
SPEC_ = ("insert", 0, 1, 3, 1)

ERRORS = [
    # range and type of every field
    ((), ("lookup", 3, 0, 0), r"^seq = 3: out of range 0\.\.2$"),
    ((), ("lookup", -1, 0, 0), r"^seq = -1: out of range"),
    ((), ("lookup", 0, 4, 0), r"^layer = 4: out of range 0\.\.3$"),
    ((), ("lookup", 0, 0, 8), r"^pos = 8: out of range 0\.\.7$"),
    ((), ("lookup", 0, 0, 0, 16), r"^view = 0x10: out of range"),
    ((), ("lookup", 0, 0, 0, -1), r"^view = "),
    ((), ("lookup", 1.0, 0, 0), r"^seq = 1\.0: must be an integer"),
    ((), ("lookup", True, 0, 0), r"^seq = True: must be an integer, not a bool"),
    ((), ("insert", 0, 0, 0, 4), r"^owner = 4: out of range 0\.\.3$"),
    ((), ("insert", 0, 0, 0, 0, 2), r"^committed = 2: must be a bool"),
    ((), ("insert", 0, 0, 0, 0, "yes"), r"^committed = 'yes'"),
    ((SPEC_,), ("commit", 0, 16), r"^accept = 0x10: out of range"),
    ((COMMITTED,), ("fork", 3, 1), r"^src = 3: out of range"),
    ((COMMITTED,), ("fork", 0, 5), r"^dst = 5: out of range"),
    ((COMMITTED,), ("release", 7), r"^seq = 7: out of range"),
    # insert conflicts
    ((COMMITTED,), ("insert", 0, 1, 2, 3), "already sees a committed"),
    ((COMMITTED,), ("insert", 0, 1, 2, 0, True), "already sees a committed"),
    ((COMMITTED, ("fork", 0, 1)), ("insert", 1, 1, 2, 0), "already sees a committed"),
    ((SPEC_,), ("insert", 0, 1, 3, 1), "already exists"),
    # commit
    ((COMMITTED,), ("commit", 0, 1), "no speculative entry"),
    ((SPEC_,), ("commit", 1, 1), "no speculative entry"),
    ((SPEC_,), ("commit", 0, 0b10), "bit 0"),
    ((SPEC_, ("insert", 0, 1, 3, 2)), ("commit", 0, 0b111), "two committed"),
    # fork
    ((COMMITTED,), ("fork", 0, 0), "must differ"),
    ((SPEC_,), ("fork", 0, 1), "src sees no committed"),
    ((), ("fork", 0, 1), "src sees no committed"),
    ((COMMITTED, ("insert", 1, 0, 0, 0)), ("fork", 0, 1), "dst already sees 1 entries"),
    ((COMMITTED, ("insert", 1, 0, 0, 0, True)), ("fork", 0, 1), "dst already sees"),
    # release
    ((), ("release", 0), "sees no entry"),
    ((COMMITTED,), ("release", 1), "sees no entry"),
]


@pytest.mark.parametrize(("setup", "call", "match"), ERRORS)
def test_errors_change_nothing(setup, call, match) -> None:
    t = _table(*setup)
    before = state(t)
    op, *args = call
    with pytest.raises(ValueError, match=match):
        getattr(t, op)(*args)
    assert state(t) == before


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"entries": 0}, r"^entries = 0: out of range 1\.\.4096$"),
        ({"entries": 4097}, "^entries = 4097"),
        ({"pages": 0}, "^pages = 0"),
        ({"pages": 5000}, "^pages = 5000"),
        ({"seqs": 0}, "^seqs = 0"),
        ({"seqs": 65}, "^seqs = 65"),
        ({"n_nodes": 0}, "^n_nodes = 0"),
        ({"n_nodes": 1025}, "^n_nodes = 1025"),
        ({"layer_bits": 0}, "^layer_bits = 0"),
        ({"layer_bits": 17}, "^layer_bits = 17"),
        ({"pos_bits": 0}, "^pos_bits = 0"),
        ({"pos_bits": 33}, "^pos_bits = 33"),
        ({"entries": 2.5}, "^entries = 2.5: must be an integer"),
        ({"seqs": "8"}, "^seqs = '8'"),
    ],
)
def test_constructor_validation(kwargs, match) -> None:
    params = {"entries": 16, "pages": 16, "seqs": 8, "n_nodes": 64} | kwargs
    with pytest.raises(ValueError, match=match):
        BlockTable(**params)


def test_limits_and_numpy_integers() -> None:
    t = BlockTable(4096, 4096, 64, 1024, layer_bits=16, pos_bits=32)
    full = 2**1024 - 1
    assert t.insert(np.int64(63), np.uint16(2**16 - 1), np.int64(2**32 - 1), 1023) == 0
    p = t.lookup(63, 2**16 - 1, 2**32 - 1, full)
    assert p == 0 and type(p) is int
    assert t.commit(np.int8(63), full) == []
    assert t.insert(0, 0, 0, committed=np.True_) == 1
    t.fork(0, 5)
    assert t.release(0) == []
    assert t.release(5) == [1]
    t1 = BlockTable(1, 1, 1, 1, layer_bits=1, pos_bits=1)
    assert t1.insert(0, 1, 1) == 0
    assert t1.commit(0, 1) == []
    check_invariants(t1)


# ---------------------------------------------------------------------------- throughput


def throughput(n_ops: int = 200_000, seed: int = 0) -> dict[str, float]:
    """Random op mix on the SPEC §5 default table; returns ops/s (measured, not asserted)."""
    rng = random.Random(seed)
    t = BlockTable(256, 256, 8, 64)
    rows = tree.mask_rows([-1] + [rng.randrange(i) for i in range(1, 64)])
    tips = [0] * 8
    ops = rng.choices(["lookup", "insert", "commit", "fork", "release"], [60, 30, 4, 1, 5], k=n_ops)
    args = [(rng.randrange(8), rng.randrange(4), rng.randrange(8), rng.randrange(64)) for _ in ops]
    errors = 0
    t0 = time.perf_counter()
    for op, (s, layer, d, node) in zip(ops, args, strict=True):
        try:
            if op == "lookup":
                t.lookup(s, layer, tips[s] + d, rows[node])
            elif op == "insert":
                t.insert(s, layer, tips[s] + d, node)
            elif op == "commit":
                t.commit(s, rows[node])
                tips[s] += 1
            elif op == "fork":
                t.fork(s, layer)
            elif t.valid_entries > 128:
                t.release(s)
                tips[s] = 0
        except ValueError:
            errors += 1
    dt = time.perf_counter() - t0
    return {"ops": n_ops, "seconds": dt, "ops_per_s": n_ops / dt, "error_fraction": errors / n_ops}


def test_throughput_is_reported() -> None:
    r = throughput(100_000)
    print(
        f"\nBlockTable random op mix: {r['ops_per_s']:,.0f} ops/s "
        f"({r['ops']:,} ops in {r['seconds']:.2f} s, {r['error_fraction']:.0%} errors)"
    )
    assert r["ops"] == 100_000


if __name__ == "__main__":
    r = throughput(1_000_000)
    print(
        f"BlockTable random op mix: {r['ops_per_s']:,.0f} ops/s "
        f"({r['ops']:,} ops in {r['seconds']:.2f} s, {r['error_fraction']:.0%} errors)"
    )


#: the error class of each ERRORS case's message (the code the RTL reports too)
_CODE_OF = [
    ("out of range", None),
    ("must be an integer", None),
    ("must be a bool", None),
    ("committed = 'yes'", None),
    ("already sees a committed", KVErr.SEEN_COMMITTED),
    ("already exists", KVErr.SPEC_DUP),
    ("no speculative entry", KVErr.NO_SPEC),
    ("bit 0", KVErr.ROOT_CLEAR),
    ("two committed", KVErr.TWO_COMMITTED),
    ("must differ", KVErr.SAME_SEQ),
    ("src sees no committed", KVErr.SRC_EMPTY),
    ("dst already sees", KVErr.DST_BUSY),
    ("sees no entry", KVErr.NOTHING_SEEN),
]
_RANGE = {"seq": KVErr.SEQ_RANGE, "src": KVErr.SEQ_RANGE, "dst": KVErr.DST_RANGE}


@pytest.mark.parametrize(("setup", "call", "match"), ERRORS)
def test_error_codes(setup, call, match) -> None:
    """Every error is a KVError whose code names its class (FIELD for what the RTL's
    port widths cannot carry)."""
    t = _table(*setup)
    op, *args = call
    with pytest.raises(KVError) as info:
        getattr(t, op)(*args)
    msg = str(info.value)
    want = next(code for key, code in _CODE_OF if key in msg or re.search(key, msg))
    if want is None:
        field = msg.split(" = ", 1)[0]
        want = {"owner": KVErr.OWNER_RANGE, **_RANGE}.get(field, KVErr.FIELD)
    assert info.value.code == want, (msg, info.value.code)


def test_full_table_codes() -> None:
    t = BlockTable(2, 3, 1, 2)
    t.insert(0, 0, 0), t.insert(0, 0, 1)
    with pytest.raises(KVError) as info:
        t.insert(0, 0, 2)
    assert info.value.code == KVErr.TABLE_FULL
    t = BlockTable(3, 2, 1, 2)
    t.insert(0, 0, 0), t.insert(0, 0, 1)
    with pytest.raises(KVError) as info:
        t.insert(0, 0, 2)
    assert info.value.code == KVErr.NO_PAGE


def test_rtl_error_codes_match_golden() -> None:
    from hw.kv_pool import ErrorCode

    assert {e.name: e.value for e in ErrorCode} == {e.name: e.value for e in KVErr}


def test_entry_and_speculative_accessors() -> None:
    t = _table(COMMITTED, SPEC_)
    assert t.entry(0) == t.entries_snapshot()[0] and t.entry(0).committed
    assert t.speculative(0) == [1] and t.speculative(1) == []
    assert not t.entry(5).valid
    with pytest.raises(ValueError, match="index = 8"):
        t.entry(8)
