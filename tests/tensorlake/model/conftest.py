"""Fixtures for the model tests: a fresh model on a manual clock, with a synthetic DNS table."""

from __future__ import annotations

import pytest

from mockserver.core import DnsTable, IdFactory, VirtualClock
from mockserver.tensorlake.model import Call, IngressRules, Tenant, TensorLakeModel
from mockserver.tensorlake.model.records import owner_id

KEY = "key-a"
OTHER = "key-b"
DOMAIN = "sandbox.localhost"


@pytest.fixture
def model() -> TensorLakeModel:
    """Return a fresh model on a manual clock."""
    return TensorLakeModel(VirtualClock("manual"), IdFactory(1), DnsTable().resolve)


@pytest.fixture
def rules(model: TensorLakeModel) -> IngressRules:
    """Return the proxy rules of ``model``."""
    return IngressRules(model)


def call(key: str = KEY, **query: str) -> Call:
    """Return a lifecycle call of ``key``'s tenant (in ``default``, as the gate authenticates it) with ``query``."""
    return Call(Tenant(owner_id(key), "default"), query={k: [v] for k, v in query.items()})
