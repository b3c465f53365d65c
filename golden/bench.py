"""``python -m golden.bench`` (``make bench``): golden-decoder throughput and float/fixed distance.

Writes ``build/reports/golden_bench.json`` and prints a table: decode steps
per second and tokens per second for 64-node trees at V = 256 (the byte-level
n-gram pair on code) and V = 32000 (the synthetic pair, alpha = 0.8), in float
and fixed arithmetic. Two 64-node shapes: a Sequoia DP tree (depth 6, the
shape the topology optimiser picks for a typical acceptance vector) and the
full tree (3, 4, 4) (depth 3, fewer draft-model calls per step). The
``batch16`` rows decode 16 sequences in lock step
(:func:`golden.batch.speculative_generate_batch`) and count sequence-steps;
the ``checks off`` rows repeat one configuration per workload with the models'
outputs unchecked (``check_models=False``), the price of the default checks.

It also measures how far ``arith="fixed"`` is from the float reference: both
share every random number, so the fraction of runs whose outputs differ
bounds the total-variation distance between the two output distributions
from above (a coupling bound).

This is a benchmark, not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from checks import cli_parser, int_arg, real_arg
from golden import trees
from golden.batch import speculative_generate_batch
from golden.decoder import speculative_generate
from golden.models import SyntheticPair, code_prompts, default_ngram_pair

REPORTS = Path(__file__).resolve().parent.parent / "build" / "reports"
TARGET_STEPS_PER_S = 2500  # issue target at V = 256


def shapes() -> dict[str, list[int]]:
    seq, _ = trees.sequoia_tree([0.55, 0.2, 0.1, 0.05], 64, 6)
    return {"sequoia64-d6": seq, "full(3,4,4)": trees.full_tree([3, 4, 4])}


def _rates(steps: int, tokens: int, dt: float, cpu: float) -> dict:
    """Throughput of ``steps`` steps emitting ``tokens`` tokens in ``dt`` wall-clock and
    ``cpu`` CPU seconds of this process (which other jobs on a shared machine do not
    inflate: compare configurations by ``steps_per_cpu_s``)."""
    return {
        "steps_per_s": steps / dt,
        "steps_per_cpu_s": steps / cpu,
        "tokens_per_s": tokens / dt,
        "tokens_per_step": tokens / steps,
        "steps": steps,
        "seconds": dt,
        "cpu_seconds": cpu,
    }


def run_one(
    target, draft, prompt, tree, arith: str, seconds: float, check_models: bool = True
) -> dict:
    """Steps/s of decodes with seeds 0, 1, ... for ``seconds``, then again on the same seeds.

    The first pass meets n-gram rows for the first time (the model's cost on
    new text: a row is computed in 60-80 us); the second pass finds them
    cached, which leaves the decoder's own cost (the issue's table-lookup
    model). Both are reported; ``steps_per_s`` is the second (warm) pass, so
    that float and fixed are compared on equal terms whichever runs first.
    """
    kw = {"tree": tree, "arith": arith, "keep_steps": False, "check_models": check_models}
    # warm-up: the tree-structure cache and the first rows of the prompt
    speculative_generate(target, draft, prompt, 10**9, max_steps=20, **kw)

    def timed(n_seeds: int | None) -> tuple[int, int, int, float, float]:
        steps = tokens = seed = 0
        t0, c0 = time.perf_counter(), time.process_time()
        while (time.perf_counter() - t0 < seconds) if n_seeds is None else seed < n_seeds:
            r = speculative_generate(target, draft, prompt, 10**9, seed=seed, max_steps=50, **kw)
            steps += r.n_steps
            tokens += len(r.tokens)
            seed += 1
        return steps, tokens, seed, time.perf_counter() - t0, time.process_time() - c0

    c_steps, _, n, c_dt, _ = timed(None)
    steps, tokens, _, dt, cpu = timed(n)
    return _rates(steps, tokens, dt, cpu) | {"cold_steps_per_s": c_steps / c_dt}


def run_batch(target, draft, prompt, tree, arith: str, seconds: float, batch: int) -> dict:
    """Sequence-steps per second with ``batch`` sequences decoded in lock step."""
    steps = tokens = 0
    seed = 0
    t0, c0 = time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds:
        rs = speculative_generate_batch(
            target,
            draft,
            [prompt] * batch,
            10**9,
            tree=tree,
            arith=arith,
            seeds=range(seed, seed + batch),
            max_steps=25,
        )
        steps += sum(r.n_steps for r in rs)
        tokens += sum(len(r.tokens) for r in rs)
        seed += batch
    return _rates(steps, tokens, time.perf_counter() - t0, time.process_time() - c0)


def fixed_vs_float(target, draft, prompt, tree, runs: int, length: int) -> dict:
    differ = 0
    for seed in range(runs):
        a = speculative_generate(
            target, draft, prompt, length, tree=tree, arith="float", seed=seed, keep_steps=False
        ).tokens[:length]
        b = speculative_generate(
            target, draft, prompt, length, tree=tree, arith="fixed", seed=seed, keep_steps=False
        ).tokens[:length]
        differ += a != b
    return {"runs": runs, "length": length, "differ": differ, "tv_upper_bound": differ / runs}


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m golden.bench``."""
    ap = cli_parser("python -m golden.bench", __doc__.splitlines()[0])
    ap.add_argument(
        "--seconds", type=real_arg(0, lo_open=True), default=3.0, help="time per configuration"
    )
    ap.add_argument(
        "--runs", type=int_arg(1), default=300, help="runs for the float/fixed distance"
    )
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; no work done: ``--seconds`` a finite
    number > 0, ``--runs`` an integer >= 1.

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    return build_parser().parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print its table and write ``golden_bench.json``."""
    args = parse_args(argv)

    print("loading models ...", flush=True)
    ngram_t, ngram_d = default_ngram_pair()
    syn = SyntheticPair(32000, 0.8, seed=0)
    workloads = {
        "ngram V=256": (ngram_t, ngram_d, code_prompts(1, 64, seed=0)[0]),
        "synthetic V=32000": (syn.target, syn.draft, [1, 2, 3]),
    }
    results = []
    configs = [(w, s, a) for w in workloads for s in shapes() for a in ("float", "fixed")]
    for i, (wname, sname, arith) in enumerate(configs, 1):
        t, d, prompt = workloads[wname]
        print(f"[{i}/{len(configs)}] {wname:<18} {sname:<13} {arith:<5} ...", end=" ", flush=True)
        r = run_one(t, d, prompt, shapes()[sname], arith, args.seconds)
        print(
            f"{r['steps_per_s']:8.0f} steps/s, {r['steps_per_cpu_s']:.0f} per CPU-s "
            f"(first pass {r['cold_steps_per_s']:.0f})",
            flush=True,
        )
        results.append({"workload": wname, "tree": sname, "arith": arith, "checks": "on", **r})

    # the models' outputs are checked by default (golden.draft.CheckedModel): its cost
    for wname in workloads:
        t, d, prompt = workloads[wname]
        sname, arith = "sequoia64-d6", "fixed"
        print(f"[checks off] {wname:<18} {sname:<13} {arith} ...", end=" ", flush=True)
        r = run_one(t, d, prompt, shapes()[sname], arith, args.seconds, check_models=False)
        print(f"{r['steps_per_s']:8.0f} steps/s, {r['steps_per_cpu_s']:.0f} per CPU-s", flush=True)
        row = {"workload": wname, "tree": sname, "arith": arith, "checks": "off", **r}
        results.append(row)

    t, d, prompt = workloads["ngram V=256"]
    for sname in shapes():
        arith = "fixed"
        print(f"[batch] ngram V=256 {sname:<13} {arith} x16 ...", end=" ", flush=True)
        r = run_batch(t, d, prompt, shapes()[sname], arith, args.seconds, 16)
        print(f"{r['steps_per_s']:8.0f} sequence-steps/s", flush=True)
        row = {"workload": "ngram V=256 batch16", "tree": sname, "arith": arith, "checks": "on"}
        results.append(row | r)

    print("measuring float vs fixed ...", flush=True)
    dist = fixed_vs_float(
        ngram_t, ngram_d, workloads["ngram V=256"][2], shapes()["full(3,4,4)"], args.runs, 64
    )

    REPORTS.mkdir(parents=True, exist_ok=True)
    report = {
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "processor": platform.processor() or platform.machine(),
        },
        "target_steps_per_s_at_V256": TARGET_STEPS_PER_S,
        "results": results,
        "fixed_vs_float": dist,
    }
    out = REPORTS / "golden_bench.json"
    out.write_text(json.dumps(report, indent=2))

    hdr = (
        f"{'workload':<18} {'tree':<13} {'arith':<5} {'steps/s':>8} {'tokens/s':>9} {'tok/step':>8}"
        f" {'1st pass':>8}"
    )
    print()
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        cold = f" {r['cold_steps_per_s']:>8.0f}" if "cold_steps_per_s" in r else ""
        print(
            f"{r['workload']:<18} {r['tree']:<13} {r['arith']:<5} {r['steps_per_s']:>8.0f} "
            f"{r['tokens_per_s']:>9.0f} {r['tokens_per_step']:>8.2f}{cold}"
        )
    print(
        f"\nfloat vs fixed (n-gram, full(3,4,4), {dist['runs']} runs x {dist['length']} tokens): "
        f"{dist['differ']} runs differ -> TV <= {dist['tv_upper_bound']:.3f}"
    )
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
