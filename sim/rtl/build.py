"""The Verilog and Verilator model of ``specdecode_top`` for one parameter set, cached
under ``build/`` and rebuilt only when ``hw/`` changes.
"""

from __future__ import annotations

import fcntl
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path

import amaranth

from flows import toolchain, verilog
from hw.common import check_param
from hw.specdecode_top import PARAMS
from hw.tree_manager import check_select_lanes

REPO = Path(__file__).resolve().parents[2]
MODULE = "specdecode_top"
VERILOG_OUT = REPO / "build" / "verilog" / "cosim"
#: Verilator C++ flags. With a lean build (only the ports public), ``-O1`` builds
#: the default parameters several times faster than Verilator's own ``-Os`` and
#: runs them about ten times faster than ``-O0``
DEFAULT_BUILD_ARGS: tuple[str, ...] = ("-CFLAGS", "-O1")


# ----------------------------------------------------------------------------- build
def hdl_params(**params: int) -> dict[str, int]:
    """Lower-case :func:`open_rtl` parameters -> ``Top``'s, validated (``ValueError``
    naming the lower-case parameter and quoting its value)."""
    out = {}
    for name, p in PARAMS.items():
        out[name] = check_param(name.lower(), params.pop(name.lower(), p.default), p.lo, p.hi)
    if params:
        raise ValueError(f"unknown parameter(s): {', '.join(sorted(params))}")
    check_select_lanes(out["SELECT_LANES"], "select_lanes")  # before any block is built
    return out


def _hw_digest() -> str:
    """Hash of what the top's Verilog depends on: every source under ``hw/``,
    ``flows/verilog.py`` and the Amaranth version."""
    h = hashlib.sha256(amaranth.__version__.encode())
    files = sorted((REPO / "hw").rglob("*.py")) + [REPO / "flows" / "verilog.py"]
    for f in files:
        h.update(str(f.relative_to(REPO)).encode() + f.read_bytes())
    return h.hexdigest()[:16]


def verilog_of(hdl: dict[str, int]) -> Path:
    """``specdecode_top`` Verilog for ``hdl`` (``Top``'s parameter names), regenerated
    only when hw/ changed. Safe from many pytest-xdist workers at once: the first
    generates it, the others wait on a file lock and reuse it."""
    tag = verilog.suffix(hdl)
    VERILOG_OUT.mkdir(parents=True, exist_ok=True)
    path = VERILOG_OUT / f"{MODULE}{tag}.v"
    stamp = path.with_suffix(".stamp")
    digest = _hw_digest()
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (path.exists() and stamp.exists() and stamp.read_text() == digest):
            verilog.write(MODULE, hdl, out=VERILOG_OUT)
            stamp.write_text(digest)
    return path


def build_top(hdl: dict[str, int], build_args: Sequence[str] = DEFAULT_BUILD_ARGS) -> Path:
    """Verilator model of ``specdecode_top`` for ``hdl`` (``Top``'s parameter names);
    cached under ``build/sim/``. Returns its build folder.

    Built lean (only the top-level ports visible to cocotb, which is all the
    co-simulation touches)."""
    src = verilog_of(hdl)
    return toolchain.build(
        f"{MODULE}{verilog.suffix(hdl)}",
        [src],
        MODULE,
        build_args=tuple(build_args),
        public=(),
        progress=lambda msg: print(msg, file=sys.stderr, flush=True),
    )
