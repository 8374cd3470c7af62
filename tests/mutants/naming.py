"""The registry names of class-based mutants: a class's name in kebab case, registered under a suite."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from harness.reporting.mutation import register_mutants

__all__ = ["mutant_name", "register_classes"]


def mutant_name(cls: type[Any]) -> str:
    """Return the registry name of a mutant class (``NoWaitCreate200`` -> ``no-wait-create-200``)."""
    return re.sub(r"(?<!^)(?=[A-Z])|(?<=[a-z])(?=\d)", "-", cls.__name__).lower()


def register_classes(suite: str, classes: Iterable[type[Any]]) -> None:
    """Register each mutant class as ``"<suite>:<mutant_name>"``."""
    register_mutants(suite, {mutant_name(cls): cls for cls in classes})
