"""The scaled pool's stimulus: operations and lookups with golden's state in view.

:class:`Stimulus` reads the golden pool the scoreboard steps
(:class:`tb.kvpool.pool_model.Scoreboard`) and chooses each next beat so that
most are valid and shaped as the decoder uses the pool:

* **prefill**: a run of committed inserts at ``len`` with random tokens;
* **decode steps**: a random tree (:func:`tb.common.random_tree`, depth below
  ``MAX_DEPTH``) opened at ``lo = len``: speculative inserts of owners
  ``0, 1, ...`` (``parent < node``, ``pos = lo + depth``), interleaved with
  other sequences' steps; then a commit whose ``accept`` is the ancestor
  chain (mask row) of a random node, cut at the first node that is not
  valid (an insert that failed), so the accepted positions are ``len, len +
  1, ...`` (``NOT_CHAIN`` is never provoked: the RTL does not report it);
* forks of live sequences into idle ones, releases, ``spill(n)``, fills of
  HBM-resident positions, scores of committed positions;
* shares (dedup) into idle sequences: the tokens (carried in the beat's dict,
  fed on ``tok`` by the bench) a prefix of a live sequence's committed
  tokens, its length around and across multiples of ``BLOCK = 16``, now and
  then with a token changed or random tokens after, or the tokens of a
  sequence released since (stale tag entries), or random; prefill runs'
  tokens random, all 0, a fixed block repeated, or a live sequence's tokens
  copied (equal blocks: tags entered twice, the token check of a candidate
  that is not the request's);
* every error class the ports can express (:func:`pool_model.reachable_codes`)
  by injection, ``TABLE_FULL`` and ``NO_PAGE`` by pressure (phases
  ``grow``, ``pressure``, ``shrink`` by the pool's fullness);
* fields an opcode does not use filled with junk now and then.

Lookups (:meth:`Stimulus.query`): committed positions (a hot list, so the
TLB hits), TLB thrash (keys of one TLB set across segments, more than its
ways), tree positions with ``view`` = a node's mask row (or a random mask),
positions beyond ``len``, idle sequences and ``seq >= SEQS`` when the field
holds it. :func:`self_check` runs it all against golden alone (no RTL).
"""

from __future__ import annotations

import random
import time
from collections import deque

from hw.common import idx_bits
from hw.kvpool.layouts import PoolOp
from tb.common import random_tree
from tb.kvpool.pool_model import BLOCK, CODES, PoolFormat, Scoreboard, reachable_codes
from tb.kvpool.pool_shares import LONG_FIELD, ShareStim

__all__ = ["Stimulus", "self_check", "coverage_missing"]

INS, COM, FORK, REL, SPILL, FILL, SCORE, SHARE = (
    int(o.value)
    for o in (PoolOp.INSERT, PoolOp.COMMIT, PoolOp.FORK, PoolOp.RELEASE)
    + (PoolOp.SPILL, PoolOp.FILL, PoolOp.SCORE, PoolOp.SHARE)
)
PRESSURE_PAGES = 1024  # above: NO_PAGE and allocation spills not asserted (runs do not fill it)
LEN_CAP = 1023  # above PRESSURE_PAGES: the longest sequence the stimulus grows
NODE_CAP = 24  # nodes per decode tree at most (N_NODES 1,024 would make slow steps)
#: phase -> activity weights
_ACTS = ("tree", "open", "prefill", "fork", "release", "spill", "fill", "score", "share")
PHASES: dict[str, dict[str, float]] = {
    "grow": dict(zip(_ACTS, (6, 3, 3, 1, 0.25, 0.5, 1, 1, 1), strict=True)),
    "pressure": dict(zip(_ACTS, (3, 1.5, 3, 0.5, 0.2, 2, 3, 2, 1), strict=True)),
    "shrink": dict(zip(_ACTS, (3, 0.3, 0.3, 0.3, 4, 0.3, 0.5, 0.5, 0.4), strict=True)),
}
#: prefill runs' token sources (weights: TOKEN_BITS <= 4, wider)
TOKMODES = ("random", "zeros", "pattern", "copy")
TOKMODE_W = {True: (0.4, 0.2, 0.2, 0.2), False: (0.7, 0.1, 0.1, 0.1)}
ERR_RATE = 0.07
INJECT = (
    "seq_range", "dst_range", "owner_range", "seen_committed", "pos_gap", "spec_dup",
    "depth_range", "no_spec", "root_clear", "same_seq", "src_empty", "dst_busy",
    "nothing_seen", "not_committed", "on_chip", "field",
    "share_dst_range", "share_field", "share_busy", "share_full",
)  # fmt: skip


class Plan:
    """A decode step of one sequence: the tree's parents, depths and the next owner."""

    __slots__ = ("seq", "lo", "parents", "depth", "next")

    def __init__(self, seq: int, lo: int, parents: list[int], max_depth: int) -> None:
        self.seq, self.lo, self.next = seq, lo, 0
        depth: list[int] = []
        par: list[int] = []
        for j, q in enumerate(parents):
            d = 0 if j == 0 else depth[q] + 1
            if d >= max_depth:  # out of the window: hang it one level up
                q = par[q]
                d -= 1
            par.append(q)
            depth.append(d)
        self.parents, self.depth = par, depth

    def row(self, j: int) -> int:
        """Node ``j``'s mask row: itself and its ancestors."""
        m = 0
        while j >= 0:
            m |= 1 << j
            j = self.parents[j]
        return m

    def chain(self, j: int) -> list[int]:
        """The nodes from the root down to ``j``."""
        out = []
        while j >= 0:
            out.append(j)
            j = self.parents[j]
        return out[::-1]


class Stimulus(ShareStim):
    """Chooses the next operation and the next query of each port (see the module)."""

    def __init__(self, p: dict[str, int], rng: random.Random, sb: Scoreboard) -> None:
        self.p, self.rng, self.sb = p, rng, sb
        self.fmt = sb.fmt
        self.pos_max = (1 << p["POS_BITS"]) - 1
        # the length sequences grow to: the position range, or LEN_CAP in a pool too
        # large to fill (its shares, up to a sequence's length, stay short)
        self.len_cap = self.pos_max if p["PAGES"] <= PRESSURE_PAGES else min(self.pos_max, LEN_CAP)
        self.seq_ids = 1 << idx_bits(p["SEQS"])
        self.owner_ids = 1 << idx_bits(p["N_NODES"])
        self.n_max = (1 << self.fmt.widths["op"]["n"]) - 1
        self.codes = reachable_codes(p)
        self.inject = [k for k in INJECT if self._reachable(k)]
        self.quiet = False  # True: no new beats (a quiescent point is wanted)
        self.pat = [rng.randrange(1 << p["TOKEN_BITS"]) for _ in range(BLOCK)]  # a fixed block
        self.reset()

    def _reachable(self, kind: str) -> bool:
        need = {"seq_range": "SEQ_RANGE", "dst_range": "DST_RANGE", "owner_range": "OWNER_RANGE",
                "field": "FIELD", "share_dst_range": "DST_RANGE",
                "share_field": "FIELD"}  # fmt: skip
        return kind not in need or any(CODES[c] == need[kind] for c in self.codes)

    def reset(self) -> None:
        """Forget plans and caches (golden was recreated)."""
        self.plans: dict[int, Plan] = {}
        self.runs: dict[int, int] = {}  # seq -> committed inserts still to issue
        self.tokmode: dict[int, tuple[str, int]] = {}  # seq -> its run's token source
        #: (seq, its tokens) of sequences released (stale tag entries name them)
        self.ghosts: deque[tuple[int, list[int]]] = deque(maxlen=6)
        self.fresh = -1  # the sequence whose prefill ended a block last
        self.hot: deque[tuple[int, int]] = deque(
            maxlen=max(4, self.p["TLB_SETS"] * self.p["TLB_WAYS"] // 2)
        )
        self.thrash: list[tuple[int, int]] = []
        self.phase = "grow"
        self._cache_key = -1
        self._lens: list[int] = []

    @property
    def g(self):
        return self.sb.golden

    # ------------------------------------------------------------------ state views
    def lens(self) -> list[int]:
        """Every sequence's ``len`` (cached until the next operation is accepted)."""
        if self._cache_key != self.sb.ops:
            g = self.g
            self._lens = [g.seq_len(s) for s in range(self.p["SEQS"])]
            self._cache_key = self.sb.ops
        return self._lens

    def _live(self) -> list[int]:
        return [s for s, n in enumerate(self.lens()) if n]

    def _idle(self) -> list[int]:
        g = self.g
        return [
            s
            for s, n in enumerate(self.lens())
            if not n and g.tree(s) is None and s not in self.plans
        ]

    def _free_for_append(self) -> list[int]:
        """Sequences with no tree, no plan and room for another position."""
        g = self.g
        return [
            s for s, n in enumerate(self.lens())
            if s not in self.plans and n <= self.len_cap and g.tree(s) is None
        ]  # fmt: skip

    def _committed_key(self) -> tuple[int, int] | None:
        live = self._live()
        if not live:
            return None
        s = self.rng.choice(live)
        return s, self.rng.randrange(self.lens()[s])

    def _hbm_key(self, tries: int = 12) -> tuple[int, int] | None:
        if not self.g.hbm_used:
            return None
        for _ in range(tries):
            k = self._committed_key()
            if k is not None and self.g.pte(*k)[0] == 1:
                return k
        return None

    def _chip_key(self, tries: int = 6) -> tuple[int, int] | None:
        for _ in range(tries):
            k = self._committed_key()
            if k is not None and self.g.pte(*k)[0] == 0:
                return k
        return None

    # ------------------------------------------------------------------ operations
    def _op(self, kind: int, **fields: int) -> dict[str, int]:
        """An operation beat: the fields given, the others 0 or (often) junk."""
        rng = self.rng
        if rng.random() < 0.3:
            out = {n: rng.randrange(1 << w) for n, w in self.fmt.widths["op"].items()}
        else:
            out = dict.fromkeys(self.fmt.widths["op"], 0)
        out["op"] = kind
        out.update(fields)
        return out

    def _insert(
        self, seq: int, pos: int, owner: int, committed: int, token: int | None = None
    ) -> dict[str, int]:
        if token is None:
            token = self.rng.randrange(1 << self.p["TOKEN_BITS"])
        return self._op(INS, seq=seq, pos=pos, owner=owner, committed=committed, token=token)

    def _phase(self) -> None:
        """grow -> (full: a few operations meet NO_PAGE) -> shrink -> grow / pressure."""
        g, rng = self.g, self.rng
        full = not g.free_pages and (not g.hbm_free or not g.committed_pages)
        if self.phase != "shrink" and full:
            if rng.random() < 0.1:
                self.phase = "shrink"
        elif self.phase != "shrink" and rng.random() < 0.002:
            self.phase = rng.choice(["shrink", "pressure"])
        elif self.phase == "shrink" and (not self._live() or rng.random() < 0.01):
            self.phase = rng.choice(["grow", "pressure", "pressure"])

    def op(self) -> dict[str, int] | None:
        """The next operation beat (``None``: none this cycle)."""
        if self.quiet:
            return None
        self._phase()
        rng = self.rng
        if rng.random() < ERR_RATE and self.inject:
            out = self._error(rng.choice(self.inject))
            if out is not None:
                return out
        w = PHASES[self.phase]
        for _ in range(8):
            kind = rng.choices(list(w), weights=list(w.values()))[0]
            out = getattr(self, f"_do_{kind}")()
            if out is not None:
                return out
        return self._op(SPILL, n=rng.randint(0, 2))

    def _do_tree(self) -> dict[str, int] | None:
        if not self.plans:
            return self._do_open()
        plan = self.plans[self.rng.choice(list(self.plans))]
        if plan.next < len(plan.parents):
            j = plan.next
            plan.next += 1
            return self._insert(plan.seq, plan.lo + plan.depth[j], j, 0)
        return self._commit(plan)

    def _commit(self, plan: Plan) -> dict[str, int]:
        del self.plans[plan.seq]
        rng, seq = self.rng, plan.seq
        t = self.g.tree(seq)
        n = self.lens()[seq]
        nodes = t[2] if t is not None else {}
        accept = 1
        for i, j in enumerate(plan.chain(rng.randrange(len(plan.parents)))):
            if j not in nodes or nodes[j][0] != n + i:
                break
            accept |= 1 << j
        for j in range(len(plan.parents)):  # bits of nodes that are not valid: ignored
            if j not in nodes and rng.random() < 0.3:
                accept |= 1 << j
        acc = sorted(nodes[j][0] for j in nodes if accept >> j & 1)
        if acc != list(range(n, n + len(acc))):  # not a chain (cannot happen): release
            return self._op(REL, seq=seq)
        return self._op(COM, seq=seq, accept=accept, acc_len=len(acc))

    def _do_open(self) -> dict[str, int] | None:
        p, rng = self.p, self.rng
        if len(self.plans) > p["TREES"]:  # one more than the slots: TABLE_FULL now and then
            return None
        cands = [s for s in self._free_for_append() if s not in self.runs]
        cands = [s for s in cands if self.lens()[s] + p["MAX_DEPTH"] <= self.len_cap + 1]
        if not cands:
            return None
        s = rng.choice(cands)
        par = random_tree(rng, min(p["N_NODES"], NODE_CAP))
        self.plans[s] = Plan(s, self.lens()[s], par, p["MAX_DEPTH"])
        return self._do_tree_of(s)

    def _do_tree_of(self, s: int) -> dict[str, int]:
        plan = self.plans[s]
        plan.next = 1
        return self._insert(s, plan.lo, 0, 0)

    def _do_prefill(self) -> dict[str, int] | None:
        rng = self.rng
        runs = [s for s in self.runs if s not in self.plans]
        if runs and rng.random() < 0.8:
            s = rng.choice(runs)
        else:
            cands = self._free_for_append()
            if not cands:
                return None
            s = rng.choice(cands)
            self.runs[s] = rng.choice([1, 4, 16, rng.randint(1, 48)])
            mode = rng.choices(TOKMODES, TOKMODE_W[self.p["TOKEN_BITS"] <= 4])[0]
            self.tokmode[s] = (mode, rng.choice(self._live() or [s]))
        n = self.lens()[s]
        self.runs[s] -= 1
        if self.runs[s] <= 0 or n >= self.len_cap:
            del self.runs[s]
        if n > self.len_cap:
            return None
        if (n + 1) % BLOCK == 0:  # its block's tag is entered: share it soon
            self.fresh = s
        return self._insert(s, n, rng.randrange(self.p["N_NODES"]), 1, self._token(s, n))

    def _token(self, s: int, pos: int) -> int | None:
        """The token of prefill position ``pos`` of ``s`` by its run's source (``None``: random)."""
        mode, src = self.tokmode.get(s, ("random", s))
        if mode == "zeros":
            return 0
        if mode == "pattern":
            return self.pat[pos % BLOCK]
        if mode == "copy" and src != s and pos < self.lens()[src]:
            return self.g.pte(src, pos)[2]
        return None

    def _do_fork(self) -> dict[str, int] | None:
        live, idle = self._live(), self._idle()
        if not live or not idle:
            return None
        src = (
            max(live, key=lambda s: self.lens()[s])
            if self.rng.random() < 0.3
            else self.rng.choice(live)
        )
        return self._op(FORK, seq=src, dst=self.rng.choice(idle))

    def _do_release(self) -> dict[str, int] | None:
        g = self.g
        cands = [s for s in range(self.p["SEQS"]) if self.lens()[s] or g.tree(s) is not None]
        if not cands:
            return None
        s = self.rng.choice(cands)
        self.plans.pop(s, None)
        self.runs.pop(s, None)
        if self.lens()[s] >= BLOCK:
            self.ghosts.append((s, self._tokens(s, self.lens()[s])))
        return self._op(REL, seq=s)

    def _do_spill(self) -> dict[str, int]:
        rng = self.rng
        n = rng.choice([0, 1, 1, 2, 3, rng.randint(0, max(1, min(64, self.g.committed_pages)))])
        return self._op(SPILL, n=min(n, self.p["PAGES"]))

    def _do_fill(self) -> dict[str, int] | None:
        k = self._hbm_key()
        return None if k is None else self._op(FILL, seq=k[0], pos=k[1])

    def _do_score(self) -> dict[str, int] | None:
        k = self._committed_key()
        if k is None:
            return None
        return self._op(SCORE, seq=k[0], pos=k[1], s=self.rng.randint(0, 7))

    def _error(self, kind: str) -> dict[str, int] | None:  # noqa: C901 - one case per class
        p, rng, g = self.p, self.rng, self.g
        S = p["SEQS"]
        live, idle = self._live(), self._idle()
        trees = [s for s in range(S) if g.tree(s) is not None]
        if kind == "seq_range":
            k = rng.choice([INS, COM, REL, FILL, SCORE, FORK])
            return self._op(k, seq=rng.randrange(S, self.seq_ids), dst=rng.randrange(S))
        if kind == "dst_range" and live:
            return self._op(FORK, seq=rng.choice(live), dst=rng.randrange(S, self.seq_ids))
        if kind == "owner_range":
            s = rng.randrange(S)
            own = rng.randrange(p["N_NODES"], self.owner_ids)
            return self._op(INS, seq=s, pos=self.lens()[s] % (self.pos_max + 1), owner=own,
                            committed=rng.randrange(2))  # fmt: skip
        if kind == "seen_committed" and live:
            s, pos = self._committed_key()
            return self._insert(s, pos, rng.randrange(p["N_NODES"]), rng.randrange(2))
        if kind == "pos_gap":
            cands = [s for s in range(S) if self.lens()[s] + 1 <= self.pos_max]
            if cands:
                s = rng.choice(cands)
                return self._insert(s, rng.randint(self.lens()[s] + 1, self.pos_max), 0, 1)
        if kind in ("spec_dup", "depth_range", "root_clear") and trees:
            s = rng.choice(trees)
            _, lo, nodes = g.tree(s)
            if kind == "root_clear":
                acc = rng.randrange(1 << p["N_NODES"]) & ~1
                return self._op(COM, seq=s, accept=acc, acc_len=rng.randint(0, p["N_NODES"]))
            if kind == "spec_dup":
                j = rng.choice(list(nodes))
                return self._insert(s, nodes[j][0], j, 0)
            free = [j for j in range(p["N_NODES"]) if j not in nodes]
            pos = lo + p["MAX_DEPTH"] + rng.randint(0, 2)
            if free and pos <= self.pos_max:
                return self._insert(s, pos, rng.choice(free), 0)
        if kind == "no_spec":
            cands = [s for s in range(S) if s not in trees]
            if cands:
                acc, n = rng.randrange(1 << p["N_NODES"]), rng.randint(0, p["N_NODES"])
                return self._op(COM, seq=rng.choice(cands), accept=acc, acc_len=n)
        if kind == "same_seq":
            s = rng.randrange(S)
            return self._op(FORK, seq=s, dst=s)
        empty = [s for s in range(S) if not self.lens()[s]]
        if kind == "src_empty" and empty and S > 1:
            a = rng.choice(empty)
            return self._op(FORK, seq=a, dst=rng.choice([s for s in range(S) if s != a]))
        if kind == "dst_busy" and len(live) > 1:
            a, b = rng.sample(live, 2)
            return self._op(FORK, seq=a, dst=b)
        if kind == "nothing_seen" and idle:
            return self._op(REL, seq=rng.choice(idle))
        if kind == "not_committed":
            s = rng.randrange(S)
            pos = (
                rng.randint(self.lens()[s], self.pos_max)
                if self.lens()[s] <= self.pos_max
                else None
            )
            if pos is not None:
                k = rng.choice([FILL, SCORE])
                return self._op(k, seq=s, pos=pos, s=rng.randint(0, 7))
        if kind == "on_chip":
            k = self._chip_key()
            if k is not None:
                return self._op(FILL, seq=k[0], pos=k[1])
        if kind == "field":
            return self._op(SPILL, n=rng.randint(p["PAGES"] + 1, self.n_max))
        return self._share_error(kind, live, trees)

    # ------------------------------------------------------------------ lookups
    def query(self, port: int) -> dict[str, int] | None:
        """The next lookup of port ``port`` (``None``: none this cycle)."""
        if self.quiet:
            return None
        rng, p = self.rng, self.p
        r = rng.random()
        view = 0
        if r < 0.5:
            k = rng.choice(self.hot) if self.hot and rng.random() < 0.6 else self._committed_key()
            if k is not None and rng.random() < 0.5:
                self.hot.append(k)
        elif r < 0.62:
            if not self.thrash or rng.random() < 0.01:
                self.thrash = self._thrash_keys()
            k = rng.choice(self.thrash) if self.thrash else None
        elif r < 0.85 and self.plans:
            plan = self.plans[rng.choice(list(self.plans))]
            j = rng.randrange(len(plan.parents))
            k = plan.seq, plan.lo + rng.choice([plan.depth[j], rng.randrange(p["MAX_DEPTH"])])
            view = plan.row(j) if rng.random() < 0.8 else rng.randrange(1 << p["N_NODES"])
        elif r < 0.95:
            s = rng.randrange(p["SEQS"])
            n = self.lens()[s]
            k = (s, rng.randint(n, self.pos_max)) if n <= self.pos_max else None
            view = rng.randrange(1 << p["N_NODES"])
        else:
            k = (rng.randrange(self.seq_ids), rng.randint(0, self.pos_max))
        if k is None:
            k = (rng.randrange(p["SEQS"]), rng.randint(0, self.pos_max))
        return {"seq": k[0], "pos": k[1] & self.pos_max, "view": view}

    def _thrash_keys(self) -> list[tuple[int, int]]:
        """Committed keys of one TLB set, across the live segments: more than its ways."""
        sets, g, rng = self.p["TLB_SETS"], self.g, self.rng
        c = rng.randrange(sets)
        out: list[tuple[int, int]] = []
        want = 3 * self.p["TLB_WAYS"] + 1
        for s in self._live():
            for seg, start, end in g.chain(s):
                base = c ^ ((seg << 4) & (sets - 1))
                pos = start + ((base - start) % sets)
                while pos < end and len(out) < 4 * want:
                    out.append((s, pos))
                    pos += sets
        rng.shuffle(out)
        return out[:want]


# ----------------------------------------------------------------------------- self-check
#: share's error classes (the random runs assert the first three where reachable)
SHARE_CODES = ("DST_RANGE", "FIELD", "DST_BUSY", "TABLE_FULL")


def coverage_missing(p: dict[str, int], cover) -> list[str]:
    """What a random run of parameters ``p`` must have reached and did not."""
    need = [f"code/{CODES[c]}" for c in sorted(reachable_codes(p))]
    need += ["insert/committed", "insert/spec", "commit", "fork", "release", "score",
             "lookup/tlb_hit", "lookup/tlb_miss", "lookup/spec", "lookup/miss"]  # fmt: skip
    if p["PAGES"] > PRESSURE_PAGES:  # no page runs out in a run of this length
        need.remove(f"code/{CODES[7]}")
    if p["HBM_PAGES"] and p["PAGES"] <= PRESSURE_PAGES:
        need.append("alloc_spills")
    if p["HBM_PAGES"]:
        need += ["spill_victims", "fill", "lookup/hbm", "release_hbm_slots"]
    if "code/SEQ_RANGE" in need:
        need.append("lookup/error")
    # rejected, TABLE_FULL (and FIELD past LONG_FIELD): the directed scenario (pool_shares)
    need.append("share/miss")
    if p["PAGES"] + p["HBM_PAGES"] >= 3 * BLOCK:  # room for a sequence past a block and more
        need += ["share/hit", "share/split"]
    codes = SHARE_CODES[:3] if 1 << p["POS_BITS"] <= LONG_FIELD else ("DST_RANGE", "DST_BUSY")
    need += [f"share/code/{c}" for c in codes if f"code/{c}" in need]
    return [k for k in need if not cover.get(k)]


def self_check(p: dict[str, int], n: int, seed: int) -> tuple[Scoreboard, float]:
    """Generator + scoreboard against golden alone, ``n`` transactions: each cycle's
    queries and operation go through their packed form, a second golden pool (the
    stand-in for the RTL) answers, and the scoreboard checks its packed beats.
    Returns the scoreboard and the golden calls per second (both pools)."""
    rng = random.Random(seed)
    sb = Scoreboard(p)
    stim = Stimulus(p, rng, sb)
    fmt = PoolFormat(p)
    twin = Scoreboard(p)  # the stand-in: golden on the unpacked beats
    t0 = time.perf_counter()
    cycle = 0
    errors: list[str] = []
    while sb.transactions < n:
        cycle += 1
        if cycle % 5000 == 0:  # a reset now and then: both pools forget everything
            sb.reset(), twin.reset(), stim.reset()
        beats = []
        for port in (0, 1):
            q = stim.query(port)
            if q is not None:
                raw = fmt.pack_query(q)
                sb.accept_query(port, fmt.unpack_query(raw), cycle)
                e = twin.accept_query(port, fmt.unpack_query(raw), cycle)
                beats.append((f"r{port}", fmt.pack_reply(e.beat)))
        op = stim.op()
        if op is not None:
            raw = fmt.pack_op(op)
            sb.accept_op(fmt.carry(op, fmt.unpack_op(raw)), cycle)
            e = twin.accept_op(fmt.carry(op, fmt.unpack_op(raw)), cycle)
            beats.append(("res", fmt.pack_result(e.beat)))
        for stream, raw in beats:
            errors += sb.deliver(stream, cycle + 1, raw)
    dt = time.perf_counter() - t0
    if errors:
        raise AssertionError(f"seed {seed}: {errors[:3]}")
    return sb, 2 * sb.transactions / dt
