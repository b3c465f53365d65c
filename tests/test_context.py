"""The long-context study (``sim.context``): a tiny configuration's invariants, the
claims from bytes per token, the HBM term of the timing model, the CLI, and the
docs' table against the full run's report when it exists."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from sim.context import ContextConfig, chip_trace, geometry, run_series
from sim.context.__main__ import main, parse_args
from sim.context.report import check_claims, run_study, series_key, table
from sim.context.study import TraceStep, _History, hbm_reads_of, tree_depths
from sim.timing import KVTraffic, load_profile, step_time, verify_time

ROOT = Path(__file__).resolve().parents[1]

#: a tiny study: the 7B profile, whose 1 GiB pool (4,096 pages) the history outgrows
TINY = ContextConfig(
    profiles=("specdecode1-7b",),
    pools_gib=(1,),
    contexts=(2048, 4096, 6144, 8192),
    steps=6,
    recent=64,
    heavy_every=256,
)


@pytest.fixture(scope="module")
def trace() -> list[TraceStep]:
    return chip_trace("specdecode1-7b")


def test_geometry_is_bytes_per_token_in_4k_pages() -> None:
    g70 = geometry(load_profile("specdecode1-70b"), 4 * 2**30)
    g7 = geometry(load_profile("specdecode1-7b"), 4 * 2**30)
    assert (g70.kv_bytes_per_token, g70.page_bytes, g70.pages) == (163840, 163840, 26214)
    assert (g7.kv_bytes_per_token, g7.page_bytes, g7.pages) == (262144, 262144, 16384)
    assert g70.hbm_pages == int((128e9 - 68.976648192e9) // 163840)
    with pytest.raises(ValueError, match="pool_bytes"):
        geometry(load_profile("specdecode1-7b"), 15 * 262144)
    with pytest.raises(ValueError, match="GPU"):
        geometry(load_profile("h100-7b"), 2**30)


def test_claims_from_bytes_per_token() -> None:
    c = check_claims()
    assert c["70b_4gib_32k"]["tokens_fit"] == 26214 and c["70b_4gib_32k"]["holds"]
    assert c["7b_4gib_128k"]["tokens_fit"] == 16384 and not c["7b_4gib_128k"]["holds"]
    assert c["70b_1gib_16k"]["tokens_fit"] == 6553 and not c["70b_1gib_16k"]["holds"]
    assert c["7b_4gib_128k"]["needed_bytes_per_token"] == 32768


@pytest.mark.parametrize("mode", ["dense", "sparse"])
def test_tiny_series_invariants(mode: str, trace: list[TraceStep]) -> None:
    """No committed position lost, traffic = pages x PAGE_BYTES, spills - fills =
    HBM-resident, tokens/s never rises as the context grows past the pool."""
    s = run_series(TINY, "specdecode1-7b", 1, mode, trace)
    geo = s.geometry
    assert geo.pages == 4096
    spills = sum(p.spills + p.prefill_spills for p in s.points)
    fills = sum(p.fills for p in s.points)
    assert spills - fills == s.points[-1].hbm_resident > 0
    for p in s.points:
        assert p.steps == 6 and p.emitted == sum(t.accepted + 1 for t in trace[:6])
        assert p.spill_bytes == p.spills * geo.page_bytes
        assert p.fill_bytes == p.fills * geo.page_bytes
        assert p.read_bytes == (p.hbm_reads - p.fills) * geo.kv_bytes_per_token
        assert p.total_us >= p.unbounded_us
    assert s.points[0].spills == s.points[0].hbm_reads == 0  # 2K fits
    rates = [p.tokens_per_s for p in s.points]
    assert all(b <= a for a, b in zip(rates, rates[1:], strict=False)), rates
    if mode == "dense":
        assert s.points[-1].hbm_reads > 0 and s.points[-1].total_us > s.points[-1].unbounded_us


def test_every_committed_position_hits_after_spills(trace: list[TraceStep]) -> None:
    """A history past the pool: every committed position still hits, the pool's
    ``hbm_used`` is exactly the positions that look up in HBM (what ``dense`` reads),
    and every token is the prompt's."""
    cfg = TINY
    prof = cfg.profile("specdecode1-7b", 1)
    geo = geometry(prof, 2**30)
    h = _History(cfg, prof, geo, "sparse", 6)
    h.prefill(5000)
    for ts in trace[:6]:
        h.step(ts)
    pool, n = h.pool, h.length
    assert pool.hbm_used > 0 and n > geo.pages
    assert hbm_reads_of(pool) == pool.hbm_used
    for pos in range(0, n, 97):
        assert pool.lookup(1, 0, pos).value[0] == 1
        assert pool.pte(0, pos)[2] == h.tokens[pos]
    for pos in h._important(n):  # scored every chunk and step: kept on chip
        assert pool.pte(0, pos)[0] == 0


def test_tree_depths() -> None:
    assert tree_depths(8, 4) == [0, 1, 2, 3, 4, 1, 2, 3]
    assert tree_depths(1, 0) == [0]
    with pytest.raises(ValueError, match="depth"):
        tree_depths(4, 4)


def test_kv_traffic_is_charged_and_default_unchanged() -> None:
    p = load_profile("specdecode1-7b")
    kw = dict(tree_nodes=8, tree_depth=4, context_len=65536)
    base = verify_time(p, **kw)
    none = verify_time(p, **kw, kv_traffic=KVTraffic(0.0, 0.0, 0.0))
    more = verify_time(p, **kw, kv_traffic=KVTraffic(40e9, 1e6, 2e6))
    analytic = 65536 * p.target.kv_bytes_per_token - p.kv_pool.bytes
    assert base.hbm_bytes - none.hbm_bytes == pytest.approx(analytic)
    assert more.hbm_bytes - none.hbm_bytes == pytest.approx(40e9 + 3e6)
    assert more.hbm_us > base.hbm_us
    st = step_time(p, **kw, accepted=2, overlap="none", kv_traffic=KVTraffic(40e9, 0.0, 0.0))
    assert st.verify is not None and st.verify.hbm_bytes == more.hbm_bytes - 3e6
    with pytest.raises(ValueError, match="read_bytes"):
        KVTraffic(-1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="kv_traffic"):
        verify_time(load_profile("h100-7b"), **kw, kv_traffic=KVTraffic(0.0, 0.0, 0.0))


def test_config_checks_name_the_field() -> None:
    for kw, name in [
        ({"profiles": ("h100-7b",)}, "profiles"),
        ({"profiles": ()}, "profiles"),
        ({"pools_gib": (2, 1)}, "pools_gib"),
        ({"contexts": (8,)}, "contexts"),
        ({"modes": ("dense", "dense")}, "modes"),
        ({"steps": 0}, "steps"),
        ({"overlap": "speculative"}, "overlap"),
        ({"recent": 0}, "recent"),
        ({"seed": -1}, "seed"),
    ]:
        with pytest.raises(ValueError, match=name):
            ContextConfig(**kw)


def test_cli_runs_and_refuses(tmp_path: Path, capsys) -> None:
    argv = ["--profile", "specdecode1-7b", "--pool-gib", "1", "--contexts", "2048,8192"]
    argv += ["--steps", "2", "--quiet", "--out", str(tmp_path), "--plot", str(tmp_path / "c.png")]
    assert main(argv) == 0
    rep = json.loads((tmp_path / "context.json").read_text())
    assert list(rep["series"]) == [series_key("specdecode1-7b", 1, m) for m in ("dense", "sparse")]
    assert (tmp_path / "c.png").stat().st_size > 0
    assert "does not hold" in capsys.readouterr().out
    for bad in (["--contexts", "8192,2048"], ["--mode", "dense", "--mode", "dense"]):
        with pytest.raises(SystemExit) as e:
            parse_args(bad)
        assert e.value.code == 2


def test_docs_table_is_the_full_runs_report() -> None:
    """docs/context.md's tokens/s table equals build/reports/context.json of the
    default ``make context`` (skipped when that report is absent or not the default)."""
    path = ROOT / "build" / "reports" / "context.json"
    if not path.exists():
        pytest.skip("no build/reports/context.json: run `make context`")
    rep = json.loads(path.read_text())
    if rep["config"] != json.loads(json.dumps(ContextConfig().__dict__)):
        pytest.skip("build/reports/context.json is not the default configuration")
    doc = (ROOT / "docs" / "context.md").read_text()
    block = re.search(r"<!--context-table-->\n```\n(.*?)```", doc, re.S)
    assert block, "docs/context.md: no <!--context-table--> block"
    want = table(rep)
    assert block[1] == want, "docs/context.md's table is stale: paste `make context`'s table"


def test_study_report_shape() -> None:
    rep = run_study(
        ContextConfig(profiles=("specdecode1-7b",), pools_gib=(1,), contexts=(64,), steps=1)
    )
    s = rep["series"][series_key("specdecode1-7b", 1, "dense")]
    assert s["knee"] is None and s["pages"] == 4096
    assert rep["claims"]["7b_4gib_128k"]["measured"] is None


def test_tlb_misses_are_charged(monkeypatch, trace: list[TraceStep]) -> None:
    """A step's lookups cost :data:`sim.cycles.TLB_MISS_CYCLES` more per TLB miss, at the
    miss rate of the step's own sampled lookups: a 4-entry TLB misses every one and pays
    for every position."""
    from sim.context import study
    from sim.cycles import TLB_MISS_CYCLES

    seen: list[tuple[int, int]] = []
    real = study.accept_cycles

    def spy(*a, **kw):
        seen.append((kw["lookups"], kw["lookup_ports"]))
        return real(*a, **kw)

    monkeypatch.setattr(study, "accept_cycles", spy)
    cfg = dataclasses.replace(TINY, contexts=(8192,), steps=3)
    monkeypatch.setattr(study, "TLB_MISS_CYCLES", 0)
    full = run_series(cfg, "specdecode1-7b", 1, "dense", trace)
    base = [lk for lk, _ in seen]  # misses free: one lookup per context position
    assert full.points[0].tlb_misses > 0 and base[0] >= 8192
    monkeypatch.setattr(study, "TLB_MISS_CYCLES", TLB_MISS_CYCLES)
    seen.clear()
    small = run_series(cfg, "specdecode1-7b", 1, "dense", trace, hw=study.SeriesHardware(
        tlb_entries=4, tlb_ways=4))  # fmt: skip
    assert small.points[0].tlb_hits == 0 and small.points[0].tlb_misses > 0
    assert [lk for lk, _ in seen] == [(1 + TLB_MISS_CYCLES) * b for b in base]
