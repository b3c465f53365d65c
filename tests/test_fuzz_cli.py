"""Fuzz every command line's parser with malformed arguments (issue 19, item 4).

Every command line has ``parse_args(argv)``, which checks every argument and
does no work, and ``main(argv)``, which calls it and then works. Hypothesis
gives one option at a time a malformed value (empty, blank, NaN, the
infinities, negative, zero, huge, half-written hexadecimal, text, a
fraction, ``--``, non-ASCII, an existing file where a directory is expected,
a path under a file ...) and the positional ``NAME=VALUE`` / task arguments
malformed items; ``parse_args`` must return, or exit with status 2 and a
one-line error naming the option, and never raise anything else nor write
anything (every write is refused while it runs, its working directory must
stay empty). Derandomised, so that ``make test`` is repeatable; parsing only,
so the whole file takes seconds.

The named regression cases of what this found are in
``tests/test_hardening.py`` (``CLI_CASES``) and at the end of this file.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import importlib
import io
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent

#: every command line: module -> (arguments before, arguments after the fuzzed ones)
#: that make a valid command line
CLIS: dict[str, tuple[list[str], list[str]]] = {
    "formal.kv_pool": ([], []),
    "formal.kvpool": ([], []),
    "formal.kvpool_alloc": ([], []),
    "formal.kvpool_allocproto": ([], []),
    "formal.kvpool_bt": ([], []),
    "formal.kvpool_counts": ([], []),
    "formal.kvpool_conserve": ([], []),
    "formal.kvpool_sharecount": ([], []),
    "formal.kvpool_refuse": ([], []),
    "formal.kvpool_pslink": ([], []),
    "formal.kvpool_proto": ([], []),
    "formal.kvpool_ps": ([], []),
    "formal.kvpool_seg": ([], []),
    "formal.kvpool_seg_derived": ([], []),
    "formal.kvpool_segproto": ([], []),
    "formal.kvpool_tlb": ([], []),
    "formal.kvpool_tlbproto": ([], []),
    "formal.kvpool_ts": ([], []),
    "golden.bench": ([], []),
    "golden.kvpool.bench": ([], []),
    "golden.__main__": ([], []),
    "flows.testtime": ([], ["--", "true"]),
    "flows.verilog": ([], []),
    "flows.report.generate": ([], []),
    "flows.report.figures": ([], []),
    "flows.depth": (["kv_pool"], []),
    "flows.synth_fpga": ([], []),
    "flows.synth.cli": ([], []),
    "flows.kvpool_synth": ([], []),
    "flows.synth_tree": ([], []),
    "sim.bench": ([], []),
    "sim.timing.__main__": ([], []),
    "sim.context.__main__": ([], []),
    "sim.dse.__main__": ([], []),
    "sim.dse.deploy": ([], []),
    "sim.rtl.__main__": ([], []),
    "sim.__main__": ([], []),
    "tb.kv_pool.soak": ([], []),
    "tb.kvpool.soak": ([], []),
}

#: malformed option values
BAD_VALUES = [
    "",
    " ",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "-1",
    "0",
    "-0",
    "1e99",
    "-1e99",
    "1e-300",
    "99999999999999999999",
    "0x",
    "0x10",
    "08",
    "abc",
    "1.5",
    "1,5",
    "1,,1",
    "1,1",
    ",",
    "--",
    "-",
    "é",
    "a/b",
    ".",
    "..",
    "/",
    "true",
    "None",
    "[]",
    "kv_pool,kv_pool",
    "kv_pool,bogus",
    "specdecode1-7b",
    "h100-7b",
    "N_NODES=3",
    "=1",
    "X=",
]
#: malformed positional items (NAME=VALUE assignments, tasks, blocks)
BAD_ITEMS = [
    "N_NODES=3",
    "LANES=0",
    "bogus",
    "X=",
    "=1",
    "=",
    "N_NODES=abc",
    "N_NODES=0x",
    "N_NODES=8",
    "N_NODES=1e3",
    "n_nodes=3",
    "n_nodes=8",
    "entries=0",
    "entries=64",
    "pages=99999999999999999999",
    "TARGET=1",
    "TARGET=fpga",
    "ENTRIES=128",
    "hbm_bw=-1",
    "hbm_bw=nan",
    "precision=fp8",
    "article.accept_us=x",
    "prove",
    "bmc",
    "kv_pool",
    "-x",
    "é=1",
    "",
]
#: text without NUL (a command line cannot hold one)
ODD_TEXT = st.text(st.characters(blacklist_characters="\x00"), max_size=8)


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> dict[str, str]:
    """An existing file, an existing directory and a path under the file."""
    d = tmp_path_factory.mktemp("fuzz_cli_paths")
    f = d / "a_file"
    f.write_text("not json\n")
    (d / "a_dir").mkdir()
    return {"file": str(f), "dir": str(d / "a_dir"), "under_file": str(f / "sub")}


def _refuse(what: str):
    def refuse(*args, **kwargs):
        raise AssertionError(f"parse_args did work: {what}{args[:2]!r}")

    return refuse


@pytest.fixture
def no_work(monkeypatch, tmp_path) -> Path:
    """An empty working directory, and every write or subprocess refused."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    real_open = io.open

    def read_only_open(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+"):
            raise AssertionError(f"parse_args opened {file!r} for writing")
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(io, "open", read_only_open)
    monkeypatch.setattr(builtins, "open", read_only_open)
    for mod, name in [
        (os, "mkdir"),
        (os, "makedirs"),
        (os, "remove"),
        (os, "unlink"),
        (os, "rename"),
        (os, "replace"),
        (shutil, "rmtree"),
        (subprocess, "run"),
        (subprocess, "Popen"),
    ]:
        monkeypatch.setattr(mod, name, _refuse(f"{mod.__name__}.{name}"))
    return cwd


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)


def _value_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's options (not ``--help``), flags included."""
    return [
        a
        for a in parser._actions  # argparse has no public list of its actions
        if a.option_strings and not isinstance(a, argparse._HelpAction)
    ]


def _parse(module: ModuleType, argv: list[str]) -> tuple[int | None, str]:
    """``(None, "")`` if ``parse_args(argv)`` returned, else ``(exit status, stderr)``;
    any other exception propagates."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            module.parse_args(argv)
        except SystemExit as e:
            return e.code, err.getvalue()
    return None, ""


def _one_line_error(module: ModuleType, code: int | None, err: str) -> str:
    """The error line of a usage error (status 2, ``<prog>: error: ...``)."""
    prog = module.build_parser().prog
    assert code == 2, (code, err)
    assert "Traceback" not in err, err
    last = err.rstrip("\n").split("\n")[-1]
    assert last.startswith(f"{prog}: error: "), err
    return last


def _default_outputs(module: ModuleType) -> list[Path]:
    """The module's default output paths that do not exist yet."""
    out = [
        v
        for k in ("OUT", "REPORT", "REPORTS", "CACHE")
        if isinstance(v := getattr(module, k, None), Path)
    ]
    return [p for p in out if not p.exists()]


@pytest.mark.parametrize("name", list(CLIS))
def test_every_cli_has_parse_args_and_main(name: str) -> None:
    m = _module(name)
    for fn in ("build_parser", "parse_args", "main"):
        assert callable(getattr(m, fn, None)), f"{name}.{fn}"
    assert isinstance(m.build_parser(), argparse.ArgumentParser)


def test_every_command_line_is_listed() -> None:
    """A module that builds a command line (``cli_parser``, ``formal.sat.checks_parser``,
    ``formal.leaf.LeafChecks``) and runs it (``main``, its own or a ``LeafChecks``') is
    in :data:`CLIS`, so that a new command line cannot skip ``parse_args`` or this
    fuzzing (``formal.sat`` and ``formal.leaf`` only build parsers for others)."""
    found = set()
    for pkg in ("checks", "golden", "hw", "flows", "sim", "tb", "formal"):
        for path in (REPO / pkg).rglob("*.py"):
            text = path.read_text()
            runs = re.search(r"^(def main\(|build_parser, parse_args, main = )", text, re.M)
            builds = re.search(r"\b(cli|checks)_parser\(|\bLeafChecks\(", text)
            if builds and runs and pkg != "checks":
                mod = ".".join(path.relative_to(REPO).with_suffix("").parts)
                found.add(mod)
    unlisted, gone = sorted(found - set(CLIS)), sorted(set(CLIS) - found)
    assert not unlisted, f"{unlisted}: give it build_parser / parse_args and list it in CLIS"
    assert not gone, f"{gone}: listed in CLIS, but builds no cli_parser"


@pytest.mark.parametrize("name", list(CLIS))
def test_valid_command_line_parses_without_work(name: str, no_work: Path) -> None:
    before, after = CLIS[name]
    code, err = _parse(_module(name), before + after)
    assert code is None, err
    assert not any(no_work.iterdir())


#: the command lines with options besides ``--help``
WITH_OPTIONS = [n for n in CLIS if _value_actions(_module(n).build_parser())]


@pytest.mark.parametrize("name", WITH_OPTIONS)
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_malformed_option_is_a_usage_error_naming_it(
    name: str, data, no_work: Path, paths: dict[str, str]
) -> None:
    module = _module(name)
    fresh = _default_outputs(module)
    action = data.draw(st.sampled_from(_value_actions(module.build_parser())), label="option")
    option = data.draw(st.sampled_from(action.option_strings), label="spelling")
    value = data.draw(
        st.sampled_from(BAD_VALUES) | st.sampled_from(sorted(paths.values())) | ODD_TEXT,
        label="value",
    )
    if action.nargs == 0:  # a flag: alone, or with a value it must refuse
        args = data.draw(st.sampled_from([[option], [f"{option}={value}"]]), label="form")
    else:
        args = data.draw(st.sampled_from([[option, value], [f"{option}={value}"]]), label="form")
    before, after = CLIS[name]
    code, err = _parse(module, before + args + after)
    if code is not None:
        line = _one_line_error(module, code, err)
        assert option in line, line
    assert not any(no_work.iterdir()), sorted(no_work.iterdir())
    assert not any(p.exists() for p in fresh), fresh


#: the values every option is given in turn (the ones whose handling depends on
#: argparse's own rules rather than on a type: ``--opt=--`` is one)
STRUCTURAL = ["", "--", "-1", "0", "1", "nan", "1e99", "abc", "file", "under_file"]


@pytest.mark.parametrize("name", WITH_OPTIONS)
def test_every_option_refuses_structural_values(
    name: str, no_work: Path, paths: dict[str, str]
) -> None:
    """Not left to sampling: each option, each of :data:`STRUCTURAL`, both spellings."""
    module = _module(name)
    before, after = CLIS[name]
    for action in _value_actions(module.build_parser()):
        option = action.option_strings[-1]
        for v in (paths.get(v, v) for v in STRUCTURAL):
            forms = [[f"{option}={v}"]] + ([[option, v]] if action.nargs != 0 else [])
            for args in forms:
                code, err = _parse(module, before + args + after)
                if code is not None:
                    assert option in _one_line_error(module, code, err), (args, err)
    assert not any(no_work.iterdir())


#: modules with positional items (or a repeatable NAME=VALUE option): how items go
#: into a command line
ITEMS: dict[str, tuple[list[str], str | None]] = {
    "formal.kv_pool": ([], None),
    "formal.kvpool": ([], None),
    "flows.verilog": ([], None),
    "flows.depth": (["kv_pool"], None),
    "sim.rtl.__main__": ([], None),
    "flows.testtime": (["--"], None),
    "flows.synth_fpga": ([], "--set"),
    "sim.timing.__main__": ([], "--set"),
}


@pytest.mark.parametrize("name", list(ITEMS))
@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_malformed_items_are_a_usage_error_naming_one(name: str, data, no_work: Path) -> None:
    module = _module(name)
    before, option = ITEMS[name]
    items = data.draw(
        st.lists(st.sampled_from(BAD_ITEMS) | ODD_TEXT, min_size=1, max_size=3), label="items"
    )
    args = [a for item in items for a in ([option, item] if option else [item])]
    if name == "flows.depth":  # the block itself is fuzzed too
        before = [data.draw(st.sampled_from(["kv_pool", "bogus", "", "tree_mask_gen"]))]
    code, err = _parse(module, before + args)
    if code is not None:
        line = _one_line_error(module, code, err)
        named = [i.partition("=")[0] for i in items if i.partition("=")[0]]
        named += [repr(i) for i in items] + [repr(b) for b in before] + ([option] * bool(option))
        assert any(n in line for n in named) or "cmd = []" in line, (items, line)
    assert not any(no_work.iterdir()), sorted(no_work.iterdir())


# ------------------------------------------------------------------ regressions
# What the fuzzing found (and the review of each parser for the same kind of
# bug); the cases without paths are in tests/test_hardening.py's CLI_CASES.


@pytest.mark.parametrize(
    ("module", "argv", "msg"),
    [
        # an output directory under a file: the decode / the views ran, then mkdir failed
        ("sim.__main__", ["--out", "{under_file}"], "is a file, not a directory"),
        ("sim.timing.__main__", ["--out", "{under_file}"], "is a file, not a directory"),
        # an output file that is a directory: make test / the benchmark ran, then the
        # report could not be written
        ("flows.testtime", ["--out", "{dir}", "--", "true"], "is a directory, not a file"),
        ("sim.bench", ["--out", "{dir}"], "is a directory, not a file"),
        # flows.report: pages written, then the README missing; --check / --stamp on
        # what is not a JSON report: a traceback
        ("flows.report.generate", ["--out", "{file}"], "is a file, not a directory"),
        ("flows.report.generate", ["--readme", "{dir}/README.md"], "no such file"),
        ("flows.report.generate", ["--stamp", "{dir}"], "is a directory, not a file"),
        ("flows.report.generate", ["--stamp", "{file}"], "is not readable JSON"),
        ("flows.report.generate", ["--check", "--out", "{dir}"], "argument --out: "),
    ],
)
def test_cli_refuses_bad_paths_before_working(
    module: str, argv: list[str], msg: str, no_work: Path, paths: dict[str, str]
) -> None:
    m = _module(module)
    code, err = _parse(m, [a.format(**paths) for a in argv])
    line = _one_line_error(m, code, err)
    assert msg in line, line
    assert not any(no_work.iterdir())


def test_argument_types_found_wanting() -> None:
    """``real_arg`` quoted Python's float() error back (``'abc', got 'abc'``);
    ``int_arg`` refused ``08``; ``out_dir_arg`` took a path under a file."""
    from checks import int_arg, out_dir_arg, real_arg

    with pytest.raises(argparse.ArgumentTypeError) as e:
        real_arg(0)("abc")
    assert str(e.value) == "must be a finite number >= 0, got 'abc'"
    assert int_arg(1)("08") == 8 and int_arg(1)("0x10") == 16
    with pytest.raises(argparse.ArgumentTypeError, match="is a file, not a directory"):
        out_dir_arg(__file__ + "/sub")
