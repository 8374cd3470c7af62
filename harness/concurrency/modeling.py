"""The frame of a provider's sequential specification built on the mock's own model, one sandbox at a time.

:class:`ModelSpec` keeps each sandbox's state as the model's own dump of a model holding just that sandbox,
its filesystems left out (they are not state the concurrency contract compares), as canonical JSON, so
equal states compare equal whatever the path. :meth:`ModelSpec.step` loads the dump into a fresh model,
lets the provider's :meth:`ModelSpec._answer` call what the routes call, and dumps the model again; the
answers (and the refusals the model raises) go through the provider's ``output_of`` projection
(:meth:`ModelSpec._output`). Steps are memoised on state and input. The providers' specifications are
:mod:`harness.concurrency.tensorlake_model` and :mod:`harness.concurrency.opensandbox_model`.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from harness.concurrency.history import Operation
from harness.concurrency.linearizability import Spec
from mockserver.core import ApiError

__all__ = ["DumpedModel", "ModelSpec", "canonical"]


class DumpedModel(Protocol):
    """A provider model that dumps itself to JSON-like data and loads that data back."""

    def dump(self) -> dict[str, Any]:
        """Return the model's whole state as JSON-like data."""
        ...

    def load(self, data: dict[str, Any]) -> None:
        """Replace the model's state with :meth:`dump` output."""
        ...


M = TypeVar("M", bound=DumpedModel)


def canonical(value: Any) -> str:
    """Return ``value`` as canonical JSON (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class ModelSpec(Spec[str], Generic[M]):
    """A sequential specification of one sandbox whose state is a provider model's dump (see the module docstring).

    A subclass names the dump's sandbox lists (:attr:`sandbox_groups`), the empty filesystem loaded in place
    of the one left out (:attr:`empty_fs`), and gives :meth:`_model`, :meth:`_ident`, :meth:`_answer` and
    :meth:`_output`; it sets the attributes :meth:`_model` needs before calling ``super().__init__``.
    """

    #: The provider as named in the error on an input that is not one of its operations ("a TensorLake").
    input_of: ClassVar[str]
    #: The lists of the dump that hold sandboxes (each sandbox's ``fs`` is left out of the state).
    sandbox_groups: ClassVar[tuple[str, ...]]
    #: The filesystem dump put back into every sandbox before the model loads the state.
    empty_fs: ClassVar[dict[str, Any]]
    #: Exceptions the model raises on an invalid request, answered as a 422 without a body.
    invalid_request: ClassVar[tuple[type[Exception], ...]] = ()

    def __init__(self, *, strict: bool, start: float = 0.0) -> None:
        self.strict = strict
        self.start = start
        self._memo: dict[tuple[str, Hashable], tuple[str, Hashable]] = {}
        self._initial = self._save(self._model())

    def _model(self) -> M:
        """Return a fresh, empty model."""
        raise NotImplementedError

    def _ident(self, model: M) -> str:
        """Return the id of the one sandbox ``model`` holds (a placeholder when there is none)."""
        raise NotImplementedError

    def _answer(self, model: M, kind: str, ident: str, request: tuple[Any, ...]) -> Hashable:
        """Apply one ``kind`` request to ``model`` (changing it) and return the output; model errors propagate."""
        raise NotImplementedError

    def _output(self, kind: str, status: int, body: Any) -> Hashable:
        """Return the provider's comparable output of one answer to a ``kind`` request."""
        raise NotImplementedError

    def _load(self, state: str) -> M:
        data = json.loads(state)
        for group in self.sandbox_groups:
            for sandbox in data[group]:
                sandbox["fs"] = self.empty_fs
        model = self._model()
        model.load(data)
        return model

    def _save(self, model: M) -> str:
        data = model.dump()
        for group in self.sandbox_groups:
            for sandbox in data[group]:
                sandbox.pop("fs", None)
        return canonical(data)

    def initial(self) -> str:
        """Return the dump of an empty model (no sandbox: not created yet)."""
        return self._initial

    def step(self, state: str, op: Operation) -> tuple[str, Hashable]:
        """Apply one operation through the model (memoised on state and input)."""
        memo = self._memo.get((state, op.input))
        if memo is None:
            memo = self._apply(state, op.input)
            self._memo[(state, op.input)] = memo
        return memo

    def _apply(self, state: str, request: Hashable) -> tuple[str, Hashable]:
        if not isinstance(request, tuple) or not request:
            raise ValueError(f"not {self.input_of} concurrency input: {request!r}")
        kind = str(request[0])
        model = self._load(state)
        ident = self._ident(model)
        try:
            output = self._answer(model, kind, ident, request)
        except self.invalid_request:
            output = self._output(kind, 422, None)
        except ApiError as exc:
            output = self._output(kind, exc.status, {"code": exc.code})
        return self._save(model), output
