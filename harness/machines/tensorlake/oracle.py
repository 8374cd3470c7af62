"""The TensorLake API machine's oracle: the mock's HTTP-free model, asked the way the mock's routes ask it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.machines.tensorlake.compare import Expected, Json, normalise_info
from harness.machines.tensorlake.probes import Resolve
from mockserver.core import ApiError, IdFactory, VirtualClock
from mockserver.tensorlake.models import TensorLakeModel
from mockserver.tensorlake.records import ROUTING_HINT, Sandbox, owner_id
from mockserver.tensorlake.validate import MANAGEMENT_PORT, parse_create

__all__ = ["NAMESPACE", "SESSION_COOKIES", "Oracle"]

NAMESPACE = "default"
SESSION_COOKIES = ("tl.session_token", "tl-session")


class Oracle:
    """Predict a TensorLake server's answers by running the same requests on the mock's HTTP-free model.

    Each method mirrors the order of checks of the corresponding route or proxy step and returns an
    :class:`Expected` whose body is a normalised SandboxInfo with model ids.
    """

    def __init__(self, clock: VirtualClock, resolve: Resolve, owner: str) -> None:
        self.clock = clock
        self.resolve = resolve
        self.owner = owner
        self.model = TensorLakeModel(clock, IdFactory(0), resolve)

    def lookup(self, model_id: str) -> Sandbox | None:
        """Return the live model sandbox settled to now, or None once it is gone."""
        with self.model.lock:
            sb = self.model.sandboxes.get(model_id)
            if sb is not None:
                self.model.settle(sb)
            return self.model.sandboxes.get(model_id)

    def info(self, sb: Sandbox) -> Json:
        """Return the normalised SandboxInfo of a model sandbox."""
        data: Json = normalise_info(sb.info(sandbox_url=None, ingress_endpoint=None), str)
        return data

    def create(self, body: Json) -> tuple[Expected, Sandbox | None]:
        """Predict ``POST /sandboxes`` (the create response, without URLs)."""
        try:
            req = parse_create(body, self.resolve)
            sb, _ = self.model.create(self.owner, NAMESPACE, req)
        except ApiError as exc:
            return Expected.error(exc), None
        state = sb.status if req.wait else "pending"
        out: Json = {"sandbox_id": sb.id, "status": state}
        if sb.name is not None:
            out["name"] = sb.name
        if state == "running":
            out["routing_hint"] = ROUTING_HINT
        if state == "pending":
            out["pending_reason"] = sb.pending_reason or "scheduling"
        return Expected(200 if req.wait else 202, body=out), sb

    def get(self, ident: str) -> Expected:
        """Predict ``GET /sandboxes/{id-or-name}``."""
        try:
            return Expected(200, body=self.info(self.model.find(self.owner, NAMESPACE, ident)))
        except ApiError as exc:
            return Expected.error(exc)

    def list(self) -> Expected:
        """Predict ``GET /sandboxes``."""
        return Expected(200, body=[self.info(sb) for sb in self.model.list_sandboxes(self.owner, NAMESPACE)])

    def patch(self, model_id: str, body: Any) -> Expected:
        """Predict ``PATCH /sandboxes/{id}``."""
        try:
            sb, _ = self.model.patch(self.owner, NAMESPACE, model_id, body)
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(200, body=self.info(sb))

    def delete(self, model_id: str) -> Expected:
        """Predict ``DELETE /sandboxes/{id}``."""
        try:
            return Expected(200, body=self.info(self.model.delete(self.owner, NAMESPACE, model_id)))
        except ApiError as exc:
            return Expected.error(exc)

    def suspend(self, model_id: str) -> Expected:
        """Predict ``POST /sandboxes/{id}/suspend``: 200 once suspended, 202 while suspending."""
        try:
            sb = self.model.suspend(self.owner, NAMESPACE, model_id)
        except ApiError as exc:
            return Expected.error(exc)
        self.model.settle(sb)
        return Expected(200 if sb.status == "suspended" else 202, body=self.info(sb))

    def resume(self, model_id: str) -> Expected:
        """Predict ``POST /sandboxes/{id}/resume``: 200 once running, 202 while resuming."""
        try:
            sb = self.model.resume(self.owner, NAMESPACE, model_id)
        except ApiError as exc:
            return Expected.error(exc)
        self.model.settle(sb)
        return Expected(200 if sb.status == "running" else 202, body=self.info(sb))

    def admit(
        self, label: str, port: int, key: str | None, cookies: Mapping[str, str], query: Mapping[str, str]
    ) -> Expected | None:
        """Predict the proxy's answer to a request for ``label`` (id or name) and ``port``; None: forwarded.

        Waking a suspended sandbox with ``auto_resume`` changes the model, as it changes the target.
        """
        model = self.model
        owner = None if key is None else owner_id(key)
        sb = model.find_any(label, owner) or model.find_any(label)
        if sb is None:
            return Expected(404, "SANDBOX_NOT_FOUND")
        public = port != MANAGEMENT_PORT and sb.allow_unauthenticated_access
        if port != MANAGEMENT_PORT and port not in sb.exposed_ports:
            return Expected(403, "PORT_NOT_EXPOSED")
        if not public:
            refused = self._refuse(sb, key, cookies, query)
            if refused is not None:
                return refused
        if sb.status == "suspended" and sb.auto_resume:
            model.wake(sb)
        if sb.status == "pending" and sb.resuming:
            model.settle(sb)
        if sb.status in ("running", "snapshotting", "suspending"):
            return None
        if sb.status in ("pending", "suspended"):
            return Expected(503, "SANDBOX_NOT_READY")
        return Expected(502, "SANDBOX_UNREACHABLE")

    def _refuse(
        self, sb: Sandbox, key: str | None, cookies: Mapping[str, str], query: Mapping[str, str]
    ) -> Expected | None:
        if key is not None:
            return Expected(403, "FORBIDDEN") if owner_id(key) != sb.owner else None
        token = next((cookies[name] for name in SESSION_COOKIES if cookies.get(name)), None)
        if token is None:
            return Expected(401, "UNAUTHENTICATED")
        session = self.model.sessions.get(token)
        if session is None:
            return Expected(401, "INVALID_SESSION")
        org, project = query.get("organizationId"), query.get("projectId")
        if not org or not project:
            return Expected(401, "MISSING_PROJECT")
        if (org, project) != (session.organization_id, session.project_id) or session.owner != sb.owner:
            return Expected(403, "FORBIDDEN")
        return None
