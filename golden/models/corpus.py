"""The code corpus: Python standard-library source, for training and for prompts.

:data:`STDLIB_TRAIN_FILES` is the training text of the n-gram models
(:func:`stdlib_corpus`); :data:`STDLIB_HELDOUT_FILES`, disjoint from it, is where
:func:`code_prompts` cuts prompts. Both are read from the running interpreter's
standard library (:func:`stdlib_dir`): nothing is shipped with the package.
"""

from __future__ import annotations

import os
import sysconfig
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from checks import integer
from checks import seed as seed_check

__all__ = [
    "STDLIB_HELDOUT_FILES",
    "STDLIB_TRAIN_FILES",
    "code_prompts",
    "stdlib_corpus",
    "stdlib_dir",
]

#: Training corpus of :func:`default_ngram_pair`: pure-Python modules of the
#: CPython 3.11 standard library, relative to ``sysconfig.get_paths()["stdlib"]``
#: (general library code, classes, docstrings, tests of arguments, string
#: handling). Fixed: changing it changes the cache key.
STDLIB_TRAIN_FILES: tuple[str, ...] = (
    "abc.py",
    "argparse.py",
    "ast.py",
    "asyncio/base_events.py",
    "bisect.py",
    "collections/__init__.py",
    "contextlib.py",
    "copy.py",
    "dataclasses.py",
    "email/message.py",
    "enum.py",
    "fractions.py",
    "functools.py",
    "glob.py",
    "heapq.py",
    "http/client.py",
    "inspect.py",
    "json/decoder.py",
    "json/encoder.py",
    "logging/__init__.py",
    "operator.py",
    "optparse.py",
    "pathlib.py",
    "pickle.py",
    "queue.py",
    "random.py",
    "selectors.py",
    "shutil.py",
    "socket.py",
    "statistics.py",
    "string.py",
    "subprocess.py",
    "tarfile.py",
    "textwrap.py",
    "threading.py",
    "typing.py",
    "unittest/case.py",
    "urllib/parse.py",
    "weakref.py",
    "zipfile.py",
)

#: Held-out files (disjoint from :data:`STDLIB_TRAIN_FILES`):
#: the source of prompts (:func:`code_prompts`) and of evaluation contexts.
STDLIB_HELDOUT_FILES: tuple[str, ...] = (
    "calendar.py",
    "configparser.py",
    "csv.py",
    "difflib.py",
    "fnmatch.py",
    "getopt.py",
    "pprint.py",
    "sched.py",
    "shlex.py",
    "tokenize.py",
)


def stdlib_dir() -> Path:
    """The running interpreter's standard-library directory.

    Returns
    -------
    pathlib.Path
        ``sysconfig.get_paths()["stdlib"]``.
    """
    return Path(sysconfig.get_paths()["stdlib"])


def _stdlib_paths(files: Sequence[str]) -> list[Path]:
    if isinstance(files, str | bytes) or not isinstance(files, Sequence):
        raise ValueError(f"files = {files!r}: must be a sequence of relative paths")
    if not files:
        raise ValueError("files = (): must name at least one file")
    root = stdlib_dir()
    out = []
    for i, f in enumerate(files):
        if not isinstance(f, str) or not f or os.path.isabs(f) or ".." in Path(f).parts:
            raise ValueError(f"files[{i}] = {f!r}: must be a path relative to the stdlib directory")
        p = root / f
        if not p.is_file():
            raise FileNotFoundError(
                f"files[{i}] = {f!r}: not found in the Python standard library at {root}"
            )
        out.append(p)
    return out


def stdlib_corpus(files: Sequence[str] = STDLIB_TRAIN_FILES) -> bytes:
    """The concatenated source of standard-library modules.

    Parameters
    ----------
    files : sequence of str, optional
        Paths relative to the stdlib directory (:func:`stdlib_dir`), read in
        order and concatenated (each file ends with a newline).

    Returns
    -------
    bytes

    Raises
    ------
    ValueError
        If ``files`` is empty or holds a path that is absolute or leaves the
        stdlib directory.
    FileNotFoundError
        If a file is missing from the running interpreter's stdlib (the message
        names it).
    """
    parts = []
    for p in _stdlib_paths(files):
        b = p.read_bytes()
        parts.append(b if b.endswith(b"\n") else b + b"\n")
    return b"".join(parts)


def code_prompts(
    n: int, length: int, seed: int, *, files: Sequence[str] = STDLIB_HELDOUT_FILES
) -> list[list[int]]:
    """Byte prompts cut from held-out standard-library source.

    Parameters
    ----------
    n : int
        Number of prompts, ``0 .. 2**20``.
    length : int
        Bytes per prompt (``>= 1``).
    seed : int
        Seed of ``numpy.random.default_rng`` (``0 .. 2**64 - 1``); same seed,
        same prompts.
    files : sequence of str, optional
        Source files (default :data:`STDLIB_HELDOUT_FILES`, never trained on).

    Returns
    -------
    list of list of int
        ``n`` prompts of exactly ``length`` bytes (tokens ``0 .. 255``), each
        starting at the start of a non-blank line, starts drawn uniformly
        (without replacement while enough line starts exist).

    Raises
    ------
    ValueError
        If ``n`` or ``length`` is out of range (``length`` longer than any
        prompt the files can give).
    """
    n = integer("n", n, 0, 1 << 20)
    length = integer("length", length, 1)
    seed = seed_check("seed", seed)
    buf = np.frombuffer(stdlib_corpus(files), dtype=np.uint8)
    nl = np.flatnonzero(buf[:-1] == ord("\n")) + 1
    starts = np.concatenate([[0], nl])
    starts = starts[(starts + min(length, buf.size + 1) <= buf.size)]  # no int64 overflow
    starts = starts[buf[np.minimum(starts, buf.size - 1)] != ord("\n")]
    if starts.size == 0:
        raise ValueError(f"length = {length}: longer than the held-out text allows")
    rng = np.random.default_rng(seed)
    pick = rng.choice(starts, size=n, replace=n > starts.size)
    return [buf[s : s + length].tolist() for s in pick]
