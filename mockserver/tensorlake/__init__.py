"""A faithful mock of the TensorLake sandbox API: lifecycle, sandbox proxy and in-sandbox management API."""

from .gate import TensorLakeGate
from .mock import DEFAULT_API_KEY, DEFAULT_INGRESS_DOMAIN, DEFAULT_PORT, TensorLakeMock, sdk_env
from .models import Timings

__all__ = [
    "DEFAULT_API_KEY",
    "DEFAULT_INGRESS_DOMAIN",
    "DEFAULT_PORT",
    "TensorLakeGate",
    "TensorLakeMock",
    "Timings",
    "sdk_env",
]
