"""Fixtures for the model tests: a fresh model on a manual clock, with a synthetic DNS table."""

from __future__ import annotations

import pytest

from mockserver.core import DnsTable, IdFactory, VirtualClock
from mockserver.tensorlake.model import Call, IngressRules, LifecycleApi, TensorLakeModel

KEY = "key-a"
OTHER = "key-b"
DOMAIN = "sandbox.localhost"


@pytest.fixture
def model() -> TensorLakeModel:
    """Return a fresh model on a manual clock."""
    return TensorLakeModel(VirtualClock("manual"), IdFactory(1), DnsTable().resolve)


@pytest.fixture
def api(model: TensorLakeModel) -> LifecycleApi:
    """Return the lifecycle API of ``model``."""
    return LifecycleApi(model, DOMAIN)


@pytest.fixture
def rules(model: TensorLakeModel) -> IngressRules:
    """Return the proxy rules of ``model``."""
    return IngressRules(model)


def call(key: str | None = KEY, **query: str) -> Call:
    """Return a lifecycle call with ``key`` as bearer (None: no Authorization) and ``query``."""
    return Call(None if key is None else f"Bearer {key}", query={k: [v] for k, v in query.items()})
