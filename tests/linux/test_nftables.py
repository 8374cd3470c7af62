"""nft scripts through the helper process: applied with every fd below 1024 taken, and a dead helper replaced.

libnftables waits for the kernel with ``select()``, which aborts a process whose socket is fd 1024 or
above. A server with a few hundred sandboxes had every fd below 1024 in use and died at the next policy
change. The first test rebuilds that state in a child process (1100 open fds) and applies a script there;
the second shows the same child dies when the library runs in-process, as it did, so the first can fail.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mockserver.linux.netns import create_netns, remove_netns
from mockserver.linux.nftables import HelperNft, NftError, NftHelper, shared_helper

from .conftest import needs_runtime

pytestmark = needs_runtime
ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import os, sys
from mockserver.linux.netns import create_netns, remove_netns
from mockserver.linux.egress import render_ruleset
from mockserver.linux.firewall import OPEN_PLAN
name = f"sandproof-fdtst-{os.getpid()}"
fd = create_netns(name)
try:
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]  # every fd below 1024 is taken
    script = render_ruleset(OPEN_PLAN, resolver="100.64.0.53")
    if sys.argv[1] == "helper":
        from mockserver.linux.nftables import HelperNft
        nft = HelperNft(fd)
        nft.run(script)
        listed = nft.run("list table inet sandproof")
        nft.close()
    else:  # the library in this process, as the runtime used it
        sys.path.insert(0, "mockserver/linux/standalone")
        import ctypes, nft_helper
        contexts = nft_helper.Contexts(nft_helper.load(), ctypes.CDLL(None, use_errno=True))
        listed = str(contexts.run(1, fd, script + "list table inet sandproof\\n").get("output"))
    print("applied" if "chain output" in listed else "not applied", max(held) > 1024, flush=True)
finally:
    os.close(fd)
    remove_netns(name)
"""


def _child(how: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD), how], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_a_script_applies_with_every_fd_below_1024_taken() -> None:
    done = _child("helper")
    assert (done.returncode, done.stdout.split()) == (0, ["applied", "True"]), done.stderr


def test_the_library_in_process_dies_there() -> None:
    done = _child("in-process")
    assert done.returncode == -signal.SIGABRT, (done.returncode, done.stdout, done.stderr[-500:])
    assert "FD_SETSIZE" in done.stderr


def test_a_dead_helper_is_replaced_and_a_refused_script_changes_nothing() -> None:
    name = f"sandproof-nfttst-{os.getpid()}"
    fd = create_netns(name)
    helper = NftHelper()
    try:
        nft = HelperNft(fd, helper)
        nft.run("table inet t\ndelete table inet t\ntable inet t {\n\tset s {\n\t\ttype ipv4_addr\n\t}\n}\n")
        assert helper.pid is not None
        os.kill(helper.pid, signal.SIGKILL)
        nft.run("add element inet t s { 192.0.2.1 }\n")  # sent again to a new helper
        assert helper.starts == 2
        with pytest.raises(NftError, match="syntax error"):
            nft.run("add element inet t s { 192.0.2.2 }\nbogus\n")
        assert "192.0.2.2" not in nft.run("list set inet t s") and "192.0.2.1" in nft.run("list set inet t s")
        nft.close()
        with pytest.raises(NftError, match="closed"):
            nft.run("list tables")
        assert len(os.listdir(f"/proc/{helper.pid}/fd")) < 10
    finally:
        helper.close()
        os.close(fd)
        remove_netns(name)
    assert shared_helper() is shared_helper()
