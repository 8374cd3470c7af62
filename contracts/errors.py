"""Errors shared by the reference network policies."""

from __future__ import annotations


class PolicyError(ValueError):
    """Invalid policy input, with a stable machine-readable code."""

    def __init__(self, code: str, message: str) -> None:
        """Store the stable code and the human-readable message."""
        super().__init__(message)
        self.code = code
        self.message = message

    def __reduce__(self) -> tuple[type[PolicyError], tuple[str, str]]:
        """Pickle with both constructor arguments."""
        return (type(self), (self.code, self.message))
