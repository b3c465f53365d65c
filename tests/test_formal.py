"""The KV pool's formal proofs (formal/kv_pool.py) run in ``make test``: they take
~15 s (k-induction ~3 s, BMC ~10 s), well under the issue's two-minute bar."""

from formal import kv_pool


def test_kv_pool_invariants_proved(tmp_path) -> None:
    res = kv_pool.run(("prove", "bmc"), out=tmp_path)
    for task, (ok, _dt, log) in res.items():
        assert ok, f"{task} failed:\n{log}"


def test_false_property_is_caught(tmp_path) -> None:
    """The flow can fail: ``free_pages + valid_entries == PAGES + 1`` is refuted by
    both k-induction and BMC (a proof that cannot fail proves nothing)."""
    res = kv_pool.run(("prove", "bmc"), negate=True, out=tmp_path, bmc_depth=4)
    for task, (ok, _dt, log) in res.items():
        assert not ok, f"{task} passed a false property"
        assert "failed assertion" in log, log

