"""Tests marked ``full`` run only in ``make sim-full`` (``SIM_FULL=1``; :data:`tb.common.FULL`):
elsewhere they are skipped, with the target that runs them as the reason."""

import pytest

from tb.common import SKIP_UNLESS_FULL


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("full") is not None:
            item.add_marker(SKIP_UNLESS_FULL)
