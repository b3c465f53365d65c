"""Block parameters are declared once (each block's ``PARAMS``): signatures,
checks, docstrings, doc pages and the top level agree with the
declaration (the synthesis smoke test builds each block at its small values)."""

import gc
import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable

from flows import verilog
from hw.common import Param, check_params, merge_params
from hw.specdecode_top import PARAMS as TOP_PARAMS
from hw.tree_manager import TreeManager

REPO = Path(__file__).resolve().parent.parent
BLOCKS = list(verilog.BLOCKS)


@pytest.mark.parametrize("block", BLOCKS)
def test_signature_defaults_are_the_declared_ones(block: str) -> None:
    """A leaf block names its parameters in its signature, with the declared
    defaults; a composition (tree manager, top) takes ``**params`` instead."""
    cls = verilog.block_class(block)
    sig = inspect.signature(cls.__init__).parameters
    keywords = {n: p.default for n, p in sig.items() if p.kind is p.KEYWORD_ONLY}
    keywords.pop("TARGET", None)
    if any(p.kind is p.VAR_KEYWORD for p in sig.values()):
        assert keywords == {}, f"{block}: **params and named parameters"
    else:
        assert keywords == {k: p.default for k, p in cls.PARAMS.items()}


@pytest.mark.parametrize("block", BLOCKS)
def test_range_ends_accepted_and_refused(block: str) -> None:
    cls = verilog.block_class(block)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        for name, p in cls.PARAMS.items():
            for bad in (p.lo - 1, p.hi + 1):
                msg = f"^{name} = {bad}: must be an integer in {p.lo} .. {p.hi}"
                with pytest.raises(ValueError, match=msg):
                    cls(**{name: bad})
        gc.collect()


def _doc_entries(cls: type) -> dict[str, str]:
    """The numpydoc ``Parameters`` section of ``cls``: entry names -> text."""
    doc = inspect.getdoc(cls) or ""
    section = doc.split("Parameters\n----------\n", 1)[1]
    section = re.split(r"\n\n[A-Z][a-z]+\n-+\n", section, maxsplit=1)[0]
    entries: dict[str, str] = {}
    for m in re.finditer(r"^(\S[^\n]*?) : [^\n]*\n((?:    [^\n]*\n?)*)", section, re.M):
        entries[m.group(1)] = " ".join(m.group(2).split())
    return entries


@pytest.mark.parametrize("block", BLOCKS)
def test_docstring_states_the_declared_range_and_default(block: str) -> None:
    """An entry naming one parameter states its range and default as declared;
    an entry naming several refers to where they are declared."""
    cls = verilog.block_class(block)
    entries = _doc_entries(cls)
    documented = {n.strip() for names in entries for n in names.split(",")}
    assert set(cls.PARAMS) <= documented, f"{block}: undocumented parameters"
    for name, p in cls.PARAMS.items():
        if name in entries:
            assert f"``{p.lo} .. {p.hi}``" in entries[name], (name, entries[name])
            assert f"default {p.default}" in entries[name], (name, entries[name])


def test_top_and_tree_manager_accept_what_every_block_accepts() -> None:
    assert TreeManager.PARAMS["N_NODES"] == Param(default=64, lo=4, hi=1024, small=4)
    assert TOP_PARAMS["N_NODES"].lo == 4 and TOP_PARAMS["N_NODES"].hi == 1024
    for block in ("tree_manager", "kv_pool"):
        for name, p in verilog.block_class(block).PARAMS.items():
            assert TOP_PARAMS[name].default == p.default
            assert p.lo <= TOP_PARAMS[name].lo <= TOP_PARAMS[name].hi <= p.hi


@pytest.mark.parametrize("bad", [3, 48, 127])
def test_select_lanes_is_zero_or_a_power_of_two(bad: int) -> None:
    # a constructor that raises leaves an unelaborated object behind, which Amaranth
    # reports when it is collected: expected here, so collect it here, silenced
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match=f"^SELECT_LANES = {bad}: must be 0"):
            TreeManager(SELECT_LANES=bad)
        gc.collect()


def test_merge_params_refuses_disagreeing_declarations() -> None:
    a = {"N": Param(default=8, lo=1, hi=16, small=2)}
    assert merge_params(a, {"N": Param(default=8, lo=4, hi=64, small=4)}) == {
        "N": Param(default=8, lo=4, hi=16, small=4)
    }
    with pytest.raises(ValueError, match="N: defaults 8 and 9 disagree"):
        merge_params(a, {"N": Param(default=9, lo=1, hi=16, small=2)})
    with pytest.raises(ValueError, match="default and small must be in lo .. hi"):
        Param(default=8, lo=1, hi=4, small=2)


def test_check_params_checks_every_value_and_names_unknown_ones() -> None:
    decl = {"A": Param(default=1, lo=1, hi=4, small=1), "B": Param(default=2, lo=1, hi=4, small=1)}
    assert check_params(decl, {"B": 3, "A": 2}) == {"A": 2, "B": 3}
    with pytest.raises(ValueError, match="^B = 5: must be an integer in 1 .. 4"):
        check_params(decl, {"A": 2, "B": 5})
    with pytest.raises(ValueError, match="unknown parameter.*C"):
        check_params(decl, {"C": 1})


def test_verilog_cli_checks_values_before_writing(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        verilog.main(["N_NODES=3"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "error: tree_mask_gen: N_NODES = 3: must be an integer in 4 .. 1024" in err


@pytest.mark.parametrize("block", BLOCKS)
def test_doc_page_table_is_the_declaration(block: str) -> None:
    """``docs/blocks/<block>.md``'s parameter table lists every declared
    parameter with its declared range and default."""
    page = (REPO / "docs" / "blocks" / f"{block}.md").read_text()
    rows = {
        m[0]: (int(m[1]), int(m[2]), int(m[3]))
        for m in re.findall(r"^\| `([A-Z_]+)` \| (\d+) \.\. (\d+) \| (\d+) \|", page, re.M)
    }
    decl = verilog.block_class(block).PARAMS
    assert rows == {k: (p.lo, p.hi, p.default) for k, p in decl.items()}


@pytest.mark.parametrize("block", BLOCKS)
def test_numpy_integers_accepted_as_python_ints(block: str) -> None:
    cls = verilog.block_class(block)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        name, p = next(iter(cls.PARAMS.items()))
        obj = cls(**{name: np.int16(p.small)})
        assert type(getattr(obj, name)) is int and getattr(obj, name) == p.small
        del obj
        gc.collect()
