"""Timing and performance model (sim.cycles, sim.timing)."""

from __future__ import annotations

import math

import pytest

from golden.trees import chain_expected_accepted, full_tree
from sim import cycles, timing
from sim.timing import plots
from sim.timing.__main__ import main as timing_main

SD = ("specdecode1-7b", "specdecode1-70b")


@pytest.fixture(scope="module")
def p7():
    return timing.load_profile("specdecode1-7b")


@pytest.fixture(scope="module")
def p70():
    return timing.load_profile("specdecode1-70b")


# --------------------------------------------------------------------------- article view


@pytest.mark.parametrize(("name", "claim"), [("specdecode1-7b", 7100), ("specdecode1-70b", 1600)])
def test_article_view_reproduces_the_claims(name, claim):
    v = timing.article_view(timing.load_profile(name))
    assert v.claimed_tokens_per_s == claim
    assert abs(v.tokens_per_s / claim - 1) < 0.05
    assert abs(v.error) < 0.05
    assert v.step_us == pytest.approx(v.claimed_step_us, rel=0.05)


def test_article_view_arithmetic(p7, p70):
    v = timing.article_view(p7)
    assert (v.draft_us, v.verify_us, v.accept_us, v.step_us) == (500, 200, 1, 701)
    assert v.us_per_token == pytest.approx(140.2)
    v = timing.article_view(p70)
    assert v.step_us == 3001 and v.us_per_token == pytest.approx(600.2)


def test_gpu_profiles_have_no_article_view():
    with pytest.raises(ValueError, match="no \\[article\\]"):
        timing.article_view(timing.load_profile("h100-7b"))


# --------------------------------------------------------------------------- roofline, by hand


def test_roofline_hand_checked_7b(p7):
    """7B, FP8, 64-node depth-6 tree, 10 draft evaluations, empty context, no overlap."""
    st = timing.step_time(
        p7, tree_nodes=64, tree_depth=6, accepted=4, context_len=0, draft_evals=10, overlap="none"
    )
    # draft: 10 x 240M MACs + attention (2 x 1 layer x 4096 x 10 queries x 6 keys MACs)
    # on 4 x 32 x 32 MACs at 1 GHz
    draft_us = (10 * 240e6 + 2 * 1 * 4096 * 10 * 6) / 4.096e12 * 1e6
    assert st.draft_us == pytest.approx(draft_us)
    assert st.draft_us == pytest.approx(586.06, abs=0.01)
    # verify: 6.738e9 B at 8 TB/s = 842.3 us vs (2 x 6.738e9 x 64 + 4 x 32 x 4096 x 64 x 7)
    # FLOP at 524.288 TFLOP/s = 1645.6 us -> compute-bound
    flops = 2 * 6.738415616e9 * 64 + 4 * 32 * 4096 * 64 * 7
    assert st.verify is not None
    assert st.verify.hbm_us == pytest.approx(6.738415616e9 / 8e12 * 1e6)
    assert st.verify.hbm_us == pytest.approx(842.30, abs=0.01)
    assert st.verify.compute_us == pytest.approx(flops / 5.24288e14 * 1e6)
    assert st.verify.bound == "compute"
    assert st.verify_us == pytest.approx(1645.57, abs=0.01)
    # tree mask 64 + 2 cycles; accept 64 + 2 + 3 + (2 x 8000 + 2) cycles, at 1 GHz
    assert st.tree_us == pytest.approx(0.066)
    assert st.accept_us == pytest.approx(16.072)
    assert st.total_us == pytest.approx(draft_us + 0.066 + flops / 5.24288e8 + 16.072)
    assert st.tokens_per_step == 5
    assert st.tokens_per_s == pytest.approx(5e6 / st.total_us)


def test_roofline_hand_checked_70b_memory_bound(p70):
    """A 70B chain of 8 nodes is HBM-bound: 68.98 GB / 8 TB/s = 8,622 us."""
    st = timing.step_time(
        p70, tree_nodes=8, tree_depth=7, accepted=3, context_len=0, overlap="none"
    )
    assert st.verify is not None and st.verify.bound == "hbm"
    assert st.verify_us == pytest.approx(68.976648192e9 / 8e12 * 1e6)
    assert st.draft_evals == 7  # default: a chain's evaluations


def test_autoregressive_hand_checked(p7):
    ar = timing.ar_token_time(p7, context_len=0, overlap="none")
    assert ar.verify.bound == "hbm"
    assert ar.sample_us == pytest.approx(16.002)
    assert ar.total_us == pytest.approx(842.30195 + 16.002, abs=1e-3)
    g = timing.ar_token_time(timing.load_profile("h100-7b"), context_len=0)
    # (weights + one token's KV) / 3.35 TB/s + 20 us dispatch
    kv = 2 * 32 * 32 * 128
    assert g.total_us == pytest.approx((6.738415616e9 + kv) / 3.35e12 * 1e6 + 20)


def test_roofline_view_defaults_and_speedups(p7):
    rv = timing.roofline_view(p7)
    assert set(rv.steps) == {"none", "prefetch", "speculative"}
    assert rv.step is rv.steps["none"]
    assert rv.speedup_vs_ar() == pytest.approx(rv.step.tokens_per_s / rv.ar.tokens_per_s)
    assert rv.speedup_vs_ar() > 1


# --------------------------------------------------------------------------- overlap modes


@pytest.mark.parametrize("name", SD)
@pytest.mark.parametrize(("nodes", "depth", "evals"), [(64, 6, 10), (16, 6, 10), (4, 3, 3)])
def test_overlap_modes_ordered(name, nodes, depth, evals):
    p = timing.load_profile(name)
    kw = dict(tree_nodes=nodes, tree_depth=depth, accepted=2, context_len=1024, draft_evals=evals)
    none, pre, spec = (timing.step_time(p, overlap=m, **kw) for m in timing.OVERLAP_MODES)
    assert pre.total_us <= none.total_us
    assert spec.step_hit_us <= spec.step_miss_us
    # at worst: the rollback cycle and the speculative draft's HBM traffic
    assert (
        spec.total_us <= pre.total_us + 1e-3 + spec.spec_hbm_bytes / p.hardware.hbm_bw * 1e6 + 1e-9
    )
    for s in (none, pre, spec):
        assert s.total_us >= s.verify_hit_us + s.accept_us


def test_prefetch_helps_a_memory_bound_verify(p70):
    kw = dict(tree_nodes=16, tree_depth=6, accepted=3, context_len=1024, draft_evals=8)
    none = timing.step_time(p70, overlap="none", **kw)
    pre = timing.step_time(p70, overlap="prefetch", **kw)
    assert none.verify is not None and none.verify.bound == "hbm"
    cap = 512 * 2**20 - 2 * 16 * 8192 * 2  # verifier SRAM minus activations
    assert pre.verify_us == pytest.approx(none.verify_us - cap / 8e12 * 1e6)
    assert pre.prefetch_us == pytest.approx(cap / 8e12 * 1e6)
    assert none.prefetch_us == 0


def test_speculative_waste_and_hits(p7):
    kw = dict(tree_nodes=64, tree_depth=6, accepted=4, context_len=2048, draft_evals=10)
    pre = timing.step_time(p7, overlap="prefetch", **kw)
    miss = timing.step_time(p7, overlap="speculative", p_right=0.0, **kw)
    hit = timing.step_time(p7, overlap="speculative", p_right=1.0, **kw)
    # miss: the prefetch step plus one rollback cycle; the whole speculative draft wasted
    # (it is shorter than verify + accept)
    assert miss.total_us == pytest.approx(pre.total_us + 1e-3)
    assert miss.wasted_us == pytest.approx(miss.draft_us)
    assert miss.wasted_draft_evals == pytest.approx(10)
    # hit: the draft is hidden under verification
    assert hit.wasted_us == 0 and hit.wait_us == 0
    assert hit.total_us == pytest.approx(hit.verify_hit_us + hit.accept_us)
    # default: p = alpha ** (depth + 1), alpha the chain equivalent of 4 accepted at depth 6
    dflt = timing.step_time(p7, overlap="speculative", **kw)
    alpha = timing.chain_alpha(4, 6)
    assert dflt.p_right == pytest.approx(alpha**7)
    assert dflt.total_us == pytest.approx(alpha**7 * hit.total_us + (1 - alpha**7) * miss.total_us)
    assert dflt.wasted_us == pytest.approx((1 - alpha**7) * miss.wasted_us)


def test_speculative_draft_traffic_slows_a_memory_bound_verify(p70):
    kw = dict(tree_nodes=16, tree_depth=6, accepted=3, context_len=1024, draft_evals=8)
    pre = timing.step_time(p70, overlap="prefetch", **kw)
    miss = timing.step_time(p70, overlap="speculative", p_right=0.0, **kw)
    spill = 240e6 * 0.5 - 64 * 2**20  # draft weights beyond the 64 MiB draft SRAM, per pass
    assert miss.spec_hbm_bytes == pytest.approx(6 * spill)  # the draft is shorter than verify
    assert miss.total_us == pytest.approx(pre.total_us + 1e-3 + 6 * spill / 8e12 * 1e6)
    assert miss.total_us > pre.total_us + 1e-3


def test_speculative_hit_waits_for_a_long_draft(p7):
    # 63 evaluations (~4 ms of drafting) outlast a 2-node verification: the verifier waits
    st = timing.step_time(
        p7,
        tree_nodes=64,
        tree_depth=63,
        accepted=10,
        context_len=0,
        overlap="speculative",
        p_right=1.0,
    )
    assert st.wait_us > 0
    assert st.total_us == pytest.approx(st.wait_us + st.verify_hit_us + st.accept_us)
    assert st.total_us <= st.draft_us + st.tree_us + 1e-6


def test_schedule_matches_step_times(p70):
    kw = dict(tree_nodes=64, tree_depth=6, accepted=4, context_len=2048, draft_evals=10)
    for mode in ("none", "prefetch"):
        s = timing.step_time(p70, overlap=mode, **kw)
        _, span = timing.schedule([s] * 4)
        assert span == pytest.approx(4 * s.total_us)
    hit = timing.step_time(p70, overlap="speculative", p_right=1.0, **kw)
    segs, span = timing.schedule([hit] * 4)
    # first step pays its draft; the other three are steady-state hits
    assert span == pytest.approx(hit.step_miss_us - 1e-3 + 3 * hit.step_hit_us)
    assert not [g for g in segs if g.kind == "wasted"]
    miss = timing.step_time(p70, overlap="speculative", p_right=0.0, **kw)
    segs, _ = timing.schedule([miss] * 3)
    assert len([g for g in segs if g.kind == "wasted"]) == 2


def test_gpu_profile_is_sequential_with_cpu_round_trip():
    g = timing.load_profile("h100-70b")
    st = timing.step_time(
        g, tree_nodes=64, tree_depth=6, accepted=4, context_len=2048, draft_evals=10
    )
    assert st.accept_us == 1000 and st.tree_us == 0
    assert st.total_us == pytest.approx(st.draft_us + st.verify_us + 1000)
    with pytest.raises(ValueError, match="overlap"):
        timing.step_time(
            g, tree_nodes=64, tree_depth=6, accepted=4, context_len=0, overlap="prefetch"
        )


# --------------------------------------------------------------------------- acceptance model


def test_chain_alpha_inverts_the_chain_formula():
    for alpha, gamma in [(0.5, 3), (0.885, 6), (0.934, 10), (0.99, 40)]:
        mean = chain_expected_accepted(alpha, gamma)
        assert timing.chain_alpha(mean, gamma) == pytest.approx(alpha, abs=1e-9)
    assert timing.chain_alpha(0, 5) == 0 and timing.chain_alpha(5, 5) == 1
    # SPEC §7 table: draft length 10 at 93.4% accepts ~7
    assert chain_expected_accepted(timing.chain_alpha(7, 10), 10) == pytest.approx(7)
    d = timing.accepted_distribution(0.8, 6)
    assert d.sum() == pytest.approx(1) and (d * range(7)).sum() == pytest.approx(
        chain_expected_accepted(0.8, 6)
    )
    with pytest.raises(ValueError, match="mean_accepted"):
        timing.chain_alpha(7, 6)


def test_draft_evals_of():
    assert timing.draft_evals_of([-1, 0, 1, 2]) == 3  # chain of 4: 3 evaluations
    assert timing.draft_evals_of(full_tree([3, 2])) == 4  # root + 3 expanded
    assert timing.draft_evals_of([-1]) == 0


def test_sample_steps_realises_hits(p70):
    steps = timing.sample_steps(p70, 50, overlap="speculative", seed=3)
    assert {s.p_right for s in steps} <= {0.0, 1.0}
    assert steps[0].p_right == 0.0
    for prev, cur in zip(steps, steps[1:], strict=False):
        if cur.p_right == 1.0:
            assert prev.accepted == prev.tree_depth


# --------------------------------------------------------------------------- cycle model


@pytest.mark.parametrize("n", [1, 4, 64, 1024])
@pytest.mark.parametrize(("vocab", "lanes"), [(256, 1), (32000, 4), (131072, 16), (5, 3)])
def test_cycle_model_equals_spec_section_6(n, vocab, lanes):
    s = cycles.accept_cycles(
        n,
        vocab,
        lanes,
        min(n - 1, 3),
        inserts=7 * n,
        lookups=11,
        lookup_ports=2,
        latency=cycles.SPEC_LATENCY,
    )
    N = math.ceil(vocab / lanes)
    assert s.mask == n + 2  # "n cycles + at most 2"
    assert s.decide == 1 + 2  # "1 cycle after the last node ... within 2 more"
    assert s.sampler == 2 * N + 4  # "2 * ceil(V / LANES) cycles + at most 4"
    assert s.commit == 1  # "KV commit / fork / release: 1 cycle"
    assert s.inserts == 7 * n  # "1 per cycle, sustained"
    assert s.lookups == 6  # 1 cycle each, per port
    r = cycles.accept_cycles(n, vocab, lanes, min(n - 1, 3))
    assert r.sampler == 2 * N + 2  # README: token taken at edge 2N + 2
    assert r.mask <= s.mask and r.sampler <= s.sampler  # RTL within the SPEC bounds
    assert r.post_verify == r.load + r.decide + 1 + max(r.sampler, r.tokens, r.commit)
    assert r.critical == r.pre_verify + r.post_verify
    assert cycles.sampler_cycles(vocab, lanes, "spec") == 2 * N + 4
    assert cycles.mask_cycles(n, "rtl") == n + 2


@pytest.mark.parametrize(
    ("kw", "name"),
    [
        ({"n_nodes": 0}, "n_nodes"),
        ({"n_nodes": 1025}, "n_nodes"),
        ({"vocab": 0}, "vocab"),
        ({"vocab": 131073}, "vocab"),
        ({"lanes": 17}, "lanes"),
        ({"accepted": 64}, "accepted"),
        ({"inserts": -1}, "inserts"),
        ({"lookup_ports": 0}, "lookup_ports"),
        ({"latency": "fast"}, "latency"),
        ({"n_nodes": 4.0}, "n_nodes"),
    ],
)
def test_cycle_model_rejects_bad_input(kw, name):
    args = {"n_nodes": 64, "vocab": 32000, "lanes": 4, "accepted": 0, **kw}
    with pytest.raises(ValueError, match=name):
        cycles.accept_cycles(**args)


# --------------------------------------------------------------------------- profiles


def test_known_profiles():
    assert timing.known_profiles() == [
        "h100-70b", "h100-7b", "h100-gptoss120b", "specdecode1-70b", "specdecode1-7b"
    ]  # fmt: skip


def test_every_profile_states_its_power_and_source():
    """The energy figures divide by these: the article's chip and the H100 SXM, 700 W each."""
    for name in timing.known_profiles():
        p = timing.load_profile(name)
        assert p.power is not None and p.power.watts == 700.0, name
        assert ("article" if p.kind == "specdecode" else "datasheet") in p.power.source
    assert timing.load_profile("h100-7b").calibrated().power.watts == 700.0


def test_unknown_profile_lists_known():
    with pytest.raises(ValueError, match="known profiles are h100-70b, h100-7b"):
        timing.load_profile("tpu-7b")


def test_overrides(p7):
    q = timing.load_profile("specdecode1-7b", weight_bytes=0.5)
    assert q.target.bytes_per_param == 0.5
    assert timing.load_profile("specdecode1-7b", precision="bf16").target.bytes_per_param == 2
    hbm = timing.load_profile("specdecode1-7b", **{"hardware.hbm_bw": 4e12}).hardware.hbm_bw
    assert hbm == 4e12
    assert timing.load_profile("specdecode1-7b", hardware__hbm_bw=4e12).hardware.hbm_bw == 4e12
    assert timing.load_profile("specdecode1-7b", context_len=8192).workload.context_len == 8192
    # halving the weight bytes halves the HBM term
    v = timing.roofline_view(q).step.verify
    v0 = timing.roofline_view(p7).step.verify
    assert v is not None and v0 is not None and v.hbm_us == pytest.approx(v0.hbm_us / 2)


@pytest.mark.parametrize(
    ("name", "kw", "field"),
    [
        ("specdecode1-7b", {"hbm_bw": -1.0}, "hardware.hbm_bw"),
        ("specdecode1-7b", {"hbm_bw": 0}, "hardware.hbm_bw"),
        ("specdecode1-7b", {"hbm_bw": "fast"}, "hardware.hbm_bw"),
        ("specdecode1-7b", {"layers": 32}, "ambiguous"),
        ("specdecode1-7b", {"warp_drive": 1}, "warp_drive"),
        ("specdecode1-7b", {"target.warp": 1}, "warp"),
        ("specdecode1-7b", {"engine.hbm_bw": 1}, "engine"),
        ("specdecode1-7b", {"precision": "fp6"}, "precision"),
        ("specdecode1-7b", {"target.layers": 31.5}, "target.layers"),
        ("specdecode1-7b", {"lanes": 32}, "tree_manager.lanes"),
        ("specdecode1-7b", {"target.n_kv_heads": 5}, "target.n_kv_heads"),
        ("specdecode1-7b", {"tree_nodes": 2000}, "workload.tree_nodes"),
        ("specdecode1-7b", {"workload.accepted": 7}, "workload.accepted"),
        ("specdecode1-7b", {"draft_evals": 3}, "workload.draft_evals"),
        ("specdecode1-7b", {"workload.overlap": "psychic"}, "workload.overlap"),
        ("specdecode1-70b", {"precision": "fp32"}, "target.bytes_per_param"),  # 276 GB > 128 GB
        ("h100-70b", {"precision": "bf16"}, "target.bytes_per_param"),  # 138 GB > 80 GB
        ("h100-7b", {"workload.overlap": "prefetch"}, "workload.overlap"),
        ("h100-70b", {"context_len": 1 << 20}, "workload.context_len"),  # KV > HBM left
        ("specdecode1-7b", {"power.watts": 0}, "power.watts"),
        ("h100-7b", {"power.watts": "hot"}, "power.watts"),
    ],
)
def test_bad_profile_parameters_name_the_field(name, kw, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        timing.load_profile(name, **kw)


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"tree_nodes": 0}, "tree_nodes"),
        ({"tree_nodes": 1025}, "tree_nodes"),
        ({"tree_depth": 64}, "tree_depth"),
        ({"accepted": 7}, "accepted"),
        ({"accepted": -1}, "accepted"),
        ({"context_len": -5}, "context_len"),
        ({"draft_evals": 64}, "draft_evals"),
        ({"draft_evals": 5}, "draft_evals"),
        ({"overlap": "eager"}, "overlap"),
        ({"p_right": 1.5}, "p_right"),
        ({"accept_cycles": -3}, "accept_cycles"),
        ({"tree_nodes": 64.0}, "tree_nodes"),
    ],
)
def test_step_time_rejects_bad_input(p7, kw, field):
    args = dict(
        tree_nodes=64,
        tree_depth=6,
        accepted=4,
        context_len=0,
        draft_evals=10,
        overlap="speculative",
    )
    args.update(kw)
    with pytest.raises(ValueError, match=field):
        timing.step_time(p7, **args)


def test_numpy_integers_accepted(p7):
    import numpy as np

    a = timing.step_time(
        p7,
        tree_nodes=np.int64(64),
        tree_depth=np.int64(6),
        accepted=np.int64(4),
        context_len=np.int64(0),
        draft_evals=np.int64(10),
        accept_cycles=np.int64(500),
    )
    assert a.accept_us == pytest.approx(0.5)
    assert cycles.accept_cycles(np.int32(8), np.int64(256)).sampler == 2 * 64 + 2


def test_accept_cycles_argument(p7):
    kw = dict(tree_nodes=64, tree_depth=6, accepted=4, context_len=0, draft_evals=10)
    st = timing.step_time(p7, accept_cycles=500, **kw)
    assert st.accept_us == pytest.approx(0.5)
    c = cycles.accept_cycles(64, 32000, 16, 4)
    st = timing.step_time(p7, accept_cycles=c, **kw)
    assert st.accept_us == pytest.approx(c.post_verify / 1e3)


# --------------------------------------------------------------------------- reports


@pytest.mark.parametrize("name", SD)
def test_disagreements_explain_the_gap(name):
    p = timing.load_profile(name)
    rows = {d.topic: d for d in timing.disagreements(p)}
    for topic in (
        "throughput",
        "verify time",
        "verifier balance",
        "draft per token",
        "draft fits SRAM",
        "accept/commit",
        "tokens per step",
        "GPU baseline",
    ):
        assert topic in rows
    av, rv = timing.article_view(p), timing.roofline_view(p)
    assert rows["throughput"].ratio == pytest.approx(rv.step.total_us / av.step_us)
    # the weight bandwidth a 200 us (7B) / 2.5 ms (70B) verification would need
    need = p.target.weight_bytes / (av.verify_us * 1e-6) / 1e12
    assert f"{need:.1f} TB/s" in rows["verify time"].explanation
    assert "16,072 cycles" in rows["accept/commit"].first_principles


def test_projections_and_cli(capsys):
    rows = timing.projections(["specdecode1-7b"])
    cfg = {r.config: r for r in rows}
    assert cfg["GPU autoregressive, calibrated"].vs_gpu_ar == pytest.approx(1)
    assert cfg["GPU spec decode, calibrated (CPU 3.97 ms)"].vs_gpu_spec == pytest.approx(1)
    assert cfg["GPU autoregressive, roofline"].vs_gpu_ar_roofline == pytest.approx(1)
    assert cfg["GPU spec decode, CPU 1 ms, roofline"].vs_gpu_spec_roofline == pytest.approx(1)
    slow, fast = (
        cfg["GPU spec decode, CPU 5 ms, roofline"],
        cfg["GPU spec decode, CPU 1 ms, roofline"],
    )
    assert slow.tokens_per_s < fast.tokens_per_s
    # the calibrated GPU streams at the fitted fraction of the datasheet bandwidth: slower
    cal, roof = cfg["GPU autoregressive, calibrated"], cfg["GPU autoregressive, roofline"]
    assert cal.tokens_per_s < roof.tokens_per_s
    for r in rows:  # every row carries both baselines
        assert r.vs_gpu_ar / r.vs_gpu_ar_roofline == pytest.approx(
            roof.tokens_per_s / cal.tokens_per_s
        )
    assert cfg["article arithmetic"].tokens_per_s == pytest.approx(7133, rel=1e-3)
    assert timing_main(["--profile", "specdecode1-7b", "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert (
        "roofline speculative" in out and "disagreements" in out and "vs roofline GPU spec" in out
    )
    with pytest.raises(SystemExit) as e:  # a usage error, before any work
        timing_main(["--profile", "specdecode1-7b", "--set", "hbm_bw=-1", "--no-plots"])
    assert e.value.code == 2
    assert "argument --set: hardware.hbm_bw" in capsys.readouterr().err


def test_plots_write_pngs(tmp_path, p70):
    panels = {
        "article": timing.article_steps(p70, 2),
        "speculative": timing.sample_steps(p70, 3, overlap="speculative", seed=1),
    }
    out = plots.timeline_png(panels, tmp_path / "t.png", title="x", dpi=40)
    single = plots.timeline_png(
        timing.sample_steps(timing.load_profile("h100-7b"), 2, overlap="none"),
        tmp_path / "g.png",
        dpi=40,
    )
    hist = plots.accept_histogram_png(
        [0, 1, 1, 4, 6, 6],
        tmp_path / "h.png",
        expected=timing.accepted_distribution(0.8, 6),
        dpi=40,
    )
    for f in (out, single, hist):
        data = f.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
    with pytest.raises(ValueError, match="accepted"):
        plots.accept_histogram_png([], tmp_path / "e.png")
    with pytest.raises(ValueError, match="steps"):
        plots.timeline_png([], tmp_path / "e.png")


def test_one_pass_sampler_cycles():
    """spec §3.12's one-pass sampler: ceil(V / LANES) + 8 from the result beat taken (the
    tree manager's measurement, the spec's bound), its totals n * ceil(V / LANES) under
    verification."""
    assert cycles.sampler_cycles(32000, 64, sampler="one_pass") == 500 + 8
    assert cycles.sampler_cycles(131072, 128, "spec", sampler="one_pass") == 1024 + 8
    assert cycles.sampler_cycles(32000, 4) == 2 * 8000 + 2  # the two-pass sampler, unchanged
    c = cycles.accept_cycles(64, 32000, 64, 4, inserts=10, sampler="one_pass")
    assert c.totals == 64 * 500 and c.during_verify == 64 * 500
    assert c.post_verify == (64 + 2) + 3 + 1 + 508
    assert cycles.accept_cycles(64, 32000, 4, 4).totals == 0
    for kw, match in (
        ({"lanes": 48, "sampler": "one_pass"}, "power of two"),
        ({"lanes": 256, "sampler": "one_pass"}, "lanes"),
        ({"lanes": 64}, "lanes"),  # two passes: SPEC §5's 1..16
        ({"lanes": 4, "sampler": "three_pass"}, "sampler"),
    ):
        with pytest.raises(ValueError, match=match):
            cycles.sampler_cycles(32000, **kw)


def test_extra_token_table(p7):
    """make perf's accept + extra token + commit table: the one-pass sampler at 64 lanes
    is within the article's ~1 us on the 7B example; the two-pass one at 4 lanes is not."""
    from sim.timing.extra_token import extra_token_rows, extra_token_table

    rows = {(r.sampler, r.lanes): r for r in extra_token_rows(p7)}
    assert rows[("two_pass", 4)].post_verify_us > 10
    assert rows[("one_pass", 64)].post_verify_us < 1.0
    assert rows[("one_pass", 64)].sampler_cycles == 500 + 8
    assert "token_select" in extra_token_table(p7)
