"""The figures the documentation quotes are what the documented runs give
(``flows.report.figures``): each run is performed again and every marked
figure and quoted output compared with it."""

import re
from pathlib import Path

import pytest

from flows.report import figures
from flows.report.figures import FIGURES, MARK, OUTPUT, RUNS


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    return figures.run_reports(tmp_path_factory.mktemp("figures"))


def _marks() -> list[tuple[Path, str, str]]:
    return [
        (page, m["key"], m["text"])
        for page in figures.marked_pages()
        for m in MARK.finditer(page.read_text())
    ]


def test_every_quoted_figure_is_what_its_run_gives(runs) -> None:
    reports, _ = runs
    texts = figures.figure_texts(reports)
    marks = _marks()
    assert marks, "no marked figure found"
    stale = [
        f"{p.name}: {key} states {text!r}, the run gives {texts[key]!r}"
        for p, key, text in marks
        if texts[key] != text
    ]
    assert not stale, "run `make figures`:\n" + "\n".join(stale)


def test_every_quoted_output_is_what_its_run_prints(runs) -> None:
    _, outputs = runs
    quoted = [
        (p, m["run"], m["text"])
        for p in figures.marked_pages()
        for m in OUTPUT.finditer(p.read_text())
    ]
    assert quoted, "no quoted output found"
    for page, run, text in quoted:
        assert text == outputs[run], f"{page.name}: output of {run!r} is stale: `make figures`"


def test_every_declared_figure_and_run_is_quoted() -> None:
    used = {key for _, key, _ in _marks()}
    assert used <= set(FIGURES), used - set(FIGURES)
    assert set(FIGURES) <= used, f"declared but never quoted: {sorted(set(FIGURES) - used)}"
    assert {f.run for f in FIGURES.values()} == set(RUNS)


def test_fill_rewrites_marks_and_refuses_unknown_keys() -> None:
    text = "a <!--fig:chip.accepted-->9.9<!--/fig--> b"
    assert figures.fill(text, {"chip.accepted": "2.7"}) == text.replace("9.9", "2.7")
    assert figures.fill(text, {}) == text  # a figure whose run was not performed is kept
    with pytest.raises(ValueError, match="'chip.bogus'"):
        figures.fill("<!--fig:chip.bogus-->1<!--/fig-->", {})
    block = "<!--output:chip-->\n```\nold\n```\n<!--/output-->"
    assert figures.fill(block, {}, {"chip": "new\n"}) == block.replace("old", "new")
    with pytest.raises(ValueError, match="'bogus'"):
        figures.fill(block.replace("chip", "bogus"), {}, {})


def test_clean_output_drops_what_varies() -> None:
    text = "43 chip steps (+1 extra); model speed 720 steps/s\ntable\ntotal 1.5 s\nwrote x.png\n"
    assert figures.clean_output(text) == "43 chip steps (+1 extra)\ntable\n"


def test_every_picture_in_docs_is_shown() -> None:
    """A PNG under ``docs/`` (generated results apart) that no page shows is a stale
    picture of an earlier run."""
    pages = " ".join(p.read_text() for p in figures.marked_pages())
    docs = figures.ROOT / "docs"
    pngs = [p for p in docs.rglob("*.png") if "results" not in p.relative_to(docs).parts]
    unshown = [str(p.relative_to(docs)) for p in pngs if p.name not in pages]
    assert not unshown, f"pictures no page shows: {unshown}"


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_to_a_page_and_heading_resolves() -> None:
    """A relative link in the README or docs names a file that exists and, with
    ``#anchor``, a heading of it."""
    bad = []
    for page in figures.marked_pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # a URL
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                bad.append(f"{page.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md":
                heads = re.findall(r"^#+ (.+)$", dest.read_text(), re.M)
                if anchor not in {_slug(h) for h in heads}:
                    bad.append(f"{page.name}: {target} (no such heading)")
    assert not bad, "\n".join(bad)
