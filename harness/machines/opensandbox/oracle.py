"""The OpenSandbox contract's oracle: the mock's own model predicting each HTTP answer.

:class:`Oracle` runs the machine's requests through the same model functions the mock's routes call
(:mod:`mockserver.opensandbox.model`), on a state of its own and its own clock, and turns each answer or
refusal into an :class:`~harness.machines.opensandbox.compare.Expected` with bodies normalised to model ids.
It holds no rule of its own: a refusal is the model's ``ApiError`` (its wire code, see
:func:`~mockserver.opensandbox.model.errors.wire_code`) or its ``RequestValidationError`` (a 422).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from harness.machines.opensandbox.compare import Expected, normalise_list, normalise_sandbox, parse_time
from harness.machines.opensandbox.requests import Command, Echo, ExitWith, PrintEnv
from mockserver.core import ApiError, IdFactory, VirtualClock
from mockserver.opensandbox.model import egress, endpoints, lifecycle
from mockserver.opensandbox.model.config import ServerConfig
from mockserver.opensandbox.model.errors import wire_code
from mockserver.opensandbox.model.operations import OpenSandboxModel
from mockserver.opensandbox.model.ports import PortCall, admit_port
from mockserver.opensandbox.model.profiles import RuntimeProfile
from mockserver.opensandbox.model.records import SandboxRecord
from mockserver.opensandbox.model.validation import RequestValidationError

__all__ = ["TENANT", "OpenSandboxModel", "Oracle"]

#: The one tenant the machine's requests act as (its target sees them as the key it sends).
TENANT = "default"
#: The host the oracle's endpoint answers name (the machine checks the target's endpoint shape itself).
_HOST = "oracle.invalid"

T = TypeVar("T")


def refusal(exc: ApiError | RequestValidationError) -> Expected:
    """Return the prediction of a model refusal: its status and the code its wire body carries."""
    if isinstance(exc, RequestValidationError):
        return Expected(422, validation=True)
    return Expected(exc.status, wire_code(exc))


def _predict(answer: Callable[[], T]) -> T | Expected:
    """Call a model function; return its answer, or the prediction of its refusal."""
    try:
        return answer()
    except (ApiError, RequestValidationError) as exc:
        return refusal(exc)


class Oracle:
    """Predict the answers of an OpenSandbox server by calling the model functions its routes call.

    ``config`` is the server setup the target is expected to have (default: no execd or egress token,
    ``enforcement`` as given); its tenancy does not matter, as every request acts as one tenant.
    """

    def __init__(
        self, profile: RuntimeProfile, clock: VirtualClock, enforcement: str = "dns", config: ServerConfig | None = None
    ) -> None:
        self.profile = profile
        self.clock = clock
        self.config = config or ServerConfig(enforcement=enforcement)
        self.enforcement = self.config.enforcement
        self.model = OpenSandboxModel(profile, clock, IdFactory(0))

    def lookup(self, model_id: str) -> SandboxRecord | None:
        """Return the live model sandbox, or None once deleted or expired."""
        return self.model.lookup(model_id)

    def create(self, body: Any) -> tuple[Expected, SandboxRecord | None]:
        """Predict ``POST /v1/sandboxes``."""
        made = _predict(lambda: lifecycle.create_sandbox(self.model, TENANT, body, self.config))
        if isinstance(made, Expected):
            return made, None
        record, answer = made
        return Expected(202, body=normalise_sandbox(answer, str)), record

    def get(self, model_id: str) -> Expected:
        """Predict ``GET /v1/sandboxes/{id}``."""
        found = _predict(lambda: lifecycle.get_sandbox(self.model, TENANT, model_id))
        return found if isinstance(found, Expected) else Expected(200, body=normalise_sandbox(found, str))

    def list(self, query: Sequence[tuple[str, str]]) -> Expected:
        """Predict ``GET /v1/sandboxes`` for a query string given as pairs."""
        found = _predict(lambda: lifecycle.list_sandboxes(self.model, TENANT, query))
        return found if isinstance(found, Expected) else Expected(200, body=normalise_list(found, str))

    def delete(self, model_id: str) -> Expected:
        """Predict ``DELETE /v1/sandboxes/{id}``."""
        done = _predict(lambda: lifecycle.delete_sandbox(self.model, TENANT, model_id))
        return done if isinstance(done, Expected) else Expected(204)

    def pause(self, model_id: str) -> Expected:
        """Predict ``POST /v1/sandboxes/{id}/pause``."""
        done = _predict(lambda: lifecycle.pause_sandbox(self.model, TENANT, model_id))
        return done if isinstance(done, Expected) else Expected(202)

    def resume(self, model_id: str) -> Expected:
        """Predict ``POST /v1/sandboxes/{id}/resume``."""
        done = _predict(lambda: lifecycle.resume_sandbox(self.model, TENANT, model_id))
        return done if isinstance(done, Expected) else Expected(202)

    def renew(self, model_id: str, body: Any) -> Expected:
        """Predict ``POST /v1/sandboxes/{id}/renew-expiration``."""
        found = _predict(lambda: lifecycle.renew_expiration(self.model, TENANT, model_id, body))
        if isinstance(found, Expected):
            return found
        return Expected(200, body={k: parse_time(v) for k, v in found.items()})

    def patch_metadata(self, model_id: str, patch: Any) -> Expected:
        """Predict ``PATCH /v1/sandboxes/{id}/metadata`` (a JSON merge patch)."""
        found = _predict(lambda: lifecycle.patch_metadata(self.model, TENANT, model_id, patch))
        return found if isinstance(found, Expected) else Expected(200, body=normalise_sandbox(found, str))

    def endpoint(self, model_id: str, port: int, proxy: bool, expires: int | None) -> Expected:
        """Predict ``GET /v1/sandboxes/{id}/endpoints/{port}`` (its body is checked by the machine)."""
        query = [("use_server_proxy", "true" if proxy else "false")]
        if expires is not None:
            query.append(("expires", str(expires)))
        path = f"/v1/sandboxes/{model_id}/endpoints/{port}"
        found = _predict(
            lambda: endpoints.resolve_endpoint(
                self.model, self.config, TENANT, model_id, str(port), query, host=_HOST, path=path
            )
        )
        return found if isinstance(found, Expected) else Expected(200)

    def backend(self, model_id: str, port: int, proxy: bool) -> Expected | None:
        """Predict the answer of a sandbox port before it reaches execd or the sidecar (None: it gets through)."""
        admitted = _predict(lambda: admit_port(self.model, self.config, PortCall(model_id, port, proxy)))
        return admitted if isinstance(admitted, Expected) else None

    def egress(self, model_id: str, method: str, body: Any) -> Expected:
        """Predict the sidecar's ``/policy`` answer for a reachable sandbox (``body`` as the machine sends it)."""
        record = self.model.find(model_id)
        raw = b"" if method == "GET" else json.dumps(body).encode()  # what the machine sends
        found = _predict(lambda: egress.sidecar_policy(record, self.config, method, raw))
        return found if isinstance(found, Expected) else Expected(200, body=found)

    def allows(self, model_id: str, host: str) -> bool:
        """Tell whether the sandbox's current policy lets it reach ``host`` (the model's egress decision)."""
        return egress.egress_allowed(egress.effective_policy(self.model.find(model_id)), host)

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
