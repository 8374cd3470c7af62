"""Deliberately wrong linux files APIs the break-out suite (``tests/linux/test_breakout.py``) must catch.

Both check the path in the sandbox's view, then act on the host path the check named, as the files API did
before its operations moved onto ``openat2`` descriptors:

- :func:`chmod_by_host_path` changes the mode through the host path, so a final component that is a
  symbolic link is followed *on the host* (the host file of ``ln -s <host file> /tmp/x`` changes mode).
- :func:`stat_by_host_path` describes the host path, so a directory swapped for a link between the check
  and the ``stat`` describes a host file.

They replace :class:`~mockserver.linux.hostfs.HostFileSystem` methods (``monkeypatch.setattr``); they need the
linux runtime and are not part of the mutation score.
"""

from __future__ import annotations

import os

from mockserver.linux.hostfs import HostFileSystem
from mockserver.sandbox.filesystem import FileInfo, normpath

__all__ = ["chmod_by_host_path", "stat_by_host_path"]


def chmod_by_host_path(self: HostFileSystem, path: str, mode: int) -> FileInfo:
    """Set the mode of the host path behind ``path`` (checked, then used by name)."""
    guest = normpath(path)
    os.chmod(self.sandbox.files.host_path(guest, write=True, follow=False), mode & 0o7777)
    return self.stat(guest)


def stat_by_host_path(self: HostFileSystem, path: str) -> FileInfo:
    """Describe the host path behind ``path`` (checked, then used by name)."""
    guest = normpath(path)
    return self._file_info(guest, os.stat(self.sandbox.files.host_path(guest)))
