"""The refusals of the OpenSandbox model whose wire body is not the flat ``{"code", "message"}`` JSON.

Most rules raise :class:`mockserver.core.ApiError`, which the routes render as ``{"code", "message"}``.
Two parts of OpenSandbox answer differently, and the model says so by the error's type (the routes decide
the bytes): the execd reverse proxy and the egress sidecar answer ``text/plain`` (:class:`TextError`, the
body is the message), execd's token middleware answers ``{"error": message}`` (:class:`ExecdAuthError`), and
FastAPI's own refusal of a body it cannot read answers ``{"detail": message}`` (:class:`DetailError`).
"""

from __future__ import annotations

from mockserver.core import ApiError

__all__ = [
    "CAPACITY_CODE",
    "DetailError",
    "ExecdAuthError",
    "TextError",
    "backend_connection_failed",
    "bad_gateway",
    "body_not_parsed",
    "capacity_exhausted",
    "unreachable",
    "wire_code",
]

#: The real server's code for a create refused for want of capacity (its Kubernetes pool; measured in its source).
CAPACITY_CODE = "KUBERNETES::POOL_CAPACITY_EXHAUSTED"


class TextError(ApiError):
    """A refusal carried as ``text/plain``: the body is :attr:`message`, there is no code on the wire."""


class ExecdAuthError(ApiError):
    """execd's access-token refusal, carried as ``{"error": message}``."""


class DetailError(ApiError):
    """A refusal FastAPI raises itself, carried as ``{"detail": message}`` (the server's handler passes it on)."""


def body_not_parsed() -> DetailError:
    """Return FastAPI's answer to a JSON body that is not UTF-8 (observed: 400, the detail below)."""
    return DetailError(400, "BODY_NOT_PARSED", "There was an error parsing the body")


def bad_gateway() -> TextError:
    """Return the execd reverse proxy's answer for a backend that is not there: 502 ``Bad Gateway`` (text)."""
    return TextError(502, "BAD_GATEWAY", "Bad Gateway")


def backend_connection_failed(port: int) -> ApiError:
    """Return the server proxy's 502 for a sandbox port nothing answers on."""
    return ApiError(
        502,
        "BACKEND_CONNECTION_FAILED",
        f"Could not connect to the backend sandbox 127.0.0.1:{port}: All connection attempts failed",
    )


def capacity_exhausted(retry_after: int = 1, message: str | None = None) -> ApiError:
    """Return the create refusal for want of capacity: 429 ``POOL_CAPACITY_EXHAUSTED`` with ``Retry-After``.

    The real 1.1.1 server's only capacity refusal (``services/k8s/kubernetes_service.py``,
    ``_pool_capacity_exhausted_error``); the SDK raises ``SandboxRateLimitException(retry_after)``.
    """
    return ApiError(
        429,
        CAPACITY_CODE,
        message or "No Pool capacity became available before the acquisition timeout.",
        headers={"Retry-After": str(max(1, retry_after))},
    )


def unreachable(port: int, via_proxy: bool) -> ApiError:
    """Return what the path in front of a dead sandbox answers: proxy JSON 502, or execd-proxy text 502."""
    return backend_connection_failed(port) if via_proxy else bad_gateway()


def wire_code(exc: ApiError) -> str | None:
    """Return the ``code`` a client finds in the refusal's body (None when the body carries none)."""
    return None if isinstance(exc, (TextError, ExecdAuthError, DetailError)) else exc.code
