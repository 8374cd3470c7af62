"""The client flows' fixtures: the session's served mocks (one ``sandproof serve`` per runtime)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.clients.flows import ServedMocks, served_mocks


@pytest.fixture(scope="session")
def mocks() -> Iterator[ServedMocks]:
    """The served mocks of each runtime, started when a test first asks for them."""
    yield from served_mocks()
