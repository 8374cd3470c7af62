"""The provider documents sandproof's contracts cite, vendored in the repository, and their testable sentences.

A :class:`Document` is a vendored copy (``harness/specs/seeds/`` for the provider pages and the SDK docstring,
``harness/specs/opensandbox/`` for the OpenAPI documents); nothing reads ``/work/shared`` at run time. A
:class:`Sentence` quotes one sentence or table row of a document verbatim (whitespace collapsed, checked by
:func:`missing_quotes`) and says how it can be tested:

* ``level="policy"``: by a check of a policy engine or of ``restrict_sandbox_network`` (a tagged contract
  must cite it; :mod:`harness.reporting.contracts_doc` counts the coverage);
* ``level="api"``: only through the provider's HTTP API; ``rule`` names the API state machine rule that
  checks it today (its assertions are tagged in a later step) or says that no rule does yet;
* ``level="none"``: not testable by a contract suite, with the reason in ``why``.

The seed documents (``seed=True``) are the three provider pages; the coverage number is over their testable
sentences.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

__all__ = ["DOCUMENTS", "SENTENCES", "Document", "Level", "Sentence", "document_text", "missing_quotes"]

ROOT = Path(__file__).resolve().parents[2]
Level = Literal["policy", "api", "none"]


@dataclass(frozen=True)
class Document:
    """A vendored provider document: key, title, repository path, where it came from, and whether it is a seed."""

    key: str
    title: str
    path: str
    origin: str
    seed: bool


DOCUMENTS: dict[str, Document] = {
    d.key: d
    for d in (
        Document(
            "tl-net",
            "TensorLake docs, Networking",
            "harness/specs/seeds/tensorlake-networking.md",
            "docs.tensorlake.ai, Sandboxes > Networking",
            True,
        ),
        Document(
            "ng-net",
            "NeMo Gym 0.7.0 docs, nemo_gym.agents.utils.sandbox_network",
            "harness/specs/seeds/nemo-gym-sandbox-network.md",
            "docs.nvidia.com/nemo/gym/v0.7.0, nemo_gym.agents.utils.sandbox_network",
            True,
        ),
        Document(
            "ng-os",
            "NeMo Gym docs, nemo_gym.sandbox.providers.opensandbox",
            "harness/specs/seeds/nemo-gym-opensandbox-provider.md",
            "docs.nvidia.com/nemo/gym/v0.4.0, nemo_gym.sandbox.providers.opensandbox",
            True,
        ),
        Document(
            "tl-sdk",
            "tensorlake SDK 0.5.163, NetworkConfig docstring",
            "harness/specs/seeds/tensorlake-sdk-networkconfig.md",
            "the installed tensorlake 0.5.163 wheel, tensorlake/sandbox/models.py",
            False,
        ),
        Document(
            "os-egress",
            "OpenSandbox Egress API (OpenAPI)",
            "harness/specs/opensandbox/egress.yaml",
            "the OpenSandbox repository, specs/egress-api.yaml",
            False,
        ),
        Document(
            "os-lifecycle",
            "OpenSandbox Lifecycle API 1.1.1 (OpenAPI)",
            "harness/specs/opensandbox/lifecycle-1.1.1.yaml",
            "opensandbox-server 1.1.1, /openapi.json",
            False,
        ),
    )
}


@dataclass(frozen=True)
class Sentence:
    """One quoted sentence (or table row) of a document and how a contract can test it."""

    id: str
    doc: str
    quote: str
    level: Level = "policy"
    rule: str = ""
    why: str = ""

    @property
    def document(self) -> Document:
        """Return the document the sentence is quoted from."""
        return DOCUMENTS[self.doc]

    @property
    def testable(self) -> bool:
        """Tell whether a contract can test the sentence (at the policy or the API level)."""
        return self.level != "none"


_CLI = "describes the `tl` CLI, a client; the contract targets are provider APIs and policy engines"
_GYM_CLIENT = "describes NeMo Gym's own provider (a client of the OpenSandbox API), not the provider"


def _s(id: str, doc: str, quote: str, level: Level = "policy", rule: str = "", why: str = "") -> Sentence:
    return Sentence(id, doc, quote, level, rule, why)


_TL = (
    _s(
        "tl.ingress.management-url",
        "tl-net",
        "`https://<sandbox-id-or-name>.sandbox.tensorlake.ai` routes to the sandbox management API on port `9501`",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.ingress.port-url",
        "tl-net",
        "`https://<port>-<sandbox-id-or-name>.sandbox.tensorlake.ai` routes to a user service listening on "
        "`<port>` inside the sandbox",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.ingress.path-query",
        "tl-net",
        "The proxy preserves the request path and query string",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.ingress.websocket-grpc",
        "tl-net",
        "supports WebSocket upgrades, and forwards gRPC over HTTP/2",
        "api",
        "none yet: no rule sends a WebSocket upgrade or gRPC through the proxy",
    ),
    _s(
        "tl.ingress.by-name",
        "tl-net",
        "The proxy resolves names to the sandbox's canonical ID before forwarding the request.",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.ingress.sandbox-url",
        "tl-net",
        "The returned `sandbox_url` is the management URL on port `9501`.",
        "api",
        "tensorlake-api create",
    ),
    _s(
        "tl.ingress.authenticated",
        "tl-net",
        "the caller sends TensorLake auth credentials, and the proxy authorizes the request before forwarding it.",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.ingress.unauthenticated",
        "tl-net",
        "the sandbox owner explicitly makes selected user ports public, and the proxy skips auth for those user ports.",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.ports.9501-routable",
        "tl-net",
        "Port `9501` is the built-in management API and is always routable through the bare sandbox hostname.",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.ports.exposed-only",
        "tl-net",
        "For any other port, the proxy only forwards requests if that port is listed in `exposed_ports`.",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.ports.unauth-does-not-expose",
        "tl-net",
        "`allow_unauthenticated_access` does not expose a port by itself. User ports still have to be present in "
        "`exposed_ports`.",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.cli.port-expose",
        "tl-net",
        "So traffic to that user port becomes publicly reachable from the internet without TensorLake auth.",
        "none",
        why=_CLI,
    ),
    _s(
        "tl.auth.management-needs-auth",
        "tl-net",
        "The management URL on port `9501` always requires auth",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.auth.exposed-private",
        "tl-net",
        "User ports can also require auth when they are exposed but `allow_unauthenticated_access=false`",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.auth.project-key",
        "tl-net",
        "The key selects the project, so callers do not send forwarded organization or project headers",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.auth.grpc-websocket",
        "tl-net",
        "You can use the same authenticated routing model for HTTP, gRPC, and WebSocket services",
        "api",
        "none yet: the ingress rule sends HTTP only",
    ),
    _s(
        "tl.cookie.session",
        "tl-net",
        "The browser sends the current `tl.session_token` cookie automatically. The legacy `tl-session` name also "
        "remains supported during migration.",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.cookie.project-query",
        "tl-net",
        "include the organization and project currently selected in the application as the `organizationId` and "
        "`projectId` query parameters",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.cookie.stripped",
        "tl-net",
        "The sandbox proxy consumes the Tensorlake session cookie and removes it before forwarding the request to "
        "the sandbox. Your application does not receive the platform session credential; its other cookies are "
        "preserved.",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.unauth.both-conditions",
        "tl-net",
        "To make a user port public on the internet, both of these conditions must be true:",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.unauth.management-never-public",
        "tl-net",
        "Unauthenticated access only applies to user ports. The management API on port `9501` never becomes public.",
        "api",
        "tensorlake-api ingress",
    ),
    _s(
        "tl.unauth.auto-resume",
        "tl-net",
        "If a named sandbox is suspended, the proxy can auto-resume it when a request arrives for an exposed port.",
        "api",
        "tensorlake-api ingress (suspend-resume)",
    ),
    _s("tl.egress.default-on", "tl-net", "By default, sandboxes have outbound internet access enabled."),
    _s(
        "tl.egress.verified-no-internet",
        "tl-net",
        "a sandbox created with `allow_internet_access=False` failed DNS resolution for `https://example.com`",
    ),
    _s(
        "tl.egress.false-empty",
        "tl-net",
        "Setting `allow_internet_access=false` with an empty `allow_out` blocks all outbound traffic, including DNS "
        "requests.",
    ),
    _s(
        "tl.egress.false-nonempty",
        "tl-net",
        "Combined with a non-empty `allow_out`, the listed destinations stay reachable, but DNS remains blocked "
        "unless the resolver's IP address is itself listed in `allow_out`.",
    ),
    _s(
        "tl.cli.no-internet-conflict",
        "tl-net",
        "In the CLI, `--no-internet` (or `-N`) cannot be combined with `--network-allow` or `--network-deny`.",
        "none",
        why=_CLI,
    ),
    _s(
        "tl.allow.kinds",
        "tl-net",
        "values can be domains, leading-wildcard domains like `*.example.com`, IPv4 addresses, or IPv4 CIDR ranges",
    ),
    _s(
        "tl.allow.deny-precedence",
        "tl-net",
        "`deny_out` takes precedence: a destination matched by both `allow_out` and `deny_out` is blocked",
    ),
    _s(
        "tl.allow.follows-dns",
        "tl-net",
        "hostname rules are followed across DNS changes, so a CDN-backed domain keeps working as its IP addresses "
        "rotate",
    ),
    _s(
        "tl.allow.wildcard-apex",
        "tl-net",
        "A wildcard entry matches all subdomains but not the apex domain itself: `*.example.com` matches "
        "`api.example.com` and `v1.api.example.com`, but not `example.com`.",
    ),
    _s("tl.allow.add-apex", "tl-net", "Add the apex as a separate entry if you need it too."),
    _s("tl.allow.wildcards-allow-only", "tl-net", "Wildcards are only supported in `allow_out`, not `deny_out`."),
    _s(
        "tl.allow.example",
        "tl-net",
        "This allows DNS requests to the sandbox's configured resolvers and traffic to the listed destinations. All "
        "other outbound traffic is blocked.",
    ),
    _s(
        "tl.cli.quote-wildcards",
        "tl-net",
        "Quote wildcard entries in the shell so `*` is not expanded.",
        "none",
        why=_CLI,
    ),
    _s(
        "tl.deny.verified",
        "tl-net",
        '`deny_out=["example.com"]` blocked `https://example.com` while `https://api.openai.com/v1/models` still '
        "returned `401`, confirming outbound connectivity was still available for destinations that were not "
        "denied.",
    ),
    _s(
        "tl.deny.combine",
        "tl-net",
        "deny rules take precedence when a destination matches both lists.",
    ),
    _s(
        "tl.update.running",
        "tl-net",
        "You can change a sandbox's egress policy without recreating or suspending it.",
        "api",
        "tensorlake-api update",
    ),
    _s(
        "tl.update.atomic",
        "tl-net",
        "The new policy is applied to the running sandbox's firewall as a single atomic swap, so there is no window "
        "where egress is unprotected.",
        "none",
        why="a window inside one firewall swap cannot be observed from outside; no black-box probe can time it",
    ),
    _s(
        "tl.update.established",
        "tl-net",
        "Already-established connections are not interrupted.",
        "api",
        "none yet: no rule holds a connection open across an update",
    ),
    _s(
        "tl.update.omit",
        "tl-net",
        "**omit it** to leave the current policy unchanged (you can update `name` or exposed ports without touching "
        "the network policy),",
    ),
    _s("tl.update.replace", "tl-net", "**pass a policy** to replace the whole policy, or"),
    _s("tl.update.clear", "tl-net", "**clear it** to return the sandbox to unrestricted egress."),
    _s(
        "tl.cli.update-flags",
        "tl-net",
        "`--no-internet` is an absolute block-all mode and cannot be combined with either rule flag; "
        "`--clear-network` cannot be combined with any replacement-policy flag.",
        "none",
        why=_CLI,
    ),
    _s(
        "tl.update.unresolvable",
        "tl-net",
        "If a hostname in the new policy cannot be resolved, the update is rejected and the previous policy stays "
        "fully enforced",
    ),
    _s(
        "tl.table.allow-internet-access",
        "tl-net",
        "| `allow_internet_access` | `bool` | `true` | When `allow_out` is empty, acts as a simple on/off switch for "
        "all outbound traffic. When `allow_out` is non-empty, only controls DNS. See the matrix below |",
    ),
    _s(
        "tl.table.allow-out",
        "tl-net",
        "| `allow_out` | `list[str]` | `[]` | Allowed domains, leading-wildcard domains (`*.example.com`), IPv4 "
        "addresses, or IPv4 CIDRs. A non-empty list makes the sandbox default-deny: only the listed destinations are "
        "reachable, regardless of `allow_internet_access` |",
    ),
    _s(
        "tl.table.deny-out",
        "tl-net",
        "| `deny_out` | `list[str]` | `[]` | Denied domains, IPv4 addresses, or IPv4 CIDRs (no wildcards). Takes "
        "precedence over `allow_out`: a destination matched by both is blocked |",
    ),
    _s(
        "tl.table.exposed-ports",
        "tl-net",
        "| `exposed_ports` | `list[int] \\| null` | `null` | User ports that the sandbox proxy is allowed to route to |",
        "api",
        "tensorlake-api expose_ports, ingress",
    ),
    _s(
        "tl.table.allow-unauthenticated-access",
        "tl-net",
        "| `allow_unauthenticated_access` | `bool` | `false` | Skip TensorLake auth for exposed user ports. Never "
        "applies to port `9501` |",
        "api",
        "tensorlake-api expose_ports, ingress",
    ),
    _s(
        "tl.dns.row-1",
        "tl-net",
        "| `true` | empty | All egress open, except destinations matched by `deny_out` |",
    ),
    _s(
        "tl.dns.row-2",
        "tl-net",
        "| `true` | non-empty | Default-deny. Only the listed destinations are reachable, plus DNS to the "
        "sandbox's resolvers |",
    ),
    _s(
        "tl.dns.row-3",
        "tl-net",
        "| `false` | non-empty | Default-deny. Only the listed destinations are reachable. DNS is blocked unless "
        "the resolver's IP is itself listed in `allow_out` |",
    ),
    _s("tl.dns.row-4", "tl-net", "| `false` | empty | All egress blocked, including DNS |"),
    _s(
        "tl.dns.in-short",
        "tl-net",
        "A non-empty `allow_out` makes the sandbox default-deny in both modes, and `allow_internet_access` then only "
        "controls DNS.",
    ),
)

_TL_SDK = (
    _s(
        "tl-sdk.port-suffix",
        "tl-sdk",
        "an optional ``:port`` suffix is accepted but does not make the rule port-specific",
    ),
    _s(
        "tl-sdk.resolver-deny",
        "tl-sdk",
        "Deny-precedence applies to the sandbox's own DNS resolver too: a ``deny_out`` covering the resolver "
        "disables DNS even if ``allow_out`` also covers it.",
    ),
    _s(
        "tl-sdk.established",
        "tl-sdk",
        "Established and related connections are always permitted (stateful firewall).",
        "api",
        "none yet: no rule holds a connection open across an update",
    ),
)

_NG = (
    _s(
        "ng.limits-egress",
        "ng-net",
        "Return `spec` with egress limited to the model server and, for `model_and_tools`, the tool servers.",
    ),
    _s("ng.inherit", "ng-net", "`inherit` leaves the provider's default network."),
    _s(
        "ng.every-port",
        "ng-net",
        "Each allowed host is opened on every port and path, so co-hosted services stay reachable.",
    ),
    _s(
        "ng.created-only",
        "ng-net",
        "The policy is fixed when the sandbox is created: it applies only to a sandbox the agent creates, never to a "
        "task sandbox borrowed from Resources.",
        "none",
        why="restrict_sandbox_network has no sandbox-origin input: the agent decides when to call it",
    ),
    _s(
        "ng.model-only-refuses",
        "ng-net",
        "`model_only` blocks every tool host, so a required grant would fail only after the sandbox and the runtime "
        "exist; it is refused here instead.",
    ),
    _s("ng.reject.explicit-policy", "ng-net", "an explicit provider policy as well"),
    _s("ng.reject.no-policy-provider", "ng-net", "a provider without network policies"),
    _s("ng.reject.unreachable", "ng-net", "an endpoint the sandbox cannot reach"),
    _s("ng.reject.required-model-only", "ng-net", "or a required tool grant under `model_only`"),
    _s(
        "ng.reject.error",
        "ng-net",
        "raises `AgentSeedRejectedError`, so the seed fails once with HTTP 422 instead of being retried; it is still "
        "a `ValueError`.",
    ),
    _s("ng.modes", "ng-net", "Literal['inherit', 'model_only', 'model_and_tools']"),
)

_NG_OS = (
    _s(
        "ng-os.create-blocks",
        "ng-os",
        "The create request blocks until the pod is allocated",
        "api",
        "opensandbox-api create",
    ),
    _s(
        "ng-os.paused-no-execd",
        "ng-os",
        "A paused sandbox has no exec daemon to check; resume rebuilds its endpoints and performs the health check "
        "instead.",
        "api",
        "opensandbox-api run_command, pause, resume",
    ),
    _s(
        "ng-os.reconnect-by-id",
        "ng-os",
        "OpenSandbox sandboxes are reachable by id from any process that has the connection config, so the id alone "
        "is enough to reconnect and no sandbox server is needed to share one.",
        "api",
        "opensandbox-api get",
    ),
    _s(
        "ng-os.found-by-metadata",
        "ng-os",
        "the sandbox is found through the run's attribution metadata and this attempt's unique key",
        "api",
        "opensandbox-api list_sandboxes (metadata filter)",
    ),
    _s(
        "ng-os.pty-missing",
        "ng-os",
        "A proxy 404 (route not registered yet) lacks execd's error code",
        "api",
        "none yet: no rule opens a PTY session",
    ),
    _s(
        "ng-os.logs-combined",
        "ng-os",
        "The logs endpoint returns one combined stream",
        "api",
        "none yet: no rule reads background command logs",
    ),
    _s(
        "ng-os.attribution",
        "ng-os",
        "Job attribution keys (`team` / `user` / `workload` / `run`) are merged into the spec's metadata (explicit "
        "spec keys win) so every sandbox is attributable via its labels.",
        "none",
        why=_GYM_CLIENT,
    ),
    _s(
        "ng-os.submit-once",
        "ng-os",
        "Submit once: neither a 502 nor a timeout proves non-delivery.",
        "none",
        why=_GYM_CLIENT,
    ),
    _s(
        "ng-os.domain-scheme",
        "ng-os",
        "Only `scheme://host[:port][/path-prefix]` is accepted: a query string or fragment is a configuration error.",
        "none",
        why=_GYM_CLIENT,
    ),
    _s(
        "ng-os.pending-report",
        "ng-os",
        "Report provider_create_pending only for an observed Pending sandbox; otherwise report "
        "provider_create_timeout.",
        "none",
        why=_GYM_CLIENT,
    ),
    _s(
        "ng-os.keepalive",
        "ng-os",
        "`keepalive_expiry_s` must stay below the server's own keep-alive idle timeout (uvicorn defaults to 5s)",
        "none",
        why="a deployment setting of the server (uvicorn's default), not a behaviour of the API",
    ),
)

_OS = (
    _s(
        "os.merge",
        "os-egress",
        "Merge incoming egress rules with the currently enforced policy.",
    ),
    _s(
        "os.merge.existing-remain",
        "os-egress",
        "Existing rules remain unless overridden by incoming rules.",
    ),
    _s(
        "os.merge.incoming-priority",
        "os-egress",
        "Incoming rules are applied with higher priority than existing rules.",
    ),
    _s(
        "os.merge.first-wins",
        "os-egress",
        "If multiple incoming rules refer to the same `target`, the first one wins.",
    ),
    _s(
        "os.delete.removes",
        "os-egress",
        "Matching rules are removed; targets not found in the current policy are silently ignored (idempotent).",
    ),
    _s(
        "os.policy.default-deny",
        "os-egress",
        'If `defaultAction` is omitted, the sidecar defaults to "deny"; passing an empty object or null results in '
        "allow-all behavior at startup.",
    ),
    _s("os.policy.in-order", "os-egress", "List of egress rules evaluated in order."),
    _s("os.policy.default-action", "os-egress", 'Default action when no egress rule matches. Defaults to "deny".'),
    _s("os.rule.action", "os-egress", "enum: [allow, deny]"),
    _s(
        "os.rule.target",
        "os-egress",
        'FQDN or wildcard domain (e.g., "example.com", "*.example.com"). IP/CIDR not yet supported in the egress MVP.',
    ),
    _s("os.rule.required", "os-egress", "required: [action, target] additionalProperties: false"),
    _s(
        "os.lifecycle.empty-allows",
        "os-lifecycle",
        "Ordered egress rules. Empty/omitted yields allow-all at startup.",
    ),
    _s("os.lifecycle.target-min", "os-lifecycle", "minLength: 1 title: Target"),
)

#: Every quoted sentence, by id.
SENTENCES: dict[str, Sentence] = {s.id: s for s in (*_TL, *_TL_SDK, *_NG, *_NG_OS, *_OS)}


def _collapse(text: str) -> str:
    """Collapse every run of whitespace to one space."""
    return " ".join(text.split())


@cache
def document_text(key: str) -> str:
    """Return a vendored document's text with whitespace collapsed."""
    return _collapse((ROOT / DOCUMENTS[key].path).read_text(encoding="utf-8"))


def missing_quotes() -> list[str]:
    """Return the ids of sentences whose quote is not, verbatim, in their vendored document."""
    return [s.id for s in SENTENCES.values() if _collapse(s.quote) not in document_text(s.doc)]
