"""Checks of the TensorLake API machine's answers: status, code, SandboxInfo, rollback; behaviour apart from form.

:class:`Answers` compares one answer with the model's prediction. Behaviour is checked apart from
representation: whether a request is accepted or refused, the status a SandboxInfo shows, its policy compared
by what it decides, its exposed ports as a set and its flags are ``spec`` (the networking page) or
``observed`` (the real SDK's needs and the wire notes); the exact status among equivalent ones, the error
``code``, the stored policy's spelling and the rest of the body are ``choice``, and after a differing choice
the machine goes on predicting from its model. A refusal is judged by its reason (:data:`REFUSALS`): a
documented or observed one fails the run, sandproof's own validation is a choice. A request the model refuses
for such a reason but the target accepts, or the reverse, leaves the sandbox in a state the model cannot
follow: ``book.diverged`` is set and the caller retires the sandbox (deleted on both sides).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpx

from contracts.tensorlake_adapter import reference_engine
from harness.machines.common import add_contract, hold, json_body
from harness.machines.tensorlake.compare import (
    Expected,
    Json,
    core_view,
    diff,
    info_shape_problem,
    normalise_info,
    normalise_policy,
)
from harness.machines.tensorlake.driver import SUITE, SandboxHandle, Session
from harness.policy.tensorlake.behaviour import behaviour_difference
from harness.strength import Contract, choice, observed, spec
from harness.strength.observations import capture, published
from mockserver.tensorlake.model.records import ROUTABLE

__all__ = ["CONTRACTS", "REFUSALS", "Answers", "data_code", "policy_difference", "refusal_contract"]

#: The contracts this module checks, by name.
CONTRACTS: dict[str, Contract] = {}
_WIRE = "tensorlake-wire.md"

EXACT_STATUS = add_contract(
    CONTRACTS,
    SUITE,
    "exact_status",
    choice(
        "where the sources allow several answers (400 or 422 for a bad body, any 2xx for a delete, 404 or a "
        "terminated record for a deleted sandbox), sandproof's model picks one"
    ),
    "With the admin API, the exact status among the answers that mean the same.",
)
ERROR_CODE = add_contract(
    CONTRACTS,
    SUITE,
    "error_code",
    choice("the docs and captures name no lifecycle or proxy error codes (the SDK keeps the body as text)"),
    "With the admin API, a refusal's JSON code is the one sandproof's model gives.",
)
SANDBOX_INFO_SHAPE = add_contract(
    CONTRACTS,
    SUITE,
    "sandbox_info_shape",
    observed(
        capture("docs/sources/captures/tensorlake-sdk-0.5.161.txt", "# --- client.get(sid)"),
        "the SDK needs id, namespace, a lowercase status of the eight, resources with disk_mb, non-null flags, and "
        "a complete network_policy when one is shown",
        note=f"{_WIRE} §4 (SandboxInfo)",
    ),
    "Every SandboxInfo (GET, PATCH, list items) is one the SDK can read.",
)
URL_WHEN_RUNNING = add_contract(
    CONTRACTS,
    SUITE,
    "sandbox_url_when_running",
    observed(
        published("tensorlake==0.5.163", "tensorlake/sandbox/client.py", "raise SandboxNotRoutableError("),
        "the SDK raises SandboxNotRoutableError for a running sandbox without sandbox_url",
        note=f"{_WIRE} §3, §4",
    ),
    "A running sandbox always carries its sandbox_url.",
)
URL_ONLY_WHEN_ROUTABLE = add_contract(
    CONTRACTS,
    SUITE,
    "sandbox_url_only_when_routable",
    choice("the docs do not say whether a pending or terminated sandbox shows a sandbox_url; sandproof's shows none"),
    "With the admin API, sandbox_url is present exactly while the sandbox is routable.",
)
POLICY_KEPT = add_contract(
    CONTRACTS,
    SUITE,
    "policy_kept",
    spec("tl.update.omit", "tl.update.replace", "tl.update.clear", "tl.update.running"),
    "The shown network_policy decides like the model's (the last accepted create or PATCH: omitted keeps, a "
    "policy replaces, null clears), for every destination and resolver.",
)
STORED_POLICY_FORM = add_contract(
    CONTRACTS,
    SUITE,
    "stored_policy_form",
    choice("the docs do not say how the service stores a policy (order, duplicates, IDNA, null after a clear)"),
    "With the admin API, network_policy is stored in the reference's canonical form.",
)
PORTS_AND_ACCESS = add_contract(
    CONTRACTS,
    SUITE,
    "ports_and_access",
    spec("tl.table.exposed-ports", "tl.table.allow-unauthenticated-access"),
    "The shown exposed_ports (as a set) and allow_unauthenticated_access are the model's.",
)
LIFECYCLE_FIELDS = add_contract(
    CONTRACTS,
    SUITE,
    "lifecycle_fields",
    observed(
        capture(
            "docs/sources/captures/tensorlake-sdk-0.5.161.txt",
            "# --- sandbox.update(name='renamed', auto_resume=False)",
        ),
        "the statuses and transitions (a named sandbox suspends on timeout, an ephemeral one terminates), the name "
        "and auto_resume (default true) as the SDK sends and reads them",
        note=f"{_WIRE} §6, §4",
    ),
    "The shown status, name and auto_resume are the model's.",
)
SANDBOX_INFO_EXACT = add_contract(
    CONTRACTS,
    SUITE,
    "sandbox_info_exact",
    choice(
        "the other SandboxInfo fields (resources echo, timestamps, reasons, port order) follow sandproof's model; "
        "the docs show examples only"
    ),
    "With the admin API, the whole SandboxInfo (URLs left out) is the model's.",
)
NOT_FOUND = add_contract(
    CONTRACTS,
    SUITE,
    "not_found",
    observed(
        (
            capture(
                "docs/sources/captures/tensorlake-sdk-0.5.161.txt", "# --- client.get('does-not-exist') (404 expected)"
            ),
            published(
                "tensorlake==0.5.163",
                "tensorlake/sandbox/client.py",
                "raise SandboxNotFoundError(sandbox_id) from None",
            ),
        ),
        "404 on an unknown id or name raises SandboxNotFoundError",
        note=f"{_WIRE} §3, §7",
    ),
    "An unknown or deleted sandbox is refused with 404 (or shown terminated), and a live one is found.",
)
NAME_CONFLICT = add_contract(
    CONTRACTS,
    SUITE,
    "name_conflict",
    observed(
        published(
            "tensorlake==0.5.163", "tensorlake/sandbox/client.py", "409, and :meth:`Sandbox.get_or_create` resolves it."
        ),
        "a duplicate name on create gives 409; get_or_create relies on it",
        note=f"{_WIRE} §6",
    ),
    "A name a live sandbox holds is refused with 409; a free (or freed) name is accepted.",
)
SUSPEND_NAMED_ONLY = add_contract(
    CONTRACTS,
    SUITE,
    "suspend_named_only",
    observed(
        capture("docs/sources/captures/tensorlake-sdk-0.5.161.txt", "# --- sandbox.suspend()"),
        "ephemeral sandboxes cannot be suspended (400), named ones can",
        note=f"{_WIRE} §3, §6",
    ),
    "Suspending an ephemeral sandbox is refused with 400; a named one is accepted.",
)
TRANSITION_STATE = add_contract(
    CONTRACTS,
    SUITE,
    "transition_state",
    observed(
        capture("docs/sources/captures/tensorlake-sdk-0.5.161.txt", "# --- sandbox.resume()"),
        "suspend and resume only from the states the lifecycle allows; otherwise 409",
        note=f"{_WIRE} §3, §6",
    ),
    "A transition from a state that does not allow it is refused with 409, and allowed ones are accepted.",
)
UNRESOLVABLE_REJECTED = add_contract(
    CONTRACTS,
    SUITE,
    "unresolvable_rejected",
    spec("tl.update.unresolvable"),
    "A policy naming a host that does not resolve is refused, and one whose hosts resolve is accepted.",
)
POLICY_FORMS = add_contract(
    CONTRACTS,
    SUITE,
    "policy_forms",
    spec("tl.allow.kinds", "tl.allow.wildcards-allow-only", "tl.table.deny-out"),
    "A policy entry outside the documented forms (a wildcard in deny_out, IPv6, a malformed address, CIDR or "
    "domain) is refused, and documented ones are accepted.",
)
REQUEST_VALIDATION = add_contract(
    CONTRACTS,
    SUITE,
    "request_validation",
    choice(
        "the docs and captures do not list which malformed bodies the service refuses (types, bounds, unknown keys, "
        "name format, port 9501 or 0 in exposed_ports); sandproof's model refuses these"
    ),
    "A body sandproof's model refuses for its own validation rules is refused, and the others accepted.",
)
REJECTED_UPDATE_KEEPS_STATE = add_contract(
    CONTRACTS,
    SUITE,
    "rejected_update_keeps_state",
    spec("tl.update.unresolvable"),
    "A refused PATCH changes nothing: the previous policy (and every other field) stays.",
)
REJECTED_TRANSITION_KEEPS_STATE = add_contract(
    CONTRACTS,
    SUITE,
    "rejected_transition_keeps_state",
    observed(
        capture("docs/sources/captures/tensorlake-sdk-0.5.161.txt", "# --- sandbox.suspend()"),
        "on a refused suspend or resume the SDK reads the sandbox again: it did not move",
        note=f"{_WIRE} §3",
    ),
    "A refused suspend or resume leaves the sandbox as it was.",
)
#: Refusal codes of the model whose reason the sources back (any other refusal is sandproof's validation).
REFUSALS: dict[str, Contract] = {
    "sandbox_not_found": NOT_FOUND,
    "name_conflict": NAME_CONFLICT,
    "ephemeral_sandbox": SUSPEND_NAMED_ONLY,
    "invalid_state": TRANSITION_STATE,
    "unresolvable_host": UNRESOLVABLE_REJECTED,
    **dict.fromkeys(
        ("invalid_ip", "invalid_cidr", "invalid_wildcard", "wildcard_in_deny", "invalid_domain", "empty_entry"),
        POLICY_FORMS,
    ),
}


def refusal_contract(code: str | None) -> Contract:
    """Return the contract of a refusal with ``code``: its documented or observed reason, else sandproof's choice."""
    return REFUSALS.get(code or "", REQUEST_VALIDATION)


class Answers:
    """Check answers against the model's predictions; the exchange with the target is ``session``'s."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def check(
        self,
        rule: str,
        response: httpx.Response,
        expected: Expected,
        contract: Contract,
        *,
        loose: Iterable[int] = (),
        refusal: Contract | None = None,
        stricter: Contract | None = None,
    ) -> Any:
        """Check the answer's status, then (with the admin API) its exact status and code; return its JSON or None.

        Acceptance versus refusal is behaviour. A target refusing what the model accepts breaches the contract of
        the reason it names when :data:`REFUSALS` knows it, else ``stricter`` (given when the request is written
        in a spelling only sandproof's choices accept), else ``contract`` (the operation's). A target accepting
        what the model refuses breaches the refusal's contract (``refusal``, or :func:`refusal_contract` of the
        model's code). Statuses in ``loose``, 400 and 422, and a terminated
        SandboxInfo for a 404 mean the same; with the admin API the exact one is a choice. A decision that differs
        only from sandproof's choice sets ``book.diverged``: the caller retires the sandbox.
        """
        self.session.book.diverged = False
        where = f"{response.request.method} {response.request.url.path}"
        evidence = f"{where} -> {response.status_code}: {response.text[:300]}"
        status = response.status_code
        candidates = expected.candidates()
        exact = {c.status for c in candidates}
        equivalent = set(exact)
        for group in (tuple(loose), (400, 422)):
            if exact & set(group):
                equivalent |= set(group)
        refused = all(c.status >= 400 for c in candidates)
        judged = (refusal or refusal_contract(expected.code)) if refused else contract
        if status >= 500 and not self.session.book.fault_armed and all(c.status < 500 for c in candidates):
            hold(
                contract,
                False,
                rule,
                f"{where} -> {status} without an injected fault: {response.text[:300]!r}",
                evidence,
            )
            self.session.book.diverged = True
            return json_body(response)
        if 404 in exact and status == 200 and _terminated(response):
            hold(judged, True, rule, "")
            if self.session.strict:
                hold(EXACT_STATUS, False, rule, f"{where}: a deleted sandbox reads terminated, not 404", evidence)
            return None
        if status not in equivalent:
            says = " or ".join(str(c.status) for c in candidates)
            if refused and status < 400:
                breached = judged
            elif not refused and status >= 400:
                code = data_code(response)
                breached = REFUSALS.get(code, stricter or contract)
            else:
                breached = judged
            hold(
                breached, False, rule, f"{where} -> {status}, the model says {says}: {response.text[:300]!r}", evidence
            )
            self.session.book.diverged = (status < 400) != (expected.status < 400)
            return json_body(response)
        hold(judged, True, rule, "")
        data = json_body(response)
        if self.session.strict:
            says = " or ".join(str(s) for s in sorted(exact))
            hold(EXACT_STATUS, status in exact, rule, f"{where} -> {status}, the model says {says}", evidence)
            chosen = next((c for c in candidates if c.status == status), expected)
            if chosen.code is not None:
                got = data.get("code") if isinstance(data, dict) else None
                hold(
                    ERROR_CODE,
                    got == chosen.code,
                    rule,
                    f"{where} -> {status} code {got!r}, the model says {chosen.code!r}",
                    evidence,
                )
        return data

    def observe(self, rule: str, response: httpx.Response, data: Any, expected: Any) -> None:
        """Check one SandboxInfo answer: SDK shape, URLs, policy history and the model's view of it."""
        where = f"{response.request.method} {response.request.url.path}"
        problem = info_shape_problem(data)
        if not hold(SANDBOX_INFO_SHAPE, problem is None, rule, f"{where}: unusable SandboxInfo: {problem}"):
            return
        actual = normalise_info(data, self.session.id_of)
        self.check_urls(rule, where, data)
        self.check_history(rule, where, actual)
        self.compare(rule, where, expected, actual)

    def compare(self, rule: str, where: str, expected: Json, actual: Json) -> None:
        """Compare a SandboxInfo with the model's: behaviour field by field, then (admin API) the whole body."""
        alias = self.session.alias(str(expected.get("id")))
        want, got = core_view(expected), core_view(actual)
        behaviour = policy_difference(want["network_policy"], got["network_policy"])
        hold(
            POLICY_KEPT,
            behaviour is None,
            rule,
            f"{where}: {alias}'s network_policy differs from the model's: {behaviour}",
        )
        found = diff(
            sorted(set(want["exposed_ports"] or [])), sorted(set(got["exposed_ports"] or [])), "$.exposed_ports"
        )
        found = found or diff(
            want["allow_unauthenticated_access"], got["allow_unauthenticated_access"], "$.allow_unauthenticated_access"
        )
        hold(PORTS_AND_ACCESS, found is None, rule, f"{where}: {alias} differs from the model at {found}")
        fields = ("id", "status", "name", "auto_resume")
        found = diff({k: want[k] for k in fields}, {k: got[k] for k in fields})
        hold(LIFECYCLE_FIELDS, found is None, rule, f"{where}: {alias} differs from the model at {found}")
        if self.session.strict:
            found = diff(expected.get("network_policy"), actual.get("network_policy"), "$.network_policy")
            hold(STORED_POLICY_FORM, found is None, rule, f"{where}: {alias} stores its policy otherwise: {found}")
            rest = {k: v for k, v in expected.items() if k != "network_policy"}
            found = diff(rest, {k: v for k, v in actual.items() if k != "network_policy"})
            hold(SANDBOX_INFO_EXACT, found is None, rule, f"{where}: {alias} differs from the model at {found}")

    def check_urls(self, rule: str, where: str, data: Json) -> None:
        status, url = data.get("status"), data.get("sandbox_url")
        hold(
            URL_WHEN_RUNNING, status != "running" or bool(url), rule, f"{where}: a running sandbox without sandbox_url"
        )
        if self.session.strict:
            hold(
                URL_ONLY_WHEN_ROUTABLE,
                (url is not None) == (status in ROUTABLE),
                rule,
                f"{where}: sandbox_url {url!r} for a sandbox that is {status}",
            )
        if isinstance(data.get("ingress_endpoint"), str):
            self.session.book.ingress_endpoint = data["ingress_endpoint"]
        handle = self.session.handle_of(self.session.id_of(str(data.get("id", data.get("sandbox_id")))))
        if handle is not None and isinstance(url, str) and url:
            handle.sandbox_url = url

    def check_history(self, rule: str, where: str, actual: Json) -> None:
        """Every policy a GET shows decides like one an accepted create or PATCH set for that sandbox."""
        seen = self.session.book.history.get(str(actual.get("id")))
        if seen is None:
            return
        policy = actual.get("network_policy")
        known = any(policy_difference(earlier, policy) is None for earlier in seen)
        hold(
            POLICY_KEPT,
            known,
            rule,
            f"{where}: {self.session.alias(str(actual.get('id')))} shows network_policy {policy!r}, which decides unlike "
            f"every policy an accepted create or PATCH set (accepted: {seen!r})",
        )

    def snapshot(self, rule: str, sb: SandboxHandle) -> tuple[int, Any]:
        """Return the target's own GET of a sandbox (status, normalised view) without asking the model."""
        response = self.session.send(rule, "GET", f"/sandboxes/{sb.target_id}")
        data: Any = None
        if response.status_code == 200:
            try:
                data = normalise_info(response.json(), self.session.id_of)
            except ValueError:
                data = response.text
        return response.status_code, data

    def unchanged(self, rule: str, sb: SandboxHandle, before: tuple[int, Any], contract: Contract) -> None:
        """Check that a refused request changed nothing: the behaviour under ``contract``, the whole body as a choice."""
        after = self.snapshot(rule, sb)
        if before[0] != after[0]:
            hold(contract, False, rule, f"a rejected request changed {sb.alias}: GET status {before[0]} -> {after[0]}")
            return
        old, new = before[1], after[1]
        if not (isinstance(old, dict) and isinstance(new, dict)):
            hold(contract, old == new, rule, f"a rejected request changed {sb.alias}: {old!r} -> {new!r}")
            return
        was, now = core_view(old), core_view(new)
        found = policy_difference(was["network_policy"], now["network_policy"])
        found = found or diff(
            {k: v for k, v in was.items() if k != "network_policy"},
            {k: v for k, v in now.items() if k != "network_policy"},
        )
        hold(contract, found is None, rule, f"a rejected request changed {sb.alias}: {found}")
        if self.session.strict:
            found = diff(old, new)
            hold(SANDBOX_INFO_EXACT, found is None, rule, f"a rejected request changed {sb.alias}: {found}")


def data_code(response: httpx.Response) -> str:
    """Return the JSON ``code`` of an answer ("" when it has none)."""
    data = json_body(response)
    code = data.get("code") if isinstance(data, dict) else None
    return code if isinstance(code, str) else ""


def policy_difference(want: Any, got: Any) -> str | None:
    """Return how policy ``got`` decides unlike ``want`` (the reference judging both), or None when they agree."""
    if normalise_policy(want) == normalise_policy(got):
        return None
    try:
        return behaviour_difference(reference_engine, got, want)
    except ValueError as exc:
        return f"the policy {got!r} cannot be judged: {exc}"


def _terminated(response: httpx.Response) -> bool:
    """Tell whether a GET answered a SandboxInfo with status ``terminated``."""
    if response.request.method != "GET":
        return False
    try:
        data = response.json()
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("status") == "terminated"
