"""What every report page shares: the generation's :class:`Context`, paths as the pages
show them (:func:`rel`), a stamped page or its "not measured" notice (:func:`page_for`),
a producer's own Markdown (:func:`own_markdown`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flows.report.page import Page, load_json, not_measured
from flows.report.stamp import Stamp, for_report

__all__ = ["Context", "own_markdown", "page_for", "rel", "tools_line"]


@dataclass(frozen=True)
class Context:
    """Where a generation reads and writes.

    Attributes
    ----------
    repo : Path
        The checkout (paths on the pages are relative to it).
    reports : Path
        The producers' reports (``build/reports``).
    out : Path
        The pages' folder (``docs/results``); also holds the committed
        ``ecp5_measured.json``.
    env : Stamp
        The generation's own stamp (fills what a report does not record).
    """

    repo: Path
    reports: Path
    out: Path
    env: Stamp


def rel(ctx: Context, path: Path) -> str:
    """``path`` as the pages show it: under ``ctx.reports``' parent as ``build/...``,
    under ``ctx.out`` as ``docs/results/...``, else relative to the checkout
    (wherever a generation reads its reports from)."""
    path = path.resolve()
    for base, shown in (
        (ctx.out, Path("docs", "results")),
        (ctx.reports.parent, Path("build")),
        (ctx.repo, Path()),
    ):
        if path.is_relative_to(base.resolve()):
            return str(shown / path.relative_to(base.resolve()))
    return str(path)


def page_for(ctx: Context, name: str, title: str, path: Path, data: Any, target: str) -> Page:
    """A page for the report at ``path``: stamped from the report's metadata,
    or marked missing (``target`` measures it) when ``data`` is ``None``."""
    meta = data if isinstance(data, Mapping) else None
    stamp = for_report(meta, path if data is not None else None, ctx.env)
    page = Page(name, title, rel(ctx, path), stamp)
    if data is None:
        page.missing = not_measured(target)
    return page


def tools_line(d: Mapping) -> list[str]:
    tools = d.get("tools") or {}
    return [f"Tools: {', '.join(f'{k} {v}' for k, v in tools.items())}.", ""] if tools else []


def own_markdown(
    ctx: Context,
    name: str,
    title: str,
    target: str,
    render: Callable[[dict], list[str]] | None = None,
) -> Page:
    """The page of ``<name>.json``, whose producer renders its own Markdown (``render``,
    or none: the ``<name>.md`` it wrote beside it; its title line is the page's)."""
    path = ctx.reports / f"{name}.json"
    rep = load_json(path)
    page = page_for(ctx, name, title, path, rep, target)
    if isinstance(rep, Mapping):
        md = ctx.reports / f"{name}.md"
        lines = render(dict(rep)) if render else md.read_text().splitlines() if md.exists() else []
        page.lines = lines[2:]
    return page
