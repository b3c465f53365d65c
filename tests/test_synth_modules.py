"""Mapping by module (flows.kvpool_synth_modules) when a child is itself too large for one
Yosys: the record of flat runs that ran out of memory, a block taken out of its parent
as if converted alone, and the recursive mapping and composition, on a three-level
design through the real Yosys."""

import json
import re

import pytest
from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from flows import kvpool_synth as ks
from flows import kvpool_synth_modules as ksm
from flows import kvpool_synth_yosys as ky


class _Leaf(wiring.Component):
    a: In(8)
    b: In(8)
    o: Out(8)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.d.comb += self.o.eq(self.a + self.b)
        return m


class _Mid(wiring.Component):
    x: In(8)
    y: Out(8)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.l1 = l1 = _Leaf()
        m.submodules.l2 = l2 = _Leaf()
        r, s = Signal(8), Signal(8)
        m.d.sync += [s.eq(self.x), r.eq(l2.o)]
        m.d.comb += [l1.a.eq(self.x), l1.b.eq(s), l2.a.eq(l1.o), l2.b.eq(s.rotate_left(3))]
        m.d.comb += self.y.eq(r)
        return m


class _Outer(wiring.Component):
    i: In(8)
    o: Out(8)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.submodules.mid = mid = _Mid()
        q = Signal(8)
        m.d.sync += q.eq(self.i)
        m.d.comb += [mid.x.eq(q), self.o.eq(mid.y)]
        return m


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """A cache of its own (tests/test_kvpool_synth.py says why)."""
    for mod in (ky, ksm):
        monkeypatch.setattr(mod, "CACHE", tmp_path)
    return tmp_path


_TRAP = {"error": "wasmtime._trap.Trap: error while executing", "yosys_s": 1.0}


def _mod(name: str, size: int) -> str:
    """An RTLIL module ``name`` of ``size`` bytes (padded with a comment line)."""
    head, tail = f"module \\{name}\n", "end\n"
    return head + "#" * (size - len(head) - len(tail) - 1) + "\n" + tail


def test_too_large_records_a_trap_and_compares_name_and_size(cache) -> None:
    big = _mod("a.blk", 100)
    assert len(big) == 100 and not ky.too_large(big)
    # a script error is not a lack of memory: not recorded
    assert not ky.too_large(big, failed={"error": "ERROR: syntax error; Trap"})
    assert ky.too_large(big, failed=_TRAP)
    # a design holding a module of that name (its last part) with its descendants at
    # least as large; not one that is large elsewhere
    assert ky.too_large(_mod("top", 50) + _mod("top.blk", 60) + _mod("top.blk.x", 40))
    assert ky.too_large(_mod("blk", 100))
    assert not ky.too_large(_mod("top", 500) + _mod("top.blk", 99))
    assert not ky.too_large(_mod("top", 500) + _mod("top.other", 500))
    assert ky.too_large(big, failed=_TRAP)  # recorded once
    (rec,) = json.loads(next(cache.glob("too_large-*.json")).read_text())
    assert (rec["module"], rec["rtlil_bytes"]) == ("blk", 100)


def test_a_block_taken_out_of_its_parent() -> None:
    text = ks.convert(_Outer(), "outer", "il")
    mods = ksm.split_rtlil(text)
    assert list(mods)[0] == "outer" and "outer.mid.l1" in mods
    name, solo = ksm.alone(mods, "outer.mid")
    assert name == "mid"
    inner = ksm.split_rtlil(solo)
    assert list(inner) == ["mid", "mid.l1", "mid.l2"]  # the design's order, renamed
    assert inner["mid"].startswith('attribute \\generator "Amaranth"\nattribute \\top 1\n')
    assert "outer" not in solo and "cell \\mid.l1 \\l1" in inner["mid"]
    # named as the same block converted alone
    assert set(inner) == set(ksm.split_rtlil(ks.convert(_Mid(), "mid", "il")))


def test_a_child_too_large_is_mapped_by_module_in_turn(cache) -> None:
    """The middle block recorded too large: it is mapped as ``mid`` by module (its two
    adders apart), composed, and put in its parent's place; the counts and the
    register-to-register path through both adders are those of the one-level run."""
    text = ks.convert(_Outer(), "outer", "il")
    kw = {"timeout": 300.0, "force": False, "log": lambda _: None}
    one = ksm.measure_modules("outer", text, **kw)
    assert one["status"] == "ok" and [j["module"] for j in one["jobs"]] == ["outer.mid", "outer"]
    assert "mode" not in one["jobs"][0]
    mods = ksm.split_rtlil(text)
    sub = "".join(mods[m] for m in mods if m.startswith("outer.mid"))
    assert ky.too_large(sub, failed=_TRAP) and not ky.too_large(mods["outer"])
    assert ky.too_large(text)  # the whole design holds it
    two = ksm.measure_modules("outer", text, **kw)
    assert two["status"] == "ok" and "flat" not in two
    mid = two["jobs"][0]
    assert (mid["module"], mid["mode"]) == ("outer.mid", "modules")
    assert [j["module"] for j in mid["jobs"]] == ["mid.l1", "mid.l2", "mid"]
    assert 16 < one["ffs"] <= two["ffs"] == 24  # q, s, r (by module: nothing optimised away)
    # the longest path runs through both adders, joined at mid's net between them
    adder = max(j["depth"] for j in mid["jobs"][:2])
    assert two["depth"] >= mid["depth"] > adder > 8 and one["depth"] > adder
    assert "mid.a$8[7]" in two["critical_path"]["nets"], two["critical_path"]


class _Selects(wiring.Component):
    v: In(16)
    i: In(4)
    w: In(8)
    j: In(3)
    o: Out(4)

    def elaborate(self, platform) -> Module:
        m = Module()
        m.d.comb += [
            self.o[0].eq(self.v.bit_select(self.i, 1)),  # the map's case: 16 bits, 4 index bits
            self.o[1].eq(self.w.bit_select(self.j, 1)),
            self.o[2:4].eq(self.v.bit_select(self.i, 2)),  # two bits: Yosys' own map
        ]
        return m


def test_the_one_bit_select_map_is_equivalent() -> None:
    """SHIFT_MAP's mux trees against Yosys' own shifters: a SAT miter over every input
    proves them equal; the two-bit select is left to Yosys (still equal, unmapped)."""
    text = ks.convert(_Selects(), "sel", "il")
    assert ksm.wide_bit_selects(text, at_least=8) == 2 and ksm.wide_bit_selects(text) == 0
    scr = (
        "read_rtlil design.il\nproc\nrename sel gold\nread_rtlil design.il\nproc\n"
        "rename sel gate\ntechmap -map shift1.v gate/t:$shift gate/t:$shiftx\n"
        "tee -o left.txt stat\n"
        "techmap\nopt_clean\nmiter -equiv -flatten -make_assert gold gate m\n"
        "hierarchy -top m\nsat -verify -prove-asserts -set-init-zero m\n"
        "tee -o ok.txt log proved\n"
    )
    r = ky._yosys(scr, {"design.il": text, "shift1.v": ksm.SHIFT_MAP}, ["left.txt", "ok.txt"], 120)
    assert r["status"] == "ok", r["log"]
    left = r["outputs"]["left.txt"]
    # two trees of 15 and 7 muxes; the two-bit select's shift left as it was
    assert re.search(r"\b22\s+\$mux\b", left) and re.search(r"\b1\s+\$shift\b", left), left
