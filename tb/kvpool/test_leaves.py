"""The KV pool leaves without a simulator: parameters, Verilog and lint, the tag matrix.

What ``tests/test_params.py`` and ``tests/test_verilog.py`` check for every
block of :data:`flows.verilog.BLOCKS`, checked here for the leaves of
:data:`tb.kvpool.common.LEAVES` (they are not blocks of that registry): the
signature defaults are the declared ones, range ends are refused with the
message quoting the value, numpy integers are accepted, the Verilog module
is named after the leaf, carries no source locations and passes
``verilator --lint-only -Wall``. And the tag step's GF(2) matrix against
``golden.kvpool.crc``.
"""

import gc
import inspect
import random
import warnings

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable

from flows import verilog
from golden.kvpool import crc
from hw.kvpool.crc64 import BLOCK, crc64, matrix_tag, tag_matrix
from tb.common import FULL_ONLY
from tb.kvpool.common import LEAVES, leaf_class, leaf_verilog

NAMES = list(LEAVES)


@pytest.mark.parametrize("name", NAMES)
def test_signature_defaults_are_the_declared_ones(name: str) -> None:
    cls = leaf_class(name)
    sig = inspect.signature(cls.__init__).parameters
    keywords = {n: p.default for n, p in sig.items() if p.kind is p.KEYWORD_ONLY}
    assert keywords == {k: p.default for k, p in cls.PARAMS.items()}


@pytest.mark.parametrize("name", NAMES)
def test_parameters_validated(name: str) -> None:
    cls = leaf_class(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        for pname, p in cls.PARAMS.items():
            for bad in (p.lo - 1, p.hi + 1):
                msg = f"^{pname} = {bad}: must be an integer in {p.lo} .. {p.hi}"
                with pytest.raises(ValueError, match=msg):
                    cls(**{pname: bad})
            for bad in (True, "8", 2.0):
                with pytest.raises(ValueError, match=f"^{pname} = "):
                    cls(**{pname: bad})
            obj = cls(**{pname: np.int16(p.small)})
            assert type(getattr(obj, pname)) is int and getattr(obj, pname) == p.small
            del obj
        gc.collect()


@pytest.mark.parametrize("name", NAMES)
def test_docstring_states_the_declared_range_and_default(name: str) -> None:
    doc = inspect.getdoc(leaf_class(name)) or ""
    section = doc.split("Parameters\n----------\n", 1)[1].split("\n\nMembers\n", 1)[0]
    for pname, p in leaf_class(name).PARAMS.items():
        entry = section.split(f"{pname} : int\n", 1)[1].split(" : ", 1)[0]
        text = " ".join(entry.split())
        assert f"{p.lo} .. {p.hi}" in text and f"default {p.default}" in text, (pname, text)


@pytest.mark.parametrize(  # the composed pool's own lint: make sim-full (decision 0054)
    "name", [pytest.param(n, marks=FULL_ONLY) if n == "kvpool" else n for n in NAMES]
)
def test_small_parameters_lint_clean(name: str, tmp_path) -> None:
    small = {k: p.small for k, p in leaf_class(name).PARAMS.items()}
    path = leaf_verilog(name, small, out=tmp_path)
    text = path.read_text()
    assert f"module {name}(" in text, "module named after the leaf"
    assert "src =" not in text, "emit_src=False"
    ok, messages = verilog.lint(path)
    assert ok, messages


def test_tag_matrix_is_the_golden_crc() -> None:
    assert crc64(b"123456789", 0) == crc.CHECK
    rng = random.Random(20)
    for _ in range(300):
        prev = rng.getrandbits(64)
        toks = [rng.getrandbits(rng.choice([1, 17, 32])) for _ in range(BLOCK)]
        assert matrix_tag(prev, toks) == crc.block_tag(prev, toks)
    assert len(tag_matrix()) == 64 and all(0 < row < 1 << (64 + 32 * BLOCK) for row in tag_matrix())


def test_tlb_sets_and_ways_are_powers_of_two() -> None:
    cls = leaf_class("kvpool_tlb")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match=r"^SETS = 3: must be a power of two in 1 \.\. 65536"):
            cls(SETS=3)
        with pytest.raises(ValueError, match=r"^WAYS = 6: must be a power of two in 1 \.\. 8"):
            cls(WAYS=6)
        gc.collect()
