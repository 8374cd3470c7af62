"""The quoted sentences of the TensorLake networking page and of the TensorLake SDK's NetworkConfig docstring."""

from __future__ import annotations

from harness.strength.documents import Sentence, sentence

__all__ = ["TENSORLAKE"]

_CLI = "describes the `tl` CLI, a client; the contract targets are provider APIs and policy engines"

_TL = (
    sentence(
        "tl.ingress.management-url",
        "tl-net",
        "`https://<sandbox-id-or-name>.sandbox.tensorlake.ai` routes to the sandbox management API on port `9501`",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.ingress.port-url",
        "tl-net",
        "`https://<port>-<sandbox-id-or-name>.sandbox.tensorlake.ai` routes to a user service listening on "
        "`<port>` inside the sandbox",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.ingress.path-query",
        "tl-net",
        "The proxy preserves the request path and query string",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.ingress.websocket",
        "tl-net",
        "supports WebSocket upgrades",
        "api",
        "tensorlake-api ingress (a WebSocket to each port it requests), update_keeps_connection",
    ),
    sentence(
        "tl.ingress.grpc",
        "tl-net",
        "forwards gRPC over HTTP/2",
        "api",
        "skipped: the mocks serve HTTP/1.1 only (uvicorn), and a real sandbox has no gRPC server the suite could "
        "start and call, so no check can send gRPC through a proxy",
    ),
    sentence(
        "tl.ingress.by-name",
        "tl-net",
        "The proxy resolves names to the sandbox's canonical ID before forwarding the request.",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.ingress.sandbox-url",
        "tl-net",
        "The returned `sandbox_url` is the management URL on port `9501`.",
        "api",
        "tensorlake-api create",
    ),
    sentence(
        "tl.ingress.authenticated",
        "tl-net",
        "the caller sends TensorLake auth credentials, and the proxy authorizes the request before forwarding it.",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.ingress.unauthenticated",
        "tl-net",
        "the sandbox owner explicitly makes selected user ports public, and the proxy skips auth for those user ports.",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.ports.9501-routable",
        "tl-net",
        "Port `9501` is the built-in management API and is always routable through the bare sandbox hostname.",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.ports.exposed-only",
        "tl-net",
        "For any other port, the proxy only forwards requests if that port is listed in `exposed_ports`.",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.ports.unauth-does-not-expose",
        "tl-net",
        "`allow_unauthenticated_access` does not expose a port by itself. User ports still have to be present in "
        "`exposed_ports`.",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.cli.port-expose",
        "tl-net",
        "So traffic to that user port becomes publicly reachable from the internet without TensorLake auth.",
        "none",
        why=_CLI,
    ),
    sentence(
        "tl.auth.management-needs-auth",
        "tl-net",
        "The management URL on port `9501` always requires auth",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.auth.exposed-private",
        "tl-net",
        "User ports can also require auth when they are exposed but `allow_unauthenticated_access=false`",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.auth.project-key",
        "tl-net",
        "The key selects the project, so callers do not send forwarded organization or project headers",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.auth.sdk-api-key",
        "tl-net",
        "Python and TypeScript SDK clients continue to use only a project-scoped API key.",
        "api",
        "tensorlake-api anonymous_call",
    ),
    sentence(
        "tl.auth.grpc-websocket",
        "tl-net",
        "You can use the same authenticated routing model for HTTP, gRPC, and WebSocket services",
        "api",
        "tensorlake-api ingress: the WebSocket requests use the same credentials as the HTTP ones (gRPC: see "
        "tl.ingress.grpc)",
    ),
    sentence(
        "tl.cookie.session",
        "tl-net",
        "The browser sends the current `tl.session_token` cookie automatically. The legacy `tl-session` name also "
        "remains supported during migration.",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.cookie.project-query",
        "tl-net",
        "include the organization and project currently selected in the application as the `organizationId` and "
        "`projectId` query parameters",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.cookie.stripped",
        "tl-net",
        "The sandbox proxy consumes the Tensorlake session cookie and removes it before forwarding the request to "
        "the sandbox. Your application does not receive the platform session credential; its other cookies are "
        "preserved.",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.unauth.both-conditions",
        "tl-net",
        "To make a user port public on the internet, both of these conditions must be true:",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.unauth.management-never-public",
        "tl-net",
        "Unauthenticated access only applies to user ports. The management API on port `9501` never becomes public.",
        "api",
        "tensorlake-api ingress",
    ),
    sentence(
        "tl.unauth.auto-resume",
        "tl-net",
        "If a named sandbox is suspended, the proxy can auto-resume it when a request arrives for an exposed port.",
        "api",
        "tensorlake-api ingress (suspend-resume)",
    ),
    sentence("tl.egress.default-on", "tl-net", "By default, sandboxes have outbound internet access enabled."),
    sentence(
        "tl.egress.verified-no-internet",
        "tl-net",
        "a sandbox created with `allow_internet_access=False` failed DNS resolution for `https://example.com`",
    ),
    sentence(
        "tl.egress.false-empty",
        "tl-net",
        "Setting `allow_internet_access=false` with an empty `allow_out` blocks all outbound traffic, including DNS "
        "requests.",
    ),
    sentence(
        "tl.egress.false-nonempty",
        "tl-net",
        "Combined with a non-empty `allow_out`, the listed destinations stay reachable, but DNS remains blocked "
        "unless the resolver's IP address is itself listed in `allow_out`.",
    ),
    sentence(
        "tl.cli.no-internet-conflict",
        "tl-net",
        "In the CLI, `--no-internet` (or `-N`) cannot be combined with `--network-allow` or `--network-deny`.",
        "none",
        why=_CLI,
    ),
    sentence(
        "tl.allow.kinds",
        "tl-net",
        "values can be domains, leading-wildcard domains like `*.example.com`, IPv4 addresses, or IPv4 CIDR ranges",
    ),
    sentence(
        "tl.allow.deny-precedence",
        "tl-net",
        "`deny_out` takes precedence: a destination matched by both `allow_out` and `deny_out` is blocked",
    ),
    sentence(
        "tl.allow.follows-dns",
        "tl-net",
        "hostname rules are followed across DNS changes, so a CDN-backed domain keeps working as its IP addresses "
        "rotate",
    ),
    sentence(
        "tl.allow.wildcard-apex",
        "tl-net",
        "A wildcard entry matches all subdomains but not the apex domain itself: `*.example.com` matches "
        "`api.example.com` and `v1.api.example.com`, but not `example.com`.",
    ),
    sentence("tl.allow.add-apex", "tl-net", "Add the apex as a separate entry if you need it too."),
    sentence("tl.allow.wildcards-allow-only", "tl-net", "Wildcards are only supported in `allow_out`, not `deny_out`."),
    sentence(
        "tl.allow.example",
        "tl-net",
        "This allows DNS requests to the sandbox's configured resolvers and traffic to the listed destinations. All "
        "other outbound traffic is blocked.",
    ),
    sentence(
        "tl.cli.quote-wildcards",
        "tl-net",
        "Quote wildcard entries in the shell so `*` is not expanded.",
        "none",
        why=_CLI,
    ),
    sentence(
        "tl.deny.verified",
        "tl-net",
        '`deny_out=["example.com"]` blocked `https://example.com` while `https://api.openai.com/v1/models` still '
        "returned `401`, confirming outbound connectivity was still available for destinations that were not "
        "denied.",
    ),
    sentence(
        "tl.deny.combine",
        "tl-net",
        "deny rules take precedence when a destination matches both lists.",
    ),
    sentence(
        "tl.update.running",
        "tl-net",
        "You can change a sandbox's egress policy without recreating or suspending it.",
        "api",
        "tensorlake-api update",
    ),
    sentence(
        "tl.update.atomic",
        "tl-net",
        "The new policy is applied to the running sandbox's firewall as a single atomic swap, so there is no window "
        "where egress is unprotected.",
        "api",
        "concurrency (tensorlake-linearizable: no concurrent reader sees a half-applied policy)",
    ),
    sentence(
        "tl.update.established",
        "tl-net",
        "Already-established connections are not interrupted.",
        "api",
        "tensorlake-api update_keeps_connection (a WebSocket into the sandbox stays open across a policy PATCH)",
    ),
    sentence(
        "tl.update.omit",
        "tl-net",
        "**omit it** to leave the current policy unchanged (you can update `name` or exposed ports without touching "
        "the network policy),",
    ),
    sentence("tl.update.replace", "tl-net", "**pass a policy** to replace the whole policy, or"),
    sentence("tl.update.clear", "tl-net", "**clear it** to return the sandbox to unrestricted egress."),
    sentence(
        "tl.cli.update-flags",
        "tl-net",
        "`--no-internet` is an absolute block-all mode and cannot be combined with either rule flag; "
        "`--clear-network` cannot be combined with any replacement-policy flag.",
        "none",
        why=_CLI,
    ),
    sentence(
        "tl.update.unresolvable",
        "tl-net",
        "If a hostname in the new policy cannot be resolved, the update is rejected and the previous policy stays "
        "fully enforced",
    ),
    sentence(
        "tl.table.allow-internet-access",
        "tl-net",
        "| `allow_internet_access` | `bool` | `true` | When `allow_out` is empty, acts as a simple on/off switch for "
        "all outbound traffic. When `allow_out` is non-empty, only controls DNS. See the matrix below |",
    ),
    sentence(
        "tl.table.allow-out",
        "tl-net",
        "| `allow_out` | `list[str]` | `[]` | Allowed domains, leading-wildcard domains (`*.example.com`), IPv4 "
        "addresses, or IPv4 CIDRs. A non-empty list makes the sandbox default-deny: only the listed destinations are "
        "reachable, regardless of `allow_internet_access` |",
    ),
    sentence(
        "tl.table.deny-out",
        "tl-net",
        "| `deny_out` | `list[str]` | `[]` | Denied domains, IPv4 addresses, or IPv4 CIDRs (no wildcards). Takes "
        "precedence over `allow_out`: a destination matched by both is blocked |",
    ),
    sentence(
        "tl.table.exposed-ports",
        "tl-net",
        "| `exposed_ports` | `list[int] \\| null` | `null` | User ports that the sandbox proxy is allowed to route to |",
        "api",
        "tensorlake-api expose_ports, ingress",
    ),
    sentence(
        "tl.table.allow-unauthenticated-access",
        "tl-net",
        "| `allow_unauthenticated_access` | `bool` | `false` | Skip TensorLake auth for exposed user ports. Never "
        "applies to port `9501` |",
        "api",
        "tensorlake-api expose_ports, ingress",
    ),
    sentence(
        "tl.dns.row-1",
        "tl-net",
        "| `true` | empty | All egress open, except destinations matched by `deny_out` |",
    ),
    sentence(
        "tl.dns.row-2",
        "tl-net",
        "| `true` | non-empty | Default-deny. Only the listed destinations are reachable, plus DNS to the "
        "sandbox's resolvers |",
    ),
    sentence(
        "tl.dns.row-3",
        "tl-net",
        "| `false` | non-empty | Default-deny. Only the listed destinations are reachable. DNS is blocked unless "
        "the resolver's IP is itself listed in `allow_out` |",
    ),
    sentence("tl.dns.row-4", "tl-net", "| `false` | empty | All egress blocked, including DNS |"),
    sentence(
        "tl.dns.in-short",
        "tl-net",
        "A non-empty `allow_out` makes the sandbox default-deny in both modes, and `allow_internet_access` then only "
        "controls DNS.",
    ),
)

_TL_SDK = (
    sentence(
        "tl-sdk.port-suffix",
        "tl-sdk",
        "an optional ``:port`` suffix is accepted but does not make the rule port-specific",
    ),
    sentence(
        "tl-sdk.resolver-deny",
        "tl-sdk",
        "Deny-precedence applies to the sandbox's own DNS resolver too: a ``deny_out`` covering the resolver "
        "disables DNS even if ``allow_out`` also covers it.",
    ),
    sentence(
        "tl-sdk.established",
        "tl-sdk",
        "Established and related connections are always permitted (stateful firewall).",
        "api",
        "tensorlake-api update_keeps_connection",
    ),
)

TENSORLAKE: tuple[Sentence, ...] = (*_TL, *_TL_SDK)
