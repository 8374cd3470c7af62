"""The providers' OpenAPI documents under contract: where each is packaged, its links, its cleanups.

:data:`SPECS` names the documents; :data:`LINKS` adds OpenAPI links to them in memory (the files on disk stay
as published), which is what the link scenarios chain.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

__all__ = [
    "EGRESS_PORT",
    "EGRESS_SANDBOX_REQUEST",
    "EXECD_PORT",
    "LINKS",
    "SANDBOX_REQUEST",
    "SPECS",
    "ApiSpec",
    "Cleanup",
    "Link",
    "load_document",
    "operation_labels",
]

EXECD_PORT = 44772
EGRESS_PORT = 18080
#: The sandbox the execd contract runs in (and link scenarios create).
SANDBOX_REQUEST: dict[str, Any] = {
    "image": {"uri": "python:3.11-slim"},
    "entrypoint": ["sleep", "infinity"],
    "timeout": 3600,
    "resourceLimits": {"cpu": "500m", "memory": "512Mi"},
    "metadata": {"purpose": "sandproof-schemathesis"},
}
#: The sandbox the egress contract runs in: a sandbox has an egress sidecar only when created with a policy.
EGRESS_SANDBOX_REQUEST: dict[str, Any] = {
    **SANDBOX_REQUEST,
    "networkPolicy": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "pypi.org"}]},
}


@dataclass(frozen=True)
class Link:
    """OpenAPI links from one operation's responses to others, all fed the same parameters."""

    source: str
    statuses: tuple[str, ...]
    targets: tuple[str, ...]
    parameters: Mapping[str, str]


@dataclass(frozen=True)
class Cleanup:
    """A request that creates something, and how to delete it: ``{prefix}`` is the path's first group."""

    method: str
    path: re.Pattern[str]
    key: str
    delete: str


@dataclass(frozen=True)
class ApiSpec:
    """One OpenAPI document under contract and how its operations are reported.

    ``package``/``resource`` locate the packaged document, ``row`` is the fidelity-matrix row, ``port`` the
    sandbox port serving it (None: served by the provider's API itself), ``stateful_paths`` the operations
    of the link scenarios, ``cleanups`` how to delete what requests create, ``scenario_bodies`` the request
    bodies a scenario sends to an operation instead of generated ones.
    """

    name: str
    provider: str
    package: str
    resource: str
    row: str
    port: int | None = None
    stateful_paths: str | None = None
    cleanups: tuple[Cleanup, ...] = ()
    scenario_bodies: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)

    def document(self) -> dict[str, Any]:
        """Return a fresh copy of the document with :data:`LINKS` added."""
        raw = copy.deepcopy(_raw_document(self.package, self.resource))
        _add_links(raw, LINKS.get(self.name, ()))
        return raw


@cache
def _raw_document(package: str, resource: str) -> dict[str, Any]:
    """Read a packaged JSON or YAML document once."""
    text = resources.files(package).joinpath(resource).read_text(encoding="utf-8")
    if resource.endswith(".json"):
        data: Any = json.loads(text)
    else:
        from schemathesis.core.deserialization import deserialize_yaml

        data = deserialize_yaml(text)  # Schemathesis's loader: timestamps stay strings, as in JSON
    if not isinstance(data, dict):
        raise ValueError(f"{package}/{resource} is not an OpenAPI document")
    return data


_V1_SANDBOX_OPS = (
    "get_sandbox_v1_sandboxes__sandbox_id__get",
    "delete_sandbox_v1_sandboxes__sandbox_id__delete",
    "patch_sandbox_metadata_v1_sandboxes__sandbox_id__metadata_patch",
    "pause_sandbox_v1_sandboxes__sandbox_id__pause_post",
    "resume_sandbox_v1_sandboxes__sandbox_id__resume_post",
    "renew_sandbox_expiration_v1_sandboxes__sandbox_id__renew_expiration_post",
    "create_snapshot_v1_sandboxes__sandbox_id__snapshots_post",
    "get_sandbox_endpoint_v1_sandboxes__sandbox_id__endpoints__port__get",
    "get_network_policy_v1_sandboxes__sandbox_id__networkpolicy_get",
    "replace_network_policy_v1_sandboxes__sandbox_id__networkpolicy_put",
    "patch_network_policy_v1_sandboxes__sandbox_id__networkpolicy_patch",
    "delete_network_policy_v1_sandboxes__sandbox_id__networkpolicy_delete",
)
_TL_SANDBOX_OPS = (
    "getSandbox",
    "updateSandbox",
    "deleteSandbox",
    "suspendSandbox",
    "resumeSandbox",
    "snapshotSandbox",
    "listSandboxSnapshots",
    "copySandbox",
    "attachFileSystem",
    "detachFileSystem",
    "getSandboxLogs",
    "listLogProcesses",
)

#: The links each document gets in memory (by operationId); the stateful contracts follow them.
LINKS: dict[str, tuple[Link, ...]] = {
    "opensandbox-lifecycle": (
        Link(
            "create_sandbox_v1_sandboxes_post",
            ("202",),
            _V1_SANDBOX_OPS,
            {"sandbox_id": "$response.body#/id"},
        ),
        Link(
            "create_snapshot_v1_sandboxes__sandbox_id__snapshots_post",
            ("202",),
            ("get_snapshot_v1_snapshots__snapshot_id__get", "delete_snapshot_v1_snapshots__snapshot_id__delete"),
            {"snapshot_id": "$response.body#/id"},
        ),
    ),
    "opensandbox-execd": (
        Link("createSession", ("200",), ("runInSession", "deleteSession"), {"sessionId": "$response.body#/session_id"}),
    ),
    "tensorlake": (
        # No snapshot links: they would make snapshotSandbox (a POST with a path id) the only scenario root
        # Schemathesis trusts, since it takes createSandbox's snapshot_id/template_id fields for foreign keys.
        Link("createSandbox", ("200", "202"), _TL_SANDBOX_OPS, {"sid": "$response.body#/sandbox_id"}),
    ),
}


def _add_links(raw: dict[str, Any], links: Iterable[Link]) -> None:
    """Add ``links`` to the responses of their source operations; raise KeyError for an unknown operationId."""
    operations: dict[str, dict[str, Any]] = {}
    for item in raw.get("paths", {}).values():
        for method, operation in item.items():
            if isinstance(operation, dict) and "operationId" in operation and method != "parameters":
                operations[operation["operationId"]] = operation
    for link in links:
        source = operations[link.source]
        for status in link.statuses:
            response = source["responses"][status]
            added = response.setdefault("links", {})
            for target in link.targets:
                if target not in operations:
                    raise KeyError(f"link target {target!r} is not an operationId of the document")
                added[target] = {"operationId": target, "parameters": dict(link.parameters)}


_OS_SANDBOXES = re.compile(r"^((?:/v1)?)/sandboxes$")
_OS_SNAPSHOTS = re.compile(r"^((?:/v1)?)/sandboxes/[^/]+/snapshots$")
_TL_PREFIX = r"^((?:/v1/namespaces/[^/]+)?)"

SPECS: dict[str, ApiSpec] = {
    spec.name: spec
    for spec in (
        ApiSpec(
            "opensandbox-lifecycle",
            "opensandbox",
            "harness",
            "specs/opensandbox/lifecycle-1.1.1.yaml",
            "openapi-lifecycle",
            stateful_paths=r"^/v1/(sandboxes|snapshots)",
            scenario_bodies={"POST /v1/sandboxes": (SANDBOX_REQUEST, EGRESS_SANDBOX_REQUEST)},
            cleanups=(
                Cleanup("POST", _OS_SANDBOXES, "id", "{prefix}/sandboxes/{id}"),
                Cleanup("POST", _OS_SNAPSHOTS, "id", "{prefix}/snapshots/{id}"),
            ),
        ),
        ApiSpec(
            "opensandbox-execd",
            "opensandbox",
            "harness",
            "specs/opensandbox/execd.yaml",
            "openapi-execd",
            port=EXECD_PORT,
            stateful_paths=r"^/session",
        ),
        ApiSpec(
            "opensandbox-egress",
            "opensandbox",
            "harness",
            "specs/opensandbox/egress.yaml",
            "openapi-egress",
            port=EGRESS_PORT,
        ),
        ApiSpec(
            "tensorlake",
            "tensorlake",
            "mockserver.tensorlake",
            "openapi.json",
            "openapi-lifecycle",
            stateful_paths=r"^/sandboxes",
            cleanups=(
                Cleanup("POST", re.compile(_TL_PREFIX + r"/sandboxes$"), "sandbox_id", "{prefix}/sandboxes/{id}"),
                Cleanup(
                    "POST", re.compile(_TL_PREFIX + r"/sandboxes/[^/]+/copy$"), "sandbox_id", "{prefix}/sandboxes/{id}"
                ),
                Cleanup(
                    "POST",
                    re.compile(_TL_PREFIX + r"/sandboxes/[^/]+/snapshot$"),
                    "snapshot_id",
                    "{prefix}/snapshots/{id}",
                ),
            ),
        ),
    )
}


def load_document(name: str) -> dict[str, Any]:
    """Return a fresh copy of a document (links added) by its :data:`SPECS` name."""
    return SPECS[name].document()


@cache
def operation_labels(name: str) -> tuple[str, ...]:
    """Return the ``METHOD /path`` labels of a document's operations, in document order."""
    methods = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
    raw = _raw_document(SPECS[name].package, SPECS[name].resource)
    return tuple(
        f"{method.upper()} {path}"
        for path, item in raw.get("paths", {}).items()
        for method in item
        if method in methods
    )
