"""OpenSandbox's sequential specification for the concurrency contract: the mock's own model, one sandbox at a time.

This is the only module of :mod:`harness.concurrency` that imports ``mockserver.opensandbox``: when the model
moves, re-point the imports here. Each sandbox's state is the model's own dump of an ``OpenSandboxModel``
holding just that sandbox (its filesystem left out), as canonical JSON. :meth:`OpenSandboxSpec.step` loads it,
calls what the routes call (``parse_create`` + ``create``, ``find``, ``list``, ``delete``, and the sidecar's
``apply_patch`` / ``apply_delete`` / ``status_body``) and dumps it again; no rule is restated here.

Both sides' answers go through :func:`output_of`: the status code, the error code (with the admin API only),
a sandbox's lifecycle ``state`` (the Docker runtime's transitional states read as :data:`TRANSITIONAL` says), and the sidecar's policy answer without ``enforcementMode`` (a deployment
setting, not state). A sidecar that cannot be reached (the sandbox is gone: 404 or 5xx) answers
:data:`UNREACHABLE`.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from typing import Any

from contracts.opensandbox import PolicyError
from harness.concurrency.modeling import ModelSpec, canonical
from harness.concurrency.workload import ABSENT
from mockserver.core import IdFactory, VirtualClock
from mockserver.opensandbox.model.egress import apply_delete, apply_patch, status_body
from mockserver.opensandbox.model.operations import OpenSandboxModel
from mockserver.opensandbox.model.profiles import make_profile
from mockserver.opensandbox.model.spec import MAX_PAGE_SIZE, parse_create
from mockserver.opensandbox.model.validation import RequestValidationError
from mockserver.sandbox.filesystem import FileSystem

__all__ = [
    "EGRESS_KINDS",
    "MAX_PAGE_SIZE",
    "TRANSITIONAL",
    "UNREACHABLE",
    "OpenSandboxSpec",
    "list_view",
    "output_of",
    "sandbox_view",
]

TENANT = "default"
ENFORCEMENT = "dns"
#: The output of a sidecar request to a sandbox that is gone.
UNREACHABLE = ("unreachable",)
EGRESS_KINDS = frozenset({"egress-get", "egress-patch", "egress-delete"})
_EMPTY_FS = FileSystem(now=lambda: 0.0, user="root").dump()


#: The states the Docker runtime shows only while a create or a delete is under way, read as the state of a
#: sandbox that exists and runs. opensandbox-server 1.1.1 creates a container, then starts it, and deletes by a
#: kill, then a removal (``services/docker/docker_service.py``); a concurrent list or GET sees the step between:
#: ``status_value in {"created", "starting"}`` → ``Pending`` / ``CONTAINER_STARTING``, and the killed container
#: (exit 137) → ``Failed`` / ``CONTAINER_EXITED_ERROR``. Read so, a create takes effect when its container
#: appears and a delete when its container is removed, and the real server's histories are linearizable
#: (``docs/differential-findings.md``, "The lifecycle's transitional states"). The workload injects no OOM or
#: failure, so nothing else shows these states here.
TRANSITIONAL = {("Pending", "CONTAINER_STARTING"): "Running", ("Failed", "CONTAINER_EXITED_ERROR"): "Running"}


def sandbox_view(body: Any) -> str:
    """Return the compared part of a lifecycle ``Sandbox`` body: its state (a transitional one read as Running)."""
    status = body.get("status") if isinstance(body, Mapping) else None
    state = status.get("state") if isinstance(status, Mapping) else None
    reason = status.get("reason") if isinstance(status, Mapping) else None
    return canonical({"state": TRANSITIONAL.get((str(state), str(reason)), state)})


def policy_view(body: Any) -> str:
    """Return the compared part of a sidecar ``/policy`` answer (all but ``enforcementMode``)."""
    if not isinstance(body, Mapping):
        return canonical({"unreadable": str(body)[:200]})
    return canonical({k: v for k, v in body.items() if k != "enforcementMode"})


def output_of(kind: str, status: int, body: Any, *, strict: bool) -> Hashable:
    """Return the comparable output of one answer (the model's or the target's) to a ``kind`` request."""
    if kind in EGRESS_KINDS:
        if status == 404 or status >= 500:
            return UNREACHABLE
        if status >= 300:
            return ("error", status)
        return ("ok", status, policy_view(body))
    if status >= 300:
        code = body.get("code") if strict and isinstance(body, Mapping) else None
        return ("error", status, code)
    if kind == "create":
        return ("created", status, sandbox_view(body))
    if kind == "delete":
        return ("ok", status)
    return ("ok", status, sandbox_view(body))


def list_view(item: Any) -> Hashable:
    """Return what one list item (or None: not listed) says about its sandbox."""
    return ABSENT if item is None else ("listed", sandbox_view(item))


class OpenSandboxSpec(ModelSpec[OpenSandboxModel]):
    """The OpenSandbox model (Docker runtime profile) as a sequential specification of one sandbox."""

    input_of = "an OpenSandbox"
    sandbox_groups = ("sandboxes",)
    empty_fs = _EMPTY_FS
    invalid_request = (RequestValidationError,)

    def __init__(self, *, strict: bool, label: tuple[str, str], start: float = 0.0) -> None:
        self.label = label
        self.profile = make_profile("docker")
        super().__init__(strict=strict, start=start)

    def _model(self) -> OpenSandboxModel:
        return OpenSandboxModel(self.profile, VirtualClock("manual", start=self.start), IdFactory(0))

    def _ident(self, model: OpenSandboxModel) -> str:
        return next(iter(model.sandboxes), "not-created")

    def _output(self, kind: str, status: int, body: Any) -> Hashable:
        return output_of(kind, status, body, strict=self.strict)

    def _answer(self, model: OpenSandboxModel, kind: str, ident: str, request: tuple[Any, ...]) -> Hashable:
        strict = self.strict
        if kind == "create":
            record = model.create(TENANT, parse_create(json.loads(str(request[1])), self.profile.name))
            return output_of(kind, 202, record.create_response(), strict=strict)
        if kind == "get":
            return output_of(kind, 200, model.find(ident, TENANT).to_json(), strict=strict)
        if kind == "delete":
            model.delete(TENANT, ident)
            return output_of(kind, 204, None, strict=strict)
        if kind == "list":
            page = model.list(TENANT, [], dict([self.label]), 1, MAX_PAGE_SIZE)
            return list_view(page["items"][0] if page["items"] else None)
        if kind in EGRESS_KINDS:
            found = model.lookup(ident)
            if found is None:
                return UNREACHABLE
            if kind == "egress-get":
                return output_of(kind, 200, status_body(found, ENFORCEMENT, with_policy=True), strict=strict)
            try:
                (apply_patch if kind == "egress-patch" else apply_delete)(found, json.loads(str(request[1])))
            except PolicyError:
                return output_of(kind, 400, None, strict=strict)
            return output_of(kind, 200, status_body(found, ENFORCEMENT, with_policy=False), strict=strict)
        raise ValueError(f"unknown OpenSandbox concurrency operation {kind!r}")

    def describe(self, state: str) -> str:
        """Return the sandbox's state and policy, or that there is none (not created yet, or deleted)."""
        model = self._load(state)
        for record in model.sandboxes.values():
            policy = status_body(record, ENFORCEMENT, with_policy=True)
            return f"{sandbox_view(record.to_json())} policy {policy_view(policy)}"
        return "no sandbox (not created yet, or deleted)"
