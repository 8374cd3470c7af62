"""pytest plugin: fixtures and options for running sandproof contracts."""

from __future__ import annotations
