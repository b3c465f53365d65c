"""Testbench: the token tree manager composition (hw/tree_manager.py), whole steps.

Per step: one ``advance`` of the RNG lanes, a random draft tree with random
``pt``/``qt`` (corners included) through mask generator and acceptance
sampler, then a random residual weight vector through the token sampler.
Model: ``golden.rng.LaneRNG`` (the lanes), ``golden.tree.mask_rows``,
``golden.accept.decide_detail`` and ``golden.sampler.sample_weights``: the
chip's accept phase of SPEC §1 bit for bit.
"""

from golden import accept, tree
from golden.rng import LaneRNG
from golden.sampler import sample_weights
from hw.accept_sampler import result_layout
from hw.accept_sampler import token_layout as acc_token_layout
from hw.token_sampler import beat_layout
from hw.token_sampler import token_layout as extra_layout
from hw.tree_manager import draft_layout
from hw.tree_mask_gen import row_layout
from tb.common import TB, StreamSink, StreamSource, params, random_step, report, run_block

STEPS = 150


class Strobe:
    """Drives a one-cycle pulse on a 1-bit input when ``fire()`` is called."""

    def __init__(self, tb: TB, sig) -> None:
        self.sig, self.pending, self.up = sig, 0, False
        sig.value = 0
        tb.add(self)

    def fire(self) -> None:
        self.pending += 1

    def drive(self) -> None:
        up = self.pending > 0
        if up:
            self.pending -= 1
        if up != self.up:
            self.sig.value = int(up)
            self.up = up

    def sample(self) -> None:
        pass


try:
    import cocotb
except ImportError:  # pragma: no cover
    cocotb = None

if cocotb is not None:

    @cocotb.test()
    async def steps(dut) -> None:
        P = params()
        N, TB_, PB, RB = P["N_NODES"], P["TOKEN_BITS"], P["PROB_BITS"], P["RAND_BITS"]
        LANES, WB = P["LANES"], P["WEIGHT_BITS"]
        tb = TB(dut)
        seed_src = StreamSource(tb, "seed", 64)
        src = StreamSource(tb, "i", draft_layout(N, TB_, PB), "random")
        w_src = StreamSource(tb, "w", beat_layout(LANES, WB), "random")
        rows = StreamSink(tb, "rows", row_layout(N), "random")
        res = StreamSink(tb, "result", result_layout(N), "random")
        toks = StreamSink(tb, "tokens", acc_token_layout(TB_), "random")
        extra = StreamSink(tb, "extra", extra_layout(TB_), "random")
        adv = Strobe(tb, dut.advance)
        await tb.start()
        seed = tb.rng.randrange(1 << 64)
        seed_src.send(seed)
        await tb.wait_for(lambda: not seed_src.queue and seed_src.current is None, what="seed")
        await tb.cycles(2)
        await tb.wait_for(lambda: dut.busy.value == 0, what="seeding")
        lanes = LaneRNG(seed, N)
        mism = checked = tot_tokens = 0
        for step in range(STEPS):
            adv.fire()
            await tb.cycles(3)
            out = lanes.next()
            u_all = (out >> (32 - RB)).astype(int).tolist()
            par, tok, pt, qt = random_step(tb.rng, N, PB, 17)
            for i in range(1, len(par)):
                src.send({"parent": par[i], "token": tok[i], "pt": pt[i], "qt": qt[i], "end": 0})
            src.send({"end": 1})
            n_res = len(res.received)
            await tb.wait_for(lambda n=n_res: len(res.received) > n, what="result")
            u = u_all[: len(par)]
            d = accept.decide_detail(par, pt, qt, u, rand_bits=RB, prob_bits=PB)
            got = res.received[-1][1]
            want = {"last": d.last, "path_mask": d.path_mask, "accepted": d.accepted}
            if got != want:
                mism += 1
                tb.log.error("seed %d step %d: result %s, want %s", tb.seed, step, got, want)
            tot_tokens += d.accepted
            await tb.wait_for(lambda t=tot_tokens: len(toks.received) >= t, what="tokens")
            V = tb.rng.randint(1, 40)
            w = [tb.rng.randrange(1 << WB) if tb.rng.random() < 0.7 else 0 for _ in range(V)]
            w[tb.rng.randrange(V)] = tb.rng.randint(1, (1 << WB) - 1)
            beats = [
                w[k : k + LANES] + [0] * (LANES - len(w[k : k + LANES])) for k in range(0, V, LANES)
            ]
            for _ in range(2):
                for j, b in enumerate(beats):
                    w_src.send({"w": b, "last": int(j == len(beats) - 1)})
            n_x = len(extra.received)
            await tb.wait_for(lambda n=n_x: len(extra.received) > n, what="extra token")
            want_x = sample_weights(w, int(out[0]))
            if extra.received[-1][1]["token"] != want_x:
                mism += 1
                tb.log.error(
                    "seed %d step %d: extra %s, want %d",
                    tb.seed,
                    step,
                    extra.received[-1][1],
                    want_x,
                )
            checked += 1
        # the accepted tokens, all steps, in order; the rows mirror every tree
        want_toks = []
        want_rows = 0
        # (recomputed from what was sent: the sources keep their history)
        sent = [b for _, b in src.sent]
        k = 0
        lanes = LaneRNG(seed, N)
        while k < len(sent):
            par, tk, pts, qts = [-1], [0], [0], [0]
            while not sent[k]["end"]:
                b = sent[k]
                par.append(b["parent"]), tk.append(b["token"]), pts.append(b["pt"])
                qts.append(b["qt"])
                k += 1
            k += 1
            u = (lanes.next() >> (32 - RB)).astype(int).tolist()[: len(par)]
            d = accept.decide_detail(par, pts, qts, u, rand_bits=RB, prob_bits=PB)
            want_toks += [tk[j] for j in d.path[1:]]
            want_rows += len(par)
            if [
                r["row"] for _, r in rows.received[want_rows - len(par) : want_rows]
            ] != tree.mask_rows(par):
                mism += 1
        if [t["token"] for _, t in toks.received] != want_toks:
            mism += 1
            tb.log.error("seed %d: accepted token stream differs", tb.seed)
        report("tree_manager", "steps", checked=checked, mismatches=mism, latency="")
        assert mism == 0, f"seed {tb.seed}: {mism} mismatches"


# ----------------------------------------------------------------------------- pytest
import pytest  # noqa: E402

from tb.common import FULL_ONLY  # noqa: E402


@pytest.mark.parametrize("n_nodes", [8, pytest.param(16, marks=FULL_ONLY)])
def test_tree_manager(n_nodes: int) -> None:
    run_block("tree_manager", {"N_NODES": n_nodes}, "tb.test_tree_manager")
