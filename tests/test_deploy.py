"""Batches, mixtures of experts and deployments in the timing model
(:mod:`sim.timing.deploy`) and the deployment comparison (:mod:`sim.dse.deploy`)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from sim.dse import deploy as dd
from sim.dse import deploy_report
from sim.timing.deploy import DraftDevice, Link, deploy_point
from sim.timing.phases import KVTraffic, draft_time, verify_time
from sim.timing.profiles import load_profile
from sim.timing.step import ar_token_time, step_time

DEV = DraftDevice("dev", "test", 300e12, 4e9, 4.8e15, 2.4e15, 19.2, 1200.0)
LINK = Link(10.0, 50e9, "test")


@pytest.fixture(scope="module")
def gpu():
    return load_profile("h100-70b").calibrated()


@pytest.fixture(scope="module")
def moe():
    return load_profile("h100-gptoss120b").calibrated()


# ----------------------------------------------------------------------------- batches
def test_batch_one_is_the_default(gpu) -> None:
    kw = {"tree_nodes": 6, "tree_depth": 5, "accepted": 4, "context_len": 2048}
    assert step_time(gpu, **kw) == step_time(gpu, **kw, batch=1)
    spec = load_profile("specdecode1-70b")
    assert step_time(spec, **kw, overlap="prefetch") == step_time(
        spec, **kw, overlap="prefetch", batch=1
    )


def test_a_batch_reads_the_weights_once(gpu) -> None:
    t, B = gpu.target, 8
    one = verify_time(gpu, tree_nodes=6, tree_depth=5, context_len=1000)
    many = verify_time(gpu, tree_nodes=6, tree_depth=5, context_len=1000, batch=B)
    kv = (1000 + 6) * t.kv_bytes_per_token
    assert one.hbm_bytes == pytest.approx(t.weight_bytes + kv)
    assert many.hbm_bytes == pytest.approx(t.weight_bytes + B * kv)
    assert many.flops == pytest.approx(B * one.flops)
    d1 = draft_time(gpu, draft_evals=5, passes=5, context_len=1000)
    dB = draft_time(gpu, draft_evals=5, passes=5, context_len=1000, batch=B)
    w = gpu.draft.weight_bytes
    assert dB.hbm_bytes - 5 * w == pytest.approx(B * (d1.hbm_bytes - 5 * w))


def test_batch_throughput_and_interactivity(gpu) -> None:
    kw = {"tree_nodes": 6, "tree_depth": 5, "accepted": 4, "context_len": 2048}
    s1, s8 = step_time(gpu, **kw), step_time(gpu, **kw, batch=8)
    assert s8.batch == 8 and s8.throughput_tokens_per_s == pytest.approx(8 * s8.tokens_per_s)
    assert s8.tokens_per_s < s1.tokens_per_s < s8.throughput_tokens_per_s
    a = ar_token_time(gpu, context_len=2048, batch=4)
    assert a.throughput_tokens_per_s == pytest.approx(4 * a.tokens_per_s)


def test_batch_errors_name_the_field(gpu) -> None:
    kw = {"tree_nodes": 6, "tree_depth": 5, "accepted": 4, "context_len": 2048}
    for bad in (0, -1, 4097, 1.5, True):
        with pytest.raises(ValueError, match=r"^batch = "):
            step_time(gpu, **kw, batch=bad)
    with pytest.raises(ValueError, match=r"^batch = 200, context_len = 2048: .* KV cache"):
        step_time(gpu, **kw, batch=200)
    spec = load_profile("specdecode1-70b")
    with pytest.raises(ValueError, match=r"^kv_traffic = .*batch = 2"):
        verify_time(spec, tree_nodes=6, tree_depth=5, context_len=10,
                    kv_traffic=KVTraffic(0.0, 0.0, 0.0), batch=2)  # fmt: skip


# ----------------------------------------------------------------------------- experts
def test_mixture_of_experts(moe, gpu) -> None:
    t = moe.target
    assert t.active_params == pytest.approx(5.13e9, rel=0.01)  # the model card's 5.13B
    assert t.weight_bytes == pytest.approx(64.0e9, rel=0.01)  # 60.8 GiB checkpoint, less embed
    dense = (t.params - t.expert_params) * t.bytes_per_param
    one = dense + t.expert_params * t.expert_bytes_per_param * 4 / 128
    assert t.streamed_bytes(1) == pytest.approx(one)
    assert t.streamed_bytes(1) < t.streamed_bytes(6) < t.streamed_bytes(1000) <= t.weight_bytes
    assert t.streamed_bytes(10_000) == pytest.approx(t.weight_bytes)
    assert gpu.target.streamed_bytes(7) == gpu.target.weight_bytes  # dense: everything
    assert gpu.target.active_params == gpu.target.params


def test_experts_checked() -> None:
    with pytest.raises(ValueError, match=r"^target.experts = 128: needs"):
        load_profile("h100-gptoss120b", **{"target.experts_per_token": 200})
    with pytest.raises(ValueError, match=r"^target.vocab = 201088: must be <= 131072"):
        load_profile("specdecode1-70b", **{"target.vocab": 201088})


# ----------------------------------------------------------------------------- deployments
def test_gpu_deployments_are_the_timing_model(moe) -> None:
    p = deploy_point("gpu_plain", gpu=moe, batch=4)
    assert p.step_us == ar_token_time(moe, context_len=2048, batch=4).total_us
    s = deploy_point("gpu_spec", gpu=moe, batch=4, verified=5, accepted=4)
    st = step_time(moe, tree_nodes=6, tree_depth=5, accepted=4, context_len=2048, batch=4)
    assert s.step_us == st.total_us and s.tokens_per_step == 5.0
    assert s.tokens_per_s == pytest.approx(4 * 5 / st.total_us * 1e6)
    assert s.tokens_per_s_per_kw == pytest.approx(s.tokens_per_s / 0.7)


def test_draft_on_the_device(moe) -> None:
    kw = {"gpu": moe, "device": DEV, "link": LINK, "batch": 2, "verified": 20, "accepted": 12}
    a = deploy_point("gpu_accel_draft", **kw)
    s = deploy_point("gpu_spec", **{k: v for k, v in kw.items() if k not in ("device", "link")})
    assert a.step_us == pytest.approx(sum(a.phases.values()))
    assert a.phases["draft"] < s.phases["draft"] / 10  # 300 TB/s against the GPU's HBM
    assert a.phases["verify"] == pytest.approx(s.phases["verify"])
    assert a.phases["link"] == pytest.approx(2 * 10.0 + (2 * 20 + 2 * 13) * 4 / 50e9 * 1e6)
    assert a.watts == 700 + 1200
    four = deploy_point("gpu_accel_draft", **kw, gpus=4)
    assert four.watts == 4 * 700 + 1200 and four.phases["draft"] > a.phases["draft"]
    assert four.tokens_per_s == pytest.approx(4 * 2 * four.tokens_per_s_user)


def test_deployment_errors(moe, gpu) -> None:
    with pytest.raises(ValueError, match=r"^deployment = 'cpu'"):
        deploy_point("cpu", gpu=moe)
    with pytest.raises(ValueError, match=r"^device, link"):
        deploy_point("gpu_accel_draft", gpu=moe)
    with pytest.raises(ValueError, match=r"^spec = None"):
        deploy_point("specdecode", gpu=gpu)
    spec = load_profile("specdecode1-70b")
    with pytest.raises(ValueError, match=r"^target.vocab = 201088: SpecDecode-1"):
        deploy_point("specdecode", gpu=moe, spec=spec)
    with pytest.raises(ValueError, match=r"^gpus = 0"):
        deploy_point("gpu_accel_draft", gpu=moe, device=DEV, link=LINK, gpus=0)
    small = replace(DEV, mem_bytes=1e9)
    with pytest.raises(ValueError, match=r"^device.mem_bytes = 1e\+09: the draft's weights"):
        deploy_point("gpu_accel_draft", gpu=moe, device=small, link=LINK)
    kv = (2048 + 5) * moe.draft.kv_bytes_per_token
    fits = int((DEV.mem_bytes - moe.draft.weight_bytes) // kv)  # users the device holds
    deploy_point("gpu_accel_draft", gpu=moe, device=DEV, link=LINK, batch=fits)
    with pytest.raises(ValueError, match=rf"KV cache of {fits + 1} users"):
        deploy_point("gpu_accel_draft", gpu=moe, device=DEV, link=LINK, batch=fits + 1)
    with pytest.raises(ValueError, match=r"^device.watts = 0"):
        DraftDevice("d", "s", 1e12, 1e9, 1e12, 1e12, 0.0, 0)
    with pytest.raises(ValueError, match=r"^link.bandwidth = 0"):
        Link(1.0, 0, "s")
    with pytest.raises(ValueError, match=r"^link.latency_us = 'x': must be a number"):
        Link("x", 1e9, "s")  # type: ignore[arg-type]
    sd = deploy_point("specdecode", gpu=gpu, spec=spec, batch=2)
    assert sd.watts == 700 and sd.tokens_per_step == 5.0


# ----------------------------------------------------------------------------- comparison
def _rows(line: str, pts: list[tuple[float, float]]) -> list[dict]:
    return [{"line": line, "error": None, "tokens_per_s_user": x, "tokens_per_s_per_kw": y}
            for x, y in pts]  # fmt: skip


def test_ratio_at_equal_energy() -> None:
    b = _rows("b", [(100, 10), (50, 100), (20, 1000)])
    a = _rows("a", [(200, 10), (100, 100), (40, 1000), (30, 500)])  # the last: dominated
    assert [
        r["tokens_per_s_user"] for r in dd.front(a, "tokens_per_s_user", "tokens_per_s_per_kw")
    ] == [200, 100, 40]
    rs = dd.ratio_at(a, b, at="tokens_per_s_per_kw", of="tokens_per_s_user", n=5)
    assert [round(t) for t, _ in rs] == [10, 32, 100, 316, 1000]
    assert all(r == pytest.approx(2.0) for _t, r in rs)
    assert dd.ratio_at(a, _rows("c", [(1, 5000)]), at="tokens_per_s_per_kw",
                       of="tokens_per_s_user") == []  # fmt: skip


def test_config_errors_name_the_field(tmp_path: Path) -> None:
    text = dd.DEFAULT.read_text()
    for old, new, msg in [
        ("batches = [1,", "batches = [0,", r"^batches = \[0,"),
        ('gpu = "h100-gptoss120b"', 'gpu = "x"', r"^scenario\[0\].gpu = 'x'"),
        ("chains = [[5, 4], [20, 12]]", "chains = [[5, 6]]", r"^scenario\[0\].chains: \[5, 6\]"),
        ('"gpu_plain", "gpu_spec", "gpu_accel_draft", "specdecode"]', '"tpu"]',
         r"^scenario\[0\].deployments = \['tpu'\]"),
        ("watts = 1200.0", "watts = -1.0", r"^device.watts = -1.0"),
        ("gpus_per_device = [1, 4]", "gpus_per_device = [65]", r"^gpus_per_device = \[65\]"),
    ]:  # fmt: skip
        assert old in text, old
        p = tmp_path / "bad.toml"
        p.write_text(text.replace(old, new, 1))
        with pytest.raises(ValueError, match=msg):
            dd.load_config(p)


def test_sweep_and_report(tmp_path: Path) -> None:
    text = dd.DEFAULT.read_text().replace(
        "batches = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128]", "batches = [1, 8, 128]"
    )
    cfg_path = tmp_path / "small.toml"
    cfg_path.write_text(text)
    assert dd.main(["--config", str(cfg_path), "--out", str(tmp_path)]) == 0
    import json

    rep = json.loads((tmp_path / "deploy.json").read_text())
    rows = rep["rows"]
    assert {r["line"] for r in rows} == {"gpu_plain", "gpu_spec", "gpu_accel_draft/1",
                                         "gpu_accel_draft/4", "specdecode"}  # fmt: skip
    ok = [r for r in rows if not r["error"]]
    assert all(math.isfinite(r["tokens_per_s_per_kw"]) for r in ok)
    refused = {(r["scenario"], r["deployment"]) for r in rows if r["error"]}
    assert ("gpt-oss-120b", "specdecode") in refused  # the vocabulary SpecDecode-1 cannot hold
    md = (tmp_path / "deploy.md").read_text()
    assert "## Interactivity at equal throughput per kW, against seed 000" in md
    assert "2-5x:" in md and (tmp_path / "deploy.png").stat().st_size > 10_000
    assert deploy_report.render(rep)[0].startswith("# Deployments")
