"""The GPU baselines calibrated on published measurements (``sim.timing.calibration``).

The published figures are data (``sim/profiles/published/gpu.toml``); the model is the
timing model; the factors in the GPU profiles' ``[calibration]`` must be the fit's, and
the calibrated model must reproduce every fitted figure within 15%.
"""

from __future__ import annotations

import dataclasses
import tomllib

import pytest

from sim.timing import calibration as cal_mod
from sim.timing.profiles import Calibration, load_profile

GPU_BASELINES = ("h100-7b", "h100-70b")


@pytest.fixture(scope="module")
def pub() -> cal_mod.Published:
    return cal_mod.load_published()


def test_published_figures_are_cited(pub):
    ms = pub.measurements
    assert sum(m.kind == "plain" for m in ms) >= 3
    assert sum(m.kind == "spec" for m in ms) >= 3
    for m in (*ms, *pub.excluded):
        assert m.source and m.quote and m.setting
        assert {m.gpu} <= {"a100-80gb", "h100-sxm"}
        if m.kind == "spec":  # the published acceptance length is the step's yield
            assert 1 < m.tokens_per_step <= m.tree_nodes and m.draft_passes >= 1


@pytest.mark.parametrize("name", GPU_BASELINES)
def test_profiles_hold_the_fit(pub, name):
    fitted = cal_mod.fit(pub)
    stored = load_profile(name).calibration
    assert stored is not None
    for f in dataclasses.fields(Calibration):
        assert getattr(stored, f.name) == pytest.approx(getattr(fitted, f.name), rel=0.01), f.name


def test_calibrated_model_reproduces_every_figure(pub):
    stored = load_profile("h100-7b").calibration
    for c in cal_mod.compare(stored, pub):
        assert abs(c.error) <= cal_mod.TOLERANCE, (c.measurement.id, c.error)
        # the roofline's assumptions (peak bandwidth, 1 ms loop) overestimate every figure
        assert c.roofline_tokens_per_s > c.measurement.tokens_per_s
    # the excluded figure is outside the model, as its entry says
    assert all(
        abs(c.error) > cal_mod.TOLERANCE for c in cal_mod.compare(stored, pub, excluded=True)
    )


def test_a_wrong_figure_is_caught(pub):
    """The comparison can fail: a figure 40% off the others is outside the tolerance."""
    m = pub.measurements[0]
    bad = dataclasses.replace(m, tokens_per_s=m.tokens_per_s * 1.4)
    wrong = dataclasses.replace(pub, measurements=(bad, *pub.measurements[1:]))
    stored = load_profile("h100-7b").calibration
    errors = [abs(c.error) for c in cal_mod.compare(stored, wrong)]
    assert max(errors) > cal_mod.TOLERANCE


def test_model_terms(pub):
    """Plain decoding is HBM-bound: halving the efficiency doubles the HBM time; the
    speculative step pays the loop once and the pass overhead once per pass."""
    plain = next(m for m in pub.measurements if m.kind == "plain")
    spec = next(m for m in pub.measurements if m.kind == "spec")
    base = Calibration(1.0, 0.0, 0.0)

    def us(m, c):
        return m.tokens_per_step / cal_mod.model_tokens_per_s(m, pub, c) * 1e6

    assert us(plain, Calibration(0.5, 0.0, 0.0)) == pytest.approx(2 * us(plain, base))
    assert us(plain, Calibration(1.0, 10.0, 500.0)) == pytest.approx(us(plain, base) + 10.0)
    got = us(spec, Calibration(1.0, 10.0, 500.0)) - us(spec, base)
    assert got == pytest.approx(500.0 + 10.0 * (spec.draft_passes + 1))


def test_calibrated_profile():
    g = load_profile("h100-7b")
    c = g.calibrated()
    assert c.name == "h100-7b-calibrated" and c.calibration is None
    assert c.hardware.hbm_bw == pytest.approx(g.hardware.hbm_bw * g.calibration.hbm_efficiency)
    assert c.hardware.cpu_round_trip_us == g.calibration.cpu_round_trip_us
    with pytest.raises(ValueError, match="no \\[calibration\\] section"):
        load_profile("specdecode1-7b").calibrated()
    with pytest.raises(ValueError, match="calibration.hbm_efficiency"):
        load_profile("h100-7b", **{"calibration.hbm_efficiency": 1.5})
    with pytest.raises(ValueError, match="calibration.pass_overhead_us"):
        load_profile("h100-7b", **{"calibration.pass_overhead_us": -1.0})
    # an unqualified overhead names [hardware], the roofline's own assumption
    assert load_profile("h100-7b", cpu_round_trip_us=5000.0).calibration == g.calibration


def _write(tmp_path, text: str):
    path = tmp_path / "gpu.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("kind", '"plain"', '"batch"'), "measurements[0].kind"),
        (("gpu", '"a100-80gb"', '"v100"'), "measurements[0].gpu"),
        (("quote", None, '""'), "measurements[0].quote"),
        (("tokens_per_s", "104.9", "-1.0"), "measurements[0].tokens_per_s"),
        (("context_len", "105", "1.5"), "measurements[0].context_len"),
        (("model", '"llama-2-7b"', '"gpt-9"'), "measurements[0].model"),
    ],
)
def test_bad_published_entry_names_the_field(tmp_path, edit, field):
    text = cal_mod.PUBLISHED.read_text()
    key, old, new = edit
    first = text.index("[[measurements]]")
    head, body = text[:first], text[first:]
    lines = body.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"{key} = ") and (
            old is None or line.split("=", 1)[1].strip().startswith(old)
        ):
            lines[i] = f"{key} = {new}"
            break
    else:
        raise AssertionError(f"no {key} line")
    path = _write(tmp_path, head + "\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=field.replace("[", "\\[").replace("]", "\\]")):
        cal_mod.load_published(path)


def test_spec_fields_on_a_plain_entry_are_refused(tmp_path):
    text = cal_mod.PUBLISHED.read_text().replace(
        'stack = "compiled"\nsource = "pytorch-labs/gpt-fast, README.md, benchmark table"\n'
        'quote = "| Llama-2-7B | Base | 104.9 | 1397.31 |"',
        'stack = "compiled"\ndraft_passes = 3\nsource = "pytorch-labs/gpt-fast, README.md, '
        'benchmark table"\nquote = "| Llama-2-7B | Base | 104.9 | 1397.31 |"',
        1,
    )
    assert "draft_passes = 3" in text
    with pytest.raises(ValueError, match="for kind = 'spec' only"):
        cal_mod.load_published(_write(tmp_path, text))


def test_fit_needs_enough_figures(pub):
    one = dataclasses.replace(pub, measurements=pub.measurements[:2])
    with pytest.raises(ValueError, match="measurements: 2 given"):
        cal_mod.fit(one)
    plain_only = dataclasses.replace(
        pub, measurements=tuple(m for m in pub.measurements if m.kind == "plain")
    )
    with pytest.raises(ValueError, match="one speculative"):
        cal_mod.fit(plain_only)


def test_published_file_parses_as_toml():
    with cal_mod.PUBLISHED.open("rb") as fh:
        data = tomllib.load(fh)
    assert set(data) == {"gpus", "models", "measurements", "excluded"}
