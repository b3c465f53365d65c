"""The (target, draft) n-gram pair of the code workload, trained once and cached on disk."""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Sequence
from pathlib import Path

from checks import integer, real
from golden.models.corpus import STDLIB_TRAIN_FILES, stdlib_corpus
from golden.models.ngram import MAX_ORDER, NGRAM_FORMAT, NGramModel

__all__ = ["default_cache_dir", "default_ngram_pair"]


def default_cache_dir() -> Path:
    """Directory of the trained-model cache.

    Returns
    -------
    pathlib.Path
        ``$SPECDECODE_CACHE`` if set, else ``<repo>/build/cache`` where
        ``<repo>`` is the parent of the ``golden`` package directory.
    """
    env = os.environ.get("SPECDECODE_CACHE")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "build" / "cache"


def _cache_key(files: Sequence[str], corpus: bytes, order: int, discount: float) -> str:
    meta = {
        "format": NGRAM_FORMAT,
        "files": list(files),
        "size": len(corpus),
        "sha256": hashlib.sha256(corpus).hexdigest(),
        "order": order,
        "discount": discount,
    }
    return hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:16]


def _cached_ngram(
    files: Sequence[str], corpus: bytes, order: int, discount: float, cache_dir: Path
) -> NGramModel:
    key = _cache_key(files, corpus, order, discount)
    path = cache_dir / f"ngram_o{order}_d{discount:g}_{key}.npz"
    if path.is_file():
        try:
            return NGramModel.load(path)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):
            pass  # unreadable (e.g. truncated): retrain and overwrite
    model = NGramModel.train(corpus, order, discount=discount)
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    model.save(tmp)
    os.replace(tmp, path)  # atomic: concurrent callers never see half a file
    return model


def default_ngram_pair(
    *,
    target_order: int = 6,
    draft_order: int = 4,
    discount: float = 0.75,
    cache_dir: str | os.PathLike[str] | None = None,
) -> tuple[NGramModel, NGramModel]:
    """The (target, draft) n-gram pair of the code workload.

    Both are trained on :func:`stdlib_corpus` (:data:`STDLIB_TRAIN_FILES`). The
    target reads ``target_order - 1`` bytes of context (5 by default), the draft
    ``draft_order - 1`` (3). The default orders balance the per-token
    acceptance ``sum_x min(p(x), q(x))`` on held-out code
    (:data:`STDLIB_HELDOUT_FILES`) against the draft's cost; the measured
    acceptance of each pair of orders is in the project documentation.

    Trained models are cached on disk, one ``.npz`` per model, named by a hash
    of the file list, the corpus contents, the order, the discount and the
    file format version: any change retrains, and a cached model loads without
    training. A cache file that cannot be read is retrained and overwritten;
    files are written to a temporary name and renamed, so concurrent callers
    never read half a file.

    Parameters
    ----------
    target_order : int, optional
        Order of the target, ``2 .. 7``.
    draft_order : int, optional
        Order of the draft, ``1 .. target_order - 1``.
    discount : float, optional
        Kneser-Ney discount of both models, ``0 < D <= 1``.
    cache_dir : str or os.PathLike, optional
        Cache directory (default :func:`default_cache_dir`).

    Returns
    -------
    tuple of NGramModel
        ``(target, draft)``.

    Raises
    ------
    ValueError
        If an order or the discount is out of range, or
        ``draft_order >= target_order``.
    FileNotFoundError
        If a training file is missing from the interpreter's stdlib.
    """
    target_order = integer("target_order", target_order, 2, MAX_ORDER)
    draft_order = integer("draft_order", draft_order, 1, MAX_ORDER)
    if draft_order >= target_order:
        raise ValueError(
            f"draft_order = {draft_order}: must be lower than target_order = {target_order}"
        )
    discount = real("discount", discount, 0, 1, lo_open=True)
    cdir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    files = STDLIB_TRAIN_FILES
    corpus = stdlib_corpus(files)
    target = _cached_ngram(files, corpus, target_order, discount, cdir)
    draft = _cached_ngram(files, corpus, draft_order, discount, cdir)
    return target, draft
