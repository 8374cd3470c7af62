"""Pool and template management: what the real 1.1.1 server answers on a Docker runtime.

Both APIs need the Kubernetes runtime. On Docker every call is refused with 501, pools with
``KUBERNETES::POOL_NOT_SUPPORTED`` and templates with ``FSB::API_NOT_SUPPORTED`` (measured). The refusal comes
from the handler, so a request body is validated first (FastAPI's 422): ``CreatePoolRequest`` on
``POST /pools``, ``UpdatePoolRequest`` on ``PUT /pools/{name}``, ``CreateFsbTemplateRequest`` (no extra
fields) on ``POST /templates``, each declared in :mod:`.bodies`.

Known deviations: the Kubernetes-like profile refuses pools and templates with the same 501s (the real
Kubernetes runtime manages Pool CRDs and fast-sandbox templates; the mock emulates neither).
"""

from __future__ import annotations

from typing import Any, NoReturn

from mockserver.core import ApiError

__all__ = ["DEVIATING_OPERATIONS", "pool_call", "pool_not_supported", "template_call", "template_not_supported"]

#: The operations of the served OpenAPI documents the known deviations above concern (``mockserver.core.deviations``).
DEVIATING_OPERATIONS: dict[str, tuple[str, ...]] = {
    "lifecycle": (
        "POST /pools",
        "GET /pools",
        "GET /pools/{pool_name}",
        "PUT /pools/{pool_name}",
        "DELETE /pools/{pool_name}",
        "POST /templates",
        "GET /templates",
        "GET /templates/{template_id}",
        "DELETE /templates/{template_id}",
    )
}


def pool_not_supported() -> ApiError:
    """Return the Docker runtime's refusal of pool management."""
    return ApiError(
        501, "KUBERNETES::POOL_NOT_SUPPORTED", "Pool management is only available when runtime.type is 'kubernetes'."
    )


def template_not_supported() -> ApiError:
    """Return the Docker runtime's refusal of template management."""
    return ApiError(501, "FSB::API_NOT_SUPPORTED", "Template management requires the kubernetes runtime.")


def pool_call(method: str, name: str | None, body: Any = None) -> NoReturn:
    """Answer a pool call: the body model's 422 on create and update, else the Docker runtime's 501."""
    if method == "POST" and name is None:
        from .bodies import CreatePoolRequest, validated

        validated(CreatePoolRequest, body)
    elif method == "PUT":
        from .bodies import UpdatePoolRequest, validated

        validated(UpdatePoolRequest, body)
    raise pool_not_supported()


def template_call(method: str, body: Any = None) -> NoReturn:
    """Answer a template call: the body model's 422 on create, else the Docker runtime's 501."""
    if method == "POST":
        from .bodies import CreateTemplateRequest, validated

        validated(CreateTemplateRequest, body)
    raise template_not_supported()
