"""``make docs``: the Sphinx API reference builds with warnings as errors.

The same sources and options as ``make docs`` (``docs/api``, ``-W
--keep-going``), built from a copy in a temporary folder (the generated stubs
stay out of the checkout) with Sphinx's ``dummy`` builder: every
module is imported, every docstring parsed and every cross-reference resolved,
but no HTML is written, so a broken docstring fails here without the cost
of writing the HTML.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_api_docs_build_without_warnings(tmp_path: Path) -> None:
    src = tmp_path / "api"
    shutil.copytree(REPO / "docs" / "api", src, ignore=shutil.ignore_patterns("_autosummary"))
    r = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "dummy"]
        + ["-d", str(tmp_path / "doctrees"), str(src), str(tmp_path / "out")],
        cwd=REPO,
        env={**os.environ, "SPECDECODE_REPO": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, f"sphinx-build -W failed:\n{r.stdout}\n{r.stderr}"
