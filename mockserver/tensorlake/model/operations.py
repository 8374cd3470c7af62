"""The TensorLake mock's state model: the operations on sandboxes, names, snapshots and mounts.

No HTTP here: :mod:`.lifecycle` turns a request into one call of these methods and their result into the
answer's body. Every method takes the model lock and validates completely before it changes anything, so a
rejected request leaves the state exactly as it was. The records, lookups and clock transitions are the
:class:`~.store.SandboxStore`'s.

* ``running`` -> ``suspending`` -> ``suspended`` (named sandboxes only; ephemeral ones get 400).
* ``suspended`` -> ``pending`` (``pending_reason=resuming``) -> ``running``.
* ``running`` -> ``snapshotting`` -> ``running`` while a checkpoint is taken.
* DELETE moves the sandbox to the archive: GET answers 404 afterwards, ``/archived-sandboxes/{id}`` still
  shows it, and its name is free again.

Known deviations from the real service: state is in memory and per API key (the key stands for the
project); snapshot ids have the sandbox id shape; a failed create keeps no name; resume shows
``pending`` with ``pending_reason=resuming`` while it settles.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mockserver.core.errors import ApiError
from mockserver.sandbox.filesystem import FileSystem

from .records import Sandbox, Snapshot, inherited_settings
from .store import NO_CAPACITY, NO_CAPACITY_STATUS, CreateOutcome, SandboxStore
from .validation import bad, conflict, not_found, parse_detach, parse_mount, parse_patch, wire

if TYPE_CHECKING:
    from .bodies import CreateBody, UpdateBody

__all__ = ["TensorLakeModel"]


class TensorLakeModel(SandboxStore):
    """The state model: create, update, delete, suspend, resume, snapshot, mount and copy sandboxes; thread-safe."""

    # -- create ----------------------------------------------------------------------------------

    def create(self, owner: str, namespace: str, req: CreateBody) -> tuple[Sandbox, CreateOutcome | None]:
        """Create a sandbox (fresh or from a snapshot); 409 on a taken name, 404 on an unknown snapshot.

        Each setting is what the create gives, else what the snapshot kept, else its declared default; a partial
        setting (``resources``) is applied over what the snapshot kept. When the server has no room (see
        :meth:`admitted`) the sandbox is refused: recorded failed with ``no_capacity`` (archived, never live)
        and returned with a failed outcome the answer reports.
        """
        partial = wire().Partial  # loaded with the body's declarations
        given = req.given()
        name: str | None = given.get("name")
        with self.lock:
            if name is not None:
                taken = self.names.get((owner, namespace, name))
                if taken is not None:
                    self.settle(self.sandboxes[taken])
                    if (owner, namespace, name) in self.names:
                        raise conflict("name_conflict", f"sandbox name {name!r} is already in use")
            snap = self._snapshot_for_restore(owner, namespace, given.get("snapshot_id"))
            settings = inherited_settings(snap.config) if snap else {}
            for key, value in given.items():
                settings[key] = value.over(settings.get(key)) if isinstance(value, partial) else value
            now = self.clock.now()
            ident = self._new_id()
            admitted = self.admitted()
            fs: FileSystem | Callable[[], FileSystem]
            if not admitted:  # a refused sandbox never runs: its files are nobody's
                fs = functools.partial(FileSystem, now=self.clock.now, hostname=ident)
            else:
                fs = self.filesystems.restore(ident, snap.fs) if snap else self.filesystems.new(ident)
            sb = Sandbox(
                id=ident,
                owner=owner,
                namespace=namespace,
                created_at=now,
                filesystem=fs,
                pending_reason="scheduling",
                ready_at=now + self.timings.startup,
                **settings,
            )
            if not admitted:
                self.refuse(sb)
                return sb, CreateOutcome("failed", NO_CAPACITY_STATUS, NO_CAPACITY, sb.error_details)
            outcome = self.outcomes.popleft() if self.outcomes else None
            if outcome is not None and outcome.kind == "failed":
                sb.status, sb.pending_reason = "failed", None
                sb.termination_reason, sb.error_details = outcome.reason, outcome.error_details
                self.add(sb)
                return sb, outcome
            if outcome is not None:
                sb.ready_at = None
            self.add(sb)
            if sb.name is not None:
                self.names[(owner, namespace, sb.name)] = ident
            self.settle(sb)
            return sb, outcome

    def _snapshot_for_restore(self, owner: str, namespace: str, snapshot_id: str | None) -> Snapshot | None:
        if snapshot_id is None:
            return None
        snap = self.snapshots.get(snapshot_id)
        if snap is None or snap.owner != owner or snap.namespace != namespace:
            raise not_found("snapshot", snapshot_id)
        if snap.status_at(self.clock.now()) != "completed":
            raise conflict("snapshot_not_ready", f"snapshot {snapshot_id!r} is still in progress")
        return snap

    def release(self, sb: Sandbox) -> None:
        """Let a stuck pending sandbox (a timed-out create) start now."""
        with self.lock:
            if sb.status == "pending" and sb.ready_at is None:
                sb.ready_at = self.clock.now()
                self.changed(sb)
                self.settle(sb)

    # -- update and delete -----------------------------------------------------------------------

    def patch(self, owner: str, namespace: str, ident: str, body: Any) -> tuple[Sandbox, list[str]]:
        """Apply a PATCH body atomically; return the sandbox and the body keys the mock did not know."""
        with self.lock:
            sb = self.find(owner, namespace, ident)
            req = parse_patch(body, self.resolve)
            self._check_patch(sb, req)
            self._apply_patch(sb, req)
            self.changed(sb)
            self.on_change(sb)
            return sb, req.unknown()

    def _check_patch(self, sb: Sandbox, req: UpdateBody) -> None:
        declared = wire()  # loaded with the body's declarations
        given = req.given()
        name, resize = given.get("name"), given.get("resources")
        if sb.status == "failed":
            raise conflict("invalid_state", f"sandbox {sb.id!r} has failed and cannot be updated")
        if name is not None and name != sb.name:
            taken = self.names.get((sb.owner, sb.namespace, name))
            if taken is not None and taken != sb.id:
                raise conflict("name_conflict", f"sandbox name {name!r} is already in use")
        if given.get("auto_resume") is False and (name or sb.name) is None:
            raise conflict("invalid_auto_resume", "auto_resume=false requires a named sandbox")
        if isinstance(resize, declared.ResizeResources):
            if sb.status != "running":
                raise conflict("invalid_state", f"a resize needs a running sandbox; it is {sb.status}")
            if resize.requested().get("disk_mb", sb.resources.disk_mb) < sb.resources.disk_mb:
                raise conflict("invalid_resize", "disk_mb cannot shrink below the current disk size")

    def _apply_patch(self, sb: Sandbox, req: UpdateBody) -> None:
        """Set what the body gives; a new name is indexed, a resize starts its transition."""
        declared = wire()  # loaded with the body's declarations
        given = req.given()
        resize = given.pop("resources", None)
        name = given.pop("name", None)
        if name is not None and name != sb.name:
            self._free_name(sb)
            sb.name = name
            self.names[(sb.owner, sb.namespace, name)] = sb.id
        for key, value in given.items():
            setattr(sb, key, value)
        if isinstance(resize, declared.ResizeResources):
            requested = declared.Resources.model_validate(
                {**sb.resources.to_json(), **resize.requested()}, strict=False
            )
            generation = 1 if sb.resize is None else sb.resize.generation + 1
            done_at = self.clock.now() + self.timings.resize
            sb.resize = declared.ResourceResize(
                generation=generation, requested=requested, status="pending", done_at=done_at
            )
            self.settle(sb)

    def delete(self, owner: str, namespace: str, ident: str) -> Sandbox:
        """Terminate a sandbox and archive it; its name becomes free."""
        with self.lock:
            sb = self.find(owner, namespace, ident)
            reason = "cancelled" if sb.status == "pending" else None
            self._terminate(sb, self.clock.now(), reason)
            return sb

    # -- suspend, resume, snapshot ---------------------------------------------------------------

    def suspend(self, owner: str, namespace: str, ident: str) -> Sandbox:
        """Start suspending a named running sandbox (no-op when suspending or suspended)."""
        with self.lock:
            sb = self.find(owner, namespace, ident)
            if sb.name is None:
                raise bad("ephemeral_sandbox", "ephemeral (unnamed) sandboxes cannot be suspended")
            if sb.status in ("suspended", "suspending"):
                return sb
            if sb.status != "running":
                raise conflict("invalid_state", f"cannot suspend a sandbox that is {sb.status}")
            sb.status, sb.running_since = "suspending", None
            sb.transition_at = self.clock.now() + self.timings.suspend
            self.changed(sb)
            self.settle(sb)
            return sb

    def resume(self, owner: str, namespace: str, ident: str) -> Sandbox:
        """Start resuming a suspended sandbox (no-op when running or already resuming)."""
        with self.lock:
            sb = self.find(owner, namespace, ident)
            if sb.status == "running" or (sb.status == "pending" and sb.resuming):
                return sb
            if sb.status != "suspended":
                raise conflict("invalid_state", f"cannot resume a sandbox that is {sb.status}")
            self.wake(sb)
            return sb

    def wake(self, sb: Sandbox) -> None:
        """Move a suspended sandbox into its resume transition."""
        with self.lock:
            sb.status, sb.resuming, sb.pending_reason = "pending", True, "resuming"
            sb.transition_at = self.clock.now() + self.timings.resume
            self.changed(sb)
            self.settle(sb)

    def snapshot(self, owner: str, namespace: str, ident: str, snapshot_type: str | None) -> Snapshot:
        """Checkpoint a running sandbox: its filesystem now and the settings a restore inherits.

        The files are read without the model lock (a runtime's real files take real I/O, and the other
        requests must not wait on it); the state is checked again before the snapshot is recorded.
        """
        with self.lock:
            sb = self.find(owner, namespace, ident)
            if sb.status != "running":
                raise conflict("invalid_state", f"cannot snapshot a sandbox that is {sb.status}")
            files = sb.fs
        fs = files.dump()
        size = sum(info.size for info in files.walk("/") if not info.is_dir)
        with self.lock:
            if self.find(owner, namespace, ident) is not sb or sb.status != "running" or sb.fs is not files:
                raise conflict("invalid_state", f"cannot snapshot a sandbox that is {sb.status}")
            now = self.clock.now()
            snap = Snapshot(
                id=self._new_id(),
                owner=owner,
                namespace=namespace,
                sandbox_id=sb.id,
                created_at=now,
                ready_at=now + self.timings.snapshot,
                snapshot_type=snapshot_type or "memory",
                config=sb.inherited(),
                fs=fs,
                size_bytes=size,
            )
            self.snapshots[snap.id] = snap
            self.changes.mark("snapshot", snap.id)
            sb.status, sb.transition_at = "snapshotting", snap.ready_at
            self.changed(sb)
            self.settle(sb)
            return snap

    def get_snapshot(self, owner: str, namespace: str, snapshot_id: str) -> Snapshot:
        """Return a snapshot of the tenant; 404 if there is none."""
        with self.lock:
            snap = self.snapshots.get(snapshot_id)
            if snap is None or snap.owner != owner or snap.namespace != namespace:
                raise not_found("snapshot", snapshot_id)
            return snap

    def list_snapshots(self, owner: str, namespace: str, sandbox_id: str | None = None) -> list[Snapshot]:
        """Return the tenant's snapshots (of one sandbox when ``sandbox_id`` is given)."""
        with self.lock:
            return [
                s
                for s in self.snapshots.values()
                if s.owner == owner and s.namespace == namespace and (sandbox_id is None or s.sandbox_id == sandbox_id)
            ]

    def delete_snapshot(self, owner: str, namespace: str, snapshot_id: str) -> None:
        """Delete a snapshot; 404 if there is none."""
        with self.lock:
            self.snapshots.pop(self.get_snapshot(owner, namespace, snapshot_id).id)
            self.changes.mark("snapshot", snapshot_id)

    # -- file systems, copies, archive -----------------------------------------------------------

    def attach(self, owner: str, namespace: str, ident: str, body: Any) -> Sandbox:
        """Attach a file-system mount; 409 when the mount path is taken."""
        with self.lock:
            sb = self.find(owner, namespace, ident)
            mount = parse_mount(body)
            if any(m.mount_path == mount.mount_path for m in sb.file_systems):
                raise conflict("mount_path_in_use", f"{mount.mount_path} already has a file system")
            sb.file_systems.append(mount)
            self.changed(sb)
            return sb

    def detach(self, owner: str, namespace: str, ident: str, body: Any) -> Sandbox:
        """Detach the file system at ``mount_path``; 404 when nothing is mounted there."""
        with self.lock:
            sb = self.find(owner, namespace, ident)
            path = parse_detach(body)
            kept = [m for m in sb.file_systems if m.mount_path != path]
            if len(kept) == len(sb.file_systems):
                raise ApiError(404, "mount_not_found", f"no file system is mounted at {path}")
            sb.file_systems = kept
            self.changed(sb)
            return sb

    def copy(self, owner: str, namespace: str, ident: str, times: int) -> tuple[Sandbox, list[Sandbox]]:
        """Clone a running sandbox ``times`` times (filesystem and settings; copies are unnamed).

        A copy the server has no room for is refused as a create is: ``failed`` with ``no_capacity``, archived.
        """
        with self.lock:
            source = self.find(owner, namespace, ident)
            if source.status != "running":
                raise conflict("invalid_state", f"cannot copy a sandbox that is {source.status}")
            copies = []
            for _ in range(times):
                data = {**source.dump(), "id": self._new_id(), "name": None, "created_at": self.clock.now()}
                if not self.admitted():
                    refused = Sandbox.load(data, functools.partial(FileSystem, now=self.clock.now, hostname=data["id"]))
                    self.refuse(refused)
                    copies.append(refused)
                    continue
                clone = Sandbox.load(data, self.filesystems.restore(data["id"], data["fs"]))
                clone.running_since = self.clock.now()
                self.add(clone)
                copies.append(clone)
            return source, copies
