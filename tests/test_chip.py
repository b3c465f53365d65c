"""The behavioural chip (``sim.chip``): golden equality, KV walk, batches, optimiser, errors, CLI.

Every run is seeded; a failing comparison names its configuration and seed.
The ``rtl`` backend's tests are in ``tests/test_chip_rtl.py``.
"""

from __future__ import annotations

import contextlib
import re

import numpy as np
import pytest

import sim.chip.loop as chip_loop
from golden import trees
from golden.decoder import speculative_generate
from golden.models import code_prompts, default_ngram_pair
from sim import report
from sim.__main__ import main as cli_main
from sim.chip import Chip, ChipConfig, make_policy
from sim.cycles import ONE_PASS_LATENCY, RTL_LATENCY
from sim.python_backend import PythonKV, PythonTreeManager, open_python
from sim.topology import TopologyOptimiser, cost_table, tree_step_us
from sim.workloads import PhasedPair, load_workload


@pytest.fixture(scope="module")
def pair():
    return default_ngram_pair()


@pytest.fixture(scope="module")
def prompt():
    return code_prompts(1, 48, seed=3)[0]


def _chip(pair, **kw) -> Chip:
    target, draft = pair
    return Chip(ChipConfig(**kw), target=target, draft=draft)


def _golden(pair, cfg: ChipConfig, prompt, tokens, seed):
    target, draft = pair
    return speculative_generate(
        target,
        draft,
        prompt,
        tokens,
        tree=make_policy(cfg),
        mode=cfg.mode,
        children=cfg.children_rule,
        arith="fixed",
        seed=seed,
        lanes=cfg.n_nodes,
        prob_bits=cfg.prob_bits,
        rand_bits=cfg.rand_bits,
        weight_bits=cfg.weight_bits,
    )


GOLDEN_CASES = [
    dict(tree="plain"),
    dict(tree="chain", depth=5),
    dict(tree="chain", depth=4, mode="greedy"),
    dict(tree="static", nodes=20, depth=4),
    dict(tree="static", nodes=16, depth=4, children="iid"),
    dict(tree="static", parents=(-1, 0, 0, 1, 1, 2, 3), depth=4, children="topk"),
    dict(tree="sequoia", nodes=24, depth=6, update_every=4),
    dict(tree="sequoia", nodes=16, depth=5, mode="greedy", update_every=4),
    dict(tree="eagle2", nodes=24, depth=5),
    dict(tree="chain", depth=3, layers=2, overlap="speculative"),
    dict(tree="chain", depth=6, prob_bits=10, rand_bits=12, weight_bits=9),
    dict(tree="static", nodes=20, depth=4, builder="hardware"),
    dict(tree="eagle2", nodes=24, depth=5, builder="hardware"),
    dict(tree="sequoia", nodes=24, depth=6, update_every=4, builder="hardware"),
]


@pytest.mark.parametrize(
    "case", GOLDEN_CASES, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items())
)
@pytest.mark.parametrize("seed", [5, 11])
def test_tokens_equal_golden(pair, prompt, case, seed):
    cfg = ChipConfig(seed=seed, **case)
    res = _chip(pair, **case, seed=seed).run([prompt], 40)
    want = _golden(pair, cfg, prompt, 40, seed)
    assert res.tokens == want.tokens, f"{case} seed {seed}"
    assert res.sequences[0].accepted == want.accepted, f"{case} seed {seed}"
    assert res.mask_mismatches == 0
    assert all(s.misses == 0 for s in res.seq_steps)
    # timing: every step timed, tokens per step as emitted
    assert all(st.timing.tokens_per_step == st.emitted for st in res.steps)
    assert res.tokens_per_s > 0


def test_golden_adaptive_sequoia_policy(pair, prompt, monkeypatch):
    """The chip runs golden's own AdaptiveSequoia (re-solved every 4 steps) to the same tokens."""
    target, draft = pair
    cfg = ChipConfig(tree="sequoia", nodes=24, depth=6)
    made = []

    def policy(c, profile=None):
        made.append(trees.AdaptiveSequoia(24, 6, [0.6, 0.2], update_every=4))
        return made[-1]

    monkeypatch.setattr(chip_loop, "make_policy", policy)
    res = Chip(cfg, target=target, draft=draft).run([prompt], 48)
    want = speculative_generate(
        target,
        draft,
        prompt,
        48,
        arith="fixed",
        seed=cfg.seed,
        tree=trees.AdaptiveSequoia(24, 6, [0.6, 0.2], update_every=4),
        children="swor",
        lanes=64,
    )
    assert res.tokens == want.tokens
    assert made[0].n_solves > 1


def test_batch_shared_prompt_fork(pair, prompt):
    """Parallel sampling of one prompt: prefix written once and shared by fork; each sequence
    equals golden with its own seed."""
    cfg = dict(tree="chain", depth=4, batch=3, shared_prompt=True)
    chip = _chip(pair, **cfg)
    res = chip.run([prompt] * 3, 30, seeds=[4, 5, 6])
    for s, seed in zip(res.sequences, [4, 5, 6], strict=True):
        want = _golden(pair, ChipConfig(**cfg), prompt, 30, seed)
        assert s.tokens == want.tokens, f"sequence {s.seq} seed {seed}"
    # prefill: P - 1 shared inserts, 2 forks, nothing else
    assert res.prefill_kv_cycles == len(prompt) - 1 + 2
    assert len({tuple(s.tokens) for s in res.sequences}) > 1


def test_batch_common_prefix(pair):
    """Prompts with a common prefix of 20 tokens: shared by fork, then each its own rest."""
    base = code_prompts(3, 40, seed=8)
    prompts = [base[0][:20] + b[20:] for b in base]
    chip = _chip(pair, tree="static", nodes=12, depth=4, batch=3)
    res = chip.run(prompts, 24, seeds=[1, 2, 3])
    for s, p, seed in zip(res.sequences, prompts, [1, 2, 3], strict=True):
        want = _golden(pair, chip.config, p, 24, seed)
        assert s.tokens == want.tokens, f"sequence {s.seq}"
    assert res.prefill_kv_cycles == 20 + 2 + 3 * (39 - 20)
    # one step serves all three sequences while they run
    assert len(res.steps[0].seqs) == 3


class _BrokenMask(PythonTreeManager):
    """A mask generator that drops every ancestor but the root from the rows it gives out."""

    def mask(self, parents):
        return [1 | (1 << i) for i in range(len(parents))]


class _SiblingView(PythonKV):
    """A KV pool whose lookups ignore the view (every speculative entry visible)."""

    def lookups(self, queries):
        full = (1 << self.n_nodes) - 1
        return super().lookups([(s, la, p, full) for s, la, p, _v in queries])


def _faulty_chip(pair, tm_cls=PythonTreeManager, kv_cls=PythonKV, **kw) -> Chip:
    class Faulty(Chip):
        @contextlib.contextmanager
        def open_backends(self):
            c = self.config
            kv = kv_cls(c.entries, c.pages, c.seqs, c.n_nodes, c.layer_bits, c.pos_bits)
            yield (lambda: tm_cls(c.n_nodes)), kv

    target, draft = pair
    return Faulty(ChipConfig(**kw), target=target, draft=draft)


@pytest.mark.parametrize("fault", ["mask", "lookup"])
def test_kv_walk_matters(pair, prompt, fault):
    """A wrong mask row or a lookup that ignores the view changes the output."""
    kw = dict(tree="static", nodes=24, depth=5, children="iid")
    good = _faulty_chip(pair, **kw).run([prompt], 60)
    assert good.tokens == _golden(pair, ChipConfig(**kw), prompt, 60, 1).tokens
    if fault == "mask":
        bad = _faulty_chip(pair, tm_cls=_BrokenMask, **kw).run([prompt], 60)
        assert bad.mask_mismatches > 0
        assert sum(s.misses for s in bad.seq_steps) > 0
    else:
        bad = _faulty_chip(pair, kv_cls=_SiblingView, **kw).run([prompt], 60)
    assert bad.tokens != good.tokens


def test_optimiser_resolves_shape(pair, prompt):
    res = _chip(pair, tree="sequoia", nodes=32, depth=8, update_every=4).run([prompt], 80)
    opt = res.policies[0]
    assert isinstance(opt, TopologyOptimiser)
    assert len(opt.history) == 1 + res.n_steps // 4
    assert len({d.acc for d in opt.history}) > 2  # re-estimated from the observed steps
    assert opt.history[-1].acc_raw[0] > 0.3  # the n-gram draft is often right
    # hardware-aware: on the 7B roofline the best tree is smaller than the budget
    assert all(d.n_nodes <= 32 for d in opt.history)
    assert {s.n_nodes for s in res.seq_steps} == {d.n_nodes for d in opt.history}


@pytest.mark.parametrize("builder", ["software", "hardware"])
def test_fallback_and_recovery(builder):
    """Phased workload: acceptance drops to 0 midway (fallback to plain decoding), then
    recovers (the tree grows back); tokens still equal golden. ``hardware``: the
    fixed topology optimiser (spec §3.11) on its cost table."""
    pair = PhasedPair()
    cfg = ChipConfig(
        builder=builder,
        workload="phased",
        tree="sequoia",
        nodes=16,
        depth=8,
        prompt_len=4,
        entries=512,
        pages=512,
        update_every=8,
        window=16,
        overlap="none",
    )
    chip = Chip(cfg)
    res = chip.run(max_new_tokens=300)
    opt = res.policies[0]
    modes = [d.mode for d in opt.history]
    first_plain = modes.index("plain")
    assert "spec" in modes[first_plain:], modes
    # plain while the draft is always wrong (phase B), speculating in phase A
    steps = res.seq_steps
    phase_b = [s for s in steps if pair.phase(s.emitted[0] - 1) == "B" and not s.probe]
    assert sum(s.n_nodes == 1 for s in phase_b) > 0.6 * len(phase_b)
    after = [s for s in steps[-10:]]
    assert max(s.n_nodes for s in after) > 1
    assert max(s.accepted for s in after) > 0
    want = speculative_generate(
        chip.target,
        chip.draft,
        chip._prompts[0],
        300,
        arith="fixed",
        seed=cfg.seed,
        tree=make_policy(cfg),
        children=cfg.children_rule,
        lanes=64,
    )
    assert res.tokens == want.tokens
    if builder == "software":  # the projected speed of plain decoding beats a useless tree
        d = next(d for d in opt.history if d.mode == "plain")
        assert d.rate_spec <= d.rate_plain


def test_cost_table_is_the_timing_models():
    """The hardware optimiser's cost table: each budget's Sequoia tree timed on the profile."""
    cfg = ChipConfig(tree="sequoia", nodes=24, depth=6, builder="hardware")
    prof = cfg.timing_profile()
    ctx = prof.workload.context_len
    budgets, costs, plain = cost_table(
        prof, 24, 6, cfg.initial_acc, context_len=ctx, overlap=cfg.overlap
    )
    assert budgets == [2, 4, 8, 16, 24] and len(costs) == 5
    par, e = trees.sequoia_tree(cfg.initial_acc, 8, 6)
    assert costs[2] == round(1e3 * tree_step_us(prof, par, e, ctx, cfg.overlap))
    assert plain == round(1e3 * tree_step_us(prof, [-1], 0.0, ctx, cfg.overlap))
    opt = make_policy(cfg)
    assert (opt.budgets, opt.costs, opt.cost_plain) == (budgets, costs, plain)


def test_timing_and_reports(pair, prompt):
    res = _chip(pair, tree="chain", depth=5, overlap="speculative").run([prompt], 40)
    spec = [st.timing for st in res.steps]
    assert all(t.overlap == "speculative" for t in spec)
    assert all(t.p_right in (0.0, 1.0) for t in spec)
    assert spec[0].p_right == 0.0
    text = report.phase_table(res)
    assert "verify" in text and "accept + commit" in text
    assert "add up to" in text and "speculative" in text  # hidden work: the shares pass 100 %
    rows = report.projection_rows(res)
    names = [r.config for r in rows]
    assert any("this run" in n for n in names) and any("h100" in n for n in names)
    ar = next(r for r in rows if "plain autoregressive" in r.config)
    assert ar.vs_own_ar == pytest.approx(1.0)
    # "vs GPU" columns: the calibrated baseline; the roofline one beside it
    by_key = {r.key: r for r in rows}
    assert by_key["gpu_ar"].vs_gpu_ar == pytest.approx(1.0)
    assert by_key["gpu_spec"].vs_gpu_spec == pytest.approx(1.0)
    assert by_key["gpu_ar_roofline"].vs_gpu_ar_roofline == pytest.approx(1.0)
    assert by_key["gpu_spec_1ms"].vs_gpu_spec_roofline == pytest.approx(1.0)
    assert by_key["gpu_ar"].tokens_per_s < by_key["gpu_ar_roofline"].tokens_per_s
    assert "vs roofline GPU AR" in report.projections_table(res)
    # accept + extra token + commit per token sampler, over the run's steps
    text = report.extra_token_table(res)
    assert "token_select" in text and f"{len(res.seq_steps)} steps" in text
    rows = report.summary(res)["extra_token"]
    assert rows[0]["sampler"] == "two_pass" and rows[-1]["sampler"] == "one_pass"
    assert rows[-1]["post_verify_cycles"] < rows[0]["post_verify_cycles"]
    for mode in ("none", "prefetch", "speculative"):
        ts = report.retime(res, res.config.timing_profile(), mode)
        assert len(ts) == res.n_steps
    # cycle counts: the python backend's SPEC §6 model
    s0 = res.seq_steps[0]
    assert s0.tm_cycles["mask"] == s0.n_nodes + 2
    assert s0.tm_cycles["sampler"] == 2 * 256 // 4 + 2
    assert s0.kv_cycles == s0.inserts + -(-s0.lookups // 2) + 1


def test_pngs(pair, prompt, tmp_path):
    res = _chip(pair, tree="sequoia", nodes=12, depth=4, update_every=4).run([prompt], 24)
    paths = report.write_pngs(res, tmp_path, dpi=40)
    assert [p.name for p in paths] == [
        "chip_timeline.png",
        "chip_accepted.png",
        "chip_topology.png",
    ]
    assert all(p.stat().st_size > 1000 for p in paths)
    # a run without the optimiser leaves no earlier topology plot behind
    res = _chip(pair, tree="chain", depth=3).run([prompt], 8)
    paths = report.write_pngs(res, tmp_path, dpi=40)
    assert "chip_topology.png" not in [p.name for p in paths]
    assert not (tmp_path / "chip_topology.png").exists()


# --------------------------------------------------------------------------- python backend


def test_python_backend_units():
    with open_python(n_nodes=8, entries=16, pages=16, seqs=2) as (tm, kv):
        assert isinstance(tm, PythonTreeManager) and isinstance(kv, PythonKV)
        with pytest.raises(ValueError, match="seed"):
            tm.step([-1], [0], [0], [0], lambda a: [1])
        tm.seed(3)
        with pytest.raises(ValueError, match="N_NODES = 8"):
            tm.mask(list(range(-1, 8)))
        st = tm.step([-1, 0, 0], [0, 1, 2], [0, 65535, 0], [0, 1, 1], lambda a: [0, 0, 5])
        assert st.last == 1 and st.path_mask == 0b11 and st.accepted_tokens == [1]
        assert st.extra == 2 and st.rows == [1, 0b11, 0b101]
        kv.insert(0, 0, 0, 0, True)
        kv.lookups([(0, 0, 0, 1)] * 5)
        assert kv.cycles == 1 + 3
        with pytest.raises(ValueError):
            kv.insert(0, 0, 0, 0, True)  # already seen committed: no cycle
        assert kv.cycles == 4
    with pytest.raises(ValueError, match="n_nodes = 0"):
        PythonTreeManager(0)
    with pytest.raises(ValueError, match="select_lanes = 3: must be 0"):
        PythonTreeManager(8, select_lanes=3)


def test_one_pass_select_in_the_step_timing(pair):
    """``select_lanes``: each step's sampler is the one-pass select's on the profile's
    vocabulary, its totals under verification; the tokens are the same."""
    target, draft = pair
    runs = {}
    for sl in (0, 64):
        cfg = ChipConfig(tokens=12, select_lanes=sl)
        prompts = code_prompts(1, cfg.prompt_len, cfg.prompt_seed)
        runs[sl] = Chip(cfg, target=target, draft=draft).run(prompts, 12)
    assert runs[0].tokens == runs[64].tokens
    v = runs[0].config.timing_profile().target.vocab
    for a, b in zip(runs[0].steps, runs[64].steps, strict=True):
        assert a.timing.cycles.sampler == 2 * -(-v // 4) + RTL_LATENCY.sampler
        assert b.timing.cycles.sampler == -(-v // 64) + ONE_PASS_LATENCY["rtl"]
        assert b.timing.cycles.totals == b.seqs[0].n_nodes * -(-v // 64)
        assert b.timing.accept_us < a.timing.accept_us


def test_python_backend_one_pass_select():
    """``select_lanes``: the same token (spec §3.12), the one-pass select's cycles."""
    steps = {}
    for sl in (0, 4):
        with open_python(n_nodes=8, select_lanes=sl) as (tm, _kv):
            tm.seed(3)
            steps[sl] = tm.step([-1, 0, 0], [0, 1, 2], [0, 65535, 0], [0, 1, 1], lambda a: [3] * 9)
    assert steps[0].extra == steps[4].extra
    assert steps[0].cycles["sampler"] == 2 * 3 + RTL_LATENCY.sampler
    assert steps[4].cycles["sampler"] == 3 + ONE_PASS_LATENCY["rtl"]
    with pytest.raises(ValueError, match="prob_bits = 40"):
        PythonTreeManager(8, prob_bits=40)
    with pytest.raises(ValueError, match="lookup_ports = 0"):
        PythonKV(lookup_ports=0)


def test_workloads():
    p = PhasedPair(8, a=0.5)
    assert p.phase(0) == "A" and p.phase(5) == "B"
    t = p.target.probs([[2], []])
    assert t[0, 3] == 1.0 and t[1, 0] == 1.0
    q = p.draft.probs_tails(np.array([[2], [5]]))
    assert q[0, 3] == pytest.approx(0.5 + 0.5 / 8) and q[1, 7] == 1.0
    assert np.allclose(q.sum(axis=1), 1.0)
    for bad, match in ((dict(vocab_size=7), "vocab_size = 7"), (dict(a=1.5), "a = 1.5")):
        with pytest.raises(ValueError, match=re.escape(match)):
            PhasedPair(**bad)
    with pytest.raises(ValueError, match="workload = 'prose'"):
        load_workload("prose", 1, 4, 0)
    *_, prompts = load_workload("phased", 2, 5, 0)
    assert prompts == [[252, 253, 254, 255, 0]] * 2


# --------------------------------------------------------------------------- errors


BAD_CONFIGS = [
    (dict(profile="tpu-v5"), "profile = 'tpu-v5': unknown profile"),
    (dict(profile="h100-7b"), "profile = 'h100-7b': a GPU baseline"),
    (dict(tree="bushy"), "tree = 'bushy'"),
    (dict(mode="hot"), "mode = 'hot'"),
    (dict(overlap="full"), "overlap = 'full'"),
    (dict(backend="fpga"), "backend = 'fpga'"),
    (dict(children="all"), "children = 'all'"),
    (dict(tree="eagle2", children="iid"), "children = 'iid'"),
    (dict(workload="prose"), "workload = 'prose'"),
    (dict(nodes=65), "nodes = 65: a tree larger than N_NODES = 64"),
    (dict(nodes=9, n_nodes=8), "nodes = 9: a tree larger than N_NODES = 8"),
    (dict(tree="chain", depth=64), "depth = 64: a chain of 65 nodes"),
    (dict(tree="static", parents=(-1, 0, 5)), "parents[2] = 5"),
    (dict(tree="static", parents=(0, 0)), "parents[0] = 0"),
    (dict(tree="static", parents=tuple(range(-1, 64))), "tree has 65 nodes, more than N_NODES"),
    (dict(parents=(-1, 0)), "parents = (-1, 0): only for tree = 'static'"),
    (dict(n_nodes=0), "n_nodes = 0"),
    (dict(n_nodes=2000), "n_nodes = 2000"),
    (dict(entries=0), "entries = 0"),
    (dict(pages=5000), "pages = 5000"),
    (dict(seqs=0), "seqs = 0"),
    (dict(layers=33), "layers = 33"),
    (dict(layers=0), "layers = 0"),
    (dict(prob_bits=7), "prob_bits = 7"),
    (dict(rand_bits=33), "rand_bits = 33"),
    (dict(weight_bits="16"), "weight_bits = '16'"),
    (dict(lanes=17), "lanes = 17"),
    (dict(select_lanes=129), "select_lanes = 129"),
    (dict(select_lanes=48), "select_lanes = 48: must be 0 (two-pass sampler) or a power of two"),
    (dict(seed=-1), "seed = -1"),
    (dict(tokens=0), "tokens = 0"),
    (dict(prompt_len=0), "prompt_len = 0"),
    (dict(batch=9), "batch = 9"),
    (dict(depth=0), "depth = 0"),
    (dict(nodes=True), "nodes = True"),
    (dict(update_every=0), "update_every = 0"),
    (dict(initial_acc=(0.8, 0.5)), "initial_acc sums to 1.3"),
    (dict(backend="rtl", batch=2), "batch = 2: the rtl backend"),
    (dict(builder="fpga"), "builder = 'fpga'"),
    (dict(builder="hardware", children="swor"), "children = 'swor': the hardware builder"),
    (dict(builder="hardware", tree="eagle2", topk=17), "topk = 17"),
    (dict(builder="hardware", tree="sequoia", nodes=1), "nodes = 1"),
    (dict(builder="hardware", window=65), "window = 65"),
    (dict(builder="hardware", tree="sequoia", backend="rtl", depth=33), "depth = 33"),
    (
        dict(builder="hardware", tree="static", parents=(-1,) + (0,) * 17),
        "a node with more than 16 children",
    ),
]


@pytest.mark.parametrize("kw,match", BAD_CONFIGS, ids=[m for _, m in BAD_CONFIGS])
def test_config_errors(kw, match):
    with pytest.raises(ValueError, match=re.escape(match)):
        ChipConfig(**kw)


def test_config_groups():
    """Every field is a flat keyword and a flat attribute, and lives in one group."""
    cfg = ChipConfig(nodes=16, n_nodes=32, overlap="none", layers=2)
    assert cfg.policy.nodes == cfg.nodes == 16
    assert cfg.blocks.n_nodes == cfg.n_nodes == 32
    assert cfg.timing.overlap == cfg.overlap == "none"
    assert cfg.decode.layers == cfg.layers == 2
    assert ChipConfig(**cfg.as_kwargs()) == cfg
    assert cfg.replace(nodes=8).policy.nodes == 8
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        ChipConfig(nope=1)


def test_run_errors(pair, prompt):
    chip = _chip(pair, tree="chain", depth=4)
    cases = [
        (dict(prompts=[prompt], max_new_tokens=300), "context: 1 sequence(s) of prompt 48"),
        (dict(prompts=[[]], max_new_tokens=4), "prompts[0] is empty"),
        (dict(prompts=[[1, 256]], max_new_tokens=4), "prompts[0][1] = 256"),
        (dict(prompts=[prompt] * 9, max_new_tokens=4), "prompts: 9 sequences"),
        (dict(prompts=[prompt], max_new_tokens=0), "max_new_tokens = 0"),
        (dict(prompts=[prompt], max_new_tokens=4, seeds=[1, 2]), "seeds has 2 entries"),
        (dict(prompts=[prompt], max_new_tokens=4, seeds=[-3]), "seeds[0] = -3"),
    ]
    for kw, match in cases:
        with pytest.raises(ValueError, match=re.escape(match)):
            chip.run(**kw)
    # a pool big enough for the same context runs it
    big = _chip(pair, tree="chain", depth=4, entries=512, pages=512)
    assert len(big.run([prompt], 300, max_steps=3).steps) == 3
    # pages, not entries, can be the limit; layers multiply the need
    with pytest.raises(ValueError, match=re.escape("pages = 64")):
        _chip(pair, tree="chain", depth=4, pages=64).run([prompt], 20)
    with pytest.raises(ValueError, match=re.escape("4 layer(s)")):
        _chip(pair, tree="chain", depth=4, layers=4).run([prompt], 20)
    with pytest.raises(ValueError, match="context_window"):
        Chip(ChipConfig(), target=object(), draft=pair[1])


# --------------------------------------------------------------------------- CLI


def test_cli(capsys, tmp_path):
    rc = cli_main(
        [
            "--tokens",
            "24",
            "--tree",
            "chain",
            "--depth",
            "4",
            "--quiet",
            "--out",
            str(tmp_path),
            "--dpi",
            "40",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    for needle in (
        "per-phase time on specdecode1-7b",
        "step (critical path)",
        "h100-7b",
        "plain autoregressive",
        "tree manager: sampler",
    ):
        assert needle in out, needle
    assert (tmp_path / "chip_timeline.png").exists()


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--profile", "tpu"], "argument --profile: unknown profile 'tpu'"),
        (["--nodes", "100"], "--nodes (with --n-nodes): nodes = 100: a tree larger than N_NODES"),
        (["--tokens", "1000"], "--tokens, --prompt-len, --batch, --layers, --nodes, --depth, "),
        (["--tokens", "1000"], "context: 1 sequence(s)"),
        (["--tree", "static", "--nodes", "3", "--n-nodes", "2"], "--n-nodes): nodes = 3"),
    ],
)
def test_cli_errors(capsys, argv, match):
    """A bad argument is a usage error naming its option, exit status 2, before the
    workload is loaded (sim.__main__.parse_args)."""
    with pytest.raises(SystemExit) as e:
        cli_main([*argv, "--quiet", "--no-plots"])
    assert e.value.code == 2
    assert match in capsys.readouterr().err


class _Unnormalised:
    """A model whose rows sum to 2 (everything else as the wrapped model)."""

    def __init__(self, model) -> None:
        self.model = model
        self.vocab_size, self.context_window = model.vocab_size, model.context_window

    def probs(self, contexts):
        return 2 * np.asarray(self.model.probs(contexts))

    def probs_tails(self, tails):
        return 2 * np.asarray(self.model.probs_tails(tails))


@pytest.mark.parametrize("role", ["target", "draft"])
def test_chip_checks_its_models(pair, prompt, role) -> None:
    """Issue 19: the chip, like the decoders, validates every model output."""
    target, draft = pair
    models = {"target": target, "draft": draft}
    models[role] = _Unnormalised(models[role])
    chip = Chip(ChipConfig(tree="chain", depth=3), **models)
    msg = rf"^{role}\.probs\w*\[0\] sums to (2\.0|1\.99+8): must sum to 1"
    with pytest.raises(ValueError, match=msg):
        chip.run([prompt], 8)
