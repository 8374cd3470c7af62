"""The frame of a provider's concurrency driver: create, GET, list and delete of sandboxes, and the choice of step.

:class:`LifecycleDriver` is what the two providers' drivers share (:mod:`harness.concurrency.tensorlake_driver`,
:mod:`harness.concurrency.opensandbox_driver`): a client creates a sandbox when the pool is short of one, lists
when there is none to operate on, and otherwise draws a weighted-random operation on one; a GET, a list or a
delete is sent the same way on both, any other operation is the provider's (:meth:`LifecycleDriver._operate`).
Answers become outputs through the provider's projection (:meth:`LifecycleDriver._output`), the one its
model's answers go through too.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, ClassVar

import httpx

from harness.concurrency.history import Operation
from harness.concurrency.modeling import canonical
from harness.concurrency.workload import ClientContext, listed, perform

__all__ = ["LifecycleDriver"]


class LifecycleDriver:
    """A provider's lifecycle operations for the concurrency workload (subclasses fill in the hooks)."""

    provider: str
    #: Kinds that change nothing (their lost operations are left out of the check).
    read_only: frozenset[str]
    #: Relative frequency of each operation on an existing sandbox.
    weights: ClassVar[tuple[tuple[str, int], ...]]
    #: The path of the sandbox collection; one sandbox is ``{sandboxes_path}/{id}``.
    sandboxes_path: ClassVar[str]
    #: The field of a list answer that holds the sandboxes.
    list_field: ClassVar[str]
    #: The body of an answer without content (one that is not JSON reads as its first 200 characters).
    empty_body: ClassVar[Any]

    def __init__(self, base_url: str, *, strict: bool, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.strict = strict
        self.timeout = timeout
        self._kinds = [kind for kind, _ in self.weights]
        self._weights = [weight for _, weight in self.weights]

    # -- the provider's hooks ----------------------------------------------------------------------

    def _output(self, kind: str, status: int, body: Any) -> Hashable:
        """Return the provider's comparable output of one answer to a ``kind`` request."""
        raise NotImplementedError

    def _create_body(self, ctx: ClientContext) -> dict[str, Any]:
        """Return the body of a create (drawn from ``ctx.rng``)."""
        raise NotImplementedError

    def _created_id(self, body: dict[str, Any]) -> Any:
        """Return the sandbox id a create's answer names (checked to be a string by the caller)."""
        raise NotImplementedError

    def _reach(self, http: httpx.Client, key: str) -> Any:
        """Return what the clients need to reach a sandbox just created, beyond its id (default: nothing)."""
        return None

    def _kind(self, kind: str, extra: Any) -> str:
        """Return the operation to run on a sandbox, given the drawn ``kind`` and the sandbox's extra."""
        return kind

    def _operate(self, ctx: ClientContext, key: str, kind: str, extra: Any) -> None:
        """Run the provider's own operation ``kind`` (not get, list or delete) on sandbox ``key``."""
        raise NotImplementedError

    def _list_url(self) -> str:
        """Return the URL of the list request (default: the sandbox collection)."""
        return self.sandboxes_path

    def _list_view(self, item: dict[str, Any]) -> Hashable:
        """Return what one list item says about its sandbox."""
        raise NotImplementedError

    # -- shared ------------------------------------------------------------------------------------

    def _body(self, response: httpx.Response) -> Any:
        if not response.content:
            return self.empty_body
        try:
            return response.json()
        except ValueError:
            return response.text[:200]

    def _observe(self, kind: str) -> Callable[[httpx.Response], Hashable]:
        return lambda response: self._output(kind, response.status_code, self._body(response))

    def step(self, ctx: ClientContext) -> None:
        """Create a sandbox when the pool is short of one, else run a weighted-random operation on one."""
        if ctx.pool.claim_create():
            self._create(ctx)
            return
        picked = ctx.pool.pick(ctx.rng)
        if picked is None:
            self._list(ctx)
            return
        key, extra = picked
        kind = self._kind(ctx.rng.choices(self._kinds, self._weights)[0], extra)
        path = f"{self.sandboxes_path}/{key}"
        if kind == "get":
            perform(ctx, "get", ("get",), key, lambda: ctx.http.get(path), self._observe("get"))
        elif kind == "list":
            self._list(ctx)
        elif kind == "delete":
            op, _ = perform(ctx, "delete", ("delete",), key, lambda: ctx.http.delete(path), self._observe("delete"))
            if self.deleted(op):
                ctx.pool.retire(key)
        else:
            self._operate(ctx, key, kind, extra)

    def _create(self, ctx: ClientContext) -> None:
        body = self._create_body(ctx)

        def key_of(response: httpx.Response) -> str | None:
            data = self._body(response)
            ident = self._created_id(data) if isinstance(data, dict) else None
            return ident if response.is_success and isinstance(ident, str) else None

        op, _ = perform(
            ctx,
            "create",
            ("create", canonical(body)),
            None,
            lambda: ctx.http.post(self.sandboxes_path, json=body),
            self._observe("create"),
            key_of,
        )
        if op.key is None:
            ctx.pool.create_failed()
            return
        ctx.pool.created_ok(op.key, self._reach(ctx.http, op.key))

    def _list(self, ctx: ClientContext) -> None:
        def observe(response: httpx.Response) -> Hashable:
            data = self._body(response)
            items = data.get(self.list_field) if isinstance(data, dict) else None
            if not response.is_success or not isinstance(items, list):
                return self._output("list", response.status_code if not response.is_success else 502, data)
            return listed([(str(item.get("id")), self._list_view(item)) for item in items if isinstance(item, dict)])

        url = self._list_url()
        perform(ctx, "list", ("list",), None, lambda: ctx.http.get(url), observe)

    def deleted(self, op: Operation) -> bool:
        """Tell whether ``op`` is an acknowledged delete."""
        return op.kind == "delete" and isinstance(op.output, tuple) and op.output[0] == "ok"

    def cleanup(self, keys: Sequence[str]) -> None:
        """Delete every sandbox in ``keys`` (errors ignored: some are gone already)."""
        with self.client() as http:
            for key in keys:
                try:
                    http.delete(f"{self.sandboxes_path}/{key}")
                except httpx.HTTPError:
                    continue

    def client(self) -> httpx.Client:
        """Return a new HTTP client on the target (one per client thread)."""
        raise NotImplementedError
