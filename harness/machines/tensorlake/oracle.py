"""The TensorLake API machine's oracle: the mock's own model functions, called the way the routes call them.

Every prediction is one call of the function the mock's route or proxy calls (:mod:`~mockserver.tensorlake.model.lifecycle`,
:class:`IngressRules`, :mod:`mockserver.tensorlake.model.admin`) on a model of the oracle's own; a refusal
(:class:`ApiError`) becomes an expected status and code, an answer an expected normalised body. No rule is
copied here, so a difference the machine reports is the target's, not the oracle's.

The accepted API keys matter to the proxy (an unknown key answers 401, another project's key 403). When the
target's key set is known (its admin API answers ``GET /_mock/tensorlake/api-keys``) the oracle's model uses
it. When it is not, the model treats every key as valid, and for a request carrying a key other than the
machine's own the oracle also asks what the model answers if that key were not valid: where the two answers
differ (401 ``INVALID_API_KEY`` instead of 403 ``FORBIDDEN``), both are accepted, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from harness.machines.tensorlake.compare import URL_KEYS, Expected, Json, normalise_info
from harness.machines.tensorlake.probes import Resolve
from mockserver.core import ApiError, IdFactory, VirtualClock
from mockserver.tensorlake.model import (
    Admission,
    Call,
    IngressRules,
    KeyRing,
    ProxyRequest,
    Sandbox,
    Target,
    TensorLakeModel,
    admin,
    lifecycle,
    without_waiting,
)
from mockserver.tensorlake.model.auth import tenant_of
from mockserver.tensorlake.model.lifecycle import Answer, Outcome

__all__ = ["NAMESPACE", "Oracle", "Proxied"]

NAMESPACE = "default"
#: The ingress domain of the oracle's model (URLs are not compared: the target's own are checked for shape).
DOMAIN = "sandbox.oracle.invalid"


@dataclass(frozen=True)
class Proxied:
    """The model's answer to one proxied request.

    ``expected`` is the refusal (None: forwarded to the sandbox); ``admission`` what was admitted; ``woke``
    tells whether the request woke a suspended sandbox; ``strips_key`` whether the proxy removes the request's
    ``Authorization`` header (None: unknown, it depends on the target's key set).
    """

    expected: Expected | None
    admission: Admission | None = None
    woke: bool = False
    strips_key: bool | None = None


class Oracle:
    """Predict a TensorLake server's answers with the mock's model functions on a model of its own.

    ``key`` is the key the machine sends; ``keys`` the target's accepted keys (None: unknown).
    """

    def __init__(self, clock: VirtualClock, resolve: Resolve, key: str, keys: KeyRing | None = None) -> None:
        self.clock = clock
        self.resolve = resolve
        self.key = key
        self.keys_known = keys is not None
        self.model = TensorLakeModel(clock, IdFactory(0), resolve, keys or KeyRing())
        self.model.domain = DOMAIN
        self.ingress = IngressRules(self.model)

    # -- plumbing ------------------------------------------------------------------------------------------

    def call(self, **query: str) -> Call:
        """Return a lifecycle call with the machine's key (and ``query``), authenticated as the mock's gate does."""
        tenant = tenant_of(f"Bearer {self.key}", NAMESPACE, self.model.keys)
        return Call(tenant, query={k: [v] for k, v in query.items()})

    def anonymous(self) -> Expected | None:
        """Predict a lifecycle call without an ``Authorization`` header: the gate's refusal (None: it passes)."""
        try:
            tenant_of(None, NAMESPACE, self.model.keys)
        except ApiError as exc:
            return Expected.error(exc)
        return None

    def predict(self, outcome: Callable[[], Outcome]) -> Expected:
        """Return the prediction of one lifecycle call: its answer (waits followed at once, as a manual clock
        does) with the SandboxInfo normalised, or its refusal."""
        try:
            found: Answer = without_waiting(outcome())
        except ApiError as exc:
            return Expected.error(exc)
        return Expected(found.status, body=normalise_info(found.body, str))

    def lookup(self, model_id: str) -> Sandbox | None:
        """Return the live model sandbox settled to now, or None once it is gone."""
        with self.model.lock:
            sb = self.model.sandboxes.get(model_id)
            if sb is not None:
                self.model.settle(sb)
            return self.model.sandboxes.get(model_id)

    # -- lifecycle -----------------------------------------------------------------------------------------

    def create(self, body: Json) -> tuple[Expected, Sandbox | None]:
        """Predict ``POST /sandboxes`` (the create response without its URLs) and return the model's record."""
        try:
            found = without_waiting(lifecycle.create(self.model, self.call(), body))
        except ApiError as exc:
            return Expected.error(exc), None
        data = found.body if isinstance(found.body, dict) else {}
        record = self.model.sandboxes.get(str(data.get("sandbox_id"))) if found.status < 400 else None
        return Expected(found.status, body={k: v for k, v in data.items() if k not in URL_KEYS}), record

    def get(self, ident: str) -> Expected:
        """Predict ``GET /sandboxes/{id-or-name}``."""
        return self.predict(lambda: lifecycle.get(self.model, self.call(), ident))

    def list(self) -> Expected:
        """Predict ``GET /sandboxes`` (the normalised items)."""
        found = lifecycle.list_sandboxes(self.model, self.call())
        return Expected(found.status, body=[normalise_info(item, str) for item in found.body["sandboxes"]])

    def patch(self, model_id: str, body: Any) -> Expected:
        """Predict ``PATCH /sandboxes/{id}``."""
        return self.predict(lambda: lifecycle.patch(self.model, self.call(), model_id, body))

    def delete(self, model_id: str) -> Expected:
        """Predict ``DELETE /sandboxes/{id}``."""
        return self.predict(lambda: lifecycle.delete(self.model, self.call(), model_id))

    def suspend(self, model_id: str, wait_ms: int | None = None) -> Expected:
        """Predict ``POST /sandboxes/{id}/suspend`` (``?wait_ms=`` when given)."""
        call = self.call() if wait_ms is None else self.call(wait_ms=str(wait_ms))
        return self.predict(lambda: lifecycle.suspend(self.model, call, model_id))

    def resume(self, model_id: str, wait_ms: int | None = None) -> Expected:
        """Predict ``POST /sandboxes/{id}/resume`` (``?wait_ms=`` when given)."""
        call = self.call() if wait_ms is None else self.call(wait_ms=str(wait_ms))
        return self.predict(lambda: lifecycle.resume(self.model, call, model_id))

    # -- the proxy -----------------------------------------------------------------------------------------

    def admit(
        self, label: str, port: int, key: str | None, cookies: Mapping[str, str], query: Mapping[str, str]
    ) -> Proxied:
        """Predict the proxy's answer to a request for ``label`` (id or name) and ``port``.

        Waking a suspended sandbox with ``auto_resume`` changes the model, as it changes the target.
        """
        request = ProxyRequest(
            Target(label, port),
            authorization=None if key is None else f"Bearer {key}",
            cookie="; ".join(f"{k}={v}" for k, v in cookies.items()) or None,
            query=urlencode(dict(query)),
        )
        uncertain = not self.keys_known and key is not None and key != self.key
        alternative = self._refusal(request, KeyRing.of([self.key])) if uncertain else None
        try:
            sandbox = self.ingress.check(request)
        except ApiError as exc:
            return Proxied(self._with(Expected.error(exc), alternative))
        before = sandbox.status
        try:
            admission = without_waiting(self.ingress.admit(request))
        except ApiError as exc:
            return Proxied(self._with(Expected.error(exc), alternative), woke=_woke(before, sandbox))
        return Proxied(None, admission, _woke(before, sandbox), None if uncertain else admission.strip_authorization)

    def _refusal(self, request: ProxyRequest, keys: KeyRing) -> Expected | None:
        """Return the refusal the proxy's checks give ``request`` with ``keys`` accepted (None: it passes)."""
        try:
            self.ingress.check(request, keys)
        except ApiError as exc:
            return Expected.error(exc)
        return None

    def _with(self, expected: Expected, alternative: Expected | None) -> Expected:
        if alternative is None or alternative.status == expected.status:
            return expected
        return Expected(expected.status, expected.code, expected.body, also=(alternative,))

    def forwarded(self, headers: Mapping[str, str], admission: Admission) -> dict[str, str]:
        """Return the headers the sandbox receives for a request sent with ``headers`` (names lowercased)."""
        raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
        return {k.decode("latin-1"): v.decode("latin-1") for k, v in self.ingress.forwarded(raw, admission)}

    # -- admin verbs -----------------------------------------------------------------------------------------

    def add_session(self, token: str, body: Json) -> None:
        """Record a session the target's admin API issued, with what it was issued for."""
        admin.create_session(self.model, token, body)

    def set_timings(self, values: Mapping[str, float]) -> None:
        """Apply the transition timings the target was given."""
        admin.set_timings(self.model, dict(values))


def _woke(before: str, sandbox: Sandbox) -> bool:
    """Tell whether a request found ``sandbox`` suspended and left it otherwise (the proxy woke it)."""
    return before == "suspended" and sandbox.status != "suspended"
