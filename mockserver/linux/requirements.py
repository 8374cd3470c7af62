"""What the linux runtime needs from the machine, checked at once, reported in one message.

Needed: Linux; root (euid 0, to make network namespaces, veth links and cgroups); the kernel letting us
make user, network, mount and PID namespaces (probed in a forked child); bubblewrap (``bwrap``, with
``--userns``); iproute2 (``ip``); nftables (``libnftables``, used by a helper process, else the ``nft`` binary);
a ``python3`` under ``/usr`` (the sandbox's init runs on the host's interpreter, mounted read-only).
Optional, reported as notes: writable cgroups for memory and pids limits (else limits are recorded, not
enforced) and the freezer (else pause uses SIGSTOP).

``python -m mockserver.linux.requirements`` prints the report and exits 1 when something is missing.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

from .cgroups import detect as detect_cgroups
from .confine import openat2_problem
from .kernel import CLONE_NEWNET, CLONE_NEWUSER, KernelError, unshare
from .nftables import libnftables_available

__all__ = [
    "DEBIAN_PACKAGES",
    "Requirements",
    "RuntimeUnavailable",
    "check_requirements",
    "guest_python",
    "require",
]

DEBIAN_PACKAGES = ("bubblewrap", "nftables", "iproute2")
CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")


class RuntimeUnavailable(RuntimeError):
    """The linux runtime cannot run here; the message names everything missing."""


@dataclass(frozen=True)
class Requirements:
    """The outcome of the checks: what is missing (fatal) and notes (limits not enforced and so on)."""

    missing: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Tell whether the runtime can run."""
        return not self.missing

    def message(self) -> str:
        """Return the one-line explanation of what is missing, with the install hint."""
        if self.ok:
            return "linux runtime available" + (f" ({'; '.join(self.notes)})" if self.notes else "")
        tools = any(package in item for item in self.missing for package in DEBIAN_PACKAGES)
        hint = f"; as root: apt-get install -y {' '.join(DEBIAN_PACKAGES)}" if tools else ""
        return "linux runtime unavailable: missing " + "; ".join(self.missing) + hint


def guest_python() -> str | None:
    """Return a python3 visible inside sandboxes (under /usr), or None."""
    candidates = [os.path.realpath(sys.executable), *_PYTHONS]
    for path in candidates:
        if path.startswith("/usr/") and os.access(path, os.X_OK):
            return path
    return None


def _probe_namespaces() -> str | None:
    """Return why user+net+mount+pid namespaces cannot be made here, or None when they can."""
    try:
        pid = os.fork()
    except OSError as exc:
        return f"fork failed: {exc}"
    if pid == 0:
        try:
            unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWPID)
        except KernelError as exc:
            os._exit(10 + min(exc.errno or 0, 200))
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return None
    return f"namespace rights (unshare user+net+mount+pid failed: {os.strerror(code - 10) if code >= 10 else code})"


def _bwrap_problem(binary: str) -> str | None:
    try:
        out = subprocess.run([binary, "--help"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"a working bubblewrap ({binary}: {exc})"
    if b"--userns" not in out.stdout + out.stderr:
        return "bubblewrap >= 0.4 (bwrap without --userns)"
    return None


@functools.lru_cache(maxsize=1)
def check_requirements() -> Requirements:
    """Check everything once per process and return the report."""
    missing: list[str] = []
    notes: list[str] = []
    if not sys.platform.startswith("linux"):
        return Requirements(("Linux (this is " + sys.platform + ")",))
    if os.geteuid() != 0:
        missing.append("root (euid 0, to create network namespaces, veth links and cgroups)")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        missing.append("bubblewrap (bwrap)")
    elif problem := _bwrap_problem(bwrap):
        missing.append(problem)
    if shutil.which("ip") is None:
        missing.append("iproute2 (ip)")
    if not libnftables_available():
        if shutil.which("nft") is None:
            missing.append("nftables (nft / libnftables)")
        else:
            notes.append("libnftables not loadable: policy changes run the nft binary")
    if guest_python() is None:
        missing.append("python3 under /usr (the sandbox init runs on it)")
    if problem := openat2_problem():
        missing.append(problem)  # the files API resolves every sandbox path with it (see confine)
    if os.geteuid() == 0 and (problem := _probe_namespaces()):
        missing.append(problem)
    if os.geteuid() == 0:
        notes += detect_cgroups().notes
    return Requirements(tuple(missing), tuple(notes))


def require() -> Requirements:
    """Return the report, or raise RuntimeUnavailable naming everything missing."""
    report = check_requirements()
    if not report.ok:
        raise RuntimeUnavailable(report.message())
    return report


def main() -> int:
    """Print the report; exit 1 when the runtime cannot run."""
    report = check_requirements()
    print(report.message())
    for note in report.notes:
        print(f"note: {note}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
