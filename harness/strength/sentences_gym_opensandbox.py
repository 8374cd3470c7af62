"""The quoted sentences of the NeMo Gym pages (sandbox_network, the OpenSandbox provider) and the OpenSandbox OpenAPI."""

from __future__ import annotations

from harness.strength.documents import Sentence, sentence

__all__ = ["NEMO_GYM", "OPENSANDBOX"]

_GYM_CLIENT = "describes NeMo Gym's own provider (a client of the OpenSandbox API), not the provider"

_NG = (
    sentence(
        "ng.limits-egress",
        "ng-net",
        "Return `spec` with egress limited to the model server and, for `model_and_tools`, the tool servers.",
    ),
    sentence("ng.inherit", "ng-net", "`inherit` leaves the provider's default network."),
    sentence(
        "ng.every-port",
        "ng-net",
        "Each allowed host is opened on every port and path, so co-hosted services stay reachable.",
    ),
    sentence(
        "ng.created-only",
        "ng-net",
        "The policy is fixed when the sandbox is created: it applies only to a sandbox the agent creates, never to a "
        "task sandbox borrowed from Resources.",
        "none",
        why="restrict_sandbox_network has no sandbox-origin input: the agent decides when to call it",
    ),
    sentence(
        "ng.model-only-refuses",
        "ng-net",
        "`model_only` blocks every tool host, so a required grant would fail only after the sandbox and the runtime "
        "exist; it is refused here instead.",
    ),
    sentence("ng.reject.explicit-policy", "ng-net", "an explicit provider policy as well"),
    sentence("ng.reject.no-policy-provider", "ng-net", "a provider without network policies"),
    sentence("ng.reject.unreachable", "ng-net", "an endpoint the sandbox cannot reach"),
    sentence("ng.reject.required-model-only", "ng-net", "or a required tool grant under `model_only`"),
    sentence(
        "ng.reject.error",
        "ng-net",
        "raises `AgentSeedRejectedError`, so the seed fails once with HTTP 422 instead of being retried; it is still "
        "a `ValueError`.",
    ),
    sentence("ng.modes", "ng-net", "Literal['inherit', 'model_only', 'model_and_tools']"),
)

_NG_OS = (
    sentence(
        "ng-os.create-blocks",
        "ng-os",
        "The create request blocks until the pod is allocated",
        "api",
        "opensandbox-api create",
    ),
    sentence(
        "ng-os.paused-no-execd",
        "ng-os",
        "A paused sandbox has no exec daemon to check; resume rebuilds its endpoints and performs the health check "
        "instead.",
        "api",
        "opensandbox-api run_command, pause, resume",
    ),
    sentence(
        "ng-os.reconnect-by-id",
        "ng-os",
        "OpenSandbox sandboxes are reachable by id from any process that has the connection config, so the id alone "
        "is enough to reconnect and no sandbox server is needed to share one.",
        "api",
        "opensandbox-api get",
    ),
    sentence(
        "ng-os.found-by-metadata",
        "ng-os",
        "the sandbox is found through the run's attribution metadata and this attempt's unique key",
        "api",
        "opensandbox-api list_sandboxes (metadata filter)",
    ),
    sentence(
        "ng-os.pty-missing",
        "ng-os",
        "A proxy 404 (route not registered yet) lacks execd's error code",
        "api",
        "opensandbox-api pty_missing (execd's answer for a PTY session that does not exist)",
    ),
    sentence(
        "ng-os.logs-combined",
        "ng-os",
        "The logs endpoint returns one combined stream",
        "api",
        "opensandbox-api background_logs",
    ),
    sentence(
        "ng-os.attribution",
        "ng-os",
        "Job attribution keys (`team` / `user` / `workload` / `run`) are merged into the spec's metadata (explicit "
        "spec keys win) so every sandbox is attributable via its labels.",
        "none",
        why=_GYM_CLIENT,
    ),
    sentence(
        "ng-os.submit-once",
        "ng-os",
        "Submit once: neither a 502 nor a timeout proves non-delivery.",
        "none",
        why=_GYM_CLIENT,
    ),
    sentence(
        "ng-os.domain-scheme",
        "ng-os",
        "Only `scheme://host[:port][/path-prefix]` is accepted: a query string or fragment is a configuration error.",
        "none",
        why=_GYM_CLIENT,
    ),
    sentence(
        "ng-os.pending-report",
        "ng-os",
        "Report provider_create_pending only for an observed Pending sandbox; otherwise report "
        "provider_create_timeout.",
        "none",
        why=_GYM_CLIENT,
    ),
    sentence(
        "ng-os.keepalive",
        "ng-os",
        "`keepalive_expiry_s` must stay below the server's own keep-alive idle timeout (uvicorn defaults to 5s)",
        "none",
        why="a deployment setting of the server (uvicorn's default), not a behaviour of the API",
    ),
)

_OS = (
    sentence(
        "os.merge",
        "os-egress",
        "Merge incoming egress rules with the currently enforced policy.",
    ),
    sentence(
        "os.merge.existing-remain",
        "os-egress",
        "Existing rules remain unless overridden by incoming rules.",
    ),
    sentence(
        "os.merge.incoming-priority",
        "os-egress",
        "Incoming rules are applied with higher priority than existing rules.",
    ),
    sentence(
        "os.merge.first-wins",
        "os-egress",
        "If multiple incoming rules refer to the same `target`, the first one wins.",
    ),
    sentence(
        "os.delete.removes",
        "os-egress",
        "Matching rules are removed; targets not found in the current policy are silently ignored (idempotent).",
    ),
    sentence(
        "os.policy.default-deny",
        "os-egress",
        'If `defaultAction` is omitted, the sidecar defaults to "deny"; passing an empty object or null results in '
        "allow-all behavior at startup.",
    ),
    sentence("os.policy.in-order", "os-egress", "List of egress rules evaluated in order."),
    sentence(
        "os.policy.default-action", "os-egress", 'Default action when no egress rule matches. Defaults to "deny".'
    ),
    sentence("os.rule.action", "os-egress", "enum: [allow, deny]"),
    sentence(
        "os.rule.target",
        "os-egress",
        'FQDN or wildcard domain (e.g., "example.com", "*.example.com"). IP/CIDR not yet supported in the egress MVP.',
    ),
    sentence("os.rule.required", "os-egress", "required: [action, target] additionalProperties: false"),
    sentence(
        "os.lifecycle.empty-allows",
        "os-lifecycle",
        "Ordered egress rules. Empty/omitted yields allow-all at startup.",
    ),
    sentence("os.lifecycle.target-min", "os-lifecycle", "minLength: 1 title: Target"),
)

_PROXY_RULE = "proxy_headers (harness.machines.opensandbox.proxy_rules)"
_OS_PROXY = (
    sentence(
        "os.proxy.api-key-header", "os-proxy", 'SANDBOX_API_KEY_HEADER = "OPEN-SANDBOX-API-KEY"', "api", _PROXY_RULE
    ),
    sentence(
        "os.proxy.secure-access-header",
        "os-proxy",
        'OPEN_SANDBOX_SECURE_ACCESS_HEADER = "OpenSandbox-Secure-Access"',
        "api",
        _PROXY_RULE,
    ),
    sentence(
        "os.proxy.sensitive",
        "os-proxy",
        'SENSITIVE_HEADERS = { "authorization", "cookie", SANDBOX_API_KEY_HEADER.lower(), '
        "OPEN_SANDBOX_SECURE_ACCESS_HEADER.lower(), }",
        "api",
        _PROXY_RULE,
    ),
    sentence(
        "os.proxy.forwarded",
        "os-proxy",
        'FORWARDED_HEADERS = { "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-port", '
        '"x-forwarded-proto", "x-real-ip", }',
        "api",
        _PROXY_RULE,
    ),
    sentence(
        "os.proxy.excluded",
        "os-proxy",
        "excluded = ( set(HOP_BY_HOP_HEADERS) | set(SENSITIVE_HEADERS) | set(FORWARDED_HEADERS) | "
        "PROXY_CONTROL_HEADERS )",
        "api",
        _PROXY_RULE,
    ),
    sentence(
        "os.proxy.rebuilt",
        "os-proxy",
        'headers["X-Forwarded-Proto"] = scheme inbound_host = request.headers.get("host", "") if inbound_host: '
        'headers["X-Forwarded-Host"] = inbound_host if request.client: headers["X-Forwarded-For"] = '
        "request.client.host",
        "api",
        _PROXY_RULE,
    ),
    sentence(
        "os.proxy.http-and-websocket",
        "os-proxy",
        "# Forwarded headers are stripped above and rebuilt from the connection # observed by this trusted proxy, "
        "so clients cannot spoof transport state. _set_forwarded_headers(headers, request)",
        "api",
        _PROXY_RULE,
    ),
    sentence(
        "os.proxy.websocket",
        "os-proxy",
        'connection_header=websocket.headers.get("connection"), ) _set_forwarded_headers(headers, websocket)',
        "api",
        _PROXY_RULE,
    ),
)

NEMO_GYM: tuple[Sentence, ...] = (*_NG, *_NG_OS)
OPENSANDBOX: tuple[Sentence, ...] = (*_OS, *_OS_PROXY)
