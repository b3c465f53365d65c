"""Block tables of the scaled pool (SPEC §4.6, decision 0016 §2 - §3): radix trees of PTEs."""

from collections.abc import Iterator
from types import SimpleNamespace

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, enum, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.common import Param, check_params, idx_bits, prefix_add
from hw.kvpool.allocator import PageAllocator, page_bits

__all__ = [
    "BlockTable",
    "BtCmd",
    "pte_layout",
    "cmd_layout",
    "read_layout",
    "out_layout",
    "level_bits",
]


class BtCmd(enum.Enum, shape=2):
    """Command kinds of :class:`BlockTable`."""

    APPEND = 0
    WRITE = 1
    CUT = 2


def pte_layout(addr_bits: int, token_bits: int) -> data.StructLayout:
    """A PTE: ``loc`` (0 chip, 1 HBM), ``addr`` (page or HBM slot), ``token``."""
    return data.StructLayout({"loc": 1, "addr": addr_bits, "token": token_bits})


def cmd_layout(tables: int, index_bits: int, addr_bits: int, token_bits: int) -> data.StructLayout:
    """A command: ``kind``, table ``t``, index ``i`` (a CUT's ``c``), ``n`` (a CUT's
    ``len(t)``), ``pte``."""
    return data.StructLayout(
        {
            "kind": BtCmd,
            "t": idx_bits(tables),
            "i": index_bits,
            "n": index_bits + 1,
            "pte": pte_layout(addr_bits, token_bits),
        }
    )


def read_layout(tables: int, index_bits: int) -> data.StructLayout:
    """A lookup read: table ``t``, index ``i``."""
    return data.StructLayout({"t": idx_bits(tables), "i": index_bits})


def out_layout(index_bits: int, addr_bits: int, token_bits: int) -> data.StructLayout:
    """A beat of a CUT's stream: the index ``i`` removed and its PTE."""
    return data.StructLayout({"i": index_bits, "pte": pte_layout(addr_bits, token_bits)})


def level_bits(index_bits: int) -> tuple[int, int, int]:
    """``(leaf, mid, root)`` index bits: a leaf node holds ``2**leaf`` PTEs (index bits
    ``[leaf-1:0]``), a mid node ``2**mid`` leaf pointers (the next ``mid`` bits), a
    table's root ``2**root`` mid pointers (the rest). 6, 6, ``INDEX_BITS - 12`` when
    ``INDEX_BITS >= 12``; narrower nodes below (a mid or root of one entry)."""
    leaf = min(6, index_bits)
    mid = min(6, index_bits - leaf)
    return leaf, mid, index_bits - leaf - mid


class _PortSignature(wiring.Signature):
    """The component's signature, whose :meth:`flatten` leaves out constant members.

    An ``always_ready`` stream's ``ready`` is ``Const(1)``; Amaranth 0.5.10's
    ``verilog.convert`` takes every flattened member as a port and refuses a
    constant. Leaving it out of :meth:`flatten` (used only for ports and traces)
    keeps the ``always_ready`` streams (``wiring.connect`` checks the members,
    not :meth:`flatten`); a constant has no wire to export.
    """

    def flatten(self, obj: object) -> Iterator[tuple]:
        for path, member, value in super().flatten(obj):
            if not isinstance(value, Const):
                yield path, member, value


class BlockTable(wiring.Component):
    """``TABLES`` block tables, each a 3-level radix tree of PTEs, with pipelined lookups.

    Table ``t`` holds PTEs at indices ``0 .. len(t) - 1``; ``len(t)`` is the
    pool's to know (the leaf keeps no lengths: every command names it). A
    table is a root of ``2**R`` mid pointers (per table, index bits
    ``[INDEX_BITS-1:12]``), mid nodes of 64 leaf pointers (bits ``[11:6]``),
    leaf nodes of 64 PTEs (bits ``[5:0]``); mid and leaf nodes come from two
    :class:`~hw.kvpool.allocator.PageAllocator` free lists (``MIDS``,
    ``LEAVES`` nodes). Below ``INDEX_BITS = 12`` the levels keep their
    roles with narrower nodes (:func:`level_bits`): a root of one entry, a
    mid node of ``2**(INDEX_BITS - 6)`` pointers, and below 7 a mid node of
    one pointer and a leaf of ``2**INDEX_BITS`` PTEs; a table then has one
    mid node and allocates it at index 0, as it does at index 0 always.

    **Commands** (``cmd``, a stream; ``cmd.ready`` is high exactly when no
    WRITE or CUT is in progress, whatever ``cmd.valid``; a command is
    accepted in a cycle with ``valid & ready``):

    * ``APPEND(t, i, pte)``, ``i == len(t)``: the PTE at ``i``. A leaf node is
      allocated when ``i % 64 == 0``, a mid node when ``i % 4096 == 0``
      (their pointers written into the mid node and the root). Accepted in
      cycle ``c``: the allocations in ``c``, every write in ``c + 1`` (the PTE,
      the new leaf's pointer and the new mid's pointer, in three memories,
      and the table's cursor); ``cmd.ready`` stays high: one APPEND per
      cycle sustained, to any tables.
    * ``WRITE(t, i, pte)``, ``i < len(t)``: the PTE at ``i`` replaced. Accepted in
      ``c``: root read in ``c + 1``, mid read in ``c + 2``, PTE written in
      ``c + 3``; ``busy`` high in ``c + 1 .. c + 4``, ``cmd.ready`` again in ``c + 5``.
    * ``CUT(t, c, n)`` (``c`` in the field ``i``), ``c <= n == len(t)``:
      indices ``c .. n - 1`` removed: their PTEs are streamed on ``out``
      (``{i, pte}``, increasing ``i``, ``out.ready`` may be held low any
      time), every mid or leaf node holding no index ``< c`` is pushed to
      its free list (in increasing index order, a mid node when the walk
      passes its first index, a leaf node likewise), afterwards
      ``len(t) = c``. The walk issues one index per cycle (root, mid, leaf
      reads pipelined): accepted in cycle ``a``, the first beat is offered
      in ``a + 4``, and with ``out.ready`` high throughout the CUT takes
      ``n - c + 4`` busy cycles (1 when ``c == n``: nothing streamed or
      freed). A CUT does not write the tree (stale words beyond ``c``
      are never read as valid).

    ``busy`` is high from the cycle after a command's acceptance until its
    last cycle (an APPEND: the one cycle of its writes), so the cycle
    ``busy`` is low, every command accepted before has taken effect.

    **Reads** (``rd<k>``, ``k < PORTS``, one per cycle per port, no
    backpressure): a read of ``(t, i)`` issued in cycle ``r`` has its PTE on
    ``rd<k>_rsp`` in cycle ``r + READ_LATENCY`` (``READ_LATENCY = 3``: the
    root, mid and leaf reads, pipelined), with ``rd<k>_rsp.valid``. A read of
    ``i < len(t)`` returns its PTE as of the commands that took effect
    before (the root's writes of cycles before ``r``, the mid's before
    ``r + 1``, the leaf's before ``r + 2``): a read in the cycle a command is
    accepted or while it is in progress returns the PTE as before it for
    every index it does not change, and a read issued in a cycle with
    ``busy`` low after it sees it. A read of ``i >= len(t)`` (or of ``t >=
    TABLES``) returns an unspecified PTE (stale or never-written words) and
    changes nothing. ``rd<k>_rsp.payload`` is unspecified while not valid.

    **Free counts**: ``leaves_free`` and ``mids_free`` are the allocators'
    ``free_pages``: an APPEND's allocations count from the cycle after its
    acceptance, a CUT's frees from the cycle after each push.

    **Invalid input** (the pool never gives it): an APPEND with ``i !=
    len(t)``, a WRITE with ``i >= len(t)``, a CUT with ``n != len(t)``, a
    ``t >= TABLES`` or a ``kind`` of 3 (treated as WRITE): the tables'
    contents become unspecified (a walk follows stale pointers, may write
    another table's PTE or free a node twice). A CUT with ``c > n`` is
    taken as ``c == n`` (nothing). **Out of nodes**: an APPEND whose
    allocation finds no free node writes nothing, and ``error`` is high
    from the cycle after its acceptance until reset (so does a push the
    allocator refuses, a node freed twice); the tables and counts are then
    unspecified.

    Reset: ``busy``, the pipelines and the allocators (every node free)
    reset, every table is empty; no memory is swept (every pointer a walk
    follows for an index ``< len(t)`` was written since by an APPEND).

    Implementation: memories (``amaranth.lib.memory.Memory``, no initial
    contents): root ``TABLES * 2**R`` words of ``page_bits(MIDS)``, mid
    ``MIDS * 64`` words of ``page_bits(LEAVES)``, leaf ``LEAVES * 64``
    PTEs, each with one write port and ``PORTS + 1`` synchronous read ports
    (one per lookup port, one for the command walker; none transparent: a
    write and a read of one word never meet in a cycle where the read
    matters), and the cursor (``TABLES`` words: the mid and leaf node of a
    table's last index, read by an APPEND in its acceptance cycle and
    written in the next; a back-to-back APPEND to the same table takes the
    previous one's from a register). A CUT sets the cursor to the nodes of
    index ``c`` (when ``c < n``). Design notes: ``docs/blocks/kvpool_leaves.md``.

    After :meth:`elaborate`, ``state`` names the pipeline registers (for the
    formal harness, :mod:`formal.kvpool_bt`; nothing reads them in ``hw/``):
    ``state.a`` the APPEND's stage A and the cursor it reads, ``state.w`` the
    walker (its command, ``j`` / ``n``, the stages' valids, indices and read
    data), ``state.rd[k]`` lookup port ``k``'s pipeline.

    Parameters
    ----------
    TABLES : int
        Block tables, ``2 .. 1024`` (default 256; SPEC §4.9 ``SEGS``).
    INDEX_BITS : int
        Bits of an index, ``1 .. 20`` (default 17; ``POS_BITS``).
    ADDR_BITS : int
        Bits of a PTE's address, ``1 .. 23`` (default 21).
    TOKEN_BITS : int
        Bits of a PTE's token, ``1 .. 17`` (default 17).
    LEAVES : int
        Leaf nodes, ``16 .. 4194304`` (default 49664 =
        ``ceil((2**20 + 2**21) / 64) + 2 * 256``).
    MIDS : int
        Mid nodes, ``16 .. 65536`` (default 1280 =
        ``ceil((2**20 + 2**21) / 4096) + 2 * 256``).
    PORTS : int
        Lookup read ports, ``1 .. 2`` (default 2).

    Members
    -------
    cmd : In(stream.Signature(cmd_layout(TABLES, INDEX_BITS, ADDR_BITS, TOKEN_BITS)))
        Commands (valid / ready).
    out : Out(stream.Signature(out_layout(INDEX_BITS, ADDR_BITS, TOKEN_BITS)))
        A CUT's removed PTEs (valid / ready).
    busy : Out(1)
        A command is in progress.
    rd<k> : In(stream.Signature(read_layout(TABLES, INDEX_BITS), always_ready=True))
        Lookup reads of port ``k < PORTS``.
    rd<k>_rsp : Out(stream.Signature(pte_layout(ADDR_BITS, TOKEN_BITS), always_ready=True))
        Their PTEs, ``READ_LATENCY`` cycles later.
    leaves_free : Out(bits_for(LEAVES))
        Free leaf nodes.
    mids_free : Out(bits_for(MIDS))
        Free mid nodes.
    error : Out(1)
        Sticky: an allocation found no free node (or a free was refused).
    """

    #: cycles from a read to its PTE
    READ_LATENCY = 3

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {
        "TABLES": Param(default=256, lo=2, hi=1024, small=2),
        "INDEX_BITS": Param(default=17, lo=1, hi=20, small=13),
        "ADDR_BITS": Param(default=21, lo=1, hi=23, small=2),
        "TOKEN_BITS": Param(default=17, lo=1, hi=17, small=2),
        "LEAVES": Param(default=49664, lo=16, hi=2**22, small=16),
        "MIDS": Param(default=1280, lo=16, hi=2**16, small=16),
        "PORTS": Param(default=2, lo=1, hi=2, small=2),
    }

    def __init__(
        self,
        *,
        TABLES: int = PARAMS["TABLES"].default,
        INDEX_BITS: int = PARAMS["INDEX_BITS"].default,
        ADDR_BITS: int = PARAMS["ADDR_BITS"].default,
        TOKEN_BITS: int = PARAMS["TOKEN_BITS"].default,
        LEAVES: int = PARAMS["LEAVES"].default,
        MIDS: int = PARAMS["MIDS"].default,
        PORTS: int = PARAMS["PORTS"].default,
    ) -> None:
        given = {"TABLES": TABLES, "INDEX_BITS": INDEX_BITS, "ADDR_BITS": ADDR_BITS}
        given |= {"TOKEN_BITS": TOKEN_BITS, "LEAVES": LEAVES, "MIDS": MIDS, "PORTS": PORTS}
        p = check_params(self.PARAMS, given)
        self.TABLES, self.INDEX_BITS = p["TABLES"], p["INDEX_BITS"]
        self.ADDR_BITS, self.TOKEN_BITS = p["ADDR_BITS"], p["TOKEN_BITS"]
        self.LEAVES, self.MIDS, self.PORTS = p["LEAVES"], p["MIDS"], p["PORTS"]
        ib, ab, tb = self.INDEX_BITS, self.ADDR_BITS, self.TOKEN_BITS
        pte = pte_layout(ab, tb)
        members = {
            "cmd": In(stream.Signature(cmd_layout(self.TABLES, ib, ab, tb))),
            "out": Out(stream.Signature(out_layout(ib, ab, tb))),
            "busy": Out(1),
        }
        for k in range(self.PORTS):
            members[f"rd{k}"] = In(
                stream.Signature(read_layout(self.TABLES, ib), always_ready=True)
            )
            members[f"rd{k}_rsp"] = Out(stream.Signature(pte, always_ready=True))
        members |= {
            "leaves_free": Out(range(self.LEAVES + 1), init=self.LEAVES),
            "mids_free": Out(range(self.MIDS + 1), init=self.MIDS),
            "error": Out(1),
        }
        super().__init__(_PortSignature(members))

    # ------------------------------------------------------------------ addresses
    def _root_addr(self, t: Value, i: Value) -> Value:
        _, _, rb = level_bits(self.INDEX_BITS)
        return Cat(i[self.INDEX_BITS - rb :], t) if rb else t

    def _mid_addr(self, mid: Value, i: Value) -> Value:
        lb, mb, _ = level_bits(self.INDEX_BITS)
        return Cat(i[lb : lb + mb], mid) if mb else mid

    def _leaf_addr(self, leaf: Value, i: Value) -> Value:
        lb, _, _ = level_bits(self.INDEX_BITS)
        return Cat(i[:lb], leaf)

    # ------------------------------------------------------------------ elaborate
    def elaborate(self, platform) -> Module:
        m = Module()
        lb, mb, rb = level_bits(self.INDEX_BITS)
        mpb, lpb = page_bits(self.MIDS), page_bits(self.LEAVES)
        pte = pte_layout(self.ADDR_BITS, self.TOKEN_BITS)
        m.submodules.root = self.root = memory.Memory(shape=mpb, depth=self.TABLES << rb, init=[])
        m.submodules.mid = self.mid = memory.Memory(shape=lpb, depth=self.MIDS << mb, init=[])
        m.submodules.leaf = self.leaf = memory.Memory(
            shape=pte.size, depth=self.LEAVES << lb, init=[]
        )
        # the cursor: {mid: mpb, leaf: lpb}, mid in the low bits
        m.submodules.cursor = self.cursor = memory.Memory(
            shape=mpb + lpb, depth=self.TABLES, init=[]
        )
        m.submodules.leaf_alloc = la = PageAllocator(PAGES=self.LEAVES)
        m.submodules.mid_alloc = ma = PageAllocator(PAGES=self.MIDS)
        self.la, self.ma = la, ma
        self.state = SimpleNamespace(rd=[])
        # write ports first (the read ports are created by the lookups and the walker)
        self.root_wr = self.root.write_port()
        self.mid_wr = self.mid.write_port()
        self.leaf_wr = self.leaf.write_port()
        self.cursor_wr = self.cursor.write_port()
        for k in range(self.PORTS):
            self._lookup(m, getattr(self, f"rd{k}"), getattr(self, f"rd{k}_rsp"))
        append_busy = self._append(m)
        walk_busy = self._walker(m)
        err = Signal()
        fault = Signal()  # the allocators' outcomes of the cycle before (registers)
        m.d.comb += fault.eq(la.no_page | ma.no_page | la.error | ma.error)
        m.d.sync += err.eq(err | fault)
        m.d.comb += [
            self.error.eq(err | fault),
            self.busy.eq(append_busy | walk_busy),
            self.leaves_free.eq(la.free_pages),
            self.mids_free.eq(ma.free_pages),
        ]
        return m

    def _lookup(self, m: Module, rd, rsp) -> None:
        """One lookup port: root, mid and leaf reads in three pipelined cycles."""
        root = self.root.read_port()
        mid = self.mid.read_port()
        leaf = self.leaf.read_port()
        v1, v2, v3 = Signal(), Signal(), Signal()
        i1 = Signal(self.INDEX_BITS)
        i2 = Signal(self.INDEX_BITS)
        m.d.comb += [
            root.addr.eq(self._root_addr(rd.payload.t, rd.payload.i)),
            root.en.eq(rd.valid),
            mid.addr.eq(self._mid_addr(root.data, i1)),
            mid.en.eq(v1),
            leaf.addr.eq(self._leaf_addr(mid.data, i2)),
            leaf.en.eq(v2),
            rsp.valid.eq(v3),
            rsp.payload.eq(leaf.data),
        ]
        m.d.sync += [v1.eq(rd.valid), v2.eq(v1), v3.eq(v2), i1.eq(rd.payload.i), i2.eq(i1)]
        self.state.rd.append(
            SimpleNamespace(v=(v1, v2, v3), i=(i1, i2), data=(root.data, mid.data, leaf.data))
        )

    def _append(self, m: Module) -> Value:
        """APPEND: allocations and the cursor read in the acceptance cycle, the
        writes in the next (stage A). Returns stage A's valid."""
        lb, mb, _ = level_bits(self.INDEX_BITS)
        cmd, la, ma = self.cmd, self.la, self.ma
        take = Signal()
        new_leaf = Signal()
        new_mid = Signal()
        m.d.comb += [
            take.eq(cmd.valid & cmd.ready & (cmd.payload.kind == BtCmd.APPEND)),
            new_leaf.eq(cmd.payload.i[:lb] == 0),
            new_mid.eq(cmd.payload.i[: lb + mb] == 0),
            la.alloc.eq(take & new_leaf),
            ma.alloc.eq(take & new_mid),
        ]
        cur_rd = self.cursor.read_port()
        m.d.comb += [cur_rd.addr.eq(cmd.payload.t), cur_rd.en.eq(take)]
        # stage A registers
        a_v = Signal()
        a_t = Signal(idx_bits(self.TABLES))
        a_i = Signal(self.INDEX_BITS)
        a_pte = Signal(len(cmd.payload.pte.as_value()))
        a_leaf = Signal()
        a_mid = Signal()
        m.d.sync += [
            a_v.eq(take),
            a_t.eq(cmd.payload.t),
            a_i.eq(cmd.payload.i),
            a_pte.eq(cmd.payload.pte),
            a_leaf.eq(new_leaf),
            a_mid.eq(new_mid),
        ]
        # the previous stage A's cursor (a back-to-back APPEND to its table reads it here)
        last_v = Signal()
        last_t = Signal.like(a_t)
        last_cur = Signal(len(cur_rd.data))
        fwd = Signal()
        m.d.comb += fwd.eq(last_v & (last_t == a_t))
        cur = Signal(len(cur_rd.data))
        m.d.comb += cur.eq(Mux(fwd, last_cur, cur_rd.data))
        mpb = page_bits(self.MIDS)
        mid_ptr = Signal(mpb)
        leaf_ptr = Signal(page_bits(self.LEAVES))
        ok = Signal()  # every node it needs was allocated
        m.d.comb += [
            mid_ptr.eq(Mux(a_mid, ma.page, cur[:mpb])),
            leaf_ptr.eq(Mux(a_leaf, la.page, cur[mpb:])),
            ok.eq(a_v & (~a_leaf | la.page_valid) & (~a_mid | ma.page_valid)),
        ]
        m.d.sync += [
            last_v.eq(ok),
            last_t.eq(a_t),
            last_cur.eq(Cat(mid_ptr, leaf_ptr)),
        ]
        self.a_ok = ok
        self.state.a = SimpleNamespace(
            v=a_v,
            t=a_t,
            i=a_i,
            pte=a_pte,
            leaf=a_leaf,
            mid=a_mid,
            cur=cur_rd.data,
            last_v=last_v,
            last_t=last_t,
            last_cur=last_cur,
        )
        self.a_write = [
            (self.leaf_wr, self._leaf_addr(leaf_ptr, a_i), a_pte, ok),
            (self.mid_wr, self._mid_addr(mid_ptr, a_i), leaf_ptr, ok & a_leaf),
            (self.root_wr, self._root_addr(a_t, a_i), mid_ptr, ok & a_mid),
        ]
        self.a_cursor = (a_t, Cat(mid_ptr, leaf_ptr), ok)
        return a_v

    def _walker(self, m: Module) -> Value:
        """WRITE and CUT: a walk of ``j = c .. n - 1`` (a WRITE: ``j = i``), one index per
        cycle, stages S0 (root read) .. S3 (the beat on ``out``). Returns its busy."""
        ib = self.INDEX_BITS
        lb, mb, _ = level_bits(ib)
        cmd, la, ma, out = self.cmd, self.la, self.ma, self.out
        root = self.root.read_port()
        mid = self.mid.read_port()
        leaf = self.leaf.read_port()

        running = Signal()
        is_cut = Signal()
        w_t = Signal(idx_bits(self.TABLES))
        w_pte = Signal(len(cmd.payload.pte.as_value()))
        j = Signal(ib + 1)  # the next index to issue
        n = Signal(ib + 1)  # the end
        v1, v2, v3 = Signal(), Signal(), Signal()
        j1, j2, j3 = Signal(ib), Signal(ib), Signal(ib)
        first1, first2 = Signal(), Signal()
        m2 = Signal.like(root.data)  # the mid node of j2
        stall = Signal()
        issue = Signal()
        m.d.comb += [
            cmd.ready.eq(~running),
            stall.eq(v3 & ~out.ready),
            issue.eq(running & (j != n) & ~stall),
        ]

        # acceptance: latch the command (a CUT with c > n is taken as c == n)
        take = Signal()
        cut = Signal()
        m.d.comb += [
            take.eq(cmd.valid & ~running & (cmd.payload.kind != BtCmd.APPEND)),
            cut.eq(cmd.payload.kind == BtCmd.CUT),
        ]
        c_ext = Signal(ib + 1)
        m.d.comb += c_ext.eq(cmd.payload.i)
        # c > n: the carry out of n + ~c (n - c borrows)
        diff = prefix_add(m, cmd.payload.n, ~c_ext, ib + 2, "cut_order", keep=True)
        c_above = ~diff[ib + 1]
        i_inc = prefix_add(m, c_ext, Const(0, ib + 1), ib + 1, "write_end", cin=Const(1, 1))
        with m.If(take):
            m.d.sync += [
                running.eq(1),
                is_cut.eq(cut),
                w_t.eq(cmd.payload.t),
                w_pte.eq(cmd.payload.pte),
                j.eq(c_ext),
                n.eq(Mux(cut, Mux(c_above, c_ext, cmd.payload.n), i_inc)),
            ]
        with m.Elif(running & (j == n) & ~v1 & ~v2 & ~v3):
            m.d.sync += running.eq(0)

        # S0: issue j
        j_inc = prefix_add(m, j, Const(0, ib + 1), ib + 1, "walk_inc", cin=Const(1, 1), keep=True)
        first0 = Signal()
        m.d.sync += first0.eq(take)  # the first issue cycle of the walk
        with m.If(issue):
            m.d.sync += j.eq(j_inc)
        m.d.comb += [root.addr.eq(self._root_addr(w_t, j[:ib])), root.en.eq(~stall)]
        with m.If(~stall):
            m.d.sync += [
                v1.eq(issue),
                j1.eq(j[:ib]),
                first1.eq(first0),
                v2.eq(v1),
                j2.eq(j1),
                first2.eq(first1),
                m2.eq(root.data),
                v3.eq(v2 & is_cut),
                j3.eq(j2),
            ]
        # S1: mid read; a CUT frees the mid node at its first index
        m.d.comb += [mid.addr.eq(self._mid_addr(root.data, j1)), mid.en.eq(~stall)]
        m.d.comb += [
            ma.push.eq(v1 & ~stall & is_cut & (j1[: lb + mb] == 0)),
            ma.push_page.eq(root.data),
        ]
        # S2: leaf read (CUT) or write (WRITE); a CUT frees the leaf node at its first
        # index, and sets the cursor from its first index
        m.d.comb += [leaf.addr.eq(self._leaf_addr(mid.data, j2)), leaf.en.eq(~stall)]
        m.d.comb += [
            la.push.eq(v2 & ~stall & is_cut & (j2[:lb] == 0)),
            la.push_page.eq(mid.data),
        ]
        self._ports(m, v2 & ~is_cut, self._leaf_addr(mid.data, j2), w_pte)
        self._cursor_port(m, v2 & ~stall & is_cut & first2, w_t, Cat(m2, mid.data))
        self.state.w = SimpleNamespace(
            running=running,
            is_cut=is_cut,
            t=w_t,
            pte=w_pte,
            j=j,
            n=n,
            m2=m2,
            v=(v1, v2, v3),
            js=(j1, j2, j3),
            first=(first0, first1, first2),
            data=(root.data, mid.data, leaf.data),
        )
        # S3: the beat
        m.d.comb += [out.valid.eq(v3), out.payload.i.eq(j3), out.payload.pte.eq(leaf.data)]
        return running

    def _ports(self, m: Module, w_en: Value, w_addr: Value, w_data: Value) -> None:
        """The tree's write ports: stage A's writes, or the WRITE's PTE (never both)."""
        (lw, la_addr, la_data, la_en), *others = self.a_write
        m.d.comb += [
            lw.addr.eq(Mux(w_en, w_addr, la_addr)),
            lw.data.eq(Mux(w_en, w_data, la_data)),
            lw.en.eq(w_en | la_en),
        ]
        for port, addr, value, en in others:
            m.d.comb += [port.addr.eq(addr), port.data.eq(value), port.en.eq(en)]

    def _cursor_port(self, m: Module, c_en: Value, c_t: Value, c_data: Value) -> None:
        """The cursor's write port: stage A's, or a CUT's (never both)."""
        a_t, a_data, a_en = self.a_cursor
        cw = self.cursor_wr
        m.d.comb += [
            cw.addr.eq(Mux(c_en, c_t, a_t)),
            cw.data.eq(Mux(c_en, c_data, a_data)),
            cw.en.eq(c_en | a_en),
        ]
