"""Language models for the golden model, the tests and the behavioural chip model.

Every model here follows the ``Model`` protocol of :mod:`golden.draft`: it has
``vocab_size: int`` and ``probs(contexts) -> np.ndarray`` of shape
``(len(contexts), vocab_size)``, ``float64``, every row non-negative and summing
to 1 (within 1e-9). Each also defines ``context_window``: it reads only the last
``context_window`` tokens of a context, so callers may pass just those, and
the fast path ``probs_tails(tails)``: the same rows for contexts given as one
integer matrix of their last ``context_window`` tokens (:func:`tails_matrix`),
which the decoder builds with one gather per tree level. All models are
deterministic: the same context always gives the same row.

Three families, one module each:

:class:`TableModel` (:mod:`golden.models.table`)
    A toy model given by an explicit table of next-token distributions, small
    enough to enumerate every continuation exactly (:meth:`TableModel.joint`):
    the model of the exact-distribution ("lossless") tests.
:class:`NGramModel` (:mod:`golden.models.ngram`)
    A byte-level (``vocab_size = 256``) interpolated Kneser-Ney n-gram model,
    trained on Python standard-library source (:func:`stdlib_corpus`,
    :mod:`golden.models.corpus`). A realistic code workload:
    :func:`default_ngram_pair` (:mod:`golden.models.ngram_pair`) gives a
    (target, draft) pair with a per-token acceptance rate typical of code
    drafting, trained once and cached on disk.
:class:`SyntheticPair` (:mod:`golden.models.synthetic`)
    A (target, draft) pair over any vocabulary ``2 .. 131072`` whose per-token
    acceptance ``sum_x min(p(x), q(x))`` is *exactly* ``alpha`` in every
    context: the model of the analytic checks (SPEC §7).

What they share (the vocabulary bound, the context checks, :func:`tails_matrix`)
is in :mod:`golden.models.base`. Bad input raises ``ValueError`` naming the
offending field, e.g. ``contexts[3][5] = 300: token out of range 0..255``.
"""

from golden.models.base import MAX_VOCAB, tails_matrix
from golden.models.corpus import (
    STDLIB_HELDOUT_FILES,
    STDLIB_TRAIN_FILES,
    code_prompts,
    stdlib_corpus,
    stdlib_dir,
)
from golden.models.ngram import NGramModel
from golden.models.ngram_pair import default_cache_dir, default_ngram_pair
from golden.models.synthetic import SyntheticModel, SyntheticPair
from golden.models.table import TableModel

__all__ = [
    "MAX_VOCAB",
    "STDLIB_HELDOUT_FILES",
    "STDLIB_TRAIN_FILES",
    "NGramModel",
    "SyntheticModel",
    "SyntheticPair",
    "TableModel",
    "code_prompts",
    "default_cache_dir",
    "default_ngram_pair",
    "stdlib_corpus",
    "stdlib_dir",
    "tails_matrix",
]
