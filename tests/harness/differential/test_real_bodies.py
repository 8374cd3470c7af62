"""The body declarations (``mockserver.opensandbox.model.bodies``) against the real server's own models.

A seeded generator builds a few thousand bodies, near-valid and broken at every depth (types, missing and unknown
keys, aliases and Python names, constraints, each model validator's branches), and the measured create cases add
theirs (``tests/opensandbox/create_cases.py``: hooks, volumes, modes, policies); the real server's interpreter
validates them with its ``api/schema.py`` models as FastAPI does (``real_body_errors.py``), and the mock's
:func:`~mockserver.opensandbox.model.bodies.validated` must give the same 422 entries, byte for byte, or accept the
same bodies. No server is started: one subprocess, a few seconds.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from harness.differential.real_server import DEFAULT_VENV
from mockserver.opensandbox.model import bodies
from mockserver.opensandbox.model.validation import RequestValidationError
from tests.opensandbox.create_cases import (
    BODY,
    LIFECYCLE_CASES,
    MODE_CASES,
    NETWORK_POLICY_CASES,
    PLATFORM_CASES,
    SECURE_ACCESS_CASES,
    VOLUME_CASES,
)

SCRIPT = Path(__file__).with_name("real_body_errors.py")
#: Bodies per kind: the create body has the most branches.
CREATES, OTHERS = 1500, 200

ATOMS: list[Any] = [
    None, True, False, 0, 1, 59, 60, 61, -1, 1.5, 60.0, "", " ", "x", "60", "abc", "Bad_Name", "/data", "tmp/x",
    "C:\\x", "2030-01-01T00:00:00Z", "1e3", "not-a-date", "2.0", "1.0", "allow", "deny", "sandbox.create",
    "OPENSANDBOX_LIFECYCLE", [], ["a"], [""], [" "], ["a", 1], {}, {"a": "b"}, {"a": 1}, {"a": None}, "10Gi",
    "a" * 70, "a" * 300,
]  # fmt: skip
TIMES: list[Any] = [1e12, -1e12, 2e10, "1900000000", "-1.5", "2030-13-01", "2030-01-01T25:00", "x" * 30, 10**20]
GOOD = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
}
CREATE_KEYS = [
    *("image", "snapshotId", "snapshot_id", "platform", "timeout", "resourceLimits", "resource_limits"),
    *("resourceRequests", "env", "metadata", "lifecycle", "entrypoint", "networkPolicy", "credentialProxy"),
    *("secureAccess", "volumes", "extensions", "templateId", "template_id", "junk"),
]
#: Each nested object's keys (aliases, Python names and an unknown one where a model forbids extras).
NESTED = {
    "image": ["uri", "auth"],
    "auth": ["username", "password"],
    "platform": ["os", "arch"],
    "networkPolicy": ["defaultAction", "default_action", "egress"],
    "egress": ["action", "target"],
    "credentialProxy": ["enabled"],
    "lifecycle": ["preStart", "pre_start", "periodic", "junk"],
    "preStart": ["command", "timeoutSeconds", "timeout_seconds", "junk"],
    "periodic": ["name", "schedule", "command", "timeoutSeconds", "junk"],
    "volumes": ["name", "host", "pvc", "ossfs", "mountPath", "readOnly", "subPath"],
    "host": ["path"],
    "pvc": ["claimName", "createIfNotExists", "deleteOnSandboxTermination", "storageClass", "storage", "accessModes"],
    "ossfs": ["bucket", "endpoint", "version", "options", "accessKeyId", "accessKeySecret"],
    "extensions": ["poolRef"],
    "env": ["OPENSANDBOX_LIFECYCLE", "A"],
    "capacitySpec": ["bufferMax", "bufferMin", "poolMax", "poolMin"],
    "readiness": ["probe", "warmupSeconds"],
}
LISTS = {"egress", "periodic", "volumes"}
#: A valid value for a key, drawn half the time, so that bodies get past the first error.
VALID: dict[str, Any] = {
    **{"uri": "python:3.11", "username": "u", "password": "p", "os": "linux", "arch": "amd64"},
    **{"defaultAction": "deny", "action": "allow", "target": "pypi.org", "enabled": True, "command": ["echo"]},
    **{"timeoutSeconds": 5, "name": "data", "schedule": "*/5 * * * *", "path": "/tmp/x", "claimName": "c"},
    **{"storage": "1Gi", "bucket": "bkt", "endpoint": "oss.example", "version": "2.0", "accessKeyId": "a"},
    **{"accessKeySecret": "b", "mountPath": "/data", "readOnly": False, "subPath": "sub", "poolRef": "p"},
    **{"bufferMax": 2, "bufferMin": 1, "poolMax": 4, "poolMin": 0, "probe": "tcp://x", "warmupSeconds": 5},
    **{"eventType": "sandbox.create", "createDurationMs": 5, "success": True, "sandboxId": "s"},
    **{"publish": "s3://b", "format": "native", "template": {"spec": {}}, "timeout": 600, "entrypoint": ["sh"]},
    **{"snapshotId": "snap", "templateId": "tpl", "secureAccess": False, "metadata": {"a": "b"}},
    **{"resourceLimits": {"cpu": "1"}, "env": {"A": "1"}, "extensions": {"poolRef": "p"}},
}


class Bodies:
    """A seeded generator of request bodies."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.valid = 0.5

    def value(self, key: str, depth: int = 0) -> Any:
        """Return a value for ``key``: often an object of its own keys, else any atom."""
        if key in VALID and self.rng.random() < self.valid:
            return copy.deepcopy(VALID[key])
        if key in NESTED and depth < 4 and self.rng.random() < 0.8:
            if key in LISTS:
                return [self.obj(key, depth) for _ in range(self.rng.randint(1, 2))]
            return self.obj(key, depth)
        return copy.deepcopy(self.rng.choice(ATOMS))

    def obj(self, key: str, depth: int, keep: float = 0.75) -> dict[str, Any]:
        """Return an object with some of ``key``'s keys."""
        return {k: self.value(k, depth + 1) for k in NESTED[key] if self.rng.random() < keep}

    def keys(self, names: list[str], keep: float = 0.7) -> dict[str, Any]:
        """Return an object with some of ``names``, each any value."""
        return {k: self.value(k) for k in names if self.rng.random() < keep}

    def create(self) -> Any:
        """Return the good create body with a few keys changed or dropped (now and then not an object)."""
        body: dict[str, Any] = dict(GOOD) if self.rng.random() < 0.7 else {}
        for _ in range(self.rng.randint(1, 4)):
            key = self.rng.choice(CREATE_KEYS)
            if self.rng.random() < 0.15:
                body.pop(key, None)
            else:
                body[key] = self.value(key)
        return body if self.rng.random() > 0.02 else self.rng.choice(ATOMS)

    def nested(self) -> Any:
        """Return the good create body with mostly valid ``volumes`` or ``lifecycle`` (their validators' branches)."""
        self.valid = 0.8
        try:
            key = self.rng.choice(["volumes", "lifecycle"])
            return {**GOOD, key: self.value(key) if key == "volumes" else self.obj(key, 0, keep=0.5)}
        finally:
            self.valid = 0.5

    def renew(self) -> Any:
        """Return a renew body: the time under either name, or an unknown key."""
        return {self.rng.choice(["expiresAt", "expires_at", "x"]): self.rng.choice(ATOMS + TIMES)}


def measured() -> list[Any]:
    """Return the create bodies of the measured case tables (``tests/opensandbox/create_cases.py``)."""
    fields: list[dict[str, Any]] = [
        *({"volumes": value} for value, _ in VOLUME_CASES.values()),
        *({"platform": value} for value, _ in PLATFORM_CASES.values()),
        *({"lifecycle": value} for value, _ in LIFECYCLE_CASES.values()),
        *({"secureAccess": value} for value, _, _ in SECURE_ACCESS_CASES.values()),
        *(value for value, _ in NETWORK_POLICY_CASES.values()),
    ]
    return [{**BODY, **more} for more in fields] + [body for body, _ in MODE_CASES.values()]


def cases(seed: int) -> list[tuple[str, Any, Any]]:
    """Return ``(real model name, mock declaration, body)`` for every kind of body: generated, then measured."""
    gen = Bodies(seed)
    kinds: list[tuple[str, Any, Callable[[], Any]]] = [
        ("CreateSandboxRequest", bodies.CreateSandboxRequest, gen.create),
        ("CreateSandboxRequest", bodies.CreateSandboxRequest, gen.nested),
        ("RenewSandboxExpirationRequest", bodies.RenewRequest, gen.renew),
        ("CreateSnapshotRequest", bodies.CreateSnapshotRequest, lambda: {"name": gen.rng.choice(ATOMS)}),
        (
            "MetricsEvent",
            bodies.MetricsEvent,
            lambda: gen.keys(["eventType", "sandboxId", "image", "createDurationMs", "create_duration_ms", "success"]),
        ),
        ("NetworkPolicy", bodies.NetworkPolicy, lambda: gen.value("networkPolicy")),
        ("list[NetworkRule]", bodies.RULES, lambda: gen.value("egress")),
        ("list[str]", bodies.TARGETS, lambda: gen.rng.choice(ATOMS)),
        ("PatchSandboxMetadataRequest", bodies.METADATA_PATCH, lambda: gen.rng.choice(ATOMS)),
        ("CreatePoolRequest", bodies.CreatePoolRequest, lambda: gen.keys(["name", "template", "capacitySpec"])),
        ("UpdatePoolRequest", bodies.UpdatePoolRequest, lambda: gen.keys(["capacitySpec", "capacity_spec"])),
        (
            "CreateFsbTemplateRequest",
            bodies.CreateTemplateRequest,
            lambda: gen.keys(
                ["image", "resourceLimits", "entrypoint", "env", "metadata", "readiness", "publish", "format", "junk"]
            ),
        ),
    ]
    generated = [
        (name, declared, make())
        for name, declared, make in kinds
        for _ in range(CREATES if make == gen.create else OTHERS)
    ]
    return generated + [("CreateSandboxRequest", bodies.CreateSandboxRequest, body) for body in measured()]


def mock_detail(declared: Any, body: Any) -> Any:
    """Return the mock's 422 entries for ``body`` as they go on the wire, or None."""
    try:
        bodies.validated(declared, body)
    except RequestValidationError as exc:
        return json.loads(json.dumps(exc.errors))
    return None


class TimeoutFromOne(bodies.CreateSandboxRequest):
    """A plausible wrong declaration: ``timeout`` from 1 second (the real minimum is 60)."""

    timeout: int | None = Field(None, ge=1)


class NoPythonNames(bodies.CreateSandboxRequest):
    """A plausible wrong declaration: fields taken by their alias only (``resource_limits`` is then unknown)."""

    model_config = {**bodies.CreateSandboxRequest.model_config, "populate_by_name": False}


def test_declarations_answer_as_the_real_models() -> None:
    python = DEFAULT_VENV / "bin" / "python"
    if not python.is_file():
        pytest.skip(f"the real server's venv is missing ({python}): `make install` creates it")
    generated = cases(seed=19)
    run = subprocess.run(
        [str(python), str(SCRIPT)],
        input=json.dumps([[name, body] for name, _, body in generated]),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    real = json.loads(run.stdout)
    differing = [
        (name, body, want, got)
        for (name, declared, body), want in zip(generated, real, strict=True)
        if (got := mock_detail(declared, body)) != want
    ]
    assert differing == []
    creates = [
        (body, want) for (name, _, body), want in zip(generated, real, strict=True) if name == "CreateSandboxRequest"
    ]
    for wrong in (TimeoutFromOne, NoPythonNames):  # the comparison catches a wrong declaration
        assert any(mock_detail(wrong, body) != want for body, want in creates), wrong.__name__
    refused = sum(want is not None for want in real)
    validators = sum(bool(want) and want[0]["type"] == "value_error" for want in real)
    # the bodies reach both outcomes and the model validators, else the comparison proves little
    assert len(real) > refused > len(real) // 3 and validators > 50
