"""The operations (SPEC §4.2): decode, the entries each acts on, and the table's update.

One operation is taken per beat on ``op``, each in one cycle whatever the
number of entries it touches; the table after the edge that takes it is the
table after the operation:

* ``INSERT``: the lowest free entry and its page (``hw.kv_pool.insert``);
* ``COMMIT(seq, accept)``: every speculative entry of ``seq`` whose ``owner``
  bit is set in ``accept`` becomes committed, every other one is freed;
* ``FORK(seq = src, dst)``: ``dst`` is added to every committed entry ``src``
  sees;
* ``RELEASE(seq)``: ``seq`` is cleared from every entry; entries left with no
  sequence are freed.

A commit or release frees all its pages in the same edge: the vector of freed
entries is the vector of freed pages (entry ``i`` holds page ``i``).
"""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data

from hw.common import net, or_tree
from hw.kv_pool.bundles import Decoded, Enables, InsertChecks, Sets
from hw.kv_pool.layouts import Op
from hw.kv_pool.state import Dims, PendingInsert, Table
from hw.kv_pool.variant import Variant
from hw.kv_pool.vectors import match, onehot, select, seq_vec, wide

__all__ = ["decode", "operand_sets", "enables", "update"]


def decode(m: Module, dims: Dims, table: Table, pend: PendingInsert, o: data.View) -> Decoded:
    """Decode the beat on offer: opcode, range checks, the sequences' entries, the key."""
    S, N = dims.seqs, dims.n_nodes
    is_ins = o.op == Op.INSERT
    is_com = o.op == Op.COMMIT
    is_fork = o.op == Op.FORK
    is_rel = o.op == Op.RELEASE
    seq_ok = net(m, o.seq < S, "seq_ok")
    dst_ok = net(m, o.dst < S, "dst_ok")
    own_ok = net(m, o.owner < N, "own_ok")
    seq_oh = onehot(m, o.seq, S, "seq_oh")
    dst_oh = onehot(m, o.dst, S, "dst_oh")
    sbit = seq_vec(m, table.seqs_p, o.seq, "sbit")
    dbit = seq_vec(m, table.seqs_p, o.dst, "dbit")
    okey = Cat(o.layer, o.pos)
    lay = match(m, table.layer_p, o.layer, "lay")
    key = net(m, lay & match(m, table.pos_p, o.pos, "pos"), "key")
    # the pending insert's entry, as the per-entry vectors see it (its seqs are
    # one-hot pend_seq, its committed bit pend_com)
    p_seq = net(m, pend.ins_ok & (pend.pend_seq == o.seq), "p_seq")
    p_dst = net(m, pend.ins_ok & (pend.pend_seq == o.dst), "p_dst")
    return Decoded(
        o, is_ins, is_com, is_fork, is_rel, seq_ok, dst_ok, own_ok,
        seq_oh, dst_oh, sbit, dbit, okey, key, p_seq, p_dst,
    )  # fmt: skip


def operand_sets(m: Module, dims: Dims, table: Table, pend: PendingInsert, d: Decoded) -> Sets:
    """The entries a commit, fork or release acts on, and whether each set is empty
    (from the registers, with the pending entry forwarded)."""
    valid, valid_now, committed = table.valid, table.valid_now, table.committed
    sbit, o = d.sbit, d.o
    # commit: keep / drop among seq's speculative entries
    spec = net(m, valid_now & ~committed & sbit, "spec")
    spec_any = (valid & ~committed & sbit).any() | (d.p_seq & ~pend.pend_com)
    acc = select(m, table.owner_p, o.accept, "acc")
    # fork: committed entries src sees
    shared = net(m, valid_now & committed & sbit, "shared")
    shared_any = (valid & committed & sbit).any() | (d.p_seq & pend.pend_com)
    # release: entries seq sees, and those no other sequence sees
    seen = net(m, valid_now & sbit, "seen")
    seen_any = (valid & sbit).any() | d.p_seq
    E = dims.entries
    not_seq = [table.seqs_p[s] & wide(~d.seq_oh[s], E) for s in range(dims.seqs)]
    others = net(m, or_tree(not_seq), "others")
    dst_busy = net(m, (valid & d.dbit).any() | d.p_dst, "dst_busy")
    return Sets(spec, spec_any, acc, shared, shared_any, seen, seen_any, others, dst_busy)


def enables(m: Module, take: Signal, d: Decoded, ins: InsertChecks, sets: Sets) -> Enables:
    """The operation taken, past the error checks that gate it. A commit or release
    whose only possible error is an empty set (no speculative entry / nothing seen)
    needs no gating: the set it acts on is empty then, which keeps the wide
    reductions off the bulk-free path."""
    o = d.o
    ins_chk = net(m, take & d.is_ins & d.seq_ok & d.own_ok, "ins_chk")
    ins_go = net(m, ins_chk & ins.any_e & ins.any_p, "ins_go")  # pending at the next cycle
    com_ok = net(m, take & d.is_com & d.seq_ok & o.accept[0], "com_ok")
    rel_ok = net(m, take & d.is_rel & d.seq_ok, "rel_ok")
    fork_ok = net(
        m,
        take & d.is_fork & d.seq_ok & d.dst_ok & (o.seq != o.dst) & ~sets.dst_busy,
        "fork_ok",
    )
    return Enables(ins_chk, ins_go, com_ok, rel_ok, fork_ok)


def _write(planes: list[Signal], w_f: Signal, value: Value) -> list:
    """Write ``value`` into the field ``planes`` of the entries ``w_f``: a 2-to-1
    multiplexer per bit (a flip-flop enable after synthesis)."""
    return [
        q.eq(Cat(*[Mux(w_f[i], value[b], q[i]) for i in range(len(w_f))]))
        for b, q in enumerate(planes)
    ]


def update(
    m: Module,
    dims: Dims,
    table: Table,
    pend: PendingInsert,
    variant: Variant,
    d: Decoded,
    ins: InsertChecks,
    sets: Sets,
    en: Enables,
    take_vec: Value,
) -> Signal:
    """The table's next state after the operation taken (none: unchanged), and the
    pending insert's registers. Returns ``freed``, the pages freed (bit ``p``).

    An insert beat writes its fields (and ``committed``, ``seqs``) into every free
    entry, whether or not it succeeds: they are don't-care while an entry is
    invalid, so the one it takes gets them, and neither the priority encoder nor
    the checks are on the path to the planes (only ``valid`` waits, for the
    checks, next cycle). A pending insert's entry is not free (``valid_now``) if
    it is accepted."""
    E, P, EP, S = dims.entries, dims.pages, dims.ep, dims.seqs
    o, valid_now = d.o, table.valid_now
    ops = variant.entry_ops(d, sets, en)
    # pages freed: entry i holds page i
    freed = net(m, ops.fr[:EP] if EP == P else Cat(ops.fr[:EP], Const(0, P - EP)), "freed")
    w_f = net(m, ~valid_now & take_vec & wide(d.is_ins, E), "w_f")  # the fields written
    wr = variant.insert_writes(d, ins, sets, en)
    committed = table.committed
    m.d.sync += [
        table.valid.eq(valid_now & ~ops.fr),
        committed.eq((committed & ~w_f) | (w_f & wide(o.committed, E)) | ops.keep),
        table.free_p.eq((table.free_now & ~wr.w_p) | freed),
        *_write(table.layer_p, w_f, o.layer),
        *_write(table.pos_p, w_f, o.pos),
        *_write(table.owner_p, w_f, o.owner),
        pend.pend_r.eq(en.ins_go),
        *variant.pending_copies(ins.pc_com, ins.pc_dup),
        pend.pend_e.eq(wr.go_e),
        pend.pend_seq.eq(o.seq),
        pend.pend_com.eq(o.committed),
        pend.pend_key.eq(d.okey),
        pend.pend_own.eq(o.owner),
    ]
    for s in range(S):
        q = table.seqs_p[s]
        add = (q & ~w_f) | (w_f & wide(d.seq_oh[s], E)) | (wr.fork_add & wide(d.dst_oh[s], E))
        m.d.sync += q.eq(add & ~ops.rel_s[s])
    variant.after_update(d, ins, sets, ops)
    return freed
