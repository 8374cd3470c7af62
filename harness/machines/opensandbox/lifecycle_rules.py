"""The OpenSandbox machine's lifecycle rules: create, get, list, delete, pause, resume, renew, patch metadata.

:class:`LifecycleRules` owns the ``sandboxes`` and ``deleted`` bundles: every example starts with one valid
sandbox, creates more (valid or not), and moves what it deletes to ``deleted``, where every operation must
answer 404. :class:`~harness.machines.opensandbox.machine.OpenSandboxAPIMachine` adds the sandbox-side rules.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, consumes, initialize, multiple, precondition, rule

from harness.machines.common import add_contract, hold
from harness.machines.opensandbox.compare import ANY as _ANY
from harness.machines.opensandbox.compare import Expected, normalise_list, normalise_sandbox
from harness.machines.opensandbox.compare import parse_time as _parse_time
from harness.machines.opensandbox.driver import (
    LIFECYCLE_ANSWER,
    NOT_FOUND,
    SANDBOX_BODY,
    SUITE,
    MachineBase,
    SandboxHandle,
)
from harness.machines.opensandbox.driver import when_enabled as _on
from harness.machines.opensandbox.requests import RUN_LABEL, Json, create_bodies
from harness.machines.opensandbox.requests import gone_operations as _gone_operations
from harness.machines.opensandbox.requests import metadata_maps as _metadata
from harness.machines.opensandbox.requests import metadata_patches as _patches
from harness.machines.opensandbox.requests import state_spellings as _state_spellings
from harness.machines.opensandbox.requests import valid_bodies as _valid_bodies
from harness.machines.opensandbox.requests import valid_bodies_with_policy as _valid_bodies_with_policy
from harness.strength import Contract, observed, spec
from harness.strength.observations import REAL_RUN
from mockserver.opensandbox.model.profiles import EXECD_PORT

__all__ = ["CONTRACTS", "LifecycleRules"]

CONTRACTS: dict[str, Contract] = {}
CREATE_BLOCKS = add_contract(
    CONTRACTS,
    SUITE,
    "create_blocks",
    spec("ng-os.create-blocks"),
    "The create answer already shows the sandbox in the model's state (Running on Docker): it does not answer early.",
)
REACHABLE_BY_ID = add_contract(
    CONTRACTS,
    SUITE,
    "reachable_by_id",
    spec("ng-os.reconnect-by-id"),
    "A live sandbox is found by its id alone, from a client that did not create it (every example opens a new one).",
)
LISTING = add_contract(
    CONTRACTS,
    SUITE,
    "listing",
    observed(
        REAL_RUN,
        "state filters OR-ed and case-insensitive, metadata AND-ed, newest first, paginated; a deleted or expired "
        "sandbox is gone at once",
        note="opensandbox-wire.md §3.2, §7 and the differential run",
    ),
    "A filtered, paged listing holds the model's sandboxes: no deleted or expired one, newest first.",
)
FOUND_BY_METADATA = add_contract(
    CONTRACTS,
    SUITE,
    "found_by_metadata",
    spec("ng-os.found-by-metadata"),
    "Listing by the run's metadata label finds exactly the sandboxes the run created and has not deleted.",
)


class LifecycleRules(MachineBase):
    """Create, read, list, change and delete sandboxes, comparing every answer with the model."""

    sandboxes = Bundle("sandboxes")
    deleted = Bundle("deleted")

    # -- lifecycle rules -----------------------------------------------------------------------------

    @initialize(target=sandboxes, data=st.data())
    def first_sandbox(self, data: st.DataObject) -> Any:
        """Start every example with one valid sandbox (with a policy when egress rules run)."""
        with_policy = self.config.enabled("egress_probe") or self.config.enabled("egress_patch")
        body = data.draw(_valid_bodies_with_policy if with_policy else _valid_bodies, label="body")
        return self._create("first_sandbox", body)

    @precondition(_on("create"))
    @rule(target=sandboxes, body=create_bodies())
    def create(self, body: Json) -> Any:
        """Create a sandbox (valid or invalid body) and compare the answer with the model."""
        return self._create("create", body)

    @precondition(_on("create_with_policy"))
    @rule(target=sandboxes, body=create_bodies(with_policy=True))
    def create_with_policy(self, body: Json) -> Any:
        """Create a sandbox with a valid ``networkPolicy`` (it gets an egress sidecar)."""
        return self._create("create_with_policy", body)

    def _create(self, rule: str, body: Json) -> Any:
        if self.config.admin is not None:
            self._advance(rule, 1.0)  # distinct createdAt, so "newest first" is observable
        sent = {**body, "metadata": {**(body.get("metadata") or {}), RUN_LABEL: self.run_label}}
        if not self.config.egress:
            sent.pop("networkPolicy", None)  # the server has no egress sidecar image configured
        expected, record = self.oracle.create(sent)
        response = self._send(rule, "POST", "/v1/sandboxes", body=sent)
        data = self._check(rule, response, expected, LIFECYCLE_ANSWER)
        if record is None:
            return multiple()
        ident = data.get("id") if isinstance(data, dict) else None
        hold(SANDBOX_BODY, isinstance(ident, str), rule, f"202 without an id: {response.text[:200]!r}")
        assert isinstance(data, dict) and isinstance(ident, str)
        handle = SandboxHandle(f"sb{len(self.bookkeeping.handles) + 1}", ident, record.id)
        self.ids[handle.target_id] = handle.model_id
        self.bookkeeping.handles.append(handle)
        actual = normalise_sandbox(data, self._id_of)
        state = (actual.get("status") or {}).get("state") if isinstance(actual.get("status"), dict) else None
        want = expected.body["status"]["state"]
        hold(
            CREATE_BLOCKS, state == want, rule, f"POST /v1/sandboxes answered state {state!r}, the model says {want!r}"
        )
        self._compare(rule, response, expected.body, actual, SANDBOX_BODY)
        self.bookkeeping.listing_dirty = True
        return handle

    @precondition(_on("get"))
    @rule(sb=sandboxes)
    def get(self, sb: SandboxHandle) -> None:
        """Read a sandbox."""
        expected = self.oracle.get(sb.model_id)
        response = self._send("get", "GET", self._sandbox_path(sb))
        data = self._check("get", response, expected, REACHABLE_BY_ID, refusal=NOT_FOUND)
        if expected.status == 200 and response.status_code == 200:
            self._compare("get", response, expected.body, normalise_sandbox(data, self._id_of), SANDBOX_BODY)

    @precondition(_on("list_sandboxes"))
    @rule(
        states=st.lists(_state_spellings, max_size=2),
        metadata=st.one_of(st.just({}), _metadata),
        page=st.one_of(st.none(), st.integers(1, 3)),
        page_size=st.one_of(st.none(), st.integers(1, 3)),
        flaw=st.sampled_from(("none",) * 9 + ("page=0", "pageSize=201", "metadata")),
    )
    def list_sandboxes(
        self, states: list[str], metadata: dict[str, str], page: int | None, page_size: int | None, flaw: str
    ) -> None:
        """List with state and metadata filters and pagination (sometimes malformed)."""
        pairs = [f"{k}={v}" for k, v in metadata.items()]
        if flaw == "metadata":
            pairs.append("team")
        pairs.append(f"{RUN_LABEL}={self.run_label}")
        query: list[tuple[str, str]] = [("state", s) for s in states]
        query.append(("metadata", "&".join(pairs)))
        if flaw == "page=0":
            page = 0
        if flaw == "pageSize=201":
            page_size = 201
        if page is not None:
            query.append(("page", str(page)))
        if page_size is not None:
            query.append(("pageSize", str(page_size)))
        self._compare_listing("list_sandboxes", query)

    def _compare_listing(self, rule: str, query: list[tuple[str, str]]) -> None:
        """Compare a listing; one by the run's label alone (the invariant) checks finding by metadata."""
        keys = dict(query)
        by_label = set(keys) == {"metadata", "pageSize"} and keys["pageSize"] == "200"
        membership = FOUND_BY_METADATA if by_label else LISTING
        expected = self.oracle.list(query)
        response = self._send(rule, "GET", "/v1/sandboxes", params=list(query))
        data = self._check(rule, response, expected, LISTING)
        if expected.status != 200 or response.status_code != 200:
            return
        items = data.get("items") if isinstance(data, dict) else None
        if not hold(LISTING, isinstance(items, list), rule, f"list answer has no items: {response.text[:200]!r}"):
            return
        assert isinstance(items, list)
        gone = {h.target_id for h in self.bookkeeping.handles if self.oracle.lookup(h.model_id) is None}
        listed = [item.get("id") for item in items if isinstance(item, dict)]
        ghosts = [self._id_of(str(i)) for i in listed if i in gone]
        hold(LISTING, not ghosts, rule, f"deleted or expired sandboxes are still listed: {ghosts}")
        if by_label:
            want = sorted(str(item.get("id")) for item in expected.body["items"])
            got = sorted(self._id_of(str(i)) for i in listed)
            hold(membership, want == got, rule, f"listing by the run's label found {got}, the model {want}")
        created = [_parse_time(item.get("createdAt")) for item in items if isinstance(item, dict)]
        unordered = any(not isinstance(c, float) for c in created) or any(a < b for a, b in itertools.pairwise(created))
        hold(LISTING, not unordered, rule, f"the list is not newest first: createdAt {created}")
        self._compare(rule, response, expected.body, normalise_list(data, self._id_of), LISTING)

    @precondition(_on("delete"))
    @rule(target=deleted, sb=consumes(sandboxes))
    def delete(self, sb: SandboxHandle) -> SandboxHandle:
        """Delete a sandbox (404 when it already expired); it moves to the ``deleted`` bundle."""
        expected = self.oracle.delete(sb.model_id)
        response = self._send("delete", "DELETE", self._sandbox_path(sb))
        self._check("delete", response, expected, LIFECYCLE_ANSWER, refusal=NOT_FOUND)
        self.bookkeeping.listing_dirty |= expected.status < 300
        return sb

    @precondition(_on("delete"))
    @rule(sb=deleted, operation=_gone_operations)
    def use_deleted(self, sb: SandboxHandle, operation: str) -> None:
        """Call an operation on a deleted sandbox: 404 with the runtime's not-found code."""
        self._gone("use_deleted", sb.target_id, sb.model_id, operation)

    @precondition(_on("pause"))
    @rule(sb=sandboxes)
    def pause(self, sb: SandboxHandle) -> None:
        """Pause a sandbox (409 unless Running)."""
        expected = self.oracle.pause(sb.model_id)
        response = self._send("pause", "POST", self._sandbox_path(sb) + "/pause")
        self._check("pause", response, expected, LIFECYCLE_ANSWER)
        self.bookkeeping.listing_dirty |= expected.status < 300

    @precondition(_on("resume"))
    @rule(sb=sandboxes)
    def resume(self, sb: SandboxHandle) -> None:
        """Resume a sandbox (409 unless Paused)."""
        expected = self.oracle.resume(sb.model_id)
        response = self._send("resume", "POST", self._sandbox_path(sb) + "/resume")
        self._check("resume", response, expected, LIFECYCLE_ANSWER)
        self.bookkeeping.listing_dirty |= expected.status < 300

    @precondition(_on("renew"))
    @rule(
        sb=sandboxes,
        minutes=st.sampled_from((1, 10, 60, 120, -1, -60)),
        flaw=st.sampled_from(("none",) * 6 + ("missing", "not-a-date")),
    )
    def renew(self, sb: SandboxHandle, minutes: int, flaw: str) -> None:
        """Renew the expiration to now ± minutes (400 in the past, 409 without expiry, 422 malformed)."""
        when = datetime.fromtimestamp(self.oracle.clock.now() + 60 * minutes, UTC).isoformat()
        body: Json = {"expiresAt": when}
        if flaw == "missing":
            body = {}
        elif flaw == "not-a-date":
            body = {"expiresAt": "tomorrow"}
        expected = self.oracle.renew(sb.model_id, body)
        response = self._send("renew", "POST", self._sandbox_path(sb) + "/renew-expiration", body=body)
        data = self._check("renew", response, expected, LIFECYCLE_ANSWER)
        if expected.status == 200 and response.status_code == 200:
            actual = {k: _parse_time(v) for k, v in data.items()} if isinstance(data, dict) else data
            self._compare("renew", response, expected.body, actual, SANDBOX_BODY)
            self.bookkeeping.listing_dirty = True

    @precondition(_on("patch_metadata"))
    @rule(sb=sandboxes, patch=_patches)
    def patch_metadata(self, sb: SandboxHandle, patch: dict[str, str | None]) -> None:
        """Merge-patch the metadata (null deletes; reserved or malformed labels: 400)."""
        expected = self.oracle.patch_metadata(sb.model_id, patch)
        response = self._send("patch_metadata", "PATCH", self._sandbox_path(sb) + "/metadata", body=patch)
        data = self._check("patch_metadata", response, expected, LIFECYCLE_ANSWER)
        if expected.status == 200 and response.status_code == 200:
            self._compare("patch_metadata", response, expected.body, normalise_sandbox(data, self._id_of), SANDBOX_BODY)
            self.bookkeeping.listing_dirty = True

    @precondition(_on("missing_sandbox"))
    @rule(operation=_gone_operations, sandbox_id=st.uuids().map(str))
    def missing_sandbox(self, operation: str, sandbox_id: str) -> None:
        """Call an operation on an id that never existed: 404 with the runtime's not-found code."""
        self._gone("missing_sandbox", sandbox_id, sandbox_id, operation)

    def _gone(self, rule: str, target_id: str, model_id: str, operation: str) -> None:
        if self.oracle.lookup(model_id) is not None:
            raise AssertionError(f"{rule} on a live sandbox")  # the machine's own bookkeeping is wrong
        path = self._sandbox_path(target_id)
        renewal: Json = {"expiresAt": "2999-01-01T00:00:00+00:00"}
        calls: dict[str, tuple[str, str, Any, Callable[[], Expected]]] = {
            "get": ("GET", path, _ANY, lambda: self.oracle.get(model_id)),
            "delete": ("DELETE", path, _ANY, lambda: self.oracle.delete(model_id)),
            "pause": ("POST", path + "/pause", _ANY, lambda: self.oracle.pause(model_id)),
            "resume": ("POST", path + "/resume", _ANY, lambda: self.oracle.resume(model_id)),
            "renew": ("POST", path + "/renew-expiration", renewal, lambda: self.oracle.renew(model_id, renewal)),
            "endpoint": (
                "GET",
                path + f"/endpoints/{EXECD_PORT}",
                _ANY,
                lambda: self.oracle.endpoint(model_id, EXECD_PORT, False, None),
            ),
        }
        method, url, body, predict = calls[operation]
        expected = predict()
        contract = NOT_FOUND if expected.status == 404 else LIFECYCLE_ANSWER
        self._check(rule, self._send(rule, method, url, body=body), expected, contract, refusal=contract)
