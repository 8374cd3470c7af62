"""Hypothesis profiles for sandproof runs: ``ci``, ``thorough`` and ``dev``, and ``HYPOTHESIS_PROFILE`` loading."""

from __future__ import annotations

import os
from typing import Any

import pytest

__all__ = [
    "HYPOTHESIS_PROFILES",
    "current_profile",
    "load_env_profile",
    "register_hypothesis_profiles",
    "restore_profile",
]

#: Hypothesis profiles the plugin registers (unless a profile of that name already exists).
HYPOTHESIS_PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"max_examples": 60, "deadline": None},
    "thorough": {"max_examples": 2000, "deadline": None},
    "dev": {"max_examples": 20, "deadline": None},
}
_SUPPRESSED = ("too_slow", "function_scoped_fixture")


def register_hypothesis_profiles() -> None:
    """Register the ``ci``, ``thorough`` and ``dev`` profiles unless profiles of those names exist."""
    try:
        from hypothesis import HealthCheck, settings
        from hypothesis.errors import InvalidArgument
    except ImportError:
        return
    suppressed = [getattr(HealthCheck, name) for name in _SUPPRESSED]
    for name, values in HYPOTHESIS_PROFILES.items():
        try:
            existing = settings.get_profile(name)
        except InvalidArgument:
            existing = None
        if existing is None or _is_builtin_ci(name, existing):
            settings.register_profile(name, suppress_health_check=suppressed, **values)


def _is_builtin_ci(name: str, profile: Any) -> bool:
    """Tell whether ``profile`` is Hypothesis' own ``ci`` profile (which ours replaces), not a user's."""
    return (
        name == "ci"
        and profile.max_examples == 100
        and bool(profile.derandomize)
        and profile.database is None
        and bool(profile.print_blob)
    )


def current_profile() -> str | None:
    """Return the loaded Hypothesis profile's name (None without Hypothesis)."""
    try:
        from hypothesis import settings
    except ImportError:
        return None
    return settings.get_current_profile_name()


def load_env_profile(config: pytest.Config) -> None:
    """Load the profile named by ``HYPOTHESIS_PROFILE`` unless ``--hypothesis-profile`` was given."""
    name = os.environ.get("HYPOTHESIS_PROFILE", "").strip()
    try:
        given = config.getoption("hypothesis_profile", default=None)
    except ValueError:
        given = None
    if not name or given or current_profile() is None:
        return
    from hypothesis import settings

    try:
        settings.get_profile(name)  # load_profile would switch to an unknown name before failing
    except Exception as exc:
        raise pytest.UsageError(f"HYPOTHESIS_PROFILE={name!r}: {exc}") from exc
    settings.load_profile(name)


def restore_profile(previous: str | None) -> None:
    """Load ``previous`` again if another profile is loaded now: an in-process run must not leak its profile."""
    if previous is not None and current_profile() != previous:
        from hypothesis import settings

        settings.load_profile(previous)
