"""The providers' OpenAPI documents as Schemathesis contracts: load, bind to a target, run, list deviations.

Documents (:data:`SPECS`):

* ``opensandbox-lifecycle``: the lifecycle API exactly as opensandbox-server 1.1.1 serves it
  (``harness/specs/opensandbox/lifecycle-1.1.1.yaml``), authenticated with ``OPEN-SANDBOX-API-KEY``;
* ``opensandbox-execd`` and ``opensandbox-egress``: the in-sandbox execd (port 44772) and egress sidecar
  (port 18080) documents, served at a sandbox's endpoint: :func:`bind_contract` creates a sandbox, asks the
  lifecycle ``endpoints`` API where the port is reachable (and which headers it needs) and deletes the
  sandbox afterwards;
* ``tensorlake``: the TensorLake lifecycle document the mock serves at ``/openapi.json``
  (``mockserver/tensorlake/openapi.json``), authenticated with ``Authorization: Bearer``.

The OpenSandbox documents are copies of the public 1.1.1 documents, shipped as package data so an installed
sandproof needs no checkout. None of the documents declares OpenAPI links, so :data:`LINKS` adds them in
memory (the files on disk stay as published): create → get, delete, pause, … by the new resource's id, which
is what the link scenarios chain. Schemathesis's own link inference is switched off so the scenarios are
exactly these. In a scenario the create request comes from :attr:`ApiSpec.scenario_bodies` when the document's
schema cannot express what a valid create needs (the per-operation run fuzzes the create body itself).

:class:`SchemaContract` runs one document: ``run_operation`` fuzzes an operation with positive data,
``run_stateful`` runs link scenarios, and every response goes through :data:`CHECK_NAMES` minus the
exclusions below. What the runs create is deleted afterwards. Against a real cloud service only ``GET``
operations run. Schemathesis and Hypothesis write nothing to disk (no example database, no crash cache).

Every check a target fails for a reason we accept is listed in :data:`SCHEMA_DEVIATIONS`, per document,
operation and check: the real server contradicting its own document (and the mock matching it), a documented
5xx, or what the mock does not emulate (applied only when the target is a sandproof mock).

:data:`SPECS` and friends live in :mod:`harness.openapi.specs`, the deviation table in
:mod:`harness.openapi.deviations` and endpoint resolution in :mod:`harness.openapi.endpoints`; every public
name is re-exported here. :func:`skip_reason` and :func:`excluded_checks` read this module's
:data:`SCHEMA_DEVIATIONS`, so replacing it here changes what the runner excludes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import httpx

from harness.openapi.deviations import (
    ALL_CHECKS,
    CHECK_NAMES,
    SCHEMA_DEVIATIONS,
    SchemaDeviation,
    deviations_markdown,
    register_schema_deviations,
    stale_deviation_entries,
)
from harness.openapi.endpoints import (
    CLOUD_SKIP,
    REQUEST_TIMEOUT,
    Endpoint,
    SandboxUnavailable,
    auth_headers,
    is_sandproof_mock,
    sandbox_endpoints,
    served_by_stand_in,
)
from harness.openapi.specs import (
    EGRESS_PORT,
    EGRESS_SANDBOX_REQUEST,
    LINKS,
    SANDBOX_REQUEST,
    SPECS,
    ApiSpec,
    load_document,
    operation_labels,
)
from harness.targets.sidecar import sidecar_missing
from mockserver.asgi import clients
from mockserver.core.journal import GENERATED_HEADER

if TYPE_CHECKING:
    from hypothesis import settings as Settings
    from schemathesis import Case as AnyCase
    from schemathesis import Response
    from schemathesis.schemas import BaseSchema

    Case = AnyCase[Any]

    from harness.targets import Target


__all__ = [
    "ALL_CHECKS",
    "CHECK_NAMES",
    "CLOUD_SKIP",
    "EGRESS_SANDBOX_REQUEST",
    "LINKS",
    "SANDBOX_REQUEST",
    "SCHEMA_DEVIATIONS",
    "SPECS",
    "ApiSpec",
    "Endpoint",
    "SandboxUnavailable",
    "SchemaContract",
    "SchemaDeviation",
    "auth_headers",
    "bind_contract",
    "deviations_markdown",
    "excluded_checks",
    "hypothesis_settings",
    "is_sandproof_mock",
    "load_document",
    "operation_labels",
    "register_schema_deviations",
    "sandbox_endpoints",
    "skip_reason",
    "stale_deviation_entries",
    "target_skip_reason",
]


def excluded_checks(spec: str, label: str, *, mock: bool) -> frozenset[str]:
    """Return the check names not run for ``label`` of ``spec`` (``"*"`` when the operation is skipped)."""
    return frozenset(
        check for entry in SCHEMA_DEVIATIONS if entry.applies(spec, label, mock=mock) for check in entry.checks
    )


def skip_reason(spec: str, label: str, *, mock: bool) -> str | None:
    """Return why ``label`` of ``spec`` is not tested at all on this target, or None."""
    for entry in SCHEMA_DEVIATIONS:
        if entry.applies(spec, label, mock=mock) and ALL_CHECKS in entry.checks:
            return f"{entry.kind}: {entry.reason}"
    return None


def target_skip_reason(name: str, label: str, target: Target) -> str | None:
    """Return why operation ``label`` of document ``name`` is not run against ``target``, or None."""
    if target.kind == "cloud" and not label.startswith("GET "):
        return CLOUD_SKIP
    return skip_reason(name, label, mock=is_sandproof_mock(target, SPECS[name].provider))


@contextmanager
def bind_contract(name: str, target: Target) -> Iterator[SchemaContract]:
    """Yield the document ``name`` bound to ``target`` (creating a sandbox for execd and egress); clean up after."""
    spec = SPECS[name]
    lifecycle = Endpoint(target.url(spec.provider), auth_headers(spec.provider, target.api_key(spec.provider)))
    mock = is_sandproof_mock(target, spec.provider)
    if spec.port is None:
        contract = SchemaContract(spec, lifecycle, mock=mock, cloud=target.kind == "cloud")
        try:
            yield contract
        finally:
            contract.close()
        return
    if spec.port == EGRESS_PORT:
        missing = sidecar_missing(lifecycle.base_url, target.api_key(spec.provider))
        if missing is not None:
            raise SandboxUnavailable(missing)
    with sandbox_endpoints(lifecycle, [spec.port]) as endpoints:
        stand_in = served_by_stand_in(endpoints[spec.port])
        contract = SchemaContract(spec, endpoints[spec.port], mock=mock or stand_in)
        try:
            yield contract
        finally:
            contract.close()


# --- running ------------------------------------------------------------------------------------------


def _config(endpoint: Endpoint) -> Any:
    """Return a Schemathesis configuration: positive data only, no inference, nothing written to disk."""
    import schemathesis

    return schemathesis.Config.from_dict(
        {
            "base-url": endpoint.base_url,
            "headers": {**dict(endpoint.headers), GENERATED_HEADER: "1"},
            "request-timeout": REQUEST_TIMEOUT,
            "cache": {"enabled": False},
            "generation": {"mode": "positive", "database": "none", "with-security-parameters": False},
            "phases": {"stateful": {"inference": {"algorithms": []}}},
            "analysis": {"constants": {"enabled": False}},
        }
    )


def _build_schema(document: dict[str, Any], endpoint: Endpoint) -> BaseSchema:
    """Return a Schemathesis schema of ``document`` that sends its requests to ``endpoint``."""
    import schemathesis

    schema: BaseSchema = schemathesis.openapi.from_dict(document, config=_config(endpoint))
    return schema


@lru_cache(maxsize=8)
def _bound_schema(name: str, base_url: str, headers: tuple[tuple[str, str], ...]) -> BaseSchema:
    """Return the (shared) schema of a :data:`SPECS` document bound to a base URL and headers."""
    return _build_schema(SPECS[name].document(), Endpoint(base_url, {**dict(headers), GENERATED_HEADER: "1"}))


def _check_functions() -> dict[str, Callable[..., Any]]:
    """Return the Schemathesis check functions by name."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    found = {
        "not_a_server_error": not_a_server_error,
        "status_code_conformance": status_code_conformance,
        "content_type_conformance": content_type_conformance,
        "response_headers_conformance": response_headers_conformance,
        "response_schema_conformance": response_schema_conformance,
    }
    return {name: found[name] for name in CHECK_NAMES}


def hypothesis_settings(max_examples: int, **overrides: Any) -> Settings:
    """Return the active profile's settings with ``max_examples``, no example database and no shrinking."""
    from hypothesis import HealthCheck, Phase, settings

    return settings(
        settings(),
        max_examples=max_examples,
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
        **overrides,
    )


class SchemaContract:
    """One document bound to an :class:`Endpoint`: run its operations and link scenarios, then clean up.

    ``mock`` applies the mock-only deviations; ``cloud`` sends only ``GET`` requests (no fuzzed writes to a
    paid service). Resources the runs create are deleted by :meth:`close`.
    """

    def __init__(
        self,
        spec: ApiSpec,
        endpoint: Endpoint,
        *,
        mock: bool = True,
        cloud: bool = False,
    ) -> None:
        self.spec = spec
        self.endpoint = endpoint
        self.mock = mock
        self.cloud = cloud
        self.schema = _bound_schema(spec.name, endpoint.base_url, tuple(sorted(endpoint.headers.items())))
        self._checks = _check_functions()
        self._created: list[str] = []
        self.failures: list[BaseException] = []
        self.calls = 0

    def labels(self) -> list[str]:
        """Return the labels of the document's operations."""
        from schemathesis.core.result import Ok

        return [result.ok().label for result in self.schema.get_all_operations() if isinstance(result, Ok)]

    def skip_reason(self, label: str) -> str | None:
        """Return why ``label`` is not run against this target, or None."""
        if self.cloud and not label.startswith("GET "):
            return CLOUD_SKIP
        return skip_reason(self.spec.name, label, mock=self.mock)

    def checks_for(self, label: str) -> list[Callable[..., Any]]:
        """Return the check functions run on ``label``'s responses."""
        excluded = excluded_checks(self.spec.name, label, mock=self.mock)
        return [check for name, check in self._checks.items() if name not in excluded]

    def _operation(self, label: str) -> Any:
        """Return the Schemathesis operation for a ``METHOD /path`` label."""
        method, _, path = label.partition(" ")
        return self.schema[path][method]

    def call_and_validate(self, case: Case) -> Response:
        """Send one case, remember what it created, and run the operation's checks on the response."""
        response = case.call()
        self.calls += 1
        self.note_created(case, response)
        case.validate_response(response, checks=self.checks_for(case.operation.label))
        return response

    def note_created(self, case: Case, response: Response) -> None:
        """Remember the delete path of anything the case created."""
        if not 200 <= response.status_code < 300:
            return
        path = case.formatted_path
        for rule in self.spec.cleanups:
            match = rule.path.match(path)
            if case.method.upper() != rule.method or match is None:
                continue
            try:
                body = json.loads(response.content)
            except ValueError:
                return
            if isinstance(body, dict) and isinstance(body.get(rule.key), str):
                self._created.append(rule.delete.format(prefix=match.group(1), id=body[rule.key]))
            return

    def run_operation(self, label: str, max_examples: int) -> None:
        """Fuzz one operation with ``max_examples`` positive cases; raise on the first failing check.

        An operation this target does not serve (sandproof's execd behind the real server: what the mock does
        not emulate) raises :class:`SandboxUnavailable` with the reason.
        """
        from hypothesis import given

        reason = self.skip_reason(label)
        if reason is not None:
            raise SandboxUnavailable(f"served by sandproof's execd here, so {reason}")

        operation = self._operation(label)

        @hypothesis_settings(max_examples)
        @given(case=operation.as_strategy())
        def fuzz(case: Case) -> None:
            self.call_and_validate(case)

        fuzz()

    def state_machine(self) -> type[Any]:
        """Return a Schemathesis state machine over the linked operations that runs this contract's checks."""
        from hypothesis import strategies as st

        schema = _build_schema(self.spec.document(), self.endpoint)  # its own schema: the hook stays local
        bodies = self.spec.scenario_bodies

        def scenario_body(context: Any, strategy: Any) -> Any:
            label = context.operation.label if context.operation is not None else ""
            return st.sampled_from([copy.deepcopy(b) for b in bodies[label]]) if label in bodies else strategy

        schema.hooks.register_hook_with_name(scenario_body, "before_generate_body")
        if self.spec.stateful_paths:
            schema = schema.include(path_regex=self.spec.stateful_paths)
        skipped = [label for label in self.labels() if self.skip_reason(label)]
        for label in skipped:
            method, _, path = label.partition(" ")
            schema = schema.exclude(method=method, path=path)
        base = schema.as_state_machine()
        contract = self

        class ContractStateMachine(base):  # type: ignore[misc, valid-type]
            def after_call(self, response: Response, case: Case) -> None:
                super().after_call(response, case)
                contract.calls += 1
                contract.note_created(case, response)

            def validate_response(self, response: Response, case: Case, *args: Any, **kwargs: Any) -> None:
                try:
                    case.validate_response(response, checks=contract.checks_for(case.operation.label))
                except BaseException as exc:
                    contract.failures.append(exc)
                    raise

        return ContractStateMachine

    def run_stateful(self, max_examples: int, steps: int = 8) -> None:
        """Run ``max_examples`` link scenarios of up to ``steps`` calls; raise on the first failing check."""
        from hypothesis.errors import Flaky

        machine = self.state_machine()
        self.failures.clear()
        try:
            machine.run(settings=hypothesis_settings(max_examples, stateful_step_count=steps))
        except Flaky:
            # Replaying a scenario against a server whose state moved on draws differently (a name now taken,
            # a link target gone); that is only a failure when a check failed on the way.
            if self.failures:
                raise self.failures[0] from None

    def close(self) -> None:
        """Delete what the runs created (best effort)."""
        created, self._created = self._created, []
        if not created:
            return
        with clients.client(
            base_url=self.endpoint.base_url, headers=dict(self.endpoint.headers), timeout=REQUEST_TIMEOUT
        ) as client:
            for path in reversed(created):
                try:
                    client.delete(path)
                except httpx.HTTPError:
                    continue
