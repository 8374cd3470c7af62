"""HTTP details of the lifecycle server and what the real opensandbox-server 1.1.1 answered (Docker runtime).

Measured with httpx against the real server on the fake Docker Engine API, with its API key unless a case
says otherwise. ``tests/harness/differential/test_real_server.py`` replays every case against the real server,
``tests/opensandbox/routes/test_lifecycle.py`` and ``test_gate.py`` against the mock. ``{id}`` stands for a
live sandbox's id.
"""

from __future__ import annotations

from typing import Any

import httpx

Answer = tuple[int, Any]

#: A path and a method it does not serve -> the ``Allow`` header of the 405 (the first route of the path).
ALLOW: dict[tuple[str, str], str] = {
    ("HEAD", "/health"): "GET",
    ("HEAD", "/version"): "GET",
    ("POST", "/health"): "GET",
    ("HEAD", "/v1/sandboxes"): "POST",
    ("PUT", "/v1/sandboxes"): "POST",
    ("TRACE", "/v1/sandboxes"): "POST",
    ("HEAD", "/sandboxes"): "POST",
    ("HEAD", "/v1/sandboxes/{id}"): "GET",
    ("PUT", "/v1/sandboxes/{id}"): "GET",
    ("GET", "/v1/sandboxes/{id}/metadata"): "PATCH",
    ("GET", "/v1/sandboxes/{id}/pause"): "POST",
    ("GET", "/v1/sandboxes/{id}/resume"): "POST",
    ("GET", "/v1/sandboxes/{id}/renew-expiration"): "POST",
    ("GET", "/v1/sandboxes/{id}/snapshots"): "POST",
    ("HEAD", "/v1/sandboxes/{id}/endpoints/44772"): "GET",
    ("POST", "/v1/sandboxes/{id}/networkpolicy"): "GET",
    ("HEAD", "/v1/snapshots"): "GET",
    ("POST", "/v1/snapshots/x"): "GET",
    ("GET", "/v1/metrics/events"): "POST",
    ("HEAD", "/v1/pools"): "POST",
    ("PATCH", "/v1/pools/x"): "GET",
    ("HEAD", "/v1/templates"): "POST",
    ("PATCH", "/v1/templates/x"): "GET",
}
#: The body of every 405.
NOT_ALLOWED = {"detail": "Method Not Allowed"}
#: Methods the server proxy does not forward (405; the real ``Allow`` lists the other five in a set's order).
PROXY_REFUSED = ("HEAD", "OPTIONS")
PROXY_METHODS = {"DELETE", "GET", "PATCH", "POST", "PUT"}

ORIGIN = "http://example.com"
#: A preflight (no API key): 200 ``OK`` with these headers (``Access-Control-Allow-Headers`` echoes the request).
PREFLIGHT_REQUEST = {
    "Origin": ORIGIN,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "content-type,open-sandbox-api-key",
}
PREFLIGHT_HEADERS = {
    "access-control-allow-origin": ORIGIN,
    "access-control-allow-credentials": "true",
    "access-control-allow-methods": "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT, QUERY",
    "access-control-allow-headers": "content-type,open-sandbox-api-key",
    "access-control-max-age": "600",
    "vary": "Origin, Access-Control-Request-Method, Access-Control-Request-Headers, Access-Control-Request-Private-Network",
}
PREFLIGHT_PATHS = ("/v1/sandboxes", "/health", "/v1/sandboxes/{id}/proxy/44772/ping")
#: Any answer to a request with an ``Origin`` (success, 401, 404, 405 alike) carries these.
ORIGIN_HEADERS = {
    "access-control-allow-origin": ORIGIN,
    "access-control-allow-credentials": "true",
    "access-control-expose-headers": "OPEN-SANDBOX-ORIGIN",
    "vary": "Origin",
}
#: (method, path, authenticated) of requests with an ``Origin``, and the status they get.
ORIGIN_CASES: dict[str, tuple[str, str, bool, int]] = {
    "health": ("GET", "/health", False, 200),
    "list": ("GET", "/v1/sandboxes", True, 200),
    "unauthenticated": ("GET", "/v1/sandboxes", False, 401),
    "options-without-preflight": ("OPTIONS", "/v1/sandboxes", False, 401),
    "unknown-sandbox": ("GET", "/v1/sandboxes/nope", True, 404),
    "unknown-route": ("GET", "/v1/nothing", True, 404),
    "method-not-allowed": ("PUT", "/v1/sandboxes", True, 405),
}

POOLS_501 = {
    "code": "KUBERNETES::POOL_NOT_SUPPORTED",
    "message": "Pool management is only available when runtime.type is 'kubernetes'.",
}
TEMPLATES_501 = {"code": "FSB::API_NOT_SUPPORTED", "message": "Template management requires the kubernetes runtime."}
_CAPACITY = {"bufferMax": 1, "bufferMin": 0, "poolMax": 1, "poolMin": 0}


def _missing(*names: str, given: Any = None) -> dict[str, Any]:
    given = {} if given is None else given
    return {"detail": [{"type": "missing", "loc": ["body", n], "msg": "Field required", "input": given} for n in names]}


#: (method, path, JSON body or None) -> the real answer (pool and template bodies are validated before the 501).
POOLS_AND_TEMPLATES: dict[str, tuple[str, str, Any, Answer]] = {
    "list-pools": ("GET", "/v1/pools", None, (501, POOLS_501)),
    "list-pools-bare": ("GET", "/pools", None, (501, POOLS_501)),
    "get-pool": ("GET", "/v1/pools/x", None, (501, POOLS_501)),
    "delete-pool": ("DELETE", "/v1/pools/x", None, (501, POOLS_501)),
    "create-pool-empty": ("POST", "/v1/pools", {}, (422, _missing("name", "template", "capacitySpec"))),
    "create-pool": (
        "POST",
        "/v1/pools",
        {"name": "p", "template": {}, "capacitySpec": _CAPACITY},
        (501, POOLS_501),
    ),
    "update-pool-empty": ("PUT", "/v1/pools/x", {}, (422, _missing("capacitySpec"))),
    "list-templates": ("GET", "/v1/templates", None, (501, TEMPLATES_501)),
    "list-templates-bare": ("GET", "/templates", None, (501, TEMPLATES_501)),
    "get-template": ("GET", "/v1/templates/x", None, (501, TEMPLATES_501)),
    "delete-template": ("DELETE", "/v1/templates/x", None, (501, TEMPLATES_501)),
    "create-template-empty": ("POST", "/v1/templates", {}, (422, _missing("image", "publish"))),
    "create-template-extra-field": (
        "POST",
        "/v1/templates",
        {"name": "t"},
        (
            422,
            {
                "detail": [
                    *_missing("image", "publish", given={"name": "t"})["detail"],
                    {
                        "type": "extra_forbidden",
                        "loc": ["body", "name"],
                        "msg": "Extra inputs are not permitted",
                        "input": "t",
                    },
                ]
            },
        ),
    ),
}

METRICS_EVENT = {"eventType": "sandbox.create", "createDurationMs": 5, "success": True}
#: ``sandboxId`` of a metrics event -> 422 (an ``Input should be a valid string`` entry) or 204.
METRICS_SANDBOX_IDS: tuple[tuple[Any, int], ...] = (
    ({"a": 1}, 422),
    ([1], 422),
    (5, 422),
    (True, 422),
    (None, 204),
    ("abc", 204),
)

#: Bodies of ``/networkpolicy`` on an unknown sandbox: the body is checked first (422), the sandbox next (404).
NETWORK_POLICY_BODIES: dict[str, tuple[str, Any, Answer]] = {
    "patch-object": (
        "PATCH",
        {"x": 1},
        (
            422,
            {
                "detail": [
                    {"type": "list_type", "loc": ["body"], "msg": "Input should be a valid list", "input": {"x": 1}}
                ]
            },
        ),
    ),
    "put-list": (
        "PUT",
        [1],
        (
            422,
            {
                "detail": [
                    {
                        "type": "model_attributes_type",
                        "loc": ["body"],
                        "msg": "Input should be a valid dictionary or object to extract fields from",
                        "input": [1],
                    }
                ]
            },
        ),
    ),
    "delete-object": (
        "DELETE",
        {"a": 1},
        (
            422,
            {
                "detail": [
                    {"type": "list_type", "loc": ["body"], "msg": "Input should be a valid list", "input": {"a": 1}}
                ]
            },
        ),
    ),
    "patch-valid": (
        "PATCH",
        [{"action": "allow", "target": "a.com"}],
        (404, {"code": "DOCKER::SANDBOX_NOT_FOUND", "message": "Sandbox nope not found."}),
    ),
}


# --- the checks, run against the real server and the mock alike ---------------------------------------


def check_allow(client: httpx.Client, sandbox_id: str) -> None:
    """Every 405 names the path's first route's method in ``Allow``; HEAD is never served."""
    for (method, path), allow in ALLOW.items():
        resp = client.request(method, path.replace("{id}", sandbox_id))
        assert (resp.status_code, resp.headers.get("allow")) == (405, allow), (method, path, resp.text)
        if method != "HEAD":
            assert resp.json() == NOT_ALLOWED
    for method in PROXY_REFUSED:
        resp = client.request(method, f"/v1/sandboxes/{sandbox_id}/proxy/44772/ping")
        assert resp.status_code == 405
        assert set(resp.headers["allow"].split(", ")) == PROXY_METHODS


def check_cors(client: httpx.Client, anon: httpx.Client, sandbox_id: str) -> None:
    """Answer preflights without a key; put the CORS headers on every answer to a request with an ``Origin``."""
    for path in PREFLIGHT_PATHS:
        resp = anon.options(path.replace("{id}", sandbox_id), headers=PREFLIGHT_REQUEST)
        assert (resp.status_code, resp.text) == (200, "OK"), path
        assert {k: resp.headers.get(k) for k in PREFLIGHT_HEADERS} == PREFLIGHT_HEADERS, path
        assert "x-request-id" in resp.headers
    for name, (method, path, keyed, status) in ORIGIN_CASES.items():
        resp = (client if keyed else anon).request(method, path, headers={"Origin": ORIGIN})
        assert resp.status_code == status, name
        assert {k: resp.headers.get(k) for k in ORIGIN_HEADERS} == ORIGIN_HEADERS, name
    plain = anon.get("/health")
    assert plain.headers["vary"] == "Origin" and "access-control-allow-origin" not in plain.headers


def check_pools_and_templates(client: httpx.Client) -> None:
    """Refuse pools and templates with the Docker runtime's 501s, after validating request bodies."""
    for name, (method, path, body, (status, expected)) in POOLS_AND_TEMPLATES.items():
        resp = client.request(method, path, json=body)
        assert (resp.status_code, resp.json()) == (status, expected), name


def check_metrics_sandbox_ids(client: httpx.Client) -> None:
    """A metrics event's ``sandboxId`` must be a string or null."""
    for value, status in METRICS_SANDBOX_IDS:
        resp = client.post("/v1/metrics/events", json={**METRICS_EVENT, "sandboxId": value})
        assert resp.status_code == status, value
        if status == 422:
            entry = {"type": "string_type", "loc": ["body", "sandboxId"], "msg": "Input should be a valid string"}
            assert resp.json() == {"detail": [{**entry, "input": value}]}


def check_network_policy_body_first(client: httpx.Client) -> None:
    """Check a ``/networkpolicy`` body before looking the sandbox up."""
    for name, (method, body, (status, expected)) in NETWORK_POLICY_BODIES.items():
        resp = client.request(method, "/v1/sandboxes/nope/networkpolicy", json=body)
        assert (resp.status_code, resp.json()) == (status, expected), name
