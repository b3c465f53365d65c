"""``python -m sim`` (``make chip``): the behavioural SpecDecode-1 decoding real text.

Decodes the default workload (the golden model's byte-level n-gram pair on
held-out standard-library code) on the ``specdecode1-7b`` profile with the
topology optimiser's Sequoia trees, then prints the generated text, the
per-phase time table, the backend's cycle counts and the projections against
plain decoding and the GPU profile, and writes PNGs under ``build/reports``
(timeline of the first steps in every overlap mode, accepted tokens per step,
the optimiser's tree sizes).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from checks import cli_parser, int_arg, out_dir_arg
from sim import report
from sim.chip import BACKENDS, TREES, Chip, ChipConfig
from sim.timing import known_profiles
from sim.workloads import WORKLOADS


class _Progress:
    """A one-line progress bar on stderr; its rate is the simulator's (tokens decoded
    per second of wall clock), the chip's projected speed is in the tables."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self.last = -1.0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        width = 40
        fill = int(width * done / total) if total else width
        rate = done / (now - self.t0) if now > self.t0 else 0.0
        sys.stderr.write(
            f"\rdecoding [{'#' * fill}{'.' * (width - fill)}] {done}/{total} "
            f"tokens (simulating {rate:,.0f} tokens per wall-clock second: the model's speed, "
            "not the chip's)"
        )
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m sim``."""
    d = ChipConfig()
    ap = cli_parser("python -m sim", __doc__.splitlines()[0])
    chips = [n for n in known_profiles() if "specdecode" in n]
    ap.add_argument(
        "--profile", default=d.profile, help=f"SpecDecode-1 timing profile: {', '.join(chips)}"
    )
    ap.add_argument("--tree", default=d.tree, choices=TREES, help="tree policy")
    ap.add_argument("--nodes", type=int, default=d.nodes, help="tree budget, root included")
    ap.add_argument("--depth", type=int, default=d.depth, help="largest draft depth")
    ap.add_argument(
        "--children",
        default=None,
        choices=["iid", "swor", "topk"],
        help="how siblings are drawn (None: the tree policy's rule)",
    )
    ap.add_argument("--mode", default=d.mode, choices=["sample", "greedy"], help="decoding mode")
    ap.add_argument(
        "--overlap",
        default=d.overlap,
        choices=["none", "prefetch", "speculative"],
        help="what the timing model overlaps",
    )
    ap.add_argument(
        "--backend", default=d.backend, choices=BACKENDS, help="tree manager and KV pool"
    )
    ap.add_argument("--seed", type=int, default=d.seed, help="seed of sequence 0")
    ap.add_argument("--tokens", type=int, default=d.tokens, help="new tokens per sequence")
    ap.add_argument("--workload", default=d.workload, choices=WORKLOADS, help="what is decoded")
    ap.add_argument("--prompt-len", type=int, default=d.prompt_len, help="prompt tokens")
    ap.add_argument("--batch", type=int, default=d.batch, help="sequences decoded together")
    ap.add_argument(
        "--shared-prompt",
        action="store_true",
        help="every sequence decodes the same prompt (prefix shared by fork)",
    )
    ap.add_argument("--n-nodes", type=int, default=d.n_nodes, help="N_NODES")
    ap.add_argument("--entries", type=int, default=d.entries, help="ENTRIES of the KV pool")
    ap.add_argument("--pages", type=int, default=d.pages, help="PAGES of the KV pool")
    ap.add_argument("--layers", type=int, default=d.layers, help="modelled KV layers")
    ap.add_argument(
        "--update-every",
        type=int,
        default=d.update_every,
        help="topology optimiser: steps between re-solves",
    )
    ap.add_argument(
        "--window", type=int, default=d.window, help="topology optimiser: steps of statistics"
    )
    ap.add_argument("--no-fallback", action="store_true", help="never fall back to plain decoding")
    ap.add_argument(
        "--out", type=out_dir_arg, default="build/reports", help="directory of the PNGs"
    )
    ap.add_argument("--no-plots", action="store_true", help="write no PNG")
    ap.add_argument("--dpi", type=int_arg(10, 1200), default=110, help="PNG resolution, 10 .. 1200")
    ap.add_argument("--prefix", default="chip", help="file-name prefix of the PNGs")
    ap.add_argument("--timeline-steps", type=int_arg(1, 64), default=4, help="steps drawn, 1 .. 64")
    ap.add_argument("--quiet", action="store_true", help="no progress bar, no text")
    return ap


def config_from(args: argparse.Namespace) -> ChipConfig:
    """The :class:`ChipConfig` of parsed arguments (``ValueError`` on a bad one)."""
    return ChipConfig(
        profile=args.profile,
        tree=args.tree,
        nodes=args.nodes,
        depth=args.depth,
        children=args.children,
        mode=args.mode,
        overlap=args.overlap,
        backend=args.backend,
        seed=args.seed,
        tokens=args.tokens,
        workload=args.workload,
        prompt_len=args.prompt_len,
        batch=args.batch,
        shared_prompt=args.shared_prompt,
        n_nodes=args.n_nodes,
        entries=args.entries,
        pages=args.pages,
        layers=args.layers,
        update_every=args.update_every,
        window=args.window,
        fallback=not args.no_fallback,
    )


def _text(tokens: Sequence[int], workload: str) -> str:
    if workload == "code":
        return bytes(tokens).decode("utf-8", "replace")
    return " ".join(str(t) for t in tokens)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns the exit status (2 on a bad option)."""
    args = build_parser().parse_args(argv)
    try:
        cfg = config_from(args)
        t0 = time.perf_counter()
        if not args.quiet:
            print(
                "loading the workload (n-gram models are cached under build/cache) ...", flush=True
            )
        chip = Chip(cfg)
        prompts = chip._prompts or []
        chip.check_capacity(prompts, cfg.tokens)
        print(
            f"== chip: {cfg.profile}, tree {cfg.tree} (budget {cfg.max_tree_nodes} nodes, "
            f"depth {cfg.depth}, children {cfg.children_rule}), overlap {cfg.overlap}, "
            f"backend {cfg.backend}, seed {cfg.seed}, {cfg.batch} sequence(s) x "
            f"{cfg.tokens} tokens, workload {cfg.workload}"
        )
        res = chip.run(progress=_Progress(not args.quiet))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        for s in res.sequences:
            print(f"\n--- sequence {s.seq} (seed {s.seed}): prompt ---")
            print(_text(s.prompt, cfg.workload))
            print(
                f"--- generated ({len(s.tokens)} tokens, {s.mean_accepted:.2f} accepted per "
                "step) ---"
            )
            print(_text(s.tokens, cfg.workload))
    print(
        f"\n{res.n_steps} chip steps, {res.emitted} tokens, {res.mean_accepted:.2f} accepted "
        f"draft tokens per step (+1 extra); model speed {res.steps_per_s:,.0f} steps/s"
    )
    print(f"\n== per-phase time on {cfg.profile} ({cfg.overlap}), projected from the run's steps")
    print(report.phase_table(res))
    print("\n== cycles")
    print(report.cycles_table(res))
    print(
        f"\n== projections: this run's trees and acceptance on {cfg.profile} and on its GPU "
        "baseline"
    )
    print(report.projections_table(res))
    pol = res.policies[0]
    hist = getattr(pol, "history", None)
    if hist:
        plain = sum(1 for d in hist if d.mode == "plain")
        sizes = sorted({d.n_nodes for d in hist})
        print(
            f"\ntopology optimiser (sequence 0): {len(hist)} solves, tree sizes {sizes}, "
            f"{plain} decisions for plain decoding"
        )
    if not args.no_plots:
        for p in report.write_pngs(
            res, args.out, steps=args.timeline_steps, dpi=args.dpi, prefix=args.prefix
        ):
            print(f"wrote {p}")
    print(f"total {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
