"""The scaled pool's leaf proofs (``formal/kvpool_tlb.py``, ``formal/kvpool_alloc.py``,
``formal/kvpool_seg.py``, ``formal/kvpool_seg_derived.py``, ``formal/kvpool_bt.py``) in
``make test``: each k-induction closes at its proof size, its false property is refuted,
its protocol matters (the run without it fails: for the segment leaves and the block
table in ``make sim-full``, decision 0054) and its witnesses are reached, so that the
proof is not vacuous. Each ``sat`` run takes seconds, except the block table's
induction (minutes: ``make formal`` runs it; here its other checks) and the
allocator's and the segment chains' (half a minute each: ``make formal`` and ``make
sim-full``)."""

import json

import pytest

from formal import kvpool_alloc, kvpool_bt, kvpool_seg, kvpool_seg_derived, kvpool_tlb, sat

_UNPROTECTED_FULL = pytest.param("unprotected", marks=pytest.mark.full)


def test_tlb_coherence_closes_by_induction(tmp_path) -> None:
    o = kvpool_tlb.run("prove", out=tmp_path)
    assert o.status == "PASS" and o.steps <= kvpool_tlb.PROVE_DEPTH, o.log


def test_tlb_reply_property_alone_is_not_inductive(tmp_path) -> None:
    """Without the strengthening invariants (2, 3) the induction does not close: they
    are needed, and the induction can fail (a check that cannot fail checks nothing)."""
    o = kvpool_tlb.run("prove", variant="only1", depth=3, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


@pytest.mark.parametrize("variant", ["negated", "unprotected"])
def test_tlb_false_property_and_missing_protocol_fail(tmp_path, variant) -> None:
    o = kvpool_tlb.run("bmc", variant=variant, depth=6, out=tmp_path)
    assert o.status == "FAIL", o.log


@pytest.mark.parametrize("witness", sorted(kvpool_tlb.REACH))
def test_tlb_witnesses_are_reached(tmp_path, witness) -> None:
    """A hit, and a hit after a generation wrapped, occur under the assumptions."""
    o = kvpool_tlb.run("bmc", reach=witness, out=tmp_path)
    assert o.status == "FAIL" and o.steps <= kvpool_tlb.BMC_DEPTH, o.log


def test_tlb_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_tlb.TLBFormal(variant="moon")
    with pytest.raises(ValueError, match="reach"):
        kvpool_tlb.TLBFormal(reach="moon")
    with pytest.raises(ValueError, match="task"):
        kvpool_tlb.run("cover")
    with pytest.raises(SystemExit):
        kvpool_tlb.parse_args(["prove", "prove"])


@pytest.mark.full
def test_allocator_conservation_closes_by_induction(tmp_path) -> None:
    """26 s alone, up to a minute with both cores busy (``make formal`` runs it too)."""
    o = kvpool_alloc.run("prove", out=tmp_path)
    assert o.status == "PASS" and o.steps <= kvpool_alloc.PROVE_DEPTH, o.log


def test_allocator_properties_alone_are_not_inductive(tmp_path) -> None:
    o = kvpool_alloc.run("prove", variant="weak", depth=3, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


@pytest.mark.parametrize("variant", ["negated", "unprotected"])
def test_allocator_false_property_and_missing_protocol_fail(tmp_path, variant) -> None:
    o = kvpool_alloc.run("bmc", variant=variant, depth=6, out=tmp_path)
    assert o.status == "FAIL", o.log


@pytest.mark.parametrize("witness", sorted(kvpool_alloc.REACH))
def test_allocator_witnesses_are_reached(tmp_path, witness) -> None:
    """A page recycled through the FIFO, and a refusal with every page held."""
    o = kvpool_alloc.run("bmc", reach=witness, out=tmp_path)
    assert o.status == "FAIL" and o.steps <= kvpool_alloc.BMC_DEPTH, o.log


def test_allocator_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_alloc.AllocFormal(variant="moon")
    with pytest.raises(ValueError, match="reach"):
        kvpool_alloc.AllocFormal(reach="moon")
    with pytest.raises(SystemExit):
        kvpool_alloc.parse_args(["moon"])


@pytest.mark.full
def test_segment_chains_close_by_induction(tmp_path) -> None:
    """15 - 25 s alone, up to 80 s with both cores busy (k = 1; ``make formal`` runs it
    too)."""
    o = kvpool_seg.run("prove", out=tmp_path)
    assert o.status == "PASS" and o.steps <= kvpool_seg.PROVE_DEPTH, o.log


def test_segment_cover_alone_is_not_inductive(tmp_path) -> None:
    o = kvpool_seg.run("prove", variant="only1", depth=3, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


#: the missing-protocol run of the larger leaves: make sim-full (decision 0054)
@pytest.mark.parametrize("variant", ["negated", _UNPROTECTED_FULL])
def test_segment_false_property_and_missing_protocol_fail(tmp_path, variant) -> None:
    o = kvpool_seg.run("bmc", variant=variant, depth=6, out=tmp_path)
    assert o.status == "FAIL", o.log


@pytest.mark.full  # one BMC per assumption: make sim-full (decision 0041)
@pytest.mark.parametrize("assumption", kvpool_seg.PRECONDITIONS)
def test_segment_each_precondition_matters(tmp_path, assumption) -> None:
    """Without any one of the operations' preconditions a BMC finds a failure."""
    o = kvpool_seg.run("bmc", drop=[assumption], out=tmp_path)
    assert o.status == "FAIL", o.log


@pytest.mark.parametrize("witness", sorted(kvpool_seg.REACH))
def test_segment_witnesses_are_reached(tmp_path, witness) -> None:
    """Two segments in a chain, a shared segment, a dead one, a split and share, a drain."""
    o = kvpool_seg.run("bmc", reach=witness, out=tmp_path)
    assert o.status == "FAIL" and o.steps <= kvpool_seg.BMC_DEPTH, o.log


def test_segment_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_seg.SegFormal(variant="moon")
    with pytest.raises(ValueError, match="reach"):
        kvpool_seg.SegFormal(reach="moon")
    with pytest.raises(ValueError, match="drop"):
        kvpool_seg.SegFormal(drop=["A1"])
    with pytest.raises(ValueError, match="task"):
        kvpool_seg.run("cover")
    with pytest.raises(SystemExit):
        kvpool_seg.parse_args(["prove", "prove"])


@pytest.mark.full  # make sim-full and make formal (decision 0049); its witnesses stay
def test_segment_derived_registers_close_by_induction(tmp_path) -> None:
    """``excl``, ``sbase``, ``last`` / ``own_of`` and the invariants beside them (properties
    4-6, 8-11, assuming 1-3): about 20 s alone (k = 1)."""
    o = kvpool_seg_derived.run("prove", out=tmp_path)
    assert o.status == "PASS" and o.steps <= kvpool_seg_derived.PROVE_DEPTH, o.log


#: every sequence in make sim-full (sequence 0 was in make test until decision 0049)
@pytest.mark.full
@pytest.mark.parametrize("seq", range(kvpool_seg_derived.CONFIG["SEQS"]))
def test_segment_counters_close_by_induction(tmp_path, seq) -> None:
    """A sequence's ``xchip`` / ``xhbm`` (property 7) at 2 position bits: about 15 s each
    (at 3 bits minutes: ``python -m formal.kvpool_seg_derived counters``)."""
    o = kvpool_seg_derived.run(
        "prove", part="counters", seq=seq, out=tmp_path, **kvpool_seg_derived.SMALL
    )
    assert o.status == "PASS" and o.steps <= kvpool_seg_derived.PROVE_DEPTH, o.log


#: the missing-protocol run of the larger leaves: make sim-full (decision 0054)
@pytest.mark.parametrize("variant", ["negated", _UNPROTECTED_FULL])
def test_segment_derived_false_property_and_missing_protocol_fail(tmp_path, variant) -> None:
    o = kvpool_seg_derived.run("bmc", variant=variant, depth=6, out=tmp_path)
    assert o.status == "FAIL", o.log


@pytest.mark.full  # one BMC per assumption: make sim-full (decision 0041)
@pytest.mark.parametrize("assumption", kvpool_seg_derived.PRECONDITIONS)
def test_segment_derived_each_assumption_matters(tmp_path, assumption) -> None:
    """Without any one of A11-A17 a BMC finds a failure (a few seconds each)."""
    o = kvpool_seg_derived.run("bmc", drop=[assumption], out=tmp_path)
    assert o.status == "FAIL", o.log


@pytest.mark.parametrize("witness", sorted(kvpool_seg_derived.REACH))
def test_segment_derived_witnesses_are_reached(tmp_path, witness) -> None:
    """A spill's and a fill's counter moves, a share's, a release's gain, a split's last."""
    o = kvpool_seg_derived.run("bmc", reach=witness, out=tmp_path)
    assert o.status == "FAIL" and o.steps <= kvpool_seg_derived.BMC_DEPTH, o.log


def test_segment_derived_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_seg_derived.DerivedFormal(variant="only1")
    with pytest.raises(ValueError, match="reach"):
        kvpool_seg_derived.DerivedFormal(reach="killed")
    with pytest.raises(ValueError, match="drop"):
        kvpool_seg_derived.DerivedFormal(drop=["A19"])
    with pytest.raises(ValueError, match="part"):
        kvpool_seg_derived.DerivedFormal(part="cover")
    with pytest.raises(ValueError, match="seq"):
        kvpool_seg_derived.DerivedFormal(part="counters", seq=3)
    with pytest.raises(ValueError, match="task"):
        kvpool_seg_derived.run("cover")
    with pytest.raises(SystemExit):
        kvpool_seg_derived.parse_args(["prove", "prove"])


#: the missing-protocol run of the larger leaves: make sim-full (decision 0054)
@pytest.mark.parametrize("variant", ["negated", _UNPROTECTED_FULL])
def test_block_table_false_property_and_missing_protocol_fail(tmp_path, variant) -> None:
    """A CUT's beat claimed to differ from the shadow, and the properties without B1
    (a command naming a wrong length): both refuted. The induction (properties 1-10,
    about two minutes) runs in ``make formal``."""
    o = kvpool_bt.run("bmc", variant=variant, depth=8, out=tmp_path)
    assert o.status == "FAIL", o.log


def test_block_table_contract_alone_is_not_inductive(tmp_path) -> None:
    """Without the strengthening invariants (4-10) the induction does not close: they
    are needed (seconds; the closing induction runs in ``make formal``)."""
    o = kvpool_bt.run("prove", variant="weak", depth=2, out=tmp_path)
    assert o.status == "UNKNOWN", o.log


@pytest.mark.parametrize("witness", sorted(kvpool_bt.REACH))
def test_block_table_witnesses_are_reached(tmp_path, witness) -> None:
    """A node recycled through its free list, a stalled beat, a lookup answered during
    a CUT: the assumptions allow them."""
    o = kvpool_bt.run("bmc", reach=witness, out=tmp_path)
    assert o.status == "FAIL" and o.steps <= kvpool_bt.BMC_DEPTH, o.log


def test_block_table_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="variant"):
        kvpool_bt.BlockTableFormal(variant="moon")
    with pytest.raises(ValueError, match="reach"):
        kvpool_bt.BlockTableFormal(reach="moon")
    with pytest.raises(ValueError, match="INDEX_BITS"):
        kvpool_bt.BlockTableFormal(INDEX_BITS=7)
    with pytest.raises(SystemExit):
        kvpool_bt.parse_args(["prove", "prove"])


def test_rows_of_other_modules_are_kept(tmp_path) -> None:
    """Each formal CLI replaces only its own rows of the shared report; the pool's come
    first (the report page's header reads their parameters)."""
    report = tmp_path / "r.json"
    sat.write_rows("formal.kvpool_tlb", [{"task": "prove", "ok": True}], report)
    sat.write_rows("formal.kvpool", [{"task": "bmc", "ok": True}], report)
    sat.write_rows("formal.kvpool_tlb", [{"task": "negated", "ok": True}], report)
    rows = json.loads(report.read_text())["results"]
    assert [(r["module"], r["task"]) for r in rows] == [
        ("formal.kvpool", "bmc"),
        ("formal.kvpool_tlb", "negated"),
    ]
