"""make verilog: every block converts to Verilog and passes `verilator --lint-only -Wall`."""

import gc
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable

from flows import verilog

#: blocks that specdecode_top holds at their defaults and whose own Verilog takes a minute
#: to generate: the top's lint covers their modules in make test, their own lint runs in
#: make sim-full (docs/decisions/0041)
IN_TOP = {"tree_manager", "tree_builder", "kv_pool"}


@pytest.mark.parametrize(
    "block",
    [pytest.param(b, marks=pytest.mark.full) if b in IN_TOP else b for b in verilog.BLOCKS],
)
def test_default_parameters_lint_clean(block: str, tmp_path) -> None:
    if block == "specdecode_top":  # the co-simulation's cached Verilog (tests/test_chip_rtl.py)
        from sim.rtl.build import hdl_params, verilog_of

        path = verilog_of(hdl_params())
    else:
        path = verilog.write(block, {}, out=tmp_path)
    text = path.read_text()
    assert f"module {block}(" in text, "module named after the block"
    assert "src =" not in text, "emit_src=False"
    ok, messages = verilog.lint(path)
    assert ok, messages


def test_mask_gen_builds_at_1024_nodes(tmp_path) -> None:
    path = verilog.write("tree_mask_gen", {"N_NODES": 1024}, out=tmp_path)
    ok, messages = verilog.lint(path)
    assert ok, messages


@pytest.mark.parametrize(
    "block",
    [
        "token_sampler",
        # the Verilog of each takes 20 - 60 s: make sim-full (decision 0041)
        pytest.param("tree_builder", marks=pytest.mark.full),
        pytest.param("kv_pool", marks=pytest.mark.full),
    ],
)
def test_fpga_variant_lints(block: str, tmp_path) -> None:
    path = verilog.write(block, {"TARGET": "fpga"}, out=tmp_path)
    ok, messages = verilog.lint(path)
    assert ok, messages


@pytest.mark.parametrize("block", list(verilog.BLOCKS))
def test_parameters_validated(block: str) -> None:
    cls = verilog.block_class(block)
    # a constructor that raises leaves an unelaborated object behind, which Amaranth
    # reports when it is collected: expected here, so collect it here, silenced
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        for name in verilog.block_params(block):
            p = cls.PARAMS.get(name)
            for bad in (0, -1, 10**6, True, "8"):
                if p and type(bad) is int and p.lo <= bad <= p.hi:  # SELECT_LANES = 0
                    continue
                with pytest.raises(ValueError, match=f"{name} = "):
                    cls(**{name: bad})
        gc.collect()


def test_cli_rejects_unknown_parameter() -> None:
    with pytest.raises(SystemExit):
        verilog.main(["NOT_A_PARAM=3"])
