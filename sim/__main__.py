"""``python -m sim`` (``make chip``): the behavioural SpecDecode-1 decoding real text.

Decodes the default workload (the golden model's byte-level n-gram pair on
held-out standard-library code) on the ``specdecode1-7b`` profile with the
topology optimiser's Sequoia trees, then prints the generated text, the
per-phase time table, the backend's cycle counts and the projections against
plain decoding and the GPU profile, and writes under ``build/reports`` the
run's figures as JSON (``chip.json``, :func:`sim.report.summary`) and PNGs
(timeline of the first steps in every overlap mode, accepted tokens per step,
the optimiser's tree sizes).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from checks import cli_parser, int_arg, out_dir_arg
from sim import report
from sim.chip import BACKENDS, BUILDERS, TREES, Chip, ChipConfig
from sim.cli import MAX_POOL, checked_config, int_bounds
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


def _int(field: str) -> Callable[[str], int]:
    """The ``argparse`` type of :class:`ChipConfig`'s integer ``field`` (its static range)."""
    return int_arg(*int_bounds(field))


def _profile_arg(text: str) -> str:
    """``--profile``: a known timing profile (a GPU baseline is refused by ChipConfig)."""
    if text not in known_profiles():
        chips = [n for n in known_profiles() if "specdecode" in n]
        raise argparse.ArgumentTypeError(
            f"unknown profile {text!r}: SpecDecode-1 profiles are {', '.join(chips)}"
        )
    return text


def _prefix_arg(text: str) -> str:
    """``--prefix``: a file-name prefix (no directory part)."""
    if not text or text in (".", "..") or any(c in text for c in "/\\\x00"):
        raise argparse.ArgumentTypeError(
            f"must be a file-name prefix (no directory separator), got {text!r}"
        )
    return text


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m sim``."""
    d = ChipConfig()
    ap = cli_parser("python -m sim", __doc__.splitlines()[0])
    chips = [n for n in known_profiles() if "specdecode" in n]
    ap.add_argument(
        "--profile",
        type=_profile_arg,
        default=d.profile,
        help=f"SpecDecode-1 timing profile: {', '.join(chips)}",
    )
    ap.add_argument("--tree", default=d.tree, choices=TREES, help="tree policy")
    ap.add_argument("--nodes", type=int_arg(1), default=d.nodes, help="tree budget, root included")
    ap.add_argument("--depth", type=_int("depth"), default=d.depth, help="largest draft depth")
    ap.add_argument(
        "--children",
        default=None,
        choices=["iid", "swor", "topk"],
        help="how siblings are drawn (None: the tree policy's rule)",
    )
    ap.add_argument(
        "--builder",
        default=d.builder,
        choices=BUILDERS,
        help="who shapes the trees: software (float policies) or hardware (the tree "
        "builder and topology optimiser in fixed point)",
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
    ap.add_argument("--seed", type=_int("seed"), default=d.seed, help="seed of sequence 0")
    ap.add_argument(
        "--tokens",
        type=int_arg(1, MAX_POOL),
        default=d.tokens,
        help="new tokens per sequence (the KV pool must hold them)",
    )
    ap.add_argument("--workload", default=d.workload, choices=WORKLOADS, help="what is decoded")
    ap.add_argument(
        "--prompt-len", type=int_arg(1, MAX_POOL), default=d.prompt_len, help="prompt tokens"
    )
    ap.add_argument(
        "--batch", type=_int("batch"), default=d.batch, help="sequences decoded together"
    )
    ap.add_argument(
        "--shared-prompt",
        action="store_true",
        help="every sequence decodes the same prompt (prefix shared by fork)",
    )
    ap.add_argument("--n-nodes", type=_int("n_nodes"), default=d.n_nodes, help="N_NODES")
    ap.add_argument(
        "--entries", type=_int("entries"), default=d.entries, help="ENTRIES of the KV pool"
    )
    ap.add_argument("--pages", type=_int("pages"), default=d.pages, help="PAGES of the KV pool")
    ap.add_argument("--layers", type=_int("layers"), default=d.layers, help="modelled KV layers")
    ap.add_argument(
        "--select-lanes",
        type=_int("select_lanes"),
        default=d.select_lanes,
        help="SELECT_LANES: 0 the two-pass token sampler, a power of two up to 128 the "
        "one-pass token select (spec 3.12)",
    )
    ap.add_argument(
        "--update-every",
        type=_int("update_every"),
        default=d.update_every,
        help="topology optimiser: steps between re-solves",
    )
    ap.add_argument(
        "--window",
        type=_int("window"),
        default=d.window,
        help="topology optimiser: steps of statistics",
    )
    ap.add_argument("--no-fallback", action="store_true", help="never fall back to plain decoding")
    ap.add_argument(
        "--out",
        type=out_dir_arg,
        default="build/reports",
        help="directory of the JSON report (<prefix>.json) and the PNGs",
    )
    ap.add_argument("--no-plots", action="store_true", help="write no PNG")
    ap.add_argument("--dpi", type=int_arg(10, 1200), default=110, help="PNG resolution")
    ap.add_argument(
        "--prefix", type=_prefix_arg, default="chip", help="file-name prefix of the PNGs"
    )
    ap.add_argument("--timeline-steps", type=int_arg(1, 64), default=4, help="steps drawn")
    ap.add_argument("--quiet", action="store_true", help="no progress bar, no text")
    return ap


#: the options a decode's KV-pool need depends on (:func:`sim.cli.capacity_error`)
FIT_OPTIONS = "--tokens, --prompt-len, --batch, --layers, --nodes, --depth, --entries, --pages"


def config_from(args: argparse.Namespace, ap: argparse.ArgumentParser | None = None) -> ChipConfig:
    """The :class:`ChipConfig` of parsed arguments, whose decode fits its KV pool
    (:func:`sim.cli.checked_config`): a bad one is a usage error of ``ap`` (exit
    status 2) naming its option."""
    return checked_config(
        ap or build_parser(),
        fit_options=FIT_OPTIONS,
        profile=args.profile,
        tree=args.tree,
        nodes=args.nodes,
        depth=args.depth,
        children=args.children,
        builder=args.builder,
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
        select_lanes=args.select_lanes,
        update_every=args.update_every,
        window=args.window,
        fallback=not args.no_fallback,
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; nothing loaded, nothing written.

    ``config``: their :class:`ChipConfig` (:func:`config_from`: every field
    checked, and that the decode fits the KV pool, exactly for one sequence or
    a shared prompt; distinct prompts of a batch are checked again once loaded).

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr naming the option, for a
        bad argument.
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    args.config = config_from(args, ap)
    return args


def _text(tokens: Sequence[int], workload: str) -> str:
    if workload == "code":
        return bytes(tokens).decode("utf-8", "replace")
    return " ".join(str(t) for t in tokens)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns the exit status. A bad argument exits with status 2
    before any work (:func:`parse_args`); a decode whose distinct prompts turn out
    not to fit the KV pool returns 2 once they are loaded."""
    args = parse_args(argv)
    cfg = args.config
    try:
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
    print()
    print(report.extra_token_table(res))
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
    written = [report.write_summary(res, Path(args.out) / f"{args.prefix}.json")]
    if not args.no_plots:
        written += report.write_pngs(
            res, args.out, steps=args.timeline_steps, dpi=args.dpi, prefix=args.prefix
        )
    for p in written:
        print(f"wrote {p}")
    print(f"total {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
