"""Shares for the scaled pool's bench: the random stimulus' part, and a directed scenario.

:class:`ShareStim` chooses the random shares (:mod:`tb.kvpool.pool_stim`).

:func:`share_script` returns the operation beats of a scenario that runs on
a pool fresh from reset, and the coverage classes it reaches (planned on a
scratch :class:`tb.kvpool.pool_model.Scoreboard`, i.e. on golden alone;
the bench checks every result again). Sequence ``A = 0`` is prefilled with
random tokens past ``blocks`` whole blocks (``blocks`` 2 when the pool holds
40 positions, else 1), ``D = 1`` is the share's destination, released after
each share that gave it positions. In order:

* a share of ``A``'s first block (``M = 16``, the segment split), of all its
  blocks plus random tokens after, with a token of the last block changed
  (``M`` one block less), of no token, of ``2**POS_BITS`` tokens (the most a
  share takes) and of ``2**POS_BITS + 1`` (``FIELD``; both left out with
  ``field=False``), into ``A``
  (``DST_BUSY``), into ``SEQS`` when the field holds it (``DST_RANGE``);
* equal blocks: ``B = 2`` prefilled with ``A``'s tokens (its tags are in
  the table already: not entered), ``A`` released: the entry names ``A``
  (``len 0``) and the share finds nothing; ``A`` refilled with other tokens:
  the entry's candidate fails the token check (``share/rejected``);
* everything released; ``A`` prefilled again, a split (``blocks`` 2), then
  forks of ``A`` into the other sequences with an append on each side until
  no segment is free; then a share that needs a split: ``TABLE_FULL`` (where
  ``SEQS`` and ``SEGS`` allow it).
"""

from __future__ import annotations

import random

from hw.kvpool.layouts import PoolOp
from tb.kvpool.pool_model import BLOCK, Scoreboard

__all__ = ["LONG_FIELD", "ShareStim", "share_script", "SCRIPT_GOALS"]

INS, FORK, REL, SHARE = (
    int(o.value) for o in (PoolOp.INSERT, PoolOp.FORK, PoolOp.RELEASE, PoolOp.SHARE)
)


class ShareStim:
    """The share part of :class:`tb.kvpool.pool_stim.Stimulus` (a mixin: it uses the
    stimulus' ``rng``, ``p``, ``g``, ``lens``, ``_op`` ...; see that module)."""

    def _tokens(self, s: int, n: int) -> list[int]:
        """Tokens ``0 .. n - 1`` of live ``s`` (golden's view)."""
        return self.g._sg.tokens(s, 0, n)

    def _rand_tokens(self, n: int) -> list[int]:
        return [self.rng.randrange(1 << self.p["TOKEN_BITS"]) for _ in range(n)]

    def _do_share(self) -> dict[str, int] | None:
        rng, lens = self.rng, self.lens()
        if not any(n >= BLOCK for n in lens) and rng.random() < 0.7:  # grow one past a block
            cands = [s for s in self._free_for_append() if s not in self.runs]
            if cands:
                s = rng.choice(cands)
                self.runs[s] = BLOCK + 1 - lens[s] % BLOCK
                self.tokmode[s] = ("random", s)
                return self._do_prefill()
        idle = self._idle()
        if idle:
            return self._share(rng.choice(idle))
        if rng.random() < 0.6:  # every sequence busy: one that does not hold a block ends
            small = [s for s in self._live() if lens[s] < BLOCK and s not in self.runs]
            if small:
                s = rng.choice(small)
                self.plans.pop(s, None)
                return self._op(REL, seq=s)
        return None

    def _share(self, dst: int, n: int | None = None) -> dict[str, int]:
        """A share into ``dst`` (see the module); ``n`` tokens if given (padded at random)."""
        rng, lens = self.rng, self.lens()
        big = [s for s in self._live() if lens[s] >= BLOCK]
        reused = [t for s, t in self.ghosts if lens[s] >= BLOCK]  # their tags: stale
        r = rng.random()
        if big and r < 0.8:
            s = self.fresh if self.fresh in big and rng.random() < 0.6 else rng.choice(big)
            blocks = rng.randint(1, lens[s] // BLOCK)
            m = BLOCK * blocks + rng.choice([0, 0, 0, -1, 1, rng.randint(1 - BLOCK, BLOCK - 1)])
            m = lens[s] if rng.random() < 0.15 else max(0, min(m, lens[s]))
            toks, cls = self._tokens(s, m), "prefix"
            x = rng.random()
            if x < 0.2 and toks:
                i = rng.randrange(len(toks))
                toks[i] ^= rng.randrange(1, 1 << self.p["TOKEN_BITS"])
                cls = "mutated"
            elif x < 0.45:
                toks, cls = toks + self._rand_tokens(rng.randint(1, 40)), "extra"
        elif reused and r < 0.9:
            toks, cls = list(rng.choice(reused)), "stale"
        elif self.ghosts and r < 0.9:
            toks, cls = list(rng.choice(self.ghosts)[1]), "ghost"
        elif r < 0.95:
            toks, cls = self._rand_tokens(rng.randint(0, 40)), "random"
        else:
            toks, cls = [], "empty"
        lim = self.pos_max + 1 if n is None else n
        toks = toks[:lim]
        if n is not None and len(toks) < n:
            toks += self._rand_tokens(n - len(toks))
        return self._op(SHARE, dst=dst, n=len(toks), tokens=toks, cls=cls)

    def _share_full(self) -> dict[str, int] | None:
        """No free segment: a share whose prefix ends inside a segment (a split)."""
        g, p, rng = self.g, self.p, self.rng
        idle = self._idle()
        if not idle or any(g.segment(i) is None for i in range(p["SEGS"])):
            return None
        cuts = [
            (s, m)
            for s in self._live()
            for _, start, end in g.chain(s)
            for m in range((start // BLOCK + 1) * BLOCK, end, BLOCK)
        ]
        if not cuts:
            return None
        s, m = rng.choice(cuts)
        toks = self._tokens(s, m)
        return self._op(SHARE, dst=rng.choice(idle), n=m, tokens=toks, cls="full")

    def _share_error(self, kind: str, live: list[int], trees: list[int]) -> dict[str, int] | None:
        rng, S = self.rng, self.p["SEQS"]
        if kind == "share_dst_range":
            return self._share(rng.randrange(S, self.seq_ids))
        if kind == "share_field":
            top = 1 << self.p["POS_BITS"]
            if top > LONG_FIELD:  # over 2**POS_BITS tokens, one a cycle: share_script's
                return None
            hi = self.n_max - top if self.n_max <= 1024 and rng.random() < 0.5 else 16
            dst = rng.choice(self._idle() or list(range(S)))
            return self._share(dst, n=top + rng.randint(1, hi))
        if kind == "share_busy" and (live or trees):
            return self._share(rng.choice(live + trees))
        if kind == "share_full":
            return self._share_full()
        return None


#: a FIELD share takes more than this many tokens (``2**POS_BITS``, each in a cycle): the
#: random stimulus makes none, the directed scenario (:func:`share_script`) one
LONG_FIELD = 4096

#: what a scenario must reach (``share/code/DST_RANGE`` and ``TABLE_FULL`` where reachable)
SCRIPT_GOALS = ("share/hit", "share/miss", "share/split", "share/rejected",
                "share/code/FIELD", "share/code/DST_BUSY")  # fmt: skip


class _Plan:
    """The beats planned so far and the scratch scoreboard they ran on."""

    def __init__(self, p: dict[str, int], rng: random.Random) -> None:
        self.p, self.rng = p, rng
        self.sb = Scoreboard(p)
        self.ops: list[dict] = []

    @property
    def g(self):
        return self.sb.golden

    def do(self, op: dict) -> dict[str, int]:
        op = dict.fromkeys(self.sb.fmt.widths["op"], 0) | op  # every field, as unpacked
        self.ops.append(op)
        return self.sb.accept_op(dict(op)).beat

    def toks(self, n: int) -> list[int]:
        return [self.rng.randrange(1 << self.p["TOKEN_BITS"]) for _ in range(n)]

    def fill(self, s: int, toks: list[int]) -> None:
        for t in toks:
            self.do({"op": INS, "seq": s, "pos": self.g.seq_len(s), "committed": 1, "token": t})

    def share(self, dst: int, toks: list[int]) -> int:
        """A share; ``dst`` released again if it got positions. Returns ``M``."""
        b = self.do({"op": SHARE, "dst": dst, "n": len(toks), "tokens": list(toks)})
        if not b["error"] and b["value"]:
            self.do({"op": REL, "seq": dst})
        return b["value"]

    def release_all(self) -> None:
        for s in range(self.p["SEQS"]):
            if self.g.seq_len(s) or self.g.tree(s) is not None:
                self.do({"op": REL, "seq": s})

    def free_segments(self) -> int:
        return sum(self.g.segment(i) is None for i in range(self.p["SEGS"]))


def _corners(pl: _Plan, a: int, d: int, blocks: int, field: bool) -> list[int]:
    p, rng = pl.p, pl.rng
    ta = pl.toks(BLOCK * blocks + 1)
    pl.fill(a, ta)
    pl.share(d, ta[:BLOCK])
    pl.share(d, ta[: BLOCK * blocks] + pl.toks(rng.randint(1, 20)))
    bad = list(ta)
    i = BLOCK * (blocks - 1) + rng.randrange(BLOCK)
    bad[i] ^= rng.randrange(1, 1 << p["TOKEN_BITS"])
    pl.share(d, bad)
    pl.share(d, [])
    top = 1 << p["POS_BITS"]
    if field:
        pl.share(d, (ta + pl.toks(top))[:top])
        pl.share(d, (ta + pl.toks(top + 1))[: top + 1])
    pl.share(a, ta[:BLOCK])
    if p["SEQS"] < 1 << max(1, (p["SEQS"] - 1).bit_length()):
        pl.share(p["SEQS"], ta[:BLOCK])
    return ta


def _stale(pl: _Plan, a: int, b: int, d: int, ta: list[int], blocks: int) -> None:
    """Equal blocks (``b`` copies ``a``), then stale entries naming ``a``."""
    pl.fill(b, ta)
    pl.do({"op": REL, "seq": a})
    pl.share(d, ta[: BLOCK * blocks])
    pl.fill(a, pl.toks(len(ta)))
    pl.share(d, ta[: BLOCK * blocks])


def _table_full(pl: _Plan, a: int, d: int, blocks: int) -> bool:
    """Segments exhausted, then a share that needs a split; ``True`` if it was reached."""
    pl.release_all()
    ta = pl.toks(BLOCK * blocks + 1)
    pl.fill(a, ta)
    if blocks > 1:
        pl.share(d, ta[:BLOCK])  # A's segment split at 16
    for x in range(pl.p["SEQS"]):
        if x in (a, d) or not pl.free_segments():
            continue
        pl.do({"op": FORK, "seq": a, "dst": x})
        pl.fill(x, pl.toks(1))
        if pl.free_segments():
            pl.fill(a, pl.toks(1))
    if pl.free_segments():
        return False
    before = pl.sb.stats.cover["share/code/TABLE_FULL"]
    pl.share(d, ta[: BLOCK * blocks])
    return pl.sb.stats.cover["share/code/TABLE_FULL"] > before


def share_script(
    p: dict[str, int], seed: int, *, field: bool = True
) -> tuple[list[dict], dict[str, int]]:
    """The scenario's operation beats (a share's with its ``tokens``) for a pool fresh
    from reset, and the coverage its golden run reached. Planned again with other
    random tokens (up to 20 times) until every goal is reached (the tag table's
    evictions depend on the tags). ``field=False`` leaves out the two longest shares
    (``2**POS_BITS`` and ``2**POS_BITS + 1`` tokens, one a cycle: ``FIELD`` is then
    not reached)."""
    if p["SEQS"] < 3:
        raise ValueError(f"SEQS = {p['SEQS']}: the share scenario needs 3 sequences")
    rng = random.Random(seed)
    room = min(p["PAGES"] + p["HBM_PAGES"], 1 << p["POS_BITS"])
    blocks = 2 if room >= 40 else 1
    best: tuple[list[dict], dict[str, int]] = ([], {})
    for _ in range(20):
        pl = _Plan(p, rng)
        ta = _corners(pl, 0, 1, blocks, field)
        _stale(pl, 0, 2, 1, ta, blocks)
        _table_full(pl, 0, 1, blocks)
        cover = dict(pl.sb.stats.cover)
        best = (pl.ops, cover)
        if all(cover.get(k) for k in SCRIPT_GOALS if field or k != "share/code/FIELD"):
            break
    return best
