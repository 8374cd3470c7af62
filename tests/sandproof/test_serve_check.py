"""The contract suite passes against sandproof's own served OpenSandbox mock, through the CLI, in both key modes.

``sandproof serve`` runs as a subprocess on free ports; ``sandproof check --target opensandbox:URL`` runs as
another, with the key a user's CI would keep in ``OPEN_SANDBOX_API_KEY``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx
import pytest

from tests.serving import ROOT, served_opensandbox


@pytest.mark.parametrize(
    ("serve_args", "key", "only"),
    [
        ((), "a-key-of-my-own-ci", ()),  # the default: any key, each its own tenant; every contract, nothing reset
        # one pinned key; the run may reset the server it started: the admin contracts run, comparisons are exact
        (("--api-key", "sandproof-key"), "sandproof-key", ("-k", "opensandbox_api", "--allow-reset")),
    ],
    ids=["any-key", "pinned-key"],
)
def test_check_passes_against_the_served_opensandbox_mock(
    serve_args: tuple[str, ...], key: str, only: tuple[str, ...]
) -> None:
    with served_opensandbox(*serve_args) as url:
        env = {**os.environ, "OPEN_SANDBOX_API_KEY": key}
        command = [sys.executable, "-m", "sandproof.cli", "check", "--target", f"opensandbox:{url}", "--profile", "dev"]
        done = subprocess.run([*command, *only, "-q"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=280)
        asked = time.time()
        clock = httpx.get(f"{url}/_mock/clock").json()
        answered = time.time()
    # where it was, also after a reset: between the ask and the answer (a second of slack either side), not moved
    assert clock["mode"] == "wall" and asked - 1.0 < clock["now"] < answered + 1.0, (asked, clock, answered)
    lines = done.stdout.splitlines()
    verdict = next((line for line in lines if line.startswith("sandproof check ")), done.stdout[-2000:])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "sandproof check PASSED" in verdict and " 0 failed" in verdict, verdict
    assert lines[-1].startswith("sandproof check: spec "), lines[-1]  # the checks per strength come last
    header = lines[0]
    assert header.startswith("sandproof check: target opensandbox:") and "[api, admin]" in header, header
    assert "tensorlake" not in header and "does not cover" not in done.stdout  # only the provider targeted
    assert "dev/null" not in done.stdout
