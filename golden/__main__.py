"""``python -m golden`` (``make golden``): the golden decoder on code text.

Decodes the same held-out Python prompt with the default byte-level n-gram
pair (target order 6, draft order 4, trained on the standard library) using
plain decoding, a chain, a Sequoia DP tree (shape re-solved from observed
acceptance) and an EAGLE-2 dynamic tree, and prints a table of accepted
tokens per step and the generated text of each.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from checks import cli_parser, int_arg
from golden import trees
from golden.decoder import speculative_generate
from golden.models import code_prompts, default_ngram_pair
from golden.tree import MAX_NODES


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m golden``."""
    ap = cli_parser("python -m golden", __doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int_arg(1), default=400, help="new tokens per policy")
    ap.add_argument(
        "--seed", type=int_arg(0, 2**64 - 1), default=1, help="seed of the prompt and the lanes"
    )
    ap.add_argument(
        "--nodes",
        type=int_arg(2, MAX_NODES),
        default=32,
        help=f"tree budget, root included, 2 .. {MAX_NODES}",
    )
    ap.add_argument("--arith", choices=["float", "fixed"], default="fixed", help="arithmetic")
    ap.add_argument("--quiet", action="store_true", help="table only, no text")
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; no work done (every value is checked
    by its type).

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    return build_parser().parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Decode with each policy and print the table; 2 on a bad argument (:func:`parse_args`)."""
    args = parse_args(argv)

    t0 = time.perf_counter()
    print("training / loading the n-gram pair (cached under build/cache) ...", flush=True)
    target, draft = default_ngram_pair()
    prompt = code_prompts(1, 160, seed=args.seed)[0]
    print(f"ready in {time.perf_counter() - t0:.1f} s; prompt ({len(prompt)} bytes):")
    print(bytes(prompt).decode("utf-8", "replace"))
    print("-" * 72)

    # Sequoia's starting acceptance vector comes from the observed steps of a short
    # warm-up run with a small full tree (every sibling rank up to 4 gets tested).
    warm = speculative_generate(
        target,
        draft,
        prompt,
        200,
        tree=trees.full_tree([4, 2, 2, 1]),
        children="swor",
        seed=args.seed,
        arith=args.arith,
    )
    acc = trees.estimate_acceptance(warm.steps, 4)
    n = args.nodes
    policies = [
        ("plain (no draft)", [-1], "iid"),
        ("chain k=6", trees.Chain(6), "iid"),
        ("Sequoia DP", trees.AdaptiveSequoia(n, 8, list(acc), update_every=16), "swor"),
        ("EAGLE-2", trees.Eagle2Tree(n, 6, 4), "topk"),
    ]
    rows = []
    texts = []
    for name, policy, children in policies:
        t = time.perf_counter()
        r = speculative_generate(
            target,
            draft,
            prompt,
            args.tokens,
            tree=policy,
            children=children,
            seed=args.seed,
            arith=args.arith,
        )
        dt = time.perf_counter() - t
        nodes = max(len(s.parents) for s in r.steps)
        rows.append((name, children, nodes, r.n_steps, r.mean_accepted, r.tokens_per_step, dt))
        texts.append((name, bytes(r.tokens).decode("utf-8", "replace")))
        print(f"  {name:<18} done in {dt:.1f} s", flush=True)

    print()
    print(f"estimated per-child acceptance (ranks 1..4): {', '.join(f'{a:.3f}' for a in acc)}")
    hdr = f"{'policy':<18} {'children':<8} {'nodes':>5} {'steps':>6} {'accepted/step':>13}"
    hdr += f" {'tokens/step':>11} {'time s':>7}"
    print(hdr)
    print("-" * len(hdr))
    for name, children, nodes, steps, acc_m, tps, dt in rows:
        print(
            f"{name:<18} {children:<8} {nodes:>5} {steps:>6} {acc_m:>13.2f} {tps:>11.2f} {dt:>7.1f}"
        )
    if not args.quiet:
        for name, text in texts:
            print()
            print(f"=== {name} ===")
            print(text)
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
