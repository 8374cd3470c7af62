"""The runtime's descriptor budget: the soft limit raised at start, and room kept for everything but sandboxes."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from mockserver.linux import fdlimit


def test_the_soft_limit_is_raised_to_the_hard_one() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 512), hard))
        assert fdlimit.raise_soft_limit() == (hard, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_room_keeps_the_reserve_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fdlimit, "soft_limit", lambda: 256)
    assert fdlimit.reserve() == 64 and fdlimit.reserve(20_000) == 2_500
    monkeypatch.setattr(fdlimit, "open_fds", lambda: 256 - 64 - fdlimit.FDS_PER_SANDBOX)
    assert fdlimit.has_room() and not fdlimit.has_room(2)
    monkeypatch.setattr(fdlimit, "open_fds", lambda: 256 - 64 - fdlimit.FDS_PER_SANDBOX + 1)
    assert not fdlimit.has_room()
    assert fdlimit.sandboxes_that_fit(256, in_use=64) == (256 - 64 - 64) // fdlimit.FDS_PER_SANDBOX


def test_open_fds_counts_this_process() -> None:
    """Counted in a fresh process: in the test process other threads open and close descriptors meanwhile."""
    code = (
        "import os; from mockserver.linux import fdlimit; before = fdlimit.open_fds(); "
        "fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(5)]; print(fdlimit.open_fds() - before)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "5"
