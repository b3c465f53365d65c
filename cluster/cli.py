"""The executor's command-line options, shared by every long job's command line."""

import argparse

from checks import int_arg
from cluster.executor import ENV, Executor, check_scheduler

__all__ = ["add_args", "executor", "scheduler_arg"]


def scheduler_arg(text: str) -> str:
    """An ``argparse`` type: ``serial`` or a scheduler's address ``PROTOCOL://HOST:PORT``
    (:func:`cluster.executor.check_scheduler`)."""
    try:
        return check_scheduler(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: 'serial' or PROTOCOL://HOST:PORT") from None


def add_args(ap: argparse.ArgumentParser, *, jobs: int | None = None) -> None:
    """``--jobs N`` (local worker processes; default ``jobs``, else the machine's cores)
    and ``--scheduler ADDRESS`` (a running Dask scheduler, or ``serial``)."""
    ap.add_argument(
        "--jobs", type=int_arg(1, 256), default=jobs,
        help="local worker processes (default: %(default)s; none: the machine's cores)",
    )  # fmt: skip
    ap.add_argument(
        "--scheduler", type=scheduler_arg, default=None, metavar="ADDRESS",
        help=f"a running Dask scheduler, tcp://HOST:PORT (or ${ENV}); 'serial': this process",
    )  # fmt: skip


def executor(args: argparse.Namespace, log=print) -> Executor:
    """The :class:`cluster.executor.Executor` of parsed :func:`add_args` options."""
    return Executor(scheduler=args.scheduler, workers=args.jobs, log=log)
