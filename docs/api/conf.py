"""Sphinx configuration of the API reference (``make docs`` -> ``build/docs/html``).

Every module of ``checks``, ``golden``, ``hw``, ``sim``, ``flows`` and ``cluster`` is
found by package discovery (``autosummary`` with ``:recursive:``), none is named here;
docstrings are numpydoc style (``sphinx.ext.napoleon``). Built with warnings as
errors, so a broken docstring fails ``make docs`` and ``tests/test_docs.py``.
"""

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# the checkout documented; a copy of this folder elsewhere (tests/test_docs.py) names it
REPO = Path(os.environ.get("SPECDECODE_REPO", HERE.parents[1])).resolve()
sys.path.insert(0, str(REPO))
PACKAGES = ("checks", "golden", "hw", "sim", "flows", "cluster")

project = "specdecode-rtl"
author = "specdecode-rtl contributors"
copyright = "specdecode-rtl contributors"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
]

# stubs are generated into _autosummary/ on every build (not in git)
autosummary_generate = True
autosummary_generate_overwrite = True
autosummary_imported_members = False
# a package's ``__main__`` is its command line, not API: mocked, so that discovery
# does not run it (autosummary imports every submodule it finds)
autosummary_mock_imports = sorted(
    ".".join(p.relative_to(REPO).with_suffix("").parts)
    for pkg in PACKAGES
    for p in (REPO / pkg).rglob("__main__.py")
)
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"

napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

templates_path = ["_templates"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path: list[str] = []


def _fresh_stubs(app) -> None:
    """Remove the previous build's stubs: a module renamed or removed since must not
    leave an orphan page behind (an error under ``-W``)."""
    shutil.rmtree(Path(app.srcdir) / "_autosummary", ignore_errors=True)


def setup(app) -> None:
    # before autosummary's own builder-inited handler (priority 500) generates the stubs
    app.connect("builder-inited", _fresh_stubs, priority=100)
