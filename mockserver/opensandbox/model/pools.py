"""Pool and template management: what the real 1.1.1 server answers on a Docker runtime.

Both APIs need the Kubernetes runtime. On Docker every call is refused with 501, pools with
``KUBERNETES::POOL_NOT_SUPPORTED`` and templates with ``FSB::API_NOT_SUPPORTED`` (measured). The refusal comes
from the handler, so a request body is validated first (FastAPI's 422): ``CreatePoolRequest`` on
``POST /pools``, ``UpdatePoolRequest`` on ``PUT /pools/{name}``, ``CreateFsbTemplateRequest`` (no extra
fields) on ``POST /templates``.

Known deviations: the Kubernetes-like profile refuses pools and templates with the same 501s (the real
Kubernetes runtime manages Pool CRDs and fast-sandbox templates; the mock emulates neither).
"""

from __future__ import annotations

from typing import Any, NoReturn

from mockserver.core import ApiError

from .validation import Checker, Pattern

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

_POOL_NAME = Pattern(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_CAPACITY = ("bufferMax", "bufferMin", "poolMax", "poolMin")
_TEMPLATE_FIELDS = frozenset(
    {"image", "resourceLimits", "entrypoint", "env", "metadata", "readiness", "publish", "format"}
)


def pool_not_supported() -> ApiError:
    """Return the Docker runtime's refusal of pool management."""
    return ApiError(
        501, "KUBERNETES::POOL_NOT_SUPPORTED", "Pool management is only available when runtime.type is 'kubernetes'."
    )


def template_not_supported() -> ApiError:
    """Return the Docker runtime's refusal of template management."""
    return ApiError(501, "FSB::API_NOT_SUPPORTED", "Template management requires the kubernetes runtime.")


def _required(check: Checker, data: dict[str, Any], key: str) -> Any:
    if key not in data:
        check.add("missing", ["body", key], data)
        return None
    return data[key]


def _check_capacity(check: Checker, data: dict[str, Any]) -> None:
    spec = _required(check, data, "capacitySpec")
    if "capacitySpec" not in data or (capacity := check.obj(spec, ["body", "capacitySpec"])) is None:
        return
    for key in _CAPACITY:
        loc: list[str | int] = ["body", "capacitySpec", key]
        if key not in capacity:
            check.add("missing", loc, capacity)
        else:
            check.integer(capacity[key], loc, ge=0)


def _check_create_pool(check: Checker, data: dict[str, Any]) -> None:
    if "name" in data:
        check.string(data["name"], ["body", "name"], max_length=253, pattern=_POOL_NAME)
    else:
        _required(check, data, "name")
    if "template" in data:
        if not isinstance(data["template"], dict):
            check.add("dict_type", ["body", "template"], data["template"])
    else:
        _required(check, data, "template")
    _check_capacity(check, data)


def _check_create_template(check: Checker, data: dict[str, Any]) -> None:
    if "image" in data:
        check.string(data["image"], ["body", "image"], min_length=1)
    else:
        _required(check, data, "image")
    if data.get("resourceLimits") is not None:
        check.str_map(data["resourceLimits"], ["body", "resourceLimits"])
    if data.get("entrypoint") is not None:
        check.str_list(data["entrypoint"], ["body", "entrypoint"], min_items=1)
    for key in ("env", "metadata"):
        if data.get(key) is not None:
            check.str_map(data[key], ["body", key])
    if data.get("readiness") is not None and (readiness := check.obj(data["readiness"], ["body", "readiness"])):
        if readiness.get("probe") is not None:
            check.string(readiness["probe"], ["body", "readiness", "probe"])
        if readiness.get("warmupSeconds") is not None:
            check.integer(readiness["warmupSeconds"], ["body", "readiness", "warmupSeconds"], ge=0)
    if "publish" in data:
        check.string(data["publish"], ["body", "publish"], min_length=1)
    else:
        _required(check, data, "publish")
    if "format" in data:
        check.literal(data["format"], ["body", "format"], ("native", "overlaybd"))
    for key in data:
        if key not in _TEMPLATE_FIELDS:
            check.add("extra_forbidden", ["body", key], data[key], "Extra inputs are not permitted")


def _checked(body: Any, check_fields: Any) -> None:
    check = Checker()
    data = check.obj(body, ["body"])
    check.raise_if_any()
    assert data is not None
    check_fields(check, data)
    check.raise_if_any()


def pool_call(method: str, name: str | None, body: Any = None) -> NoReturn:
    """Answer a pool call: the body model's 422 on create and update, else the Docker runtime's 501."""
    if method == "POST" and name is None:
        _checked(body, _check_create_pool)
    elif method == "PUT":
        _checked(body, _check_capacity)
    raise pool_not_supported()


def template_call(method: str, body: Any = None) -> NoReturn:
    """Answer a template call: the body model's 422 on create, else the Docker runtime's 501."""
    if method == "POST":
        _checked(body, _check_create_template)
    raise template_not_supported()
