"""Verilog generation for every block: ``python -m flows.verilog [NAME=VALUE ...]``.

``make verilog`` writes ``build/verilog/<block>.v`` for every block at its
default parameters (module named after the block, ``emit_src=False``). Extra
``NAME=VALUE`` arguments (``make verilog N_NODES=256``) also write each block
that takes those parameters with them applied, as
``build/verilog/<block>__N_NODES_256.v``. ``--lint`` runs
``verilator --lint-only -Wall`` on every file written, with the waivers of
``flows/lint.vlt`` (warning categories Amaranth's generated Verilog trips by
construction).
"""

import argparse
import importlib
import inspect
import sys
from collections.abc import Sequence
from pathlib import Path

from amaranth.back import verilog

from checks import cli_parser
from hw.common import check_params

__all__ = [
    "BLOCKS",
    "block_class",
    "block_params",
    "parse_overrides",
    "blocks_arg",
    "generate",
    "write",
    "lint",
    "build_parser",
    "parse_args",
    "main",
]

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "build" / "verilog"
#: lint waivers for what Amaranth's Verilog back end produces by construction
WAIVERS = Path(__file__).resolve().parent / "lint.vlt"

#: block name (= Verilog module name) -> "module:Class"
BLOCKS: dict[str, str] = {
    "tree_mask_gen": "hw.tree_mask_gen:TreeMaskGen",
    "rng_lanes": "hw.rng_lanes:RngLanes",
    "accept_sampler": "hw.accept_sampler:AcceptSampler",
    "token_sampler": "hw.token_sampler:TokenSampler",
    "token_select": "hw.token_select:TokenSelect",
    "tree_manager": "hw.tree_manager:TreeManager",
    "kv_pool": "hw.kv_pool:KVPool",
    "topk": "hw.topk:TopK",
    "topology_optimiser": "hw.topology_optimiser:TopologyOptimiser",
    "tree_builder": "hw.tree_builder:TreeBuilder",
    "specdecode_top": "hw.specdecode_top:Top",
}


def block_class(name: str) -> type:
    if name not in BLOCKS:
        raise ValueError(f"block = {name!r}: unknown; blocks are {', '.join(BLOCKS)}")
    mod, cls = BLOCKS[name].split(":")
    return getattr(importlib.import_module(mod), cls)


def block_params(name: str) -> dict[str, object]:
    """The keyword parameters of a block with their defaults: its declared
    integer parameters (``PARAMS``), then any other keyword (``TARGET``)."""
    cls = block_class(name)
    sig = inspect.signature(cls.__init__)
    return {k: p.default for k, p in cls.PARAMS.items()} | {
        p.name: p.default
        for p in sig.parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.default is not p.empty
    }


def generate(name: str, **params: object) -> str:
    """Verilog text of block ``name`` with the given parameters."""
    return verilog.convert(block_class(name)(**params), name=name, emit_src=False)


def suffix(params: dict[str, object]) -> str:
    return "".join(f"__{k}_{v}" for k, v in sorted(params.items()))


def write(name: str, params: dict[str, object] | None = None, out: Path = OUT) -> Path:
    """Write ``<out>/<name><suffix>.v`` (only if its text changed); return the path."""
    params = dict(params or {})
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}{suffix(params)}.v"
    text = generate(name, **params)
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(".v.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def lint(path: Path) -> tuple[bool, str]:
    """``verilator --lint-only -Wall`` on one file: ``(clean, messages)``."""
    from flows.toolchain import verilator

    r = verilator(["--lint-only", "-Wall", str(WAIVERS), str(path)], capture_output=True, text=True)
    return r.returncode == 0 and "%Warning" not in r.stderr, r.stderr


def _parse(assignments: Sequence[str]) -> dict[str, int]:
    """``NAME=VALUE`` assignments as ``{NAME: int}``: a name given once, an integer
    value (decimal or ``0x`` / ``0o`` / ``0b``-prefixed)."""
    out = {}
    for a in assignments:
        k, eq, v = a.partition("=")
        if not eq or not k.isidentifier():
            raise ValueError(f"expected NAME=VALUE, got {a!r}")
        if k in out:
            raise ValueError(f"{k}: given twice")
        try:
            out[k] = int(v, 0)
        except ValueError:
            raise ValueError(f"{k} = {v!r}: not an integer") from None
    return out


def blocks_arg(text: str) -> list[str]:
    """An ``argparse`` type: a comma-separated subset of :data:`BLOCKS`, each at most
    once (``""``: none, i.e. the caller's default)."""
    names = [b.strip() for b in text.split(",") if b.strip()]
    for b in names:
        if b not in BLOCKS:
            raise argparse.ArgumentTypeError(f"{b!r} is not a block ({', '.join(BLOCKS)})")
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"{text!r}: a block named twice")
    return names


def parse_overrides(assignments: Sequence[str], names: Sequence[str]) -> dict[str, dict[str, int]]:
    """``NAME=VALUE`` ``assignments`` split by block: for each block of ``names``, the
    ones it takes, every value checked against the block's ``PARAMS``.

    Raises
    ------
    ValueError
        A malformed assignment, a name no block of ``names`` takes, or a value
        out of its range (the command lines turn it into a usage error, exit 2).
    """
    over = _parse(assignments)
    out = {b: {k: v for k, v in over.items() if k in block_params(b)} for b in names}
    unknown = set(over) - {k for p in out.values() for k in p}
    if unknown:
        raise ValueError(
            f"no block of {', '.join(names)} takes parameter(s) {', '.join(sorted(unknown))}"
        )
    for b, p in out.items():  # every value checked before any Verilog is written
        try:
            check_params(block_class(b).PARAMS, p)
        except ValueError as e:
            raise ValueError(f"{b}: {e}") from None
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m flows.verilog``."""
    ap = cli_parser("python -m flows.verilog", __doc__.splitlines()[0])
    ap.add_argument("params", nargs="*", metavar="NAME=VALUE", help="parameter overrides")
    ap.add_argument("--lint", action="store_true", help="verilator --lint-only -Wall each file")
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; no work done. ``per_block``: the
    overrides each block takes (:func:`parse_overrides`: every value checked before
    any Verilog is written).

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        args.per_block = parse_overrides(args.params, list(BLOCKS))
    except ValueError as e:
        ap.error(str(e))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Write every block's Verilog (and the overridden ones); exit status 1 if lint
    warns, 2 on a bad argument (:func:`parse_args`)."""
    args = parse_args(argv)
    per_block = args.per_block
    jobs: list[tuple[str, dict]] = [(b, {}) for b in BLOCKS]
    jobs += [(b, p) for b, p in per_block.items() if p]
    bad = 0
    for b, p in jobs:
        print(f"{b}{suffix(p)}: generating ...", end=" ", flush=True)
        path = write(b, p)
        msg = f"{path.relative_to(REPO)}"
        if args.lint:
            ok, text = lint(path)
            msg += "  lint clean" if ok else "  LINT WARNINGS"
            if not ok:
                bad += 1
                print(text, file=sys.stderr)
        print(msg, flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
