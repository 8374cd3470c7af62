"""Shared set-up of the plugin tests: the fake mocks, a private deviation registry, no profile from outside."""

from __future__ import annotations

import pytest

from harness.reporting import report as report_module
from harness.targets import mocks as mock_stack
from tests.harness.fakes import FAKE_CLASSES


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Use the fake mocks and a private deviation registry; keep the caller's profile."""
    monkeypatch.setattr(mock_stack, "MOCK_CLASSES", FAKE_CLASSES)
    monkeypatch.setattr(report_module, "_DEVIATIONS", [])
    monkeypatch.delenv("HYPOTHESIS_PROFILE", raising=False)
