"""The OpenSandbox contract's oracle: the mock's HTTP-free state model predicting each HTTP answer.

:class:`Oracle` runs the machine's requests on :data:`OpenSandboxModel` (the mock's ``OpenSandboxState``) on
its own clock and returns an :class:`~harness.machines.opensandbox.compare.Expected` per request, with bodies
normalised to model ids; egress decisions come from the reference engine (``contracts.opensandbox``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

from contracts.opensandbox import PolicyError, decide_egress
from harness.machines.opensandbox.compare import Expected, normalise_list, normalise_sandbox, parse_time
from harness.machines.opensandbox.requests import Command, Echo, ExitWith, PrintEnv
from mockserver.core import ApiError, IdFactory, VirtualClock
from mockserver.opensandbox.egress import apply_delete, apply_patch, status_body
from mockserver.opensandbox.models import OpenSandboxState, SandboxRecord
from mockserver.opensandbox.profiles import EGRESS_PORT, EXECD_PORT, RuntimeProfile
from mockserver.opensandbox.spec import MAX_PAGE_SIZE, iso, parse_create
from mockserver.opensandbox.validation import Checker, RequestValidationError

__all__ = ["TENANT", "OpenSandboxModel", "Oracle"]

#: The mock's HTTP-free state model, used as the oracle.
OpenSandboxModel = OpenSandboxState

TENANT = "default"


class Oracle:
    """Predict the answers of an OpenSandbox server by running the same requests on the HTTP-free model.

    Each method mirrors the order of checks of the corresponding route (body validation, then the sandbox
    lookup, then the state rules) and returns an :class:`Expected` whose body is normalised with model ids.
    """

    def __init__(self, profile: RuntimeProfile, clock: VirtualClock, enforcement: str = "dns") -> None:
        self.profile = profile
        self.clock = clock
        self.enforcement = enforcement
        self.model = OpenSandboxModel(profile, clock, IdFactory(0))

    def _sandbox(self, model_id: str) -> Any:
        return normalise_sandbox(self.model.find(model_id, TENANT).to_json(), str)

    def lookup(self, model_id: str) -> SandboxRecord | None:
        """Return the live model sandbox, or None once deleted or expired."""
        return self.model.lookup(model_id)

    def create(self, body: Any) -> tuple[Expected, SandboxRecord | None]:
        """Predict ``POST /v1/sandboxes``."""
        try:
            spec = parse_create(body, self.profile.name)
            record = self.model.create(TENANT, spec)
        except RequestValidationError:
            return Expected(422, validation=True), None
        except ApiError as exc:
            return Expected.error(exc), None
        return Expected(202, body=normalise_sandbox(record.create_response(), str)), record

    def get(self, model_id: str) -> Expected:
        """Predict ``GET /v1/sandboxes/{id}``."""
        try:
            return Expected(200, body=self._sandbox(model_id))
        except ApiError as exc:
            return Expected.error(exc)

    def list(self, query: Sequence[tuple[str, str]]) -> Expected:
        """Predict ``GET /v1/sandboxes`` for a query string given as pairs."""
        check = Checker()
        values: dict[str, list[str]] = {}
        for key, value in query:
            values.setdefault(key, []).append(value)
        page = _query_int(check, values, "page", 1, None)
        size = _query_int(check, values, "pageSize", 20, MAX_PAGE_SIZE)
        if check.errors:
            return Expected(422, validation=True)
        metadata: dict[str, str] = {}
        raw = (values.get("metadata") or [""])[0]
        if raw:
            try:
                metadata = dict(parse_qsl(raw, keep_blank_values=True, strict_parsing=True))
            except ValueError:
                return Expected(400, "INVALID_METADATA_FORMAT")
        body = self.model.list(TENANT, values.get("state", []), metadata, page, size)
        return Expected(200, body=normalise_list(body, str))

    def delete(self, model_id: str) -> Expected:
        """Predict ``DELETE /v1/sandboxes/{id}``."""
        try:
            self.model.delete(TENANT, model_id)
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(204)

    def pause(self, model_id: str) -> Expected:
        """Predict ``POST /v1/sandboxes/{id}/pause``."""
        try:
            self.model.pause(TENANT, model_id)
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(202)

    def resume(self, model_id: str) -> Expected:
        """Predict ``POST /v1/sandboxes/{id}/resume``."""
        try:
            self.model.resume(TENANT, model_id)
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(202)

    def renew(self, model_id: str, body: Any) -> Expected:
        """Predict ``POST /v1/sandboxes/{id}/renew-expiration``."""
        check = Checker()
        data = check.obj(body, ["body"])
        if data is None or "expiresAt" not in data:
            return Expected(422, validation=True)
        when = check.datetime_value(data["expiresAt"], ["body", "expiresAt"])
        if when is None:
            return Expected(422, validation=True)
        try:
            new = self.model.renew(TENANT, model_id, when)
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(200, body={"expiresAt": parse_time(iso(new))})

    def patch_metadata(self, model_id: str, patch: Any) -> Expected:
        """Predict ``PATCH /v1/sandboxes/{id}/metadata`` (a JSON merge patch)."""
        if not isinstance(patch, dict) or any(v is not None and not isinstance(v, str) for v in patch.values()):
            return Expected(422, validation=True)
        try:
            record = self.model.patch_metadata(TENANT, model_id, patch)
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(200, body=normalise_sandbox(record.to_json(), str))

    def endpoint(self, model_id: str, port: int, proxy: bool, expires: int | None) -> Expected:
        """Predict ``GET /v1/sandboxes/{id}/endpoints/{port}`` (body checked by the machine)."""
        if proxy and expires is not None:
            return Expected(400, "SANDBOX::INVALID_PARAMETER")
        if expires is not None and self.profile.name == "docker":
            return Expected(400, "SANDBOX::API_NOT_SUPPORTED")
        if not 1 <= port <= 65535:
            return Expected(400, "DOCKER::INVALID_PORT")
        try:
            record = self.model.find(model_id, TENANT)
        except ApiError as exc:
            return Expected.error(exc)
        if record.state == "Pending":
            return Expected(404, "KUBERNETES::POD_IP_NOT_AVAILABLE")
        return Expected(200)

    def backend(self, model_id: str, port: int, proxy: bool) -> Expected | None:
        """Predict the answer of a sandbox port before it reaches execd or the sidecar (None: it gets through)."""
        record = self.model.lookup(model_id)
        if record is None:
            return Expected(404, self.profile.not_found_code) if proxy else Expected(502)
        if proxy and record.state == "Pending":
            return Expected(404, "KUBERNETES::POD_IP_NOT_AVAILABLE")
        serves = port == EXECD_PORT or (port == EGRESS_PORT and record.has_sidecar)
        if record.state != "Running" or not serves:
            return Expected(502, "BACKEND_CONNECTION_FAILED") if proxy else Expected(502)
        return None

    def egress(self, model_id: str, method: str, body: Any) -> Expected:
        """Predict the sidecar's ``/policy`` answer for a reachable sandbox."""
        record = self.model.find(model_id)
        if method == "GET":
            return Expected(200, body=status_body(record, self.enforcement, with_policy=True))
        try:
            if method == "PATCH":
                apply_patch(record, body)
            else:
                apply_delete(record, body)
        except PolicyError:
            return Expected(400)
        return Expected(200, body=status_body(record, self.enforcement, with_policy=False))

    def allows(self, model_id: str, host: str) -> bool:
        """Tell whether the sandbox's current policy lets it reach ``host`` (the reference engine decides)."""
        record = self.model.find(model_id)
        policy = record.policy if record.has_sidecar else None
        try:
            return decide_egress(policy, host).allowed
        except PolicyError:
            return False

    def run(self, model_id: str, command: Command) -> tuple[int | None, str | None]:
        """Predict (exit code, stdout) of a command; None where the outcome depends on the real network."""
        record = self.model.find(model_id)
        if isinstance(command, Echo):
            return 0, command.word + "\n"
        if isinstance(command, ExitWith):
            return command.code, ""
        if isinstance(command, PrintEnv):
            return 0, record.spec.env.get(command.name, "") + "\n"
        if not self.allows(model_id, command.host):
            return (2, "") if command.tool == "getent" else (6, "000")
        return 0, None


def _query_int(check: Checker, values: Mapping[str, list[str]], name: str, default: int, le: int | None) -> int:
    given = values.get(name)
    if not given:
        return default
    raw = given[0]
    try:
        value = int(raw)
    except ValueError:
        check.add("int_parsing", ["query", name], raw)
        return default
    if value < 1 or (le is not None and value > le):
        check.add("out_of_range", ["query", name], raw)
    return value
