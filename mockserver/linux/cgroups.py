"""Per-sandbox cgroups: memory and pids limits, the freezer, OOM evidence, and removal.

Every sandbox has both limits (defaults in :mod:`~mockserver.linux.limits`).

Each resource is taken from the first hierarchy that offers it writable: cgroup v2 (a unified hierarchy
whose cgroup we run in delegates the controller) and else the v1 hierarchy of that controller. A
runtime's cgroups are children of the cgroup the runtime itself runs in, under ``sandproof-<runtime id>``,
so they stay inside whatever limits and accounting apply to the runtime. Nothing above that is written.

Where no hierarchy offers a resource, :class:`CgroupSupport` says so: the sandbox records the requested
limit and reports it as not enforced, and freezing falls back to SIGSTOP/SIGCONT of every process.

Known deviations: memory and pids limits are enforced only where a writable cgroup offers the controller
(v2 delegated, or v1); elsewhere they are recorded and listed by ``Limits.deviations()``; CPU limits
are not enforced anywhere (the disk limit is the size of the sandbox's root tmpfs, see
:mod:`~mockserver.linux.limits`); an OOM kill is attributed to the next process that ends by SIGKILL (or
with status 137) after the cgroup's OOM counter rose.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = ["PREFIX", "CgroupSupport", "Hierarchy", "Resource", "SandboxCgroup", "detect", "remove_tree"]

PREFIX = "sandproof-"
Resource = Literal["memory", "pids", "freezer"]
RESOURCES: tuple[Resource, ...] = ("memory", "pids", "freezer")


@dataclass(frozen=True)
class Hierarchy:
    """One cgroup hierarchy and the cgroup this process runs in there."""

    version: Literal[1, 2]
    mount: Path
    own: Path

    def runtime_dir(self, runtime_id: str) -> Path:
        """Return the parent of a runtime's sandbox cgroups in this hierarchy."""
        return self.own / f"{PREFIX}{runtime_id}"


@dataclass
class CgroupSupport:
    """Which hierarchy serves each resource (None: not available) and why some are missing."""

    memory: Hierarchy | None = None
    pids: Hierarchy | None = None
    freezer: Hierarchy | None = None
    notes: list[str] = field(default_factory=list)

    def get(self, resource: Resource) -> Hierarchy | None:
        """Return the hierarchy serving ``resource``."""
        return {"memory": self.memory, "pids": self.pids, "freezer": self.freezer}[resource]

    def hierarchies(self) -> list[Hierarchy]:
        """Return the distinct hierarchies in use."""
        found: list[Hierarchy] = []
        for resource in RESOURCES:
            hierarchy = self.get(resource)
            if hierarchy is not None and hierarchy not in found:
                found.append(hierarchy)
        return found

    def describe(self) -> str:
        """Return one line naming where each resource comes from."""
        parts = []
        for resource in RESOURCES:
            hierarchy = self.get(resource)
            parts.append(f"{resource}: {'v' + str(hierarchy.version) if hierarchy else 'not enforced'}")
        return ", ".join(parts)


def _mounts() -> list[tuple[str, Path, set[str]]]:
    found = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) < 5 or len(tail) < 3:
                continue
            fstype = tail[0]
            if fstype in ("cgroup", "cgroup2"):
                options = set(tail[2].split(",")) | set(fields[5].split(",") if len(fields) > 5 else [])
                found.append((fstype, Path(fields[4].replace("\\040", " ")), options))
    return found


def _own_paths() -> tuple[str | None, dict[str, str]]:
    unified: str | None = None
    legacy: dict[str, str] = {}
    with open("/proc/self/cgroup") as handle:
        for line in handle:
            parts = line.rstrip("\n").split(":", 2)
            if len(parts) != 3:
                continue
            _, controllers, path = parts
            if controllers == "":
                unified = path
            for controller in controllers.split(","):
                if controller:
                    legacy[controller] = path
    return unified, legacy


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def detect() -> CgroupSupport:
    """Find, for each resource, a writable hierarchy that offers it."""
    support = CgroupSupport()
    try:
        mounts = _mounts()
        unified_path, legacy = _own_paths()
    except OSError as exc:
        support.notes.append(f"cgroups unreadable: {exc}")
        return support
    for fstype, mount, _options in mounts:
        if fstype == "cgroup2" and unified_path is not None:
            own = mount / unified_path.lstrip("/")
            if not os.access(own, os.W_OK):
                support.notes.append(f"cgroup v2 at {own} is not writable")
                continue
            hierarchy = Hierarchy(2, mount, own)
            delegated = set(_read(own / "cgroup.subtree_control").split())
            if own == mount:  # the root may enable any controller it has
                delegated |= set(_read(own / "cgroup.controllers").split())
            if support.freezer is None:
                support.freezer = hierarchy
            for name in ("memory", "pids"):
                if name in delegated and getattr(support, name) is None:
                    setattr(support, name, hierarchy)
    for fstype, mount, options in mounts:
        if fstype != "cgroup":
            continue
        for name in ("memory", "pids", "freezer"):
            if name in options and getattr(support, name) is None and name in legacy:
                own = mount / legacy[name].lstrip("/")
                if os.access(own, os.W_OK):
                    setattr(support, name, Hierarchy(1, mount, own))
    for name in ("memory", "pids"):
        if getattr(support, name) is None:
            support.notes.append(f"no writable cgroup offers the {name} controller: {name} limits are recorded only")
    if support.freezer is None:
        support.notes.append("no cgroup freezer: pause uses SIGSTOP/SIGCONT")
    return support


def _kill_members(directory: Path) -> None:
    for child in sorted((p for p in directory.iterdir() if p.is_dir()), reverse=True):
        _kill_members(child)
    kill = directory / "cgroup.kill"
    if kill.exists():
        with contextlib.suppress(OSError):
            kill.write_text("1")
    for line in _read(directory / "cgroup.procs").split():
        with contextlib.suppress(ProcessLookupError, ValueError, PermissionError):
            os.kill(int(line), signal.SIGKILL)
    freeze = directory / "freezer.state"
    if freeze.exists():
        with contextlib.suppress(OSError):
            freeze.write_text("THAWED")
    v2_freeze = directory / "cgroup.freeze"
    if v2_freeze.exists():
        with contextlib.suppress(OSError):
            v2_freeze.write_text("0")


def remove_tree(directory: Path, timeout: float = 2.0) -> bool:
    """Kill every process in the cgroup ``directory`` and below, then remove it; tell whether it is gone."""
    if not directory.exists():
        return True
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            _kill_members(directory)
        for sub in sorted(directory.glob("**/"), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                sub.rmdir()
        if not directory.exists():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


class SandboxCgroup:
    """The cgroups of one sandbox, one directory per hierarchy in use."""

    def __init__(self, support: CgroupSupport, runtime_id: str, name: str) -> None:
        self.support = support
        self.dirs: dict[Resource, Path] = {}
        made: dict[Path, Path] = {}
        for resource in RESOURCES:
            hierarchy = support.get(resource)
            if hierarchy is None:
                continue
            parent = hierarchy.runtime_dir(runtime_id)
            if parent not in made:
                parent.mkdir(exist_ok=True)
                if hierarchy.version == 2:
                    wanted = [c for c in ("memory", "pids") if support.get(c) == hierarchy]
                    if wanted:
                        (parent / "cgroup.subtree_control").write_text(" ".join("+" + c for c in wanted))
                directory = parent / name
                directory.mkdir(exist_ok=True)
                made[parent] = directory
            self.dirs[resource] = made[parent]
        self._oom_seen = self.oom_kills() or 0

    def procs_files(self) -> list[str]:
        """Return the ``cgroup.procs`` files a new member must write its pid to (one per hierarchy)."""
        return sorted({str(d / "cgroup.procs") for d in self.dirs.values()})

    def enforced(self, resource: Resource) -> bool:
        """Tell whether ``resource`` is enforced by a cgroup."""
        return resource in self.dirs

    def _version(self, resource: Resource) -> int:
        hierarchy = self.support.get(resource)
        return hierarchy.version if hierarchy else 0

    def set_memory(self, limit: int) -> bool:
        """Limit memory (and swap) to ``limit`` bytes; tell whether it is enforced."""
        directory = self.dirs.get("memory")
        if directory is None:
            return False
        if self._version("memory") == 2:
            (directory / "memory.max").write_text(str(limit))
            with contextlib.suppress(OSError):
                (directory / "memory.swap.max").write_text("0")
        else:
            (directory / "memory.limit_in_bytes").write_text(str(limit))
            with contextlib.suppress(OSError):
                (directory / "memory.memsw.limit_in_bytes").write_text(str(limit))
        return True

    def set_pids(self, limit: int) -> bool:
        """Limit the number of tasks to ``limit``; tell whether it is enforced."""
        directory = self.dirs.get("pids")
        if directory is None:
            return False
        (directory / "pids.max").write_text(str(limit))
        return True

    def oom_kills(self) -> int | None:
        """Return how many processes the kernel's OOM killer has killed in this cgroup (None: unknown)."""
        directory = self.dirs.get("memory")
        if directory is None:
            return None
        name = "memory.events" if self._version("memory") == 2 else "memory.oom_control"
        for line in _read(directory / name).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return None

    def new_oom_kill(self) -> bool:
        """Tell whether an OOM kill happened since the last call (the evidence of exit 137 by OOM)."""
        count = self.oom_kills()
        if count is None or count <= self._oom_seen:
            return False
        self._oom_seen = count
        return True

    def memory_usage(self) -> int | None:
        """Return the cgroup's current memory use in bytes."""
        directory = self.dirs.get("memory")
        if directory is None:
            return None
        name = "memory.current" if self._version("memory") == 2 else "memory.usage_in_bytes"
        text = _read(directory / name).strip()
        return int(text) if text.isdigit() else None

    def freeze(self, frozen: bool, timeout: float = 2.0) -> bool:
        """Freeze or thaw every member; tell whether the cgroup freezer did it (False: not available)."""
        directory = self.dirs.get("freezer")
        if directory is None:
            return False
        deadline = time.monotonic() + timeout
        if self._version("freezer") == 2:
            (directory / "cgroup.freeze").write_text("1" if frozen else "0")
            want = f"frozen {1 if frozen else 0}"
            while want not in _read(directory / "cgroup.events") and time.monotonic() < deadline:
                time.sleep(0.001)
            return True
        (directory / "freezer.state").write_text("FROZEN" if frozen else "THAWED")
        want_state = "FROZEN" if frozen else "THAWED"
        while _read(directory / "freezer.state").strip() != want_state and time.monotonic() < deadline:
            time.sleep(0.001)
        return True

    def members(self) -> list[int]:
        """Return the pids in the sandbox's cgroup (any hierarchy), or [] when there is none."""
        for directory in self.dirs.values():
            return [int(p) for p in _read(directory / "cgroup.procs").split() if p.isdigit()]
        return []

    def remove(self) -> bool:
        """Kill what is left inside and remove every directory; tell whether all are gone."""
        return all(remove_tree(d) for d in set(self.dirs.values()))


def remove_stale(support: CgroupSupport, alive: Iterable[str]) -> list[Path]:
    """Remove the runtime cgroups whose runtime id is not in ``alive``; return what was removed."""
    keep = {f"{PREFIX}{rid}" for rid in alive}
    removed: list[Path] = []
    for hierarchy in support.hierarchies():
        try:
            entries = list(hierarchy.own.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir() and entry.name.startswith(PREFIX) and entry.name not in keep and remove_tree(entry):
                removed.append(entry)
    return removed
