"""Test configuration: the sandproof plugin registers the Hypothesis profiles; ``ci`` is the default here."""

from __future__ import annotations

import os

from hypothesis import settings

from harness.plugin import register_hypothesis_profiles

register_hypothesis_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
