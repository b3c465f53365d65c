"""Top-K unit (SPEC §3.6): the ``K`` largest entries of a streamed draft distribution."""

from amaranth import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.common import Param, check_params, idx_bits, less_than, net, or_tree

__all__ = [
    "K_MAX",
    "K_BITS",
    "TopK",
    "beat_layout",
    "result_layout",
    "sort_pairs",
]

#: largest ``K`` (SPEC §3.6); the block always holds this many entries
K_MAX = 16
#: width of the ``k`` field (``0 .. 31``; ``1 .. K_MAX`` valid)
K_BITS = 5
#: width of the ``n`` field (``0 .. K_MAX``)
N_BITS = idx_bits(K_MAX + 1)


def beat_layout(lanes: int, prob_bits: int) -> data.StructLayout:
    """Input beat: ``lanes`` probabilities (token ``b*lanes + l`` of beat ``b`` in lane
    ``l``), ``k`` (read on a distribution's first beat only) and ``last``."""
    return data.StructLayout({"q": data.ArrayLayout(prob_bits, lanes), "k": K_BITS, "last": 1})


def result_layout(token_bits: int, prob_bits: int) -> data.StructLayout:
    """Output beat: ``n`` entries, ``token[r]`` / ``q[r]`` of rank ``r`` (zero from ``n`` on)."""
    return data.StructLayout(
        {
            "n": N_BITS,
            "token": data.ArrayLayout(token_bits, K_MAX),
            "q": data.ArrayLayout(prob_bits, K_MAX),
        }
    )


def sort_pairs(n: int) -> list[tuple[int, int]]:
    """Batcher's odd-even merge sort of ``n`` items (``n`` a power of two): the
    compare-exchange pairs ``(a, b)``, ``a < b``, stage by stage."""
    pairs = []
    p = 1
    while p < n:
        k = p
        while k >= 1:
            for j in range(k % p, n - k, 2 * k):
                for i in range(min(k, n - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p):
                        pairs.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return pairs


def _count_onehot(m: Module, bits: list[Value], name: str) -> list[Value]:
    """``oh[c] = (bits[0] + ... + bits[n-1] == c)`` for ``c`` in ``0 .. n``.

    The bits are sorted into a thermometer code ``t[c] = (count > c)`` by a
    sorting network of bits (a compare-exchange is one OR and one AND, so the
    network is ``log2(n) (log2(n) + 1) / 2`` gate levels), then
    ``oh[c] = t[c-1] & ~t[c]``: no adder and no decoder.
    """
    n = len(bits)
    if n == 0:
        return [Const(1, 1)]
    size = 1 << (n - 1).bit_length()
    t: list[Value | None] = list(bits) + [None] * (size - n)  # None: a padding 0
    for k, (a, b) in enumerate(sort_pairs(size)):  # ones first
        if t[b] is None:
            continue
        if t[a] is None:
            t[a], t[b] = t[b], None
            continue
        # named: each output is read twice, and an expression read twice is written twice
        t[a], t[b] = net(m, t[a] | t[b], f"{name}_h{k}"), net(m, t[a] & t[b], f"{name}_l{k}")
    t = [net(m, t[c], f"{name}_t{c}") for c in range(n)]
    return [(t[c - 1] if c else 1) & (~t[c] if c < n else 1) for c in range(n + 1)]


def _onehot_mux(items: list[tuple[Value, Value]], width: int) -> Value:
    """``OR(sel & value)`` over ``(sel, value)`` pairs with at most one ``sel`` set:
    one AND level and a balanced OR tree."""
    return or_tree([Mux(s, v, 0)[:width] for s, v in items]) if items else Const(0, width)


class TopK(wiring.Component):
    """Top-K unit: the ``min(K, S)`` largest entries of a quantised draft distribution.

    A *distribution* is the ``V`` quantised probabilities ``q[0] .. q[V-1]`` of
    one tree node (SPEC §3.6, ``PROB_BITS`` each), streamed on ``i`` ``LANES``
    per beat in token order (token ``b*LANES + l`` in lane ``l`` of beat
    ``b``), its final beat marked ``last`` and zero-padded to ``LANES``. ``k``
    is read from a distribution's first beat and ignored on the others. For
    every valid distribution the block emits one beat on ``o``: ``n = min(K,
    S)`` (``S`` the number of tokens with ``q > 0``) and the entries ``(token,
    q)`` of ranks ``0 .. n-1`` in rank order (larger ``q`` first, equal ``q``
    the lower token id first); ``token[r]`` and ``q[r]`` are 0 for ``r >= n``.
    An all-zero distribution gives ``n = 0``: not an error. Bit-exact with
    ``golden.topk.topk(q, K, prob_bits=PROB_BITS)``.

    The block holds the best ``K_MAX = 16`` entries seen so far as a sorted
    list (``K`` only masks the result) and merges each beat into it: stage 1
    sorts the beat's ``LANES`` entries, stage 2 merges the sorted beat with
    the held list in one cycle. Tokens arrive in increasing order, so a held
    entry with the same ``q`` always ranks first and a beat's lower lane
    before its higher one. Design rationale: ``docs/blocks/topk.md``.

    Invalid input: ``k = 0`` or ``k > 16`` on a distribution's first beat, or a
    distribution longer than ``2**TOKEN_BITS`` tokens, by the token sampler's
    rule for a pass (``hw.token_sampler``): more than ``MAX_BEATS =
    ceil(2**TOKEN_BITS / LANES)`` beats, or (only when ``LANES`` does not divide
    ``2**TOKEN_BITS``) a non-zero ``q`` in beat ``MAX_BEATS - 1`` at a token
    ``>= 2**TOKEN_BITS``. If the offending beat is taken at rising edge ``e``,
    ``error`` is high for the one cycle from edge ``e`` to edge ``e+1``; the
    block emits nothing for the distribution, consumes and drops the rest of
    it up to and including its ``last`` beat, and then takes the next one. The
    results of earlier distributions are not affected.

    Latency: if a distribution's last beat is taken at rising edge ``e``, its
    result is in the output FIFO at edge ``e+1`` and can be taken from ``o`` at
    edge ``e+2``: **2 cycles** after the last beat (``ceil(V / LANES) + 1``
    after the first). Throughput: ``i.ready`` is high every cycle while the
    output FIFO has room (always, if ``o`` is never stalled): one beat per
    cycle, distributions back to back, one result per cycle at best. While
    ``o`` is stalled, the FIFO (``OUT_DEPTH = 3``) fills and then ``i.ready``
    goes low.

    Parameters
    ----------
    LANES : int
        Probabilities per beat, ``1 .. 16`` (default 4).
    TOKEN_BITS : int
        Width of a token, ``1 .. 17``: distributions of up to ``2**TOKEN_BITS``
        tokens (SPEC §5, default 17).
    PROB_BITS : int
        Width of a quantised probability, ``8 .. 32`` (SPEC §5, default 16).

    Members
    -------
    i : In(stream.Signature(beat_layout(LANES, PROB_BITS)))
        Probability beats, each distribution ending with ``last``.
    o : Out(stream.Signature(result_layout(TOKEN_BITS, PROB_BITS)))
        One beat per valid distribution: ``n`` and the entries in rank order.
    error : Out(1)
        One-cycle pulse on invalid input.
    """

    OUT_DEPTH = 3

    #: the block's parameters (:class:`hw.common.Param`: default, range, small value)
    PARAMS = {
        "LANES": Param(default=4, lo=1, hi=16, small=2),
        "TOKEN_BITS": Param(default=17, lo=1, hi=17, small=4),
        "PROB_BITS": Param(default=16, lo=8, hi=32, small=8),
    }

    def __init__(
        self,
        *,
        LANES: int = PARAMS["LANES"].default,
        TOKEN_BITS: int = PARAMS["TOKEN_BITS"].default,
        PROB_BITS: int = PARAMS["PROB_BITS"].default,
    ) -> None:
        given = {"LANES": LANES, "TOKEN_BITS": TOKEN_BITS, "PROB_BITS": PROB_BITS}
        p = check_params(self.PARAMS, given)  # Python ints from here on
        self.LANES, self.TOKEN_BITS, self.PROB_BITS = (p[k] for k in given)
        #: most beats in one distribution
        self.MAX_BEATS = -(-(1 << self.TOKEN_BITS) // self.LANES)
        super().__init__(
            {
                "i": In(stream.Signature(beat_layout(self.LANES, self.PROB_BITS))),
                "o": Out(stream.Signature(result_layout(self.TOKEN_BITS, self.PROB_BITS))),
                "error": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        L, TB, PB, M = self.LANES, self.TOKEN_BITS, self.PROB_BITS, self.MAX_BEATS
        EW = PB + TB + 1  # an entry: Cat(q, token, valid)

        m.submodules.out = q = fifo.SyncFIFO(
            width=len(self.o.payload.as_value()), depth=self.OUT_DEPTH
        )
        m.d.comb += [
            self.o.valid.eq(q.r_rdy),
            self.o.payload.eq(q.r_data),
            q.r_en.eq(self.o.ready),
        ]

        # ---- stage 1 registers: the beat sorted (entries Cat(q, token, valid))
        s1_valid = Signal()
        s1_last = Signal()
        s1_bad = Signal()  # a bad beat: clears the held list, no result
        s1_e = [Signal(EW, name=f"s1_e{j}") for j in range(L)]
        kmask = Signal(K_MAX)  # kmask[r] = r < K of the distribution being merged

        # ---- stage 0: take a beat
        beat = self.i.payload
        fire = Signal()
        pend = Signal()  # stage 1 holds a result for the FIFO
        m.d.comb += [
            pend.eq(s1_valid & s1_last & ~s1_bad),
            self.i.ready.eq(q.level + pend < self.OUT_DEPTH),
            fire.eq(self.i.valid & self.i.ready),
        ]
        first = Signal(init=1)  # the next beat is a distribution's first
        drop = Signal()  # after an error: drop beats up to `last`
        cnt = Signal(idx_bits(M + 1))  # beats taken in this distribution
        # lane 0's token: Cat(0, cnt) when LANES is a power of 2, else base = cnt * LANES
        if L & (L - 1) == 0:
            tok0 = Cat(Const(0, (L - 1).bit_length()), cnt)
            restart = [first.eq(1), cnt.eq(0)]
            advance = [first.eq(0), cnt.eq(cnt + 1)]
        else:
            tok0 = base = Signal(TB + 1)
            restart = [first.eq(1), cnt.eq(0), base.eq(0)]
            advance = [first.eq(0), cnt.eq(cnt + 1), base.eq(base + L)]
        sorted_beat = self._sort_beat(m, beat, tok0)

        bad = Signal()
        k_bad = (beat.k == 0) | (beat.k > K_MAX)
        too_long = cnt == M
        if M * L > (1 << TB):  # lanes of beat M-1 past the vocabulary must be zero
            first_out = (1 << TB) - (M - 1) * L
            tail = or_tree([beat.q[j] != 0 for j in range(first_out, L)])
            too_long = too_long | ((cnt == M - 1) & tail)
        m.d.comb += bad.eq((first & k_bad) | too_long)

        m.d.sync += [s1_valid.eq(0), self.error.eq(0)]
        with m.If(fire):
            with m.If(drop):
                with m.If(beat.last):
                    m.d.sync += drop.eq(0)
            with m.Elif(bad):
                m.d.sync += [
                    self.error.eq(1),
                    s1_valid.eq(1),
                    s1_last.eq(1),
                    s1_bad.eq(1),
                    drop.eq(~beat.last),
                    *restart,
                ]
            with m.Else():
                m.d.sync += [s1_valid.eq(1), s1_last.eq(beat.last), s1_bad.eq(0)]
                m.d.sync += [s1_e[j].eq(sorted_beat[j]) for j in range(L)]
                with m.If(first):
                    m.d.sync += kmask.eq(Cat(beat.k > r for r in range(K_MAX)))
                with m.If(beat.last):
                    m.d.sync += restart
                with m.Else():
                    m.d.sync += advance

        self._merge(m, q, s1_valid, s1_last, s1_bad, s1_e, kmask)
        return m

    def _sort_beat(self, m: Module, beat: Value, tok0: Value) -> list[Value]:
        """Stage 1: the beat's entries ``Cat(q, token, q != 0)`` sorted by ``q``
        (larger first, equal ``q`` the lower lane first); ``tok0``: lane 0's token.

        Lane ``j`` goes to position ``rank[j]``, the number of lanes ahead of it
        (a lower lane with ``q >=``, a higher one with ``q >``): one comparator
        per pair of lanes, a count as a one-hot (:func:`_count_onehot`) and an
        AND-OR selection per position.
        """
        L, TB, PB = self.LANES, self.TOKEN_BITS, self.PROB_BITS
        EW = PB + TB + 1
        qs = [beat.q[j] for j in range(L)]
        if L & (L - 1) == 0:  # tok0 has zeros in its low bits: token = tok0 | j
            toks = [(tok0 | j)[:TB] for j in range(L)]
        else:
            toks = [(tok0 + j)[:TB] for j in range(L)]
        entries = [Cat(qs[j], toks[j], or_tree(qs[j])) for j in range(L)]
        if L == 1:
            return entries
        # gt[(a, b)] (a < b): q[b] > q[a], i.e. lane b ahead of lane a
        gt = {
            (a, b): less_than(m, qs[a], qs[b], f"sgt{a}_{b}")
            for a in range(L)
            for b in range(a + 1, L)
        }
        oh = []
        for j in range(L):
            ahead = [~gt[(a, j)] for a in range(j)] + [gt[(j, b)] for b in range(j + 1, L)]
            oh.append(_count_onehot(m, ahead, f"srank{j}"))
        return [
            net(m, _onehot_mux([(oh[j][p], entries[j]) for j in range(L)], EW), f"sorted{p}")
            for p in range(L)
        ]

    def _merge(
        self,
        m: Module,
        q: fifo.SyncFIFO,
        s1_valid: Value,
        s1_last: Value,
        s1_bad: Value,
        s1_e: list[Signal],
        kmask: Value,
    ) -> None:
        """Stage 2: merge the sorted beat into the held list of ``K_MAX`` entries; on
        the last beat, write the result (masked to ``K``) to ``q`` and clear the list.

        ``c[i][j] = new[j].q > held[i].q``: both lists are sorted, so row ``i``
        is a thermometer code over ``j`` (held entry ``i`` moves down by its
        count of ones) and column ``j`` one over ``i`` (new entry ``j`` lands
        after its count of zeros); a position is one AND of two neighbouring compare bits,
        and output slot ``r`` an AND-OR over the held entries ``r - LANES .. r``
        and the new ones.
        """
        L, TB, PB = self.LANES, self.TOKEN_BITS, self.PROB_BITS
        EW = PB + TB + 1
        held = [Signal(EW, name=f"held{i}") for i in range(K_MAX)]
        hq = [h[:PB] for h in held]
        nq = [e[:PB] for e in s1_e]
        c = [[less_than(m, hq[i], nq[j], f"mgt{i}_{j}") for j in range(L)] for i in range(K_MAX)]
        slots = []
        for r in range(K_MAX):
            cand = []
            for i in range(max(0, r - L), r + 1):  # held i moves down by d = r - i
                d = r - i
                sel = (c[i][d - 1] if d else 1) & (~c[i][d] if d < L else 1)
                cand.append((sel, held[i]))
            for j in range(min(L, r + 1)):  # new j after p = r - j held entries
                p = r - j
                sel = (~c[p - 1][j] if p else 1) & c[p][j]
                cand.append((sel, s1_e[j]))
            slots.append(net(m, _onehot_mux(cand, EW), f"merged{r}"))
        with m.If(s1_valid):
            for r in range(K_MAX):
                m.d.sync += held[r].eq(Mux(s1_last, 0, slots[r]))

        # the result: ranks r < K with an entry (both thermometer codes)
        keep = Signal(K_MAX)
        m.d.comb += keep.eq(Cat(slots[r][EW - 1] for r in range(K_MAX)) & kmask)
        n = Signal(N_BITS)
        oh_n = [  # oh_n[x]: exactly x entries kept
            (keep[x - 1] if x else 1) & (~keep[x] if x < K_MAX else 1) for x in range(K_MAX + 1)
        ]
        m.d.comb += n.eq(
            Cat(or_tree([oh_n[x] for x in range(K_MAX + 1) if x >> b & 1]) for b in range(N_BITS))
        )
        res = Signal(result_layout(TB, PB))
        m.d.comb += res.n.eq(n)
        for r in range(K_MAX):
            m.d.comb += [
                res.q[r].eq(Mux(keep[r], slots[r][:PB], 0)),
                res.token[r].eq(Mux(keep[r], slots[r][PB : PB + TB], 0)),
            ]
        m.d.comb += [q.w_data.eq(res), q.w_en.eq(s1_valid & s1_last & ~s1_bad)]
