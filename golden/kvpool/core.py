"""The scaled pool's state and the steps its operations share (allocation,
spill, append, the checks that raise), below :class:`golden.kvpool.KVPool`.

Nothing here is public: :mod:`golden.kvpool.pool` states the contract.
"""

from __future__ import annotations

from golden.kvpool import crc
from golden.kvpool.errors import PoolErr, PoolError, as_int
from golden.kvpool.pages import Pages
from golden.kvpool.params import BLOCK, PoolParams
from golden.kvpool.result import Result
from golden.kvpool.segments import PteTable, Segments
from golden.kvpool.tags import TagTable
from golden.kvpool.tlb import PortTLB
from golden.kvpool.trees import Trees
from golden.kvpool.view import PoolView

__all__ = ["PoolCore"]

_NONE = PoolErr.NONE


class PoolCore(PoolView):
    """The state of a pool and the steps shared by its operations."""

    def _setup(self, p: PoolParams) -> None:
        """The state after reset, for the checked parameters ``p``."""
        self.params: PoolParams = p
        self._S = p.seqs
        self._N = p.n_nodes
        self._pos_max = (1 << p.pos_bits) - 1
        self._tok_max = (1 << p.token_bits) - 1
        self._mask_max = (1 << p.n_nodes) - 1
        self._pg = Pages(p.pages, p.hbm_pages)
        self._sg = Segments(p.segs, p.seqs)
        self._tr = Trees(p.trees, p.seqs)
        self._tlb = (PortTLB(p.tlb_sets, p.tlb_ways), PortTLB(p.tlb_sets, p.tlb_ways))
        self._tags = TagTable(p.tag_sets, p.tag_ways)
        self._len = [0] * p.seqs
        self._tag = [0] * p.seqs

    # ------------------------------------------------------------------ helpers
    def _result(self, value: tuple[int, ...], spilled: int = 0) -> Result:
        pg = self._pg
        return Result(
            _NONE,
            value,
            spilled,
            len(pg.fifo) + pg.n - pg.mark,
            pg.spec_pages,
            pg.committed_pages,
            pg.hbm_used,
        )

    def _seq(self, name: str, value: object, code: PoolErr = PoolErr.SEQ_RANGE) -> int:
        if type(value) is int and 0 <= value < self._S:
            return value
        return as_int(name, value, 0, self._S - 1, code)

    def _pos(self, value: object) -> int:
        if type(value) is int and 0 <= value <= self._pos_max:
            return value
        return as_int("pos", value, 0, self._pos_max)

    def _mask(self, name: str, value: object) -> int:
        if type(value) is int and 0 <= value <= self._mask_max:
            return value
        return as_int(name, value, 0, self._mask_max)

    def _need_page(self, what: str) -> None:
        pg = self._pg
        if not pg.has_free() and not pg.can_spill():
            raise PoolError(
                f"{what}: no free page (pages = {pg.n}, all in use) and no spill possible "
                f"(committed on chip = {pg.committed_pages}, HBM slots used = {pg.hbm_used} "
                f"of {pg.hbm_n})",
                PoolErr.NO_PAGE,
            )

    def _need_segment(self, what: str) -> None:
        sg = self._sg
        if not sg.free:
            raise PoolError(f"{what}: no free segment (segs = {sg.n})", PoolErr.TABLE_FULL)
        if not sg.free_tables:
            raise PoolError(f"{what}: no free block table (segs = {sg.n})", PoolErr.TABLE_FULL)

    def _alloc(self) -> tuple[int, int]:
        """A page (*Allocation*; checked possible): ``(page, victims spilled)``."""
        pg = self._pg
        if pg.fifo or pg.mark < pg.n:
            return pg.take(), 0
        self._spill_one()
        return pg.take(), 1

    def _spill_one(self) -> None:
        """Spill the GCLOCK victim (checked possible): PTE to HBM, TLB sets
        invalidated, the page freed."""
        pg = self._pg
        p = pg.victim()
        t, pos = self._sg.tables[pg.wtab[p]], pg.wpos[p]
        slot = pg.hbm_take()
        t.addr[pos - t.base] = -1 - slot
        g = self._sg.seg_of(t, pos)
        for tlb in self._tlb:
            tlb.invalidate_set(g, pos)
        pg.free_committed(p)

    def _append(self, seq: int, g: int, page: int, token: int, was_spec: bool) -> None:
        """Append ``page`` (``token``) at ``len(seq)`` in own segment ``g``; enter
        the block's tag when ``len`` reaches a block's end."""
        t, pos = self._sg.append(g, page, token)
        self._pg.make_committed(page, t.id, pos, was_spec)
        n = pos + 1
        self._len[seq] = n
        if n % BLOCK == 0:
            tokens = self._sg.tokens(seq, n - BLOCK, n)
            tag = self._tag[seq] = crc.block_tag(self._tag[seq], tokens)
            self._tags.enter(tag, seq, n // BLOCK - 1)

    def _check_dst_idle(self, op: str, dst: int) -> None:
        if self._len[dst] or self._tr.of_seq[dst] is not None:
            raise PoolError(
                f"{op} dst = {dst}: dst sees positions (len = {self._len[dst]}) or has a tree",
                PoolErr.DST_BUSY,
            )

    def _committed_pte(self, op: str, seq: object, pos: object) -> tuple[int, int, PteTable, int]:
        """Checks of fill and score: ``(seq, pos, table, addr)`` of a committed position."""
        seq = self._seq("seq", seq)
        pos = self._pos(pos)
        if pos >= self._len[seq]:
            raise PoolError(
                f"{op} (seq = {seq}, pos = {pos}): not committed (len = {self._len[seq]})",
                PoolErr.NOT_COMMITTED,
            )
        t = self._sg.table[self._sg.find(seq, pos)]
        return seq, pos, t, t.addr[pos - t.base]

    def _longest_prefix(self, tokens: list[int]) -> tuple[int, int, list[int]]:
        """``(M, s, tags)`` of *Tags*' search (``M = 0``: none found; ``s`` -1)."""
        tags = crc.tags_of(tokens, BLOCK)
        same: dict[int, int] = {}  # candidate sequence -> tokens in common with the request
        for k in range(len(tags) - 1, -1, -1):
            e = self._tags.find(tags[k])
            if e is None or e[1] != k:
                continue
            s = e[0]
            m = BLOCK * (k + 1)
            if self._len[s] < m:
                continue
            if s not in same:
                top = min(self._len[s], len(tokens))
                theirs = self._sg.tokens(s, 0, top)
                i = 0
                while i < top and theirs[i] == tokens[i]:
                    i += 1
                same[s] = i
            if same[s] >= m:
                return m, s, tags
        return 0, -1, tags
