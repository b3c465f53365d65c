"""The KV pool's formal proofs (``formal/kv_pool.py``) in ``make test``: k-induction and
BMC on every configuration of ``formal.kv_pool.CONFIGS``, and a false property that
both must refute."""

import pytest

from formal import kv_pool

#: proved in make sim-full (make formal proves every configuration); make test proves
#: e4p6 (ENTRIES < PAGES; decisions 0041, 0049)
FULL_CONFIGS = {"e8p8", "e6p4", "e8p8_fpga", "e6p4_fpga", "e20p18_fpga"}


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(c, marks=pytest.mark.full) if c in FULL_CONFIGS else c
        for c in sorted(kv_pool.CONFIGS)
    ],
)
def test_kv_pool_invariants_proved(tmp_path, config: str) -> None:
    res = kv_pool.run(("prove", "bmc"), out=tmp_path, config=config)
    for task, (ok, _dt, log) in res.items():
        assert ok, f"{task} failed:\n{log}"


def test_false_property_is_caught(tmp_path) -> None:
    """The flow can fail: ``free_pages + valid_entries == PAGES + 1`` is refuted by
    both k-induction and BMC (a proof that cannot fail proves nothing)."""
    res = kv_pool.run(("prove", "bmc"), negate=True, out=tmp_path, bmc_depth=4)
    for task, (ok, _dt, log) in res.items():
        assert not ok, f"{task} passed a false property"
        assert "failed assertion" in log, log


def test_unknown_config_is_an_error() -> None:
    with pytest.raises(ValueError, match="config 'e1p1'"):
        kv_pool.run(config="e1p1")
