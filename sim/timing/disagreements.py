"""Every gap between the article's arithmetic and the first-principles model, in numbers.

The prose is data: :data:`TOPICS` holds one :class:`Topic` per gap, whose
texts are :meth:`str.format` templates over the numbers :func:`facts`
computes for a profile (the views, the step, and derived quantities named in
the templates). Besides Python's format specifications a template may write
``{x:gb}`` (bytes as ``"1.23 GB"``) and ``{x:SPEC/D}`` or ``{x:SPEC*M}``
(``x / D`` or ``x * M`` formatted with ``SPEC``, e.g. ``{bw:g/1e12} TB/s``).
:func:`disagreements` renders the topics that apply to the profile.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from typing import Any

from sim.cycles import accept_cycles as cycle_model
from sim.timing.acceptance import chain_alpha
from sim.timing.phases import prefetch_capacity, verify_time
from sim.timing.profiles import Profile, load_profile
from sim.timing.step import step_time
from sim.timing.views import article_of, article_view, roofline_view

__all__ = ["TOPICS", "Disagreement", "Topic", "disagreements", "facts"]


@dataclass(frozen=True)
class Disagreement:
    """One gap between the article's arithmetic and the first-principles model.

    Attributes
    ----------
    topic : str
    article : str
        What the article says or implies, with its number.
    first_principles : str
        The number from the stated hardware.
    ratio : float
        first principles / article (for times; see ``explanation`` for others).
    explanation : str
        Why, in numbers.
    """

    topic: str
    article: str
    first_principles: str
    ratio: float
    explanation: str


@dataclass(frozen=True)
class Topic:
    """The template of one :class:`Disagreement` (module docstring).

    ``ratio`` names the fact that is the ratio; ``when`` names a boolean fact
    that selects the topic (empty: always).
    """

    topic: str
    article: str
    first_principles: str
    ratio: str
    explanation: str
    when: str = ""


#: The article's two claims about the weight prefetch (70B class, 7B class).
PREFETCH_CLAIMS = {
    True: '"By the time the draft tree is ready, the first 4 transformer layers are already '
    'in verifier SRAM"',
    False: 'prefetch "hides HBM latency behind draft latency"',
}

TOPICS: tuple[Topic, ...] = (
    Topic(
        "throughput",
        "{av.tokens_per_s:,.0f} tokens/s ({av.step_us:,.0f} us/step, "
        "claim {a.claimed_tokens_per_s:,.0f})",
        "{st.tokens_per_s:,.0f} tokens/s ({st.total_us:,.0f} us/step, {st.overlap})",
        "r_throughput",
        "same {av.tokens_per_step:g} tokens/step; the step differs by draft {d_draft:+,.0f} us, "
        "verify {d_verify:+,.0f} us, tree+accept {d_accept:+,.1f} us (rows below)",
    ),
    Topic(
        "verify time",
        "{av.verify_us:,.0f} us for a {w.tree_nodes}-node tree",
        "{st.verify_us:,.0f} us ({st.verify.bound}-bound): HBM {v0.hbm_us:,.0f} us, "
        "compute {v0.compute_us:,.0f} us",
        "r_verify",
        "{t.name} at {t.bytes_per_param:g} B/param is {W:gb} of weights: {av.verify_us:,.0f} us "
        "needs {need_bw:.1f/1e12} TB/s ({need_bw_x:.1f}x the {hw.hbm_bw:g/1e12} TB/s HBM) and "
        "{v0.flops:.2f/1e12} TFLOP in {av.verify_us:,.0f} us needs {need_fl:.2f/1e15} PFLOP/s "
        "({need_fl_x:.1f}x the assumed {tf:.0f/1e12} TFLOP/s of 256 tensor cores at "
        "{hw.clock_hz:g/1e9} GHz)",
    ),
    Topic(
        "verifier balance",
        '"The compute is moderate (comparable to a 64-token prefill)"; verification '
        '"limited by HBM bandwidth"',
        "ridge {ridge:.0f} FLOP/B = {ridge_nodes:.0f} tree nodes at {t.bytes_per_param:g} B/param",
        "r_balance",
        "a {w.tree_nodes}-node tree does {flop_per_byte:.0f} FLOP per weight byte, "
        "{r_balance:.1f}x the ridge: compute-bound unless the verifier had "
        "{need_mem_bound:,.0f/1e12} TFLOP/s ({mem_bound_x:.1f}x the assumption). A {n_r}-node "
        "tree verifies in {st_r.verify_us:,.0f} us ({bound_r}-bound), a {st_r.total_us:,.0f} us "
        "step: it beats the {w.tree_nodes}-node tree if it emits more than {even:.2f} tokens "
        "per step (vs {st.tokens_per_step:g})",
    ),
    Topic(
        "weights on chip",
        '"For models larger than ~7B at FP8, the verifier streams weights from HBM" '
        "(so a 7B would not)",
        "{W:gb} of weights vs {hw.verifier_sram_bytes:.0f/1048576} MiB verifier SRAM",
        "w_over_sram",
        "the weights are {w_over_sram:.1f}x the verifier SRAM and {w_over_pool:.1f}x the KV "
        "pool: a 7B streams from HBM too, {w_pass_s:,.0f*1e6} us per pass at "
        "{hw.hbm_bw:g/1e12} TB/s",
        when="small",
    ),
    Topic(
        "70B weight traffic",
        '"~3 ms" per step, HBM-bound at ~8 TB/s: {implied:gb} streamed = '
        "{implied_bits:.2f} bits/param",
        "{W:gb} at {t.bytes_per_param:g} B/param = {w_pass_s:.2f*1e3} ms",
        "w_over_implied",
        "{t.params:.0f/1e9}B parameters at FP8 take {w_pass_s:.2f*1e3} ms to stream once at "
        "{hw.hbm_bw:g/1e12} TB/s; 3 ms would need {w_3ms:.1f/1e12} TB/s or "
        "{implied_bits:.1f}-bit weights",
        when="large",
    ),
    Topic(
        "70B layer count",
        'figure: "32 layers × FP8 matmul"',
        "{t.name}: {t.layers} layers of {w_layer:gb}",
        "layers_over_32",
        "with 32 layers each would hold {w_32:gb}; the per-layer figures (prefetch of L1-L4) "
        "are off by {layers_over_32:.1f}x",
        when="large",
    ),
    Topic(
        "weight prefetch",
        "{prefetch_claim}",
        "{pref_bytes:gb} prefetched, saving {saving:,.0f} us of verify",
        "r_prefetch",
        "the {st.draft_us:,.0f} us draft window could move {window_bytes:gb}, but only {cap:gb} "
        "of verifier SRAM is free ({cap_layers:.2f} layers of {w_layer:gb}; 4 layers = "
        "{pref_layers:gb}); with a {v0.bound}-bound verify the saving is {saving_frac:.1%}",
    ),
    Topic(
        "draft per token",
        '{a.draft_us_per_token:g} us/token; "~4 TFLOPS INT4 — enough for a 250M-parameter '
        'draft model in ~30 microseconds per token"',
        "{draft_us_tok:.1f} us/token ({d.params:.0f/1e6}M MACs at {macs:.2f/1e12} TMAC/s), "
        "{draft_attn_us:.1f} us with attention",
        "r_draft_tok",
        "4 x 32x32 MACs at 1 GHz = {macs:.2f/1e12} TMAC/s; a draft token is one MAC per "
        "parameter; 250M in 30 us needs {need:.1f/1e12} TMAC/s ({need_x:.1f}x). Reading the "
        "weights from SRAM takes only {sram_read_s:.1f*1e6} us: the draft is compute-bound, so "
        "the 12x SRAM bandwidth does not make it 12x faster",
    ),
    Topic(
        "draft fits SRAM",
        '"~240M parameters = ~480 MB at FP16, but at INT4 = ~60 MB" in 64 MB SRAM',
        "{d.params:.0f/1e6}M x {d.bytes_per_param:g} B = {d.weight_bytes:.0f/1e6} MB vs "
        "{da.sram_bytes:.0f/1048576} MiB",
        "r_draft_sram",
        "INT4 is a quarter of FP16's 480 MB, i.e. 120 MB, not 60 MB; the {excess:.0f/1e6} MB "
        "excess streams from HBM every draft pass ({excess_s:.1f*1e6} us/pass, hidden under "
        "the {pass_compute:.0f} us of compute per pass). Fitting 64 MiB at INT4 needs <= "
        "{int4_params:.0f/1e6}M parameters",
    ),
    Topic(
        "draft tokens vs tree nodes",
        "draft {a.draft_tokens} tokens, verify a {w.tree_nodes}-node tree",
        "{draft_nodes} draft nodes from {w.draft_evals} evaluations",
        "r_nodes",
        "consistent only if {w.draft_evals} expanded nodes have {children_each:.1f} top-k "
        "children each (EAGLE-2); drafting every node would take {draft_nodes} x "
        "{draft_us_tok:.1f} = {all_nodes_us:.2f/1e3} ms",
    ),
    Topic(
        "accept/commit",
        '"~{a.accept_us:g} microsecond", "single-cycle decision"',
        "{c.post_verify:,} cycles = {st.accept_us:.2f} us at {hw.clock_hz:g/1e9} GHz",
        "r_accept",
        "the decision is {c.decide} cycles and the commit {c.commit}, but the extra token's "
        "sampler streams V = {t.vocab:,} weights twice at LANES = {tm.lanes}: {c.sampler:,} "
        "cycles, after {c.load} cycles of loading {w.tree_nodes} nodes; LANES = 16 (SPEC max) "
        "gives {c16.post_verify:,} cycles; 1 us needs LANES >= {lanes_1us}",
    ),
    Topic(
        "tokens per step",
        '"~5 accepted tokens" per step, divided into the step',
        "accepted = {w.accepted} + 1 extra token = {emitted} emitted (SPEC §3.1)",
        "r_tokens",
        "read as 5 emitted tokens (used by both views). If 5 were accepted draft tokens the "
        "step would emit 6 (+20% tokens/s in both views). 4 accepted at depth {w.tree_depth} "
        "is a chain-equivalent alpha of {alpha:.3f} (SPEC §7 table: 93.4% at draft length 10)",
    ),
    Topic(
        "KV pool context",
        '4 GB holds "~{claim_ctx_k}K context" ({model_class}, FP8 KV)',
        "{kv_tok:.0f/1024} KiB/token -> {ctx_fit:.1f/1024}K tokens",
        "r_ctx",
        "{t.layers} layers x 2 x {t.n_kv_heads} KV heads x {t.head_dim} x {t.kv_bytes:g} B = "
        "{kv_tok:.0f/1024} KiB per token; longer contexts spill to HBM ({spill_1k_s:.1f*1e6} us "
        "of HBM per 1K spilled tokens per step)",
    ),
    Topic(
        "GPU baseline",
        "H100 single stream: ~{lo:,.0f}-{hi:,.0f} tokens/s",
        "{g.name} calibrated: autoregressive {cv.ar.tokens_per_s:,.0f}, spec decode "
        "{cv.step.tokens_per_s:,.0f} tokens/s (roofline: {gv.ar.tokens_per_s:,.0f} and "
        "{gv.step.tokens_per_s:,.0f})",
        "r_gpu",
        "plain decoding streams {g.target.weight_bytes:gb} per token at "
        "{gc.hardware.hbm_bw:g/1e12} TB/s (the calibrated {eff:.0%} of "
        "{g.hardware.hbm_bw:g/1e12}) = {cv.ar.total_us:.2f/1e3} ms; the article's range is "
        "reachable only with speculative decoding ({cv.step.total_us:.2f/1e3} ms per "
        "{cv.step.tokens_per_step:g} tokens with the calibrated "
        "{gc.hardware.cpu_round_trip_us:.2f/1e3} ms of software loop per step)",
        when="gpu",
    ),
    Topic(
        "speedup over GPU",
        "5-10x over vanilla autoregressive GPU decoding",
        "{vs_gpu_ar:.1f}x ({st.overlap}); {vs_gpu_ar_best:.1f}x ({best_mode})",
        "r_speedup",
        "the article's own {av.tokens_per_s:,.0f} tokens/s is {article_vs_gpu_ar:.1f}x the "
        "calibrated GPU's autoregressive {cv.ar.tokens_per_s:,.0f}; over GPU speculative "
        "decoding SpecDecode-1 gains {vs_gpu_spec:.2f}x (calibrated; against the roofline GPU: "
        "{vs_gpu_ar_roofline:.1f}x and {vs_gpu_spec_roofline:.2f}x)",
        when="gpu",
    ),
)


class _Prose(string.Formatter):
    """:meth:`str.format` with the module docstring's ``gb``, ``/D`` and ``*M`` specs."""

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec == "gb":
            return f"{value / 1e9:.2f} GB"
        spec, op, scale = format_spec.rpartition("/")
        if op:
            return format(value / float(scale), spec)
        spec, op, scale = format_spec.rpartition("*")
        if op:
            return format(value * float(scale), spec)
        return format(value, format_spec)


_PROSE = _Prose()


def disagreements(profile: Profile) -> list[Disagreement]:
    """Every gap between :func:`article_view` and :func:`roofline_view`, in numbers.

    Raises
    ------
    ValueError
        A profile without an ``[article]`` section (a GPU baseline).
    """
    f = facts(profile)
    return [
        Disagreement(
            tp.topic,
            _PROSE.format(tp.article, **f),
            _PROSE.format(tp.first_principles, **f),
            f[tp.ratio],
            _PROSE.format(tp.explanation, **f),
        )
        for tp in TOPICS
        if not tp.when or f[tp.when]
    ]


def facts(profile: Profile) -> dict[str, Any]:
    """The numbers :data:`TOPICS` name, for a SpecDecode-1 profile."""
    p, a = profile, article_of(profile)
    av, rv = article_view(p), roofline_view(p)
    st = rv.step
    hw, t, d, w = p.hardware, p.target, p.draft, p.workload
    assert st.verify is not None and st.draft is not None and st.cycles is not None
    assert p.draft_accel is not None and p.kv_pool is not None and p.tree_manager is not None
    f: dict[str, Any] = dict(
        p=p,
        a=a,
        av=av,
        rv=rv,
        st=st,
        hw=hw,
        t=t,
        d=d,
        w=w,
        da=p.draft_accel,
        tm=p.tree_manager,
        c=st.cycles,
        W=t.weight_bytes,
        tf=hw.tensor_flops(t.bytes_per_param),
        v0=verify_time(
            p, tree_nodes=w.tree_nodes, tree_depth=w.tree_depth, context_len=w.context_len
        ),
        small=t.layers <= 40,
        large=t.layers > 40,
        gpu=bool(p.gpu_baseline),
        r_throughput=st.total_us / av.step_us,
        r_verify=st.verify_us / av.verify_us,
        d_draft=st.draft_us - av.draft_us,
        d_verify=st.verify_us - av.verify_us,
        d_accept=st.tree_us + st.accept_us - av.accept_us,
    )
    _verifier_facts(f)
    _draft_facts(f)
    _tree_manager_facts(f)
    if f["gpu"]:
        _gpu_facts(f)
    return f


def _verifier_facts(f: dict[str, Any]) -> None:
    """Verify time, verifier balance, weights on chip / 70B traffic, weight prefetch."""
    p, a, av, st, hw, t, w, W, tf, v0 = (
        f[k] for k in ("p", "a", "av", "st", "hw", "t", "w", "W", "tf", "v0")
    )
    f["need_bw"] = need_bw = W / (av.verify_us * 1e-6)
    f["need_fl"] = need_fl = v0.flops / (av.verify_us * 1e-6)
    f.update(need_bw_x=need_bw / hw.hbm_bw, need_fl_x=need_fl / tf)
    f["ridge"] = ridge = tf / hw.hbm_bw  # FLOP per byte
    f["ridge_nodes"] = ridge_nodes = ridge * t.bytes_per_param / 2.0
    f["need_mem_bound"] = need_mem_bound = 2.0 * w.tree_nodes * t.params / (W / hw.hbm_bw)
    f["n_r"] = n_r = max(w.tree_depth + 1, min(w.tree_nodes, round(ridge_nodes)))
    f["st_r"] = st_r = step_time(
        p,
        tree_nodes=n_r,
        tree_depth=w.tree_depth,
        accepted=w.accepted,
        context_len=w.context_len,
        overlap=st.overlap,
        draft_evals=min(w.draft_evals, n_r - 1),
    )
    f.update(
        flop_per_byte=2 * w.tree_nodes / t.bytes_per_param,
        r_balance=w.tree_nodes / ridge_nodes,
        mem_bound_x=need_mem_bound / tf,
        bound_r=st_r.verify.bound if st_r.verify else "-",
        even=st_r.total_us / st.total_us * st.tokens_per_step,
        w_over_sram=W / hw.verifier_sram_bytes,
        w_over_pool=W / p.kv_pool.bytes,
        w_pass_s=W / hw.hbm_bw,
        w_layer=W / t.layers,
        w_32=W / 32,
        w_3ms=W / 3e-3,
        layers_over_32=t.layers / 32,
    )
    f["implied"] = implied = a.claimed_step_us * 1e-6 * hw.hbm_bw
    f.update(implied_bits=8 * implied / t.params, w_over_implied=W / implied)
    f["cap"] = cap = prefetch_capacity(p, w.tree_nodes)
    f["pref_layers"] = pref_layers = 4 * W / t.layers
    sp = f["rv"].steps["prefetch"]
    f.update(
        prefetch_claim=PREFETCH_CLAIMS[f["large"]],
        pref_bytes=sp.prefetch_us * 1e-6 * hw.hbm_bw,
        saving=v0.total_us - sp.verify_us,
        r_prefetch=pref_layers / cap if f["large"] else 1.0,
        window_bytes=st.draft_us * 1e-6 * hw.hbm_bw,
        cap_layers=cap / (W / t.layers),
        saving_frac=(v0.total_us - sp.verify_us) / v0.total_us,
    )


def _draft_facts(f: dict[str, Any]) -> None:
    """Draft per token, draft fits SRAM, draft tokens vs tree nodes."""
    a, st, hw, d, w, da = (f[k] for k in ("a", "st", "hw", "d", "w", "da"))
    f["macs"] = macs = da.macs_per_cycle * hw.clock_hz
    f["draft_us_tok"] = draft_us_tok = d.params / macs * 1e6
    f["need"] = need = 250e6 / 30e-6
    spill = d.weight_bytes - da.sram_bytes
    f.update(
        draft_attn_us=st.draft.compute_us / w.draft_evals,
        r_draft_tok=draft_us_tok / a.draft_us_per_token,
        need_x=need / macs,
        sram_read_s=min(d.weight_bytes, da.sram_bytes) / da.sram_bw,
        r_draft_sram=d.weight_bytes / da.sram_bytes,
        excess=max(spill, 0),
        excess_s=max(spill, 0) / hw.hbm_bw,
        pass_compute=st.draft.compute_us / w.tree_depth,
        int4_params=da.sram_bytes / 0.5,
        draft_nodes=w.tree_nodes - 1,
        r_nodes=(w.tree_nodes - 1) / a.draft_tokens,
        children_each=(w.tree_nodes - 1) / w.draft_evals,
        all_nodes_us=(w.tree_nodes - 1) * draft_us_tok,
    )


def _tree_manager_facts(f: dict[str, Any]) -> None:
    """Accept/commit, tokens per step, KV pool context."""
    p, a, st, hw, t, w, c, tm = (f[k] for k in ("p", "a", "st", "hw", "t", "w", "c", "tm"))
    per_pass = (
        round(hw.clock_hz * 1e-6)
        - c.load
        - c.decide
        - (c.sampler - 2 * math.ceil(t.vocab / tm.lanes))
    ) // 2  # sampler beats per pass that fit in 1 us
    f["lanes_1us"] = math.ceil(t.vocab / per_pass) if per_pass > 0 else float("inf")
    f["c16"] = cycle_model(w.tree_nodes, t.vocab, 16, w.accepted, latency=tm.latency)
    f["r_accept"] = st.accept_us / a.accept_us if a.accept_us else math.inf
    f["alpha"] = chain_alpha(w.accepted, w.tree_depth)
    f.update(emitted=w.accepted + 1, r_tokens=(w.accepted + 1) / a.tokens_per_step)
    f["kv_tok"] = kv_tok = t.kv_bytes_per_token
    f["ctx_fit"] = ctx_fit = p.kv_pool.bytes / kv_tok
    claim_ctx = 128 * 1024 if f["small"] else 32 * 1024
    f.update(
        claim_ctx_k=claim_ctx // 1024,
        model_class="7B" if f["small"] else "70B",
        r_ctx=ctx_fit / claim_ctx,
        spill_1k_s=kv_tok * 1024 / hw.hbm_bw,
    )


def _gpu_facts(f: dict[str, Any]) -> None:
    """GPU baseline, speedup over GPU."""
    p, a, av, rv, st = (f[k] for k in ("p", "a", "av", "rv", "st"))
    f["g"] = g = load_profile(p.gpu_baseline)
    f["gv"] = gv = roofline_view(g)
    f["gc"] = g.calibrated()
    f["cv"] = cv = roofline_view(f["gc"])
    f["eff"] = f["gc"].hardware.hbm_bw / g.hardware.hbm_bw
    f["lo"], f["hi"] = a.gpu_claimed_tokens_per_s
    f["best_mode"] = best = p.overlap_modes[-1]
    f.update(
        r_gpu=cv.ar.tokens_per_s / f["lo"],
        vs_gpu_ar=st.tokens_per_s / cv.ar.tokens_per_s,
        vs_gpu_ar_best=rv.steps[best].tokens_per_s / cv.ar.tokens_per_s,
        r_speedup=st.tokens_per_s / av.tokens_per_s,
        article_vs_gpu_ar=av.tokens_per_s / cv.ar.tokens_per_s,
        vs_gpu_spec=st.tokens_per_s / cv.step.tokens_per_s,
        vs_gpu_ar_roofline=st.tokens_per_s / gv.ar.tokens_per_s,
        vs_gpu_spec_roofline=st.tokens_per_s / gv.step.tokens_per_s,
    )
