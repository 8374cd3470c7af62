"""TensorLake's sequential specification for the concurrency contract: the mock's own model, one sandbox at a time.

This is the only module of :mod:`harness.concurrency` that imports ``mockserver.tensorlake``: when the model
moves, re-point the imports here. Each sandbox's state is the model's own dump of a model holding just that
sandbox (its filesystem left out), as canonical JSON, so equal states compare equal whatever the path.
:meth:`TensorLakeSpec.step` loads that dump into a fresh model, calls the same model function the route
calls (``parse_create`` + ``create``, ``find``, ``patch``, ``delete``, ``list_sandboxes``) and dumps it again;
no rule is restated here.

Both the model's answer and the target's answer go through :func:`output_of`, the one projection the outputs
are compared in: the status code, the error code (with the admin API only: any other server may word its
errors differently), and for a SandboxInfo the fields concurrency can tear: ``status``, ``network_policy``
(in reference form), ``exposed_ports`` and ``allow_unauthenticated_access``. Without the admin API a GET
answering a terminated sandbox counts as the 404 of a deleted one (the wire allows both), a delete's body is
not compared, and terminated sandboxes in a list count as absent.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from contracts.tensorlake import NetworkConfig, PolicyError
from harness.concurrency.modeling import ModelSpec, canonical
from harness.concurrency.workload import ABSENT
from mockserver.core import IdFactory, VirtualClock
from mockserver.sandbox.filesystem import FileSystem
from mockserver.tensorlake.model.operations import TensorLakeModel
from mockserver.tensorlake.model.validation import parse_create

__all__ = ["TensorLakeSpec", "list_view", "output_of"]

OWNER = "tenant-concurrency"
NAMESPACE = "default"
_EMPTY_FS = FileSystem(now=lambda: 0.0).dump()
_VIEW_KEYS = ("status", "network_policy", "exposed_ports", "allow_unauthenticated_access")


def _no_dns(name: str) -> Iterable[str]:
    """Resolve nothing: the workload's policies hold only addresses, CIDRs and wildcards, never resolved."""
    return ()


def _policy(value: Any) -> Any:
    """Return a ``network_policy`` in reference form when it parses, else unchanged."""
    if not isinstance(value, dict):
        return value
    try:
        return NetworkConfig.from_json(value).to_json()
    except PolicyError:
        return value


def info_view(info: Any) -> str:
    """Return the compared fields of a SandboxInfo as canonical JSON."""
    if not isinstance(info, Mapping):
        return canonical({"unreadable": str(info)[:200]})
    ports = info.get("exposed_ports")
    view = {
        "status": info.get("status"),
        "network_policy": _policy(info.get("network_policy")),
        "exposed_ports": sorted(ports) if isinstance(ports, list) else [] if ports is None else ports,
        "allow_unauthenticated_access": bool(info.get("allow_unauthenticated_access") or False),
    }
    return canonical({k: view[k] for k in _VIEW_KEYS})


def output_of(kind: str, status: int, body: Any, *, strict: bool) -> Hashable:
    """Return the comparable output of one answer (the model's or the target's) to a ``kind`` request."""
    if status >= 300:
        code = body.get("code") if strict and isinstance(body, Mapping) else None
        return ("error", status, code)
    if kind == "create":
        return ("created", status, body.get("status") if isinstance(body, Mapping) else None)
    if kind == "delete" and not strict:
        return ("ok", status)
    if not strict and kind == "get" and isinstance(body, Mapping) and body.get("status") == "terminated":
        return ("error", 404, None)
    return ("ok", status, info_view(body))


def list_view(item: Any, *, strict: bool) -> Hashable:
    """Return what one list item (or None: not listed) says about its sandbox."""
    if item is None or (not strict and isinstance(item, Mapping) and item.get("status") == "terminated"):
        return ABSENT
    return ("listed", info_view(item))


class TensorLakeSpec(ModelSpec[TensorLakeModel]):
    """The TensorLake model as a sequential specification of one sandbox (inputs from the driver)."""

    input_of = "a TensorLake"
    sandbox_groups = ("sandboxes", "archive")
    empty_fs = _EMPTY_FS

    def _model(self) -> TensorLakeModel:
        return TensorLakeModel(VirtualClock("manual", start=self.start), IdFactory(0), _no_dns)

    def _ident(self, model: TensorLakeModel) -> str:
        return next(iter(model.sandboxes), None) or next(iter(model.archive), None) or "not-created"

    def _output(self, kind: str, status: int, body: Any) -> Hashable:
        return output_of(kind, status, body, strict=self.strict)

    def _answer(self, model: TensorLakeModel, kind: str, ident: str, request: tuple[Any, ...]) -> Hashable:
        if kind == "create":
            sb, _ = model.create(OWNER, NAMESPACE, parse_create(json.loads(str(request[1])), _no_dns))
            return self._output(kind, 200, {"status": sb.status})
        if kind == "get":
            sb = model.find(OWNER, NAMESPACE, ident)
            return self._output(kind, 200, sb.info(sandbox_url=None, ingress_endpoint=None))
        if kind == "patch":
            sb, _ = model.patch(OWNER, NAMESPACE, ident, json.loads(str(request[1])))
            return self._output(kind, 200, sb.info(sandbox_url=None, ingress_endpoint=None))
        if kind == "delete":
            sb = model.delete(OWNER, NAMESPACE, ident)
            return self._output(kind, 200, sb.info(sandbox_url=None, ingress_endpoint=None))
        if kind == "list":
            items = [sb.info(sandbox_url=None, ingress_endpoint=None) for sb in model.list_sandboxes(OWNER, NAMESPACE)]
            return list_view(items[0] if items else None, strict=self.strict)
        raise ValueError(f"unknown TensorLake concurrency operation {kind!r}")

    def describe(self, state: str) -> str:
        """Return the sandbox's compared fields, or that there is none (not created yet, or deleted)."""
        model = self._load(state)
        for sb in model.sandboxes.values():
            return info_view(sb.info(sandbox_url=None, ingress_endpoint=None))
        return "deleted" if model.archive else "not created"
