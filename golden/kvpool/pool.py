"""The KV pool at the architecture's scale: the golden model of SPEC §4.4 - §4.9.

:class:`KVPool` maps ``(seq, pos)`` to a page (one token's KV for every
layer) for 2^20 pages and more: committed positions in segments and block
tables, speculative ones in tree slots, a free FIFO with a high-water mark,
GCLOCK spill to HBM weighted by attention scores, a tree-PLRU TLB per lookup
port and CRC-64 dedup tags (decision 0016). Every operation checks
everything before it changes anything: a :class:`golden.kvpool.PoolError`
(a ``ValueError`` with the SPEC §4.8 class as ``code``) leaves the whole
state as it was (:meth:`KVPool.snapshot`), TLBs, PLRU bits, tag table, spill
counters and queue included. No operation costs ``O(PAGES)``: each is O(1)
amortised, or proportional to what it frees, appends, spills or compares,
or to the segments of one chain.

Choices where the spec is silent
--------------------------------
* **Argument ranges** (class ``FIELD`` unless named): ``port`` 0 .. 1;
  ``pos`` 0 .. ``2**POS_BITS - 1``; ``token`` 0 .. ``2**TOKEN_BITS - 1``;
  ``view``, ``accept`` ``N_NODES``-bit masks; ``committed`` ``True`` or
  ``False`` (not 0 / 1); ``spill``'s ``n`` 0 .. ``PAGES``; ``score``'s ``s``
  0 .. ``CMAX``; ``share``'s ``tokens`` at most ``2**POS_BITS`` of them, and
  its ``dst`` out of range is ``DST_RANGE`` (the argument is named ``dst`` as
  fork's).
* **Lookups** raise on a bad argument like every operation (the RTL's reply
  is ``error`` and no hit) and then touch no TLB. Only a committed lookup
  (``pos < len``) accesses the TLB and counts a hit or a miss.
* **Tree-PLRU**: ``ways - 1`` bits per set in heap order, bit 0 = the victim
  is on the left, an access points its path away (:mod:`golden.kvpool.tlb`);
  invalidation clears ``valid`` only, never PLRU bits. The tag table's
  round-robin pointer advances only when it picks the way.
* **Tags are entered by appends only** (committed insert, commit), one entry
  per block boundary crossed, in order (a commit may cross several). Fork and
  share copy or set ``tag(dst)`` and enter nothing.
* **A commit with nothing accepted** (``acc`` empty: ``accept`` has bit 0,
  but no valid node of it) appends nothing and needs no segment; it frees ``rej``.
  ``TABLE_FULL`` in a commit: ``acc`` not empty, no own segment, none free.
* **Check order**: SPEC §4.8's table order; ``TABLE_FULL`` (segment, then
  block table, or tree slot) before ``NO_PAGE``. Only the checks that apply
  to the operation run: a speculative insert never reports ``POS_GAP``, a
  committed one never ``SPEC_DUP`` or ``DEPTH_RANGE``; the owner of a
  committed insert is range-checked and then ignored.
* **Within one operation**, a segment or tree slot is taken before the page;
  an allocation that spills invalidates the victim's TLB set before the new
  PTE is written. Neither order is observable.
* **The field spilled** of a result counts an allocation's spill only (0 or 1); a
  ``spill(n)``'s victims are its value.
* **Identifiers**: segments and tree slots are the lowest-numbered free, as
  the SPEC says; block tables too (not observable). The TLB set of a key
  uses the segment number, so TLB contents (never results) depend on it.
* **Radix nodes are not modelled** (:mod:`golden.kvpool.segments`): decision
  0016 sizes their pools so that they cannot run out before the pages, and
  SPEC §4.8's ``TABLE_FULL`` names segments, block tables and tree slots
  only. Block tables are counted; since a live table is named by a live
  segment, one is free whenever a segment is.
* **A committed insert while the sequence has an active tree** is allowed
  (SPEC §4.8 lists no error for it): a node at a position below the new
  ``len`` is then shadowed (a lookup answers the committed PTE) and a commit
  that accepts it fails ``NOT_CHAIN``.
* **Sizes the SPEC leaves open**: ``TLB_SETS`` and ``TAG_SETS`` 1 .. 2**16.
* **Costs**: a release is O(positions of its dead segments + tree nodes), a
  share O(``len(tokens)`` + the tokens compared), a commit O(tree nodes),
  fork and a split O(segments of the chains involved). A spill makes one
  pass per spill-queue entry it pops: O(1) amortised (each pass is paid for
  by a score, a commit or a free), but one spill after every page was scored
  to ``CMAX`` pops up to ``CMAX + 1`` times per queued page, the GCLOCK
  worst case the RTL's cycle target (3 cycles + 1 per pass) shares.
"""

from __future__ import annotations

from collections.abc import Sequence

from golden.kvpool.core import PoolCore
from golden.kvpool.errors import PoolErr, PoolError, as_bool, as_int, as_tokens
from golden.kvpool.params import BLOCK, CMAX, DEFAULTS, make_params
from golden.kvpool.result import Result

__all__ = ["KVPool"]

_D = DEFAULTS


class KVPool(PoolCore):
    """The KV pool at scale (SPEC §4.4 - §4.9); every parameter keyword-only.

    Parameters
    ----------
    pages : int
        ``PAGES``, on-chip pages, 16 .. 2**22 (default 2**20).
    hbm_pages : int
        ``HBM_PAGES``, spill slots, 0 .. 2**23 (default 2**21).
    seqs : int
        ``SEQS``, 1 .. 64 (64).
    segs : int
        ``SEGS``, segments (and block tables), 2 .. 1024 (256).
    trees : int
        ``TREES``, tree slots, 1 .. 16 (8).
    n_nodes : int
        ``N_NODES``, nodes per tree (``owner < n_nodes``; ``view`` and
        ``accept`` are ``n_nodes``-bit masks), 4 .. 1024 (1024).
    max_depth : int
        ``MAX_DEPTH``, positions per tree window, 2 .. 1024 (64).
    pos_bits, token_bits : int
        ``POS_BITS`` 1 .. 20 (17), ``TOKEN_BITS`` 1 .. 17 (17).
    tlb_sets, tlb_ways : int
        Per lookup port, powers of two, sets 1 .. 2**16 (1024), ways 1 .. 8 (4).
    tag_sets, tag_ways : int
        The tag table, powers of two, sets 1 .. 2**16 (1024), ways 1 .. 8 (4).

    Raises
    ------
    ValueError
        Naming the parameter and quoting the value, for a value out of range
        or not an integer (:func:`golden.kvpool.params.make_params`).
    """

    def __init__(
        self,
        *,
        pages: int = _D["pages"],
        hbm_pages: int = _D["hbm_pages"],
        seqs: int = _D["seqs"],
        segs: int = _D["segs"],
        trees: int = _D["trees"],
        n_nodes: int = _D["n_nodes"],
        max_depth: int = _D["max_depth"],
        pos_bits: int = _D["pos_bits"],
        token_bits: int = _D["token_bits"],
        tlb_sets: int = _D["tlb_sets"],
        tlb_ways: int = _D["tlb_ways"],
        tag_sets: int = _D["tag_sets"],
        tag_ways: int = _D["tag_ways"],
    ) -> None:
        p = make_params(
            pages=pages,
            hbm_pages=hbm_pages,
            seqs=seqs,
            segs=segs,
            trees=trees,
            n_nodes=n_nodes,
            max_depth=max_depth,
            pos_bits=pos_bits,
            token_bits=token_bits,
            tlb_sets=tlb_sets,
            tlb_ways=tlb_ways,
            tag_sets=tag_sets,
            tag_ways=tag_ways,
        )
        self._setup(p)

    # ------------------------------------------------------------------ lookup
    def lookup(self, port: int, seq: int, pos: int, view: int = 0) -> Result:
        """Translate ``(seq, pos)`` on lookup port ``port`` (SPEC §4.6).

        Parameters
        ----------
        port : int
            0 (draft) or 1 (verifier): whose TLB is accessed.
        seq, pos : int
            The key.
        view : int
            ``n_nodes``-bit mask: a speculative node hits iff its bit is set.

        Returns
        -------
        Result
            ``value = (hit, loc, addr)``: a committed position (``pos <
            len(seq)``) always hits, with its PTE's ``loc`` (0 chip, 1 HBM) and
            ``addr`` (page or HBM slot); else the page of the lowest valid node
            of ``seq``'s tree at ``pos`` in ``view`` (``loc = 0``); else
            ``(0, 0, 0)``.

        Raises
        ------
        PoolError
            ``FIELD`` (``port``, ``pos``, ``view``), ``SEQ_RANGE``.
        """
        if type(port) is not int or not 0 <= port <= 1:
            port = as_int("port", port, 0, 1)
        if type(seq) is not int or not 0 <= seq < self._S:
            seq = self._seq("seq", seq)
        if type(pos) is not int or not 0 <= pos <= self._pos_max:
            pos = self._pos(pos)
        if type(view) is not int or not 0 <= view <= self._mask_max:
            view = self._mask("view", view)
        if pos < self._len[seq]:
            g = self._sg.find(seq, pos)
            tlb = self._tlb[port]
            hit = tlb.lookup(g, pos)
            if hit is None:
                t = self._sg.table[g]
                a = t.addr[pos - t.base]
                hit = (0, a) if a >= 0 else (1, -1 - a)
                tlb.fill(g, pos, *hit)
            return self._result((1, *hit))
        tree = self._tr.of_seq[seq]
        if tree is not None:
            page = tree.find(pos, view)
            if page is not None:
                return self._result((1, 0, page))
        return self._result((0, 0, 0))

    # ------------------------------------------------------------------ insert
    def insert(
        self, seq: int, pos: int, owner: int = 0, committed: bool = False, token: int = 0
    ) -> Result:
        """Write ``(seq, pos)`` with a new page (SPEC §4.6).

        A committed insert appends at ``pos == len(seq)`` in ``seq``'s own
        segment (opening the lowest free one if it has none); a speculative
        one writes node ``owner`` of ``seq``'s active tree (opening the lowest
        free slot, ``lo = pos``, if it has none). The page comes from
        *Allocation*, spilling one victim if none is free.

        Parameters
        ----------
        seq, pos : int
            The key.
        owner : int
            The tree node (speculative; range-checked and ignored if committed).
        committed : bool
            ``True``: a committed append.
        token : int
            The position's token (``0 .. 2**token_bits - 1``).

        Returns
        -------
        Result
            ``value = (page,)``, ``spilled`` 1 if the allocation spilled.

        Raises
        ------
        PoolError
            ``SEQ_RANGE``, ``FIELD`` (``pos``, ``committed``, ``token``),
            ``OWNER_RANGE``; ``SEEN_COMMITTED``, ``POS_GAP``, ``SPEC_DUP``,
            ``DEPTH_RANGE``, ``TABLE_FULL``, ``NO_PAGE``.
        """
        if type(seq) is not int or not 0 <= seq < self._S:
            seq = self._seq("seq", seq)
        if type(pos) is not int or not 0 <= pos <= self._pos_max:
            pos = self._pos(pos)
        if type(owner) is not int or not 0 <= owner < self._N:
            owner = as_int("owner", owner, 0, self._N - 1, PoolErr.OWNER_RANGE)
        if committed is not True and committed is not False:
            committed = as_bool("committed", committed)
        if type(token) is not int or not 0 <= token <= self._tok_max:
            token = as_int("token", token, 0, self._tok_max)
        n = self._len[seq]
        if pos < n:
            raise PoolError(
                f"insert (seq = {seq}, pos = {pos}): position {pos} is committed (len = {n})",
                PoolErr.SEEN_COMMITTED,
            )
        what = f"insert (seq = {seq}, pos = {pos})"
        if committed:
            if pos > n:
                raise PoolError(f"{what}: a committed insert appends at len = {n}", PoolErr.POS_GAP)
            g = self._sg.own(seq)
            if g is None:
                self._need_segment(what)
            self._need_page(what)
            if g is None:
                g = self._sg.open(seq, n)
            page, spilled = self._alloc()
            self._append(seq, g, page, token, False)
            return self._result((page,), spilled)
        tree = self._tr.of_seq[seq]
        if tree is not None:
            if owner in tree.nodes:
                raise PoolError(
                    f"{what}: node {owner} of seq {seq}'s tree is valid (at pos "
                    f"{tree.nodes[owner][0]}, page {tree.nodes[owner][1]})",
                    PoolErr.SPEC_DUP,
                )
            lo = tree.lo
            if not lo <= pos < lo + self.params.max_depth:
                raise PoolError(
                    f"{what}: outside the tree's window {lo} .. "
                    f"{lo + self.params.max_depth - 1} (max_depth = {self.params.max_depth})",
                    PoolErr.DEPTH_RANGE,
                )
        elif not self._tr.has_free():
            raise PoolError(f"{what}: no free tree slot (trees = {self._tr.n})", PoolErr.TABLE_FULL)
        self._need_page(what)
        if tree is None:
            tree = self._tr.open(seq, pos)
        page, spilled = self._alloc()
        self._pg.make_spec(page)
        tree.add(owner, pos, page, token)
        return self._result((page,), spilled)

    # ------------------------------------------------------------------ commit
    def commit(self, seq: int, accept: int, acc_len: int | None = None) -> Result:
        """Commit ``seq``'s tree through ``accept`` (SPEC §4.6).

        The valid nodes with their ``accept`` bit (``acc``) are appended in
        increasing ``pos`` with their pages and tokens; the others' pages are
        freed in increasing node number; the slot becomes free. ``acc_len``
        is ``|acc|`` as the sender gives it (the acceptance sampler's
        ``accepted + 1``; the RTL's commit port carries it and trusts it);
        ``None`` here takes ``|acc|``.

        Returns
        -------
        Result
            ``value = (pages freed,)``.

        Raises
        ------
        PoolError
            ``SEQ_RANGE``, ``FIELD`` (``accept``, ``acc_len``: ``0 .. N_NODES``);
            ``NO_SPEC``, ``ROOT_CLEAR``, ``NOT_CHAIN`` (``acc``'s positions are
            not ``len, len + 1, ...``, or ``acc_len != |acc|``), ``TABLE_FULL``.
        """
        seq = self._seq("seq", seq)
        accept = self._mask("accept", accept)
        if acc_len is not None:
            acc_len = as_int("acc_len", acc_len, 0, self.params.n_nodes)
        tree = self._tr.of_seq[seq]
        if tree is None:
            raise PoolError(f"commit seq = {seq}: seq {seq} has no active tree", PoolErr.NO_SPEC)
        if not accept & 1:
            raise PoolError(
                f"accept = {accept:#x}: bit 0 (the root) must be set", PoolErr.ROOT_CLEAR
            )
        nodes = tree.nodes
        acc, rej = [], []
        for j in sorted(nodes):
            (acc if accept >> j & 1 else rej).append(j)
        acc.sort(key=lambda j: nodes[j][0])
        n = self._len[seq]
        for i, j in enumerate(acc):
            if nodes[j][0] != n + i:
                raise PoolError(
                    f"commit (seq = {seq}, accept = {accept:#x}): the accepted nodes' positions "
                    f"{[nodes[k][0] for k in acc]} are not {n}, {n + 1}, ... (len = {n})",
                    PoolErr.NOT_CHAIN,
                )
        if acc_len is not None and acc_len != len(acc):
            raise PoolError(
                f"acc_len = {acc_len}: the accepted path (seq = {seq}, accept = {accept:#x}) "
                f"has {len(acc)} valid nodes",
                PoolErr.NOT_CHAIN,
            )
        g = self._sg.own(seq)
        if acc and g is None:
            self._need_segment(f"commit seq = {seq}")  # the last check
            g = self._sg.open(seq, n)
        for j in acc:
            _, page, token = nodes[j]
            self._append(seq, g, page, token, True)
        pg = self._pg
        for j in rej:
            pg.free_spec(nodes[j][1])
        self._tr.close(tree)
        return self._result((len(rej),))

    # ------------------------------------------------------------------ fork, release
    def fork(self, src: int, dst: int) -> Result:
        """``dst`` sees every committed position of ``src`` (SPEC §4.6): bit ``dst`` in
        every segment of ``src``'s chain, ``len`` and ``tag`` copied; no PTE, page or
        TLB entry changes.

        Raises
        ------
        PoolError
            ``SEQ_RANGE`` (``src``), ``DST_RANGE``; ``SAME_SEQ``, ``SRC_EMPTY``,
            ``DST_BUSY``.
        """
        src = self._seq("src", src)
        dst = self._seq("dst", dst, PoolErr.DST_RANGE)
        if src == dst:
            raise PoolError(f"fork src = dst = {src}: src and dst must differ", PoolErr.SAME_SEQ)
        if not self._len[src]:
            raise PoolError(f"fork src = {src}: src has no committed position", PoolErr.SRC_EMPTY)
        self._check_dst_idle("fork", dst)
        self._sg.fork(src, dst)
        self._len[dst] = self._len[src]
        self._tag[dst] = self._tag[src]
        return self._result(())

    def release(self, seq: int) -> Result:
        """``seq`` sees nothing any more (SPEC §4.6).

        Bit ``seq`` is cleared in every segment; the segments left with no
        sequence die: their on-chip pages are freed and their HBM slots
        returned in increasing position; then the pages of ``seq``'s tree in
        increasing node number.

        Returns
        -------
        Result
            ``value = (pages freed, HBM slots returned)``.

        Raises
        ------
        PoolError
            ``SEQ_RANGE``; ``NOTHING_SEEN``.
        """
        seq = self._seq("seq", seq)
        tree = self._tr.of_seq[seq]
        if not self._len[seq] and tree is None:
            raise PoolError(f"release seq = {seq}: seq {seq} sees nothing", PoolErr.NOTHING_SEEN)
        sg, pg = self._sg, self._pg
        dead = sg.release(seq)
        freed = hbm = 0
        for g in dead:
            t = sg.table[g]
            for a in t.addr[sg.start[g] - t.base : sg.end[g] - t.base]:
                if a >= 0:
                    pg.free_committed(a)
                    freed += 1
                else:
                    pg.hbm_give(-1 - a)
                    hbm += 1
            for tlb in self._tlb:
                tlb.invalidate_segment(g)
        sg.bury(dead)
        if tree is not None:
            for j in sorted(tree.nodes):
                pg.free_spec(tree.nodes[j][1])
                freed += 1
            self._tr.close(tree)
        self._len[seq] = 0
        self._tag[seq] = 0
        return self._result((freed, hbm))

    # ------------------------------------------------------------------ spill, fill, score
    def spill(self, n: int) -> Result:
        """Spill up to ``n`` GCLOCK victims to HBM (fewer if no spill is possible;
        not an error).

        Returns
        -------
        Result
            ``value = (victims spilled,)``.

        Raises
        ------
        PoolError
            ``FIELD`` (``n`` not in ``0 .. pages``).
        """
        pg = self._pg
        n = as_int("n", n, 0, pg.n)
        done = 0
        while done < n and pg.can_spill():
            self._spill_one()
            done += 1
        return self._result((done,))

    def fill(self, seq: int, pos: int) -> Result:
        """Bring the committed HBM-resident position ``(seq, pos)`` back on chip.

        Its HBM slot is returned first; then it gets a page (*Allocation*,
        spilling a victim if none is free: with HBM full the victim takes the
        slot just returned, a swap), its PTE becomes ``loc = 0`` and the page,
        the page is committed (``c = 1``, queued) and the TLB sets of the key
        are invalidated. ``NO_PAGE`` only when no page is free and none is
        committed on chip.

        Returns
        -------
        Result
            ``value = (page,)``, ``spilled`` 1 if the allocation spilled.

        Raises
        ------
        PoolError
            ``SEQ_RANGE``, ``FIELD`` (``pos``); ``NOT_COMMITTED``, ``ON_CHIP``,
            ``NO_PAGE``.
        """
        seq, pos, t, a = self._committed_pte("fill", seq, pos)
        if a >= 0:
            raise PoolError(f"fill (seq = {seq}, pos = {pos}): on chip (page {a})", PoolErr.ON_CHIP)
        pg = self._pg
        if not pg.has_free() and not pg.committed_pages:
            raise PoolError(
                f"fill (seq = {seq}, pos = {pos}): no free page (pages = {pg.n}, all in use) "
                "and none committed on chip to spill",
                PoolErr.NO_PAGE,
            )
        pg.hbm_give(-1 - a)  # first: a spill the allocation needs may take this slot
        page, spilled = self._alloc()
        t.addr[pos - t.base] = page
        self._pg.make_committed(page, t.id, pos, False)
        g = self._sg.find(seq, pos)
        for tlb in self._tlb:
            tlb.invalidate_set(g, pos)
        return self._result((page,), spilled)

    def score(self, seq: int, pos: int, s: int) -> Result:
        """Attention score ``s`` for committed ``(seq, pos)``: ``c = min(CMAX, c + s)``
        of its page if on chip; nothing if in HBM.

        Raises
        ------
        PoolError
            ``SEQ_RANGE``, ``FIELD`` (``pos``, ``s`` not in ``0 .. CMAX``);
            ``NOT_COMMITTED``.
        """
        seq = self._seq("seq", seq)
        pos = self._pos(pos)
        s = as_int("s", s, 0, CMAX)
        _, _, _, a = self._committed_pte("score", seq, pos)
        if a >= 0:
            self._pg.score(a, s)
        return self._result(())

    # ------------------------------------------------------------------ share
    def share(self, dst: int, tokens: Sequence[int]) -> Result:
        """Give ``dst`` the longest verified committed prefix equal to ``tokens``.

        ``M`` is ``BLOCK (k + 1)`` for the largest ``k`` whose tag ``T_k`` of
        ``tokens`` names, in the tag table, a sequence ``s`` and block ``k``
        with ``len(s) >= M`` and tokens ``0 .. M - 1`` equal to ``tokens``'
        (a collision is a mismatch), else 0. ``dst`` sees ``s``'s positions
        ``0 .. M - 1`` (the straddling segment split, its TLB entries
        invalidated); ``len(dst) = M``, ``tag(dst) = T_{M / BLOCK - 1}``.

        Returns
        -------
        Result
            ``value = (M,)``.

        Raises
        ------
        PoolError
            ``DST_RANGE``, ``FIELD`` (``tokens``); ``DST_BUSY``, ``TABLE_FULL``
            (a split needs a segment and none is free).
        """
        dst = self._seq("dst", dst, PoolErr.DST_RANGE)
        tokens = as_tokens("tokens", tokens, self._tok_max, self._pos_max + 1)
        self._check_dst_idle("share", dst)
        m, s, tags = self._longest_prefix(tokens)
        sg = self._sg
        if m:
            g = sg.find(s, m - 1)
            if sg.end[g] > m and not sg.free:
                raise PoolError(
                    f"share dst = {dst}: splitting segment {g} at {m} needs a free segment "
                    f"(segs = {sg.n})",
                    PoolErr.TABLE_FULL,
                )
            split = sg.share(s, dst, m)
            if split is not None:
                for tlb in self._tlb:
                    tlb.invalidate_segment(split)
            self._len[dst] = m
            self._tag[dst] = tags[m // BLOCK - 1]
        return self._result((m,))
