"""execd's code interpreter (``/code``, ``/code/context``, ``/code/contexts``): requests, refusals and events.

A context is a long-lived interpreter whose state (variables, imports) one run leaves for the next:
``POST /code/context {"language", "cwd"?}`` answers ``{"id", "language", "cwd"?}``; ``POST /code {"code",
"context": {"id"?, "language"?}}`` streams execd's SSE events (``init`` with the context id, ``stdout`` /
``stderr``, ``execution_count`` and ``result`` (``results: {"text": repr}``) for a last expression, then
``execution_complete`` or ``error`` ``{"ename", "evalue", "traceback"}``). Without a context id the
language's default context runs it (made on first use); without a language the code runs as a shell
command, as execd does. ``DELETE /code?id=`` interrupts a running cell (SIGINT).

Served only by a runtime with real processes (``runtime="linux"``): ``python`` (the Python interpreter of
the sandbox), ``bash`` (a shell whose variables and directory persist between runs) and ``javascript``
(``node`` in the sandbox, where there is one); other languages, and ``javascript`` without ``node``, fail to
create as execd does without their kernel (500 ``RUNTIME_ERROR`` "kernel not found"). Jupyter's port
(:data:`JUPYTER_PORT`) accepts connections inside the sandbox, so the code-interpreter SDK's strict health
check passes. The command emulator has no interpreter: every code route answers 501 ``NOT_SUPPORTED``
(:func:`not_supported`, execd's status for a feature its platform lacks, as ``POST /pty`` there), naming
``--runtime linux``.

Known deviations: the Jupyter port accepts and closes connections (the mock's kernels are its own, not
Jupyter's); a cell's value is reported as its ``repr`` only (``text``; ``util.inspect`` for javascript);
display data and rich outputs are not produced; one cell runs at a time per context (another one is refused
500 "session is busy", as execd does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mockserver.core import ApiError

from .execd import invalid

__all__ = [
    "JUPYTER_PORT",
    "LANGUAGES",
    "CodeContext",
    "CodeRun",
    "busy",
    "context_body",
    "context_not_found",
    "create_failed",
    "not_supported",
    "parse_context",
    "parse_run",
    "require_id",
    "require_language",
    "run_failed",
]

#: The languages a context can have here (``javascript`` only where the sandbox has ``node``).
LANGUAGES = ("python", "bash", "javascript")
#: Where a code-interpreter image's Jupyter kernel gateway listens inside the sandbox (the SDK's health check).
JUPYTER_PORT = 44771


@dataclass
class CodeContext:
    """One code context: its id, language and working directory."""

    id: str
    language: str
    cwd: str | None = None


@dataclass(frozen=True)
class CodeRun:
    """A validated ``POST /code``: the code, and the context (id, language) it names, if any."""

    code: str
    context_id: str | None
    language: str | None


def parse_context(body: Any) -> tuple[str, str | None]:
    """Validate ``POST /code/context``: return the language and the working directory."""
    if not isinstance(body, dict):
        raise invalid("error parsing request, MAYBE invalid body format. expected a JSON object")
    language, cwd = body.get("language"), body.get("cwd")
    if not isinstance(language, str) or (cwd is not None and not isinstance(cwd, str)):
        raise invalid("error parsing request, MAYBE invalid body format. language and cwd must be strings")
    return language, cwd or None


def parse_run(body: Any) -> CodeRun:
    """Validate ``POST /code``: ``code`` is required; ``context`` is an optional ``{"id", "language"}``."""
    if not isinstance(body, dict):
        raise invalid("error parsing request, MAYBE invalid body format. expected a JSON object")
    code = body.get("code")
    if not isinstance(code, str) or not code:
        raise invalid("invalid request, validation error Key: 'RunCodeRequest.Code' Error:Field validation failed")
    context = body.get("context")
    context = {} if context is None else context
    if not isinstance(context, dict):
        raise invalid("error parsing request, MAYBE invalid body format. context must be an object")
    ident, language = context.get("id"), context.get("language")
    if (ident is not None and not isinstance(ident, str)) or (language is not None and not isinstance(language, str)):
        raise invalid("error parsing request, MAYBE invalid body format. context id and language must be strings")
    return CodeRun(code, ident or None, language or None)


def context_body(context: CodeContext) -> dict[str, Any]:
    """Return the ``CodeContext`` JSON of a context."""
    body: dict[str, Any] = {"id": context.id, "language": context.language}
    if context.cwd:
        body["cwd"] = context.cwd
    return body


def require_language(raw: str | None) -> str:
    """Return the ``?language=`` a bulk delete needs; 400 ``MISSING_QUERY`` without it."""
    if not raw:
        raise ApiError(400, "MISSING_QUERY", "missing query parameter 'language'")
    return raw


def require_id(raw: str | None) -> str:
    """Return the ``?id=`` of an interrupt; 400 ``MISSING_QUERY`` without it."""
    if not raw:
        raise ApiError(400, "MISSING_QUERY", "missing query parameter 'id'")
    return raw


def context_not_found(context_id: str) -> ApiError:
    """Return execd's 404 for an unknown context."""
    return ApiError(404, "CONTEXT_NOT_FOUND", f"context {context_id} not found")


def create_failed(reason: str) -> ApiError:
    """Return execd's 500 when a context cannot be created (e.g. no kernel for the language)."""
    return ApiError(500, "RUNTIME_ERROR", f"error creating code context. {reason}")


def run_failed(reason: str) -> ApiError:
    """Return execd's 500 when code cannot run (an unknown context, a busy one, no kernel)."""
    return ApiError(500, "RUNTIME_ERROR", f"error running codes {reason}")


def not_supported() -> ApiError:
    """Return the command emulator's answer to every code route: 501 ``NOT_SUPPORTED`` naming ``--runtime linux``.

    A choice: execd answers 501 ``NOT_SUPPORTED`` for a feature its platform lacks (``POST /pty`` without PTY
    support), and the SDK reports it as a ``SandboxApiException`` with this message.
    """
    return ApiError(
        501,
        "NOT_SUPPORTED",
        "the code interpreter is not supported by the sandproof command emulator: "
        "start the mock with --runtime linux (real processes) to run code",
    )


def busy() -> ApiError:
    """Return the refusal of a run on a context whose previous cell still runs."""
    return run_failed("session is busy")
