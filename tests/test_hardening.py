"""Issue 19's cases, one named regression test each: every value that used to
give a silently wrong answer, a generic exception or a runaway now gives a
correct result or a ``ValueError`` naming the argument (and the entry)."""

import time
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from golden import plan, rng, sampler, tree
from golden.decoder import speculative_generate
from golden.models import SyntheticPair
from sim.chip import ChipConfig

NON_INTEGER_PARENTS = [
    [-1, 0.7],
    np.array([-1.0, 0.0]),
    [-1, Decimal(0)],
    [-1, Fraction(1, 2)],
    [-1, True],
    [-1, "0"],
]


@pytest.mark.parametrize("parents", NON_INTEGER_PARENTS, ids=repr)
def test_non_integer_parents_are_refused_not_truncated(parents) -> None:
    """``golden.tree.depths([-1, 0.7])`` returned ``[0, 1]``."""
    for fn in (tree.depths, tree.mask_rows, tree.validate, plan.plan):
        with pytest.raises(ValueError, match=r"^parents\[[01]\] = .*: must be an integer"):
            fn(parents)


def test_float_parents_never_hit_the_integer_trees_cache() -> None:
    assert tree.depths([-1, 0]) == [0, 1]  # cached
    with pytest.raises(ValueError, match=r"parents\[1\] = 0\.0"):
        tree.depths((-1, 0.0))  # equal and of equal hash as a tuple


@pytest.mark.parametrize(
    ("parents", "msg"),
    [
        ([-1, 0, float("inf")], r"parents\[2\] = inf: must be an integer"),
        ([-1, 1.9, 0], r"parents\[1\] = 1\.9: must be an integer"),
    ],
)
def test_depths_names_the_non_integer_entry(parents, msg) -> None:
    """``depths([-1, 0, inf])`` raised OverflowError; ``[-1, 1.9, 0]`` blamed ``parents[1] = 1``."""
    with pytest.raises(ValueError, match=msg):
        tree.depths(parents)


def test_validate_max_nodes_must_be_an_integer() -> None:
    """``validate(max_nodes="3")`` raised TypeError."""
    with pytest.raises(ValueError, match=r"^max_nodes = '3': must be an integer in 1 \.\. 1024$"):
        tree.validate([-1, 0], max_nodes="3")


def test_long_chains_are_refused_at_once() -> None:
    """A 20,000-node chain took 12.6 s and 1.6 GB; SPEC §5 bounds trees at 1,024 nodes."""
    t0 = time.monotonic()
    with pytest.raises(ValueError, match="tree has 20000 nodes, more than N_NODES = 1024"):
        tree.mask_rows([-1, *range(19_999)])
    assert time.monotonic() - t0 < 1.0
    assert tree.depths([-1, *range(1023)])[-1] == 1023  # the largest tree still works


def test_decoder_refuses_a_non_integer_tree() -> None:
    pair = SyntheticPair(16, 0.7, seed=1)
    with pytest.raises(ValueError, match=r"parents\[1\] = 0\.5: must be an integer"):
        speculative_generate(pair.target, pair.draft, [1, 2], 4, tree=[-1, 0.5])


def test_chip_config_refuses_non_integer_parents_and_truthy_fallback() -> None:
    """``ChipConfig(fallback="no").fallback`` was truthy: the fallback stayed on."""
    with pytest.raises(ValueError, match=r"parents\[1\] = 0\.5: must be an integer"):
        ChipConfig(tree="static", parents=(-1, 0.5))
    for bad in ("no", 0, None):
        with pytest.raises(ValueError, match=f"^fallback = {bad!r}: must be True or False$"):
            ChipConfig(fallback=bad)


def test_sample_weights_cannot_overflow() -> None:
    """``sample_weights([2**62, 2**62], 2**31)`` returned 2, outside a 2-entry vector."""
    with pytest.raises(ValueError, match=r"weights\[0\] = 4611686018427387904: must be an integer"):
        sampler.sample_weights([2**62, 2**62], 2**31)
    assert sampler.sample_weights([2**32 - 1] * 3, 2**32 - 1) == 2
    for kw, msg in (({"weight_bits": -1}, "weight_bits = -1"), ({"weight_bits": 40}, "= 40")):
        with pytest.raises(ValueError, match=msg):
            sampler.sample_weights([1, 2], 5, **kw)


def test_quantize_refuses_nan_and_inf() -> None:
    """``quantize(nan, 16)`` and ``quantize_weights([inf, 1])`` gave -2**63."""
    with pytest.raises(ValueError, match=r"^x = nan: must be a finite number$"):
        sampler.quantize(np.nan, 16)
    with pytest.raises(ValueError, match=r"^x\[1\] = inf: must be a finite number$"):
        sampler.quantize(np.array([0.5, np.inf]), 16)
    with pytest.raises(ValueError, match=r"^dist\[0\] = inf: must be a finite number >= 0$"):
        sampler.quantize_weights(np.array([np.inf, 1.0]))
    with pytest.raises(ValueError, match=r"^dist\[1\] = -0\.5"):
        sampler.quantize_weights(np.array([1.0, -0.5]))


def test_sample_float_checks_u_and_the_distribution() -> None:
    """``sample_float(u=1.5)`` returned a token; ``sample_float([0, 0])`` an IndexError."""
    with pytest.raises(ValueError, match=r"^u = 1\.5: must be a finite number in \[0, 1\)$"):
        sampler.sample_float(np.array([0.5, 0.5]), 1.5)
    with pytest.raises(ValueError, match=r"^dist sums to 0\.0: must have a positive sum$"):
        sampler.sample_float(np.array([0.0, 0.0]), 0.5)
    assert sampler.sample_float(np.array([0.0, 2.0, 0.0]), 0.999) == 1


def test_uniforms_and_lanes_do_not_wrap_or_run_away() -> None:
    """``uniforms([-1])`` gave 65535; ``LaneRNG(1, 10**9)`` took 16 GB."""
    msg = r"^out\[0\] = -1: must be an integer in 0 \.\. 4294967295$"
    with pytest.raises(ValueError, match=msg):
        rng.uniforms([-1])
    with pytest.raises(ValueError, match=r"^rand_bits = 40: must be an integer in 1 \.\. 32$"):
        rng.uniforms([1], 40)
    t0 = time.monotonic()
    msg = r"^lanes = 1000000000: must be an integer in 1 \.\. 1024$"
    with pytest.raises(ValueError, match=msg):
        rng.LaneRNG(1, 10**9)
    assert time.monotonic() - t0 < 1.0


class _Broken:
    """A model whose ``probs`` output is spoiled by ``spoil`` (no fast path)."""

    def __init__(self, base, spoil) -> None:
        self.base, self.spoil, self.vocab_size = base, spoil, base.vocab_size

    def probs(self, contexts):
        return self.spoil(np.array(self.base.probs(contexts), dtype=np.float64))


SPOILS = {
    "nan": (lambda p: p * np.nan, r"\[0, 0\] = nan: must be a finite number >= 0"),
    "zeros": (lambda p: p * 0, r"\[0\] sums to 0\.0: must sum to 1"),
    "negative": (lambda p: p - p.max(), r"= -[0-9.e-]+: must be a finite number >= 0"),
    "unnormalised": (lambda p: p * 2, r"\[0\] sums to 2\.0: must sum to 1"),
    "inf": (lambda p: p + np.inf, r"\[0, 0\] = inf"),
    "extra row": (lambda p: np.vstack([p, p[:1]]), r"has shape \(\d+, 16\): expected"),
}


@pytest.mark.parametrize("role", ["target", "draft"])
@pytest.mark.parametrize("spoil", list(SPOILS))
def test_decoder_checks_every_model_output(role: str, spoil: str) -> None:
    """A target returning NaN or zeros decoded token 0 forever; negative,
    unnormalised, inf and one-row-too-many outputs decoded without complaint."""
    from golden.decoder import autoregressive_generate

    pair = SyntheticPair(16, 0.7, seed=1)
    fn, msg = SPOILS[spoil]
    target, draft = pair.target, pair.draft
    if role == "target":
        target = _Broken(target, fn)
    else:
        draft = _Broken(draft, fn)
    with pytest.raises(ValueError, match=f"^{role}\\.probs.*{msg}"):
        speculative_generate(target, draft, [1, 2], 4, tree=[-1, 0, 0, 1])
    if role == "target":  # an entry's error also names the context it was asked for
        ctx = r" \(context \[1, 2\]\)$" if spoil != "extra row" else ""
        with pytest.raises(ValueError, match=f"^target\\.probs.*{msg}.*{ctx}"):
            autoregressive_generate(target, [1, 2], 4)


def test_models_without_probs_and_the_check_switch() -> None:
    """A model of ``None`` or without ``probs`` raised AttributeError."""
    pair = SyntheticPair(16, 0.7, seed=1)
    for bad in (None, object()):
        with pytest.raises(ValueError, match=r"^target = .*: must be a model with probs"):
            speculative_generate(bad, pair.draft, [1, 2], 4, tree=[-1, 0])
        with pytest.raises(ValueError, match=r"^draft = .*: must be a model with probs"):
            speculative_generate(pair.target, bad, [1, 2], 4, tree=[-1, 0])
    with pytest.raises(ValueError, match=r"^check_models = 'no': must be True or False$"):
        speculative_generate(pair.target, pair.draft, [1, 2], 4, tree=[-1, 0], check_models="no")
    # unchecked, a trusted model's output goes straight in: same tokens as checked
    kw = {"tree": [-1, 0, 0, 1], "seed": 3, "arith": "fixed"}
    on = speculative_generate(pair.target, pair.draft, [1, 2], 16, **kw).tokens
    off = speculative_generate(pair.target, pair.draft, [1, 2], 16, check_models=False, **kw)
    assert off.tokens == on


CLI_CASES = [
    ("golden.__main__", ["--tokens", "0"], "argument --tokens: must be an integer >= 1, got '0'"),
    ("golden.__main__", ["--seed", "-1"], "argument --seed: must be an integer in 0 .. "),
    ("golden.__main__", ["--tokens", "-1"], "argument --tokens: must be an integer >= 1"),
    ("golden.__main__", ["--nodes", "0"], "argument --nodes: must be an integer in 2 .. 1024"),
    ("sim.__main__", ["--dpi", "0"], "argument --dpi: must be an integer in 10 .. 1200"),
    ("sim.__main__", ["--timeline-steps", "0"], "argument --timeline-steps: must be an integer"),
    ("sim.timing.__main__", ["--steps", "0"], "argument --steps: must be an integer in 1 .. 64"),
    ("sim.rtl.__main__", ["bogus=1"], "unknown parameter(s): bogus"),
    ("sim.rtl.__main__", ["n_nodes=3"], "n_nodes = 3: must be an integer in 4 .. 1024"),
    ("flows.verilog", ["LANES=0"], "token_sampler: LANES = 0: must be an integer in 1 .. 16"),
    ("flows.depth", ["bogus"], "argument block: invalid choice: 'bogus'"),
    ("flows.depth", ["kv_pool", "LANES=2"], "no block of kv_pool takes parameter(s) LANES"),
    ("formal.kv_pool", ["bogus"], "tasks = ['bogus']: each must be one of 'prove', 'bmc'"),
    # found by tests/test_fuzz_cli.py and its review (issue 19, item 4); each ran (a
    # decode, a benchmark, make test, Yosys) and then raised a traceback, or ran wrong
    ("flows.report.generate", ["--readme=--"], "argument --readme: expected a value, got '--'"),
    ("sim.__main__", ["--n-nodes", "16"], "argument --nodes (with --n-nodes): nodes = 32"),
    ("sim.__main__", ["--tokens", "1000"], "--pages: context: 1 sequence(s) of prompt 64"),
    ("sim.__main__", ["--prefix", "a/b"], "argument --prefix: must be a file-name prefix"),
    ("sim.timing.__main__", ["--profile", "h100-7b"], "argument --profile: 'h100-7b': a GPU"),
    ("sim.timing.__main__", ["--set", "a.b=1", "--set", "a.b=2"], "--set: a.b: given twice"),
    ("flows.testtime", ["--", "no-such-command-x"], "cmd: 'no-such-command-x' is not a command"),
    ("flows.synth.cli", ["--timeout", "1e99"], "argument --timeout: must be a finite number in"),
    ("flows.synth.cli", ["--blocks", "bogus"], "argument --blocks: 'bogus' is not a block"),
    ("flows.synth.cli", ["--sweep", "--blocks", "specdecode_top"], "specdecode_top: no sweep"),
    ("flows.synth_fpga", ["--pnr-timeout", "1e99"], "argument --pnr-timeout: must be a finite"),
    ("flows.synth_fpga", ["--seeds", "4294967296"], "distinct seeds in 0 .. 2147483647"),
    ("flows.synth_fpga", ["--jobs", "0"], "argument --jobs: must be an integer in 1 .. 256"),
    ("golden.bench", ["--runs", "0"], "argument --runs: must be an integer >= 1, got '0'"),
    ("golden.bench", ["--seconds", "0"], "argument --seconds: must be a finite number > 0"),
    ("sim.bench", ["--rtl-tokens", "0"], "argument --rtl-tokens: must be an integer in 1 .. "),
    ("sim.bench", ["--rtl-tokens", "300"], "argument --rtl-tokens: context: 1 sequence(s)"),
    ("flows.verilog", ["=1"], "expected NAME=VALUE, got '=1'"),
    ("flows.verilog", ["N_NODES=8", "N_NODES=16"], "N_NODES: given twice"),
    ("flows.synth_fpga", ["--set", "=1"], "argument --set: expected NAME=VALUE, got '=1'"),
    ("sim.rtl.__main__", ["=1"], "'=1': expected NAME=INTEGER"),
    ("formal.kv_pool", ["prove", "prove"], "tasks = ['prove', 'prove']: each at most once"),
    ("flows.report.generate", ["--check", "--stamp", "x.json"], "not allowed with argument"),
]


@pytest.mark.parametrize(("module", "argv", "msg"), CLI_CASES, ids=lambda x: str(x)[:30])
def test_cli_refuses_bad_arguments_before_working(module, argv, msg, capsys) -> None:
    """Each ran for a while (a decode, 64 s of Verilog, every proof) and then
    raised a traceback; now a one-line usage error, exit status 2, at once."""
    import importlib

    main = importlib.import_module(module).main
    t0 = time.monotonic()
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert msg in capsys.readouterr().err
    assert time.monotonic() - t0 < 5.0


def test_cli_refuses_an_existing_file_as_output_directory(tmp_path, capsys) -> None:
    """``python -m sim --out <a file>`` decoded, then failed in pathlib."""
    import importlib

    f = tmp_path / "a_file"
    f.write_text("")
    for module in ("sim.__main__", "sim.timing.__main__"):
        with pytest.raises(SystemExit) as e:
            importlib.import_module(module).main(["--out", str(f)])
        assert e.value.code == 2
        assert "is a file, not a directory" in capsys.readouterr().err


def _step_inputs():
    from golden.rng import LaneRNG

    parents = [-1, 0, 0, 1]
    p = np.full((4, 4), 0.25)
    q = np.array([[0.4, 0.3, 0.2, 0.1]] * 4)
    return parents, p, q, np.array([0, 1, 2, 3]), LaneRNG(5, 4).next()


@pytest.mark.parametrize(
    ("spoil", "msg"),
    [
        (lambda p: p * np.nan, r"^p\[0, 0\] = nan: must be a finite number >= 0$"),
        (lambda p: p - 0.5, r"^p\[0, 0\] = -0\.25"),
        (lambda p: p * 0, r"^p\[0\] sums to 0\.0: must sum to 1"),
        (lambda p: p * 3, r"^p\[0\] sums to 3\.0"),
    ],
)
def test_steps_and_precompute_check_p(spoil, msg) -> None:
    """``precompute`` / ``parallel_step`` / ``sequential_step`` accepted NaN,
    negative, all-zero and unnormalised target rows."""
    from golden import accept

    parents, p, q, tok, lanes = _step_inputs()
    with pytest.raises(ValueError, match=msg):
        accept.precompute(spoil(p), q, parents, tok)
    for step in (accept.parallel_step, accept.sequential_step):
        with pytest.raises(ValueError, match=msg):
            step(spoil(p), q, parents, tok, lanes)


def test_precompute_checks_tokens_and_q() -> None:
    """``precompute(tokens=[0, 1.7, ...])`` truncated; ``q=None``, a 1-D ``q`` and a
    ``q_index`` out of range raised generic errors; an internal node's bad q row."""
    from golden import accept

    parents, p, q, tok, _ = _step_inputs()
    with pytest.raises(ValueError, match=r"^tokens\[1\] = 1\.7: must be an integer$"):
        accept.precompute(p, q, parents, [0, 1.7, 2, 3])
    for bad in (None, q[0]):
        with pytest.raises(ValueError, match=r"^q has shape .*: expected \(n, V\)"):
            accept.precompute(p, bad, parents, tok)
    with pytest.raises(ValueError, match=r"^q_index\[0\] = 9: must be an integer in -1 \.\. 3$"):
        accept.precompute(p, q, parents, tok, q_index=np.array([9, 0, -1, -1]))
    q_bad = q.copy()
    q_bad[1] = [0.5, 0.5, 0.5, 0.5]  # node 1 has a child: its row is used
    with pytest.raises(ValueError, match=r"^q\[1\] sums to 2\.0: must sum to 1"):
        accept.precompute(p, q_bad, parents, tok)
    q_leaf = q.copy()
    q_leaf[3] = 0.0  # node 3 is a leaf: its row is never used
    assert accept.precompute(p, q_leaf, parents, tok).pt.shape == (4,)


def test_uniforms_lanes_and_extra_token_ranges() -> None:
    """``decide_float`` with ``U = 2.0``, ``extra_token(u32=2**40)`` or ``-1``,
    ``arith="bogus"``, ``parallel_step(rand_bits=0)`` and negative lane outputs."""
    from golden import accept
    from golden.walk import extra_token

    parents, p, q, tok, lanes = _step_inputs()
    with pytest.raises(ValueError, match=r"^U\[1\] = 2\.0: must be a finite number in \[0, 1\)$"):
        accept.decide_float(parents, np.ones(4), np.ones(4), [0.0, 2.0, 0.1, 0.1])
    d = np.array([0.5, 0.5])
    for u32 in (2**40, -1):
        with pytest.raises(ValueError, match=f"^u32 = {u32}: must be an integer in 0 .. "):
            extra_token(d, d, u32)
    with pytest.raises(ValueError, match=r"^arith = 'bogus': must be one of 'float', 'fixed'$"):
        extra_token(d, d, 5, arith="bogus")
    with pytest.raises(ValueError, match=r"^rand_bits = 0: must be an integer in 1 \.\. 32$"):
        accept.parallel_step(p, q, parents, tok, lanes, rand_bits=0)
    with pytest.raises(ValueError, match=r"^lane_out\[1\] = -1: must be an integer in 0 \.\. "):
        accept.parallel_step(p, q, parents, tok, np.array([1, -1, 2, 3]))


def test_prompt_and_vocabulary_are_named() -> None:
    """``prompt=None`` raised TypeError; ``vocab_size=0`` blamed ``prompt[0]``."""
    from golden.decoder import autoregressive_generate

    pair = SyntheticPair(16, 0.7, seed=1)
    for prompt, msg in [
        (None, r"^prompt = None: must be a sequence of integers$"),
        ([1, 99], r"^prompt\[1\] = 99: must be an integer in 0 \.\. 15$"),
        ([1, 2.0], r"^prompt\[1\] = 2\.0: must be an integer in 0 \.\. 15$"),
    ]:
        with pytest.raises(ValueError, match=msg):
            autoregressive_generate(pair.target, prompt, 3)

    class NoVocab:
        vocab_size = 0

        def probs(self, contexts):
            return np.ones((len(contexts), 1))

    with pytest.raises(ValueError, match=r"^target\.vocab_size = 0: must be an integer >= 1$"):
        autoregressive_generate(NoVocab(), [0], 3)


def test_models_that_check_their_own_rows_are_not_wrapped() -> None:
    """``NGramModel`` checks every row once, when computed; the decoders then
    skip the per-call check (its price at V = 256 was a quarter of the decode)."""
    from golden.draft import CheckedModel, checked_model
    from golden.models import NGramModel

    assert NGramModel.checks_own_outputs is True
    pair = SyntheticPair(16, 0.7, seed=1)
    assert isinstance(checked_model(pair.target, "target"), CheckedModel)
    fake = type("Own", (), {"checks_own_outputs": True, "vocab_size": 4, "probs": None})()
    assert checked_model(fake, "target") is fake
    assert checked_model(pair.target, "target", check=False) is pair.target


def test_ngram_model_refuses_a_bad_row_as_it_computes_it(monkeypatch) -> None:
    """What ``checks_own_outputs`` promises: a row that is not a distribution
    never enters the n-gram model's row cache."""
    from golden.models import NGramModel

    model = NGramModel.train(bytes(range(256)) * 4, order=3)
    monkeypatch.setattr(model, "_compute_one", lambda tail: np.full(256, np.nan))
    with pytest.raises(ValueError, match=r"^NGramModel row\[0, 0\] = nan"):
        model.probs([[1, 2]])


# --------------------------------------------------------------------------- issue 19, item 4
# found by tests/test_fuzz_api.py


def test_model_tokens_are_never_bools_or_floats_from_a_cache() -> None:
    """``NGramModel.probs([[True, 2]])`` read True as byte 1 (``bytes()`` takes
    bools); after ``TableModel.probs([[1, 2]])``, ``[[1.0, 2]]`` and ``[[True, 2]]``
    hit its row cache (equal dict keys), though refused before."""
    from golden.models import NGramModel, TableModel

    ngram = NGramModel.train(b"abcabd" * 4, order=3)
    table = TableModel.random(3, 1, order=2)
    for model in (ngram, table, SyntheticPair(8, 0.7).target):
        model.probs([[1, 2]])
        for bad in ([True, 2], [1.0, 2], [np.True_, 2]):
            with pytest.raises(ValueError, match=r"^contexts\[0\]\[0\] = .*: token must be an int"):
                model.probs([bad])


def test_ragged_tails_and_contexts_are_named() -> None:
    """``probs_tails([[1, 2], [3]])`` raised numpy's "inhomogeneous shape" error;
    ``tails_matrix([[1.7]], 1)`` truncated to ``[[1]]``; ``tails_matrix(c, 10**30)``
    raised "Maximum allowed dimension exceeded"."""
    from golden.models import NGramModel, tails_matrix

    pair = SyntheticPair(8, 0.7)
    ngram = NGramModel.train(b"abcabd" * 4, order=3)
    for fn in (pair.draft.probs_tails, ngram.probs_tails, ngram.probs_tails_cdf):
        with pytest.raises(ValueError, match=r"^tails = \[\[1, 2\], \[3\]\]: must be an integer"):
            fn([[1, 2], [3]])
    with pytest.raises(ValueError, match=r"^contexts\[0\]\[0\] = 1\.7: token must be an integer"):
        tails_matrix([[1.7]], 1)
    with pytest.raises(ValueError, match=r"^window = 10{30}: must be an integer in 0 \.\. 4096$"):
        tails_matrix([[1]], 10**30)
    with pytest.raises(ValueError, match=r"^contexts = array\(5\): must be a list of token"):
        pair.target.probs(np.array(5))


def test_table_model_arguments_are_checked_before_any_work() -> None:
    """``TableModel(t, order=2**70)`` and ``joint(p, 2**70)`` never returned (``V**order``);
    ``TableModel("abc")`` and ``TableModel({})`` raised numpy's errors;
    ``random(seed=True)`` a TypeError, ``random(concentration=[1])`` a TypeError,
    ``random(concentration=1.7e308)`` a table of NaN."""
    from golden.models import TableModel

    m = TableModel.random(3, 1)
    t0 = time.monotonic()
    with pytest.raises(ValueError, match=r"^order = 1180591620717411303424: must be an integer"):
        TableModel(m.table, order=2**70)
    with pytest.raises(ValueError, match=r"^order = 63: must be <= 62 for V = 3"):
        TableModel(m.table, order=63)
    with pytest.raises(ValueError, match=r"^length = 1180591620717411303424: must be an integer"):
        m.joint([1], 2**70)
    assert time.monotonic() - t0 < 1.0
    for bad in ("abc", {}):
        with pytest.raises(ValueError, match=r"^table = .*: must be a number or an array"):
            TableModel(bad)
    for kw, msg in [
        ({"seed": True}, r"^seed = True: must be an integer in 0 \.\. "),
        ({"seed": -1}, r"^seed = -1: must be an integer in 0 \.\. "),
        ({"concentration": [1.0]}, r"^concentration = \[1\.0\]: must be a finite number in \(0, "),
        ({"concentration": 1.7e308}, r"^concentration = 1\.7e\+308: must be a finite number in"),
    ]:
        with pytest.raises(ValueError, match=msg):
            TableModel.random(3, **{"seed": 1, **kw})


def test_ngram_levels_are_checked() -> None:
    """``NGramModel(2, 0.5, nan)`` raised TypeError; a level whose arrays are not
    count tables (a byte 300, unsorted contexts, wrong totals) raised numpy's
    errors or gave rows that were not distributions."""
    from golden.models import NGramModel

    ref = NGramModel.train(b"abcabd" * 4, order=2)
    with pytest.raises(ValueError, match=r"^levels = nan: must be a list of \(ctx, start"):
        NGramModel(2, 0.5, float("nan"))
    ctx, start, nxt, cnt, total = ref._levels[1]
    for i, a, msg in [
        (2, np.r_[300, nxt[1:].astype(int)], r"^levels\[1\]\.nxt\[0\] = 300: must be an int"),
        (0, ctx[::-1], r"^levels\[1\]\.ctx\[1\] = \d+: must be greater than levels\[1\]\.ctx"),
        (4, total + 1, r"^levels\[1\]\.total\[0\] = \d+: must be the sum of its counts"),
        (1, start * 0, r"^levels\[1\]\.start = .*: must run from 0 to len"),
        (3, cnt.astype(float), r"^levels\[1\]\.cnt\[0\] = 8\.0: must be an integer"),
    ]:
        lv = [ctx, start, nxt, cnt, total]
        lv[i] = a
        with pytest.raises(ValueError, match=msg):
            NGramModel(2, 0.5, [ref._levels[0], tuple(lv)])
    assert NGramModel(2, 0.75, ref._levels) == ref


def test_draw_tree_names_its_arguments() -> None:
    """``draw_tree`` with ``draft=None`` raised AttributeError, ``rng=[]``
    AttributeError, ``context=5`` TypeError, ``context=[[290]]`` numpy's error,
    ``children=np.zeros(2)`` numpy's "truth value is ambiguous";
    ``context_tail(model, 5)`` a TypeError."""
    from golden.draft import check_children_rule, context_tail, draw_tree

    pair = SyntheticPair(8, 0.7)
    gen = np.random.default_rng(1)
    for kw, msg in [
        ({"draft": None}, r"^draft = None: must be a model with probs"),
        ({"rng": []}, r"^rng = \[\]: must be a numpy\.random\.Generator$"),
        ({"context": 5}, r"^context = 5: must be a sequence of tokens$"),
        ({"context": [[290]]}, r"^context\[0\] = \[290\]: must be an integer in 0 \.\. 7$"),
        ({"context": [1, 2.0]}, r"^context\[1\] = 2\.0: must be an integer in 0 \.\. 7$"),
        ({"children": np.zeros(2)}, r"^children = array\(\[0\., 0\.\]\): must be one of 'iid'"),
    ]:
        args = {"parents": [-1, 0], "draft": pair.draft, "context": [1, 2], "children": "iid"}
        with pytest.raises(ValueError, match=msg):
            draw_tree(**{**args, "rng": gen, **kw})
    with pytest.raises(ValueError, match=r"^children = 'IID': must be one of 'iid', 'swor'"):
        check_children_rule("IID")
    with pytest.raises(ValueError, match=r"^context = 5: must be a sequence of tokens$"):
        context_tail(pair.draft, 5)


def test_tree_shapes_and_sequoia_sizes_are_bounded() -> None:
    """``chain(np.uint64(2**63))`` raised OverflowError (``chain(2**40)`` ran out of
    memory); ``Chain(5000)`` blamed ``tree has 5001 nodes``, not ``k``;
    ``sequoia_tree(acc, 10**6, 4)`` and ``AdaptiveSequoia(10**6, ...)`` built a
    10**6 x 10**6 table; ``estimate_acceptance([], 10**30)`` raised numpy's
    "Maximum allowed dimension exceeded"; ``check_prior(acc, nan, 2)`` a TypeError."""
    from golden import trees

    t0 = time.monotonic()
    for fn in (trees.chain, trees.star):
        with pytest.raises(
            ValueError, match=r"^k = np\.uint64\(9223372036854775808\): must be an int"
        ):
            fn(np.uint64(2**63))
    with pytest.raises(ValueError, match=r"^k = 5000: must be an integer in 0 \.\. 1023$"):
        trees.Chain(5000)
    for fn in (trees.sequoia_tree, trees.SequoiaTree, trees.AdaptiveSequoia):
        args = (10**6, 4, [0.5]) if fn is trees.AdaptiveSequoia else ([0.5], 10**6, 4)
        with pytest.raises(
            ValueError, match=r"^n_nodes = 1000000: must be an integer in 1 \.\. 1024"
        ):
            fn(*args)
    with pytest.raises(
        ValueError, match=r"^max_children = 10{30}: must be an integer in 1 \.\. 1023"
    ):
        trees.estimate_acceptance([], 10**30)
    with pytest.raises(ValueError, match=r"^max_children = nan: must be an integer in 1 \.\. 1023"):
        trees.check_prior([0.5], float("nan"), 2.0)
    assert time.monotonic() - t0 < 1.0


def test_acceptance_vectors_refuse_bools_and_strings() -> None:
    """``sequoia_tree([True], 4, 2)`` solved for ``acc = [1.0]`` and ``["0.5"]`` for
    ``[0.5]`` (numpy converts both); the sum's message now reads as the family's."""
    from golden import trees

    for acc, msg in [
        ([True], r"^acc\[0\] = True: must be a finite number in \[0, 1\]$"),
        (["0.5"], r"^acc\[0\] = '0\.5': must be a finite number in \[0, 1\]$"),
        (np.array([True]), r"^acc\[0\] = True: must be a finite number"),
        ([0.5, 0.7], r"^acc sums to 1\.2: must be at most 1 \(within 1e-09; ranks are disjoint"),
    ]:
        with pytest.raises(ValueError, match=msg):
            trees.sequoia_tree(acc, 4, 2)


def test_step_records_are_checked_whole_before_counting() -> None:
    """``estimate_acceptance(nan, 2)`` raised TypeError, ``([5], 2)`` AttributeError;
    a path ``[0, 1.9]`` counted node 1 (``int()`` truncated); ``AdaptiveSequoia.
    observe`` of a path that went wrong at its third node had already counted
    the first two (its statistics changed by a call that raised)."""
    from golden import trees
    from golden.draft import StepRecord

    def rec(path):
        return StepRecord([-1, 0, 0, 1], [], 0, path, 0, [])

    with pytest.raises(ValueError, match=r"^records = nan: must be an iterable of StepRecords"):
        trees.estimate_acceptance(float("nan"), 2)
    with pytest.raises(ValueError, match=r"^record = 5: must be a StepRecord"):
        trees.estimate_acceptance([5], 2)
    with pytest.raises(ValueError, match=r"^record\.path\[1\] = 1\.9: must be an integer"):
        trees.estimate_acceptance([rec([0, 1.9])], 2)
    policy = trees.AdaptiveSequoia(8, 4, [0.6, 0.2])
    with pytest.raises(ValueError, match=r"node 2 is not a child of node 1"):
        policy.observe(rec([0, 1, 2]))
    assert policy.hits.tolist() == [0] * 8 and policy.trials.tolist() == [0] * 8
    assert policy.n_observed == 0
