"""One co-simulation of ``specdecode_top`` in a child process and its connection
(:mod:`sim.rtl.server` serves it inside the simulator).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from multiprocessing.connection import Connection
from pathlib import Path

from sim.rtl.build import REPO

RUNS = REPO / "build" / "sim_runs" / "cosim"
#: seconds the simulator may take to start and connect (at least; ``timeout`` if longer)
START_TIMEOUT = 120.0


class RTLSimError(RuntimeError):
    """The co-simulation failed: it died, hung, was closed, or the RTL misbehaved."""


# ----------------------------------------------------------------------------- process
_counter = itertools.count()


class Cosim:
    """One running co-simulation of ``specdecode_top`` and its connection.

    Parameters
    ----------
    hdl : dict
        ``Top``'s parameters.
    build_dir : Path
        A build of ``specdecode_top`` with those parameters (:func:`build_top`).
    timeout : float
        Seconds a request may take before the simulation is declared hung,
        ended, and :class:`RTLSimError` raised (the start-up may take
        :data:`START_TIMEOUT` if that is longer).

    Members
    -------
    cycle : int
        Clock cycles simulated since reset (as of the last reply).
    run_dir : Path
        Where the simulator's log (``sim.log``) and the runner's (``runner.log``)
        go; removed after a clean close, kept after a failure.
    """

    def __init__(self, hdl: dict[str, int], build_dir: Path, *, timeout: float = 600.0) -> None:
        self.hdl = dict(hdl)
        self.timeout = float(timeout)
        self.cycle = 0
        self.closed = False
        self._conn: Connection | None = None
        self._proc: subprocess.Popen | None = None
        self._tmp = tempfile.mkdtemp(prefix="cosim-")
        addr = os.path.join(self._tmp, "sock")
        self.run_dir = RUNS / f"{os.getpid()}-{next(_counter)}"
        shutil.rmtree(self.run_dir, ignore_errors=True)
        self.run_dir.mkdir(parents=True)
        lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            lsock.bind(addr)
            lsock.listen(1)
            lsock.settimeout(0.2)
            args = {
                "build_dir": str(build_dir),
                "test_dir": str(self.run_dir),
                "params": self.hdl,
                "addr": addr,
            }
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
            with open(self.run_dir / "runner.log", "wb") as log:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "sim.rtl.server", json.dumps(args)],
                    cwd=REPO,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: ended as one
                )
            self._finalizer = weakref.finalize(self, _end_group, self._proc, self._tmp)
            start = max(self.timeout, START_TIMEOUT)
            deadline = time.monotonic() + start
            while True:
                try:
                    s, _ = lsock.accept()
                    break
                except TimeoutError:
                    if self._proc.poll() is not None:
                        self._fail(
                            f"the simulator exited ({self._proc.returncode}) before connecting"
                        )
                    if time.monotonic() > deadline:
                        self._fail(f"the simulator did not connect within {start:.0f} s")
            s.setblocking(True)
            self._conn = Connection(s.detach())
        finally:
            lsock.close()
        hello = self._recv(timeout=start)
        self.cycle = hello["cycle"]

    # ------------------------------------------------------------------ requests
    def check_open(self) -> None:
        """``RTLSimError`` if the co-simulation is closed (or failed)."""
        if self.closed or self._conn is None:
            raise RTLSimError("the rtl co-simulation is closed")

    def call(self, cmd: str, **req) -> dict:
        """Send one request, wait for its reply (``RTLSimError`` on any failure)."""
        self.check_open()
        try:
            self._conn.send({"cmd": cmd, **req})
        except OSError as e:
            self._fail(f"request {cmd!r}: the simulator is gone ({e})")
        rep = self._recv(cmd)
        self.cycle = rep["cycle"]
        if "error" in rep:
            self._fail(f"request {cmd!r} failed in the simulator:\n{rep['error']}")
        return rep

    def _recv(self, what: str = "start-up", timeout: float | None = None) -> dict:
        assert self._conn is not None and self._proc is not None
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            try:
                if self._conn.poll(0.5):
                    return self._conn.recv()
            except (EOFError, OSError) as e:
                self._fail(f"{what}: the simulator closed the connection ({type(e).__name__})")
            if self._proc.poll() is not None:
                self._fail(f"{what}: the simulator exited ({self._proc.returncode})")
            if time.monotonic() > deadline:
                self._fail(f"{what}: no reply within {limit:.0f} s (simulation hung?)")

    def _log_tail(self, n: int = 3000) -> str:
        out = []
        for name in ("sim.log", "runner.log"):
            f = self.run_dir / name
            if f.exists():
                text = f.read_text(errors="replace").strip()
                if text:
                    out.append(f"--- {f} (tail)\n{text[-n:]}")
        return "\n".join(out)

    def _fail(self, msg: str) -> None:
        self._shutdown(graceful=False)
        tail = self._log_tail()
        raise RTLSimError(f"{msg}\n{tail}" if tail else msg)

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        """Tell the simulator to finish, wait for it; end its process group if it does not."""
        self._shutdown(graceful=True)

    def _shutdown(self, graceful: bool) -> None:
        if self.closed:
            return
        self.closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            if graceful:
                try:
                    conn.send({"cmd": "quit"})
                    if conn.poll(10):
                        conn.recv()
                except (OSError, EOFError):
                    pass
            conn.close()
        proc = self._proc
        if proc is not None and graceful:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        if hasattr(self, "_finalizer"):
            self._finalizer()  # ends the group if still running, removes the socket folder
        else:
            shutil.rmtree(self._tmp, ignore_errors=True)
        if graceful and proc is not None and proc.returncode == 0:
            shutil.rmtree(self.run_dir, ignore_errors=True)  # logs are kept after failures

    @property
    def pid(self) -> int | None:
        """The child process's id (also its process group's)."""
        return None if self._proc is None else self._proc.pid

    def __enter__(self) -> Cosim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _end_group(proc: subprocess.Popen, tmp: str) -> None:
    """End the child's process group (the runner and the simulator it started)."""
    try:
        if proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
                try:
                    os.killpg(proc.pid, sig)
                    os.killpg(proc.pid, signal.SIGCONT)  # a stopped group acts on it too
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        else:  # the runner is gone; a simulator left in its group goes too
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
