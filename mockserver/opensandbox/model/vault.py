"""The egress sidecar's credential vault (port 18080 ``/credential-vault…``), one per sandbox.

The rules are the 1.1.1 sidecar's (egress image v1.1.0, ``components/egress/policy_server.go`` and
``pkg/credentialvault/vault.go`` of alibaba/OpenSandbox; the shapes are ``specs/egress.json``):

* ``GET /credential-vault`` answers the sanitized state (``revision``, credentials by name with their source
  type and revision, bindings with the vault's revision, their match and auth type, never a value);
  ``/credentials``, ``/credentials/{name}``, ``/bindings`` and ``/bindings/{name}`` answer parts of it;
  404 "credential vault not found" before a ``POST`` made one.
* ``POST`` creates it at revision 1 (201; 409 when one exists), ``PATCH`` applies deletes, replaces and adds
  of credentials and bindings at the next revision in one step (``expectedRevision`` guards it: 409), and
  ``DELETE`` drops it (204); a ``POST`` after that starts at revision 1 again.
* A body is decoded as Go's ``encoding/json`` with unknown fields refused; every name is trimmed; a binding's
  match gets its defaults (``https``, port 443, the five methods, ``/*``) and its hosts must be FQDNs, each
  covered by an explicit allow rule of the sandbox's policy; its ports must be the intercepted 80 or 443; its
  auth names known credentials; two bindings that could match one request are refused. Every refusal is
  ``text/plain``: 400 for a bad request, 404, 405 (with ``Allow``), 409; the token check of ``/policy`` comes
  first (401), and ``GET /credential-vault/_active`` (the proxy's own socket route) is 403 "forbidden".

Known deviations: the vault accepts writes on every sidecar, as one started for ``credentialProxy.enabled``
with an auth token, over TLS or loopback (the real sidecar refuses them with 412 when it was started without
the transparent proxy or a token, and 426 over plain HTTP from another host); no proxy injects the headers,
so the vault is state only; a body that is not JSON is refused 400 with the mock's wording of the error.
"""

from __future__ import annotations

import copy
import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from contracts.opensandbox import NetworkPolicy, PolicyError, decide_egress
from mockserver.core.jsontext import parse_json

from .errors import TextError
from .records import SandboxRecord

__all__ = ["DEVIATING_OPERATIONS", "NotAllowed", "VaultAnswer", "check_policy_update", "vault_call"]

#: The writes the known deviations above concern (see ``mockserver.core.deviations``); the reads answer as the sidecar.
DEVIATING_OPERATIONS: dict[str, tuple[str, ...]] = {
    "egress": ("POST /credential-vault", "PATCH /credential-vault", "DELETE /credential-vault"),
}

INTERCEPT_PORTS = frozenset({80, 443})
DEFAULT_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$")
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
_RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "upgrade",
        "te",
        "trailer",
        "proxy-authorization",
        "proxy-authenticate",
        "forwarded",
        "x-forwarded-for",
        "x-forwarded-host",
        "x-forwarded-proto",
    }
)


class VaultError(ValueError):
    """A refusal of the vault store (400 unless it says otherwise)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class NotAllowed(TextError):
    """405 "method not allowed" (text); the route names :attr:`allow` in the ``Allow`` header."""

    def __init__(self, allow: str) -> None:
        super().__init__(405, "METHOD_NOT_ALLOWED", "method not allowed\n")
        self.allow = allow


@dataclass(frozen=True)
class VaultAnswer:
    """A 2xx answer: its status and JSON body (None for 204)."""

    status: int
    body: dict[str, Any] | None


def vault_call(sb: SandboxRecord, method: str, subpath: str | None, raw: bytes) -> VaultAnswer:
    """Answer one ``/credential-vault`` request (``subpath``: what follows ``/credential-vault/``; None for the vault).

    The caller checked the sidecar's token; a refusal is a :class:`~.errors.TextError`.
    """
    try:
        return _route(sb, method, subpath, raw)
    except VaultError as exc:
        raise TextError(exc.status, "CREDENTIAL_VAULT", f"{exc}\n") from None


def check_policy_update(sb: SandboxRecord, policy: NetworkPolicy | None) -> None:
    """Refuse (400 text) a new sidecar policy the vault's bindings would no longer be covered by."""
    vault = sb.vault
    if vault is None or not vault["bindings"]:
        return
    try:
        _validate(vault["credentials"], vault["bindings"], policy)
    except VaultError as exc:
        raise TextError(400, "CREDENTIAL_VAULT", f"credential vault policy validation: {exc}\n") from None


# -- the HTTP surface -----------------------------------------------------------------------------


def _allow(methods: str, method: str) -> None:
    if method not in methods.split(", "):
        raise NotAllowed(methods)


def _route(sb: SandboxRecord, method: str, subpath: str | None, raw: bytes) -> VaultAnswer:
    if subpath is None:
        _allow("GET, POST, PATCH, DELETE", method)
        if method == "GET":
            return VaultAnswer(200, _sanitized(_existing(sb)))
        if method == "POST":
            return VaultAnswer(201, _create(sb, _decode(raw, "CreateRequest", "invalid credential vault request")))
        if method == "PATCH":
            body = _decode(raw, "MutationRequest", "invalid credential vault mutation request")
            return VaultAnswer(200, _patch(sb, body))
        _existing(sb)
        sb.vault = None
        return VaultAnswer(204, None)
    kind, _, name = subpath.partition("/")
    if kind not in ("credentials", "bindings"):
        raise VaultError("not found", 404)
    _allow("GET", method)
    state = _sanitized(_existing(sb))
    if "/" not in subpath:
        return VaultAnswer(200, {"revision": state["revision"], kind: state[kind]})
    for item in state[kind]:
        if item["name"] == name.strip():
            return VaultAnswer(200, item)
    raise VaultError(f"{kind[:-1]} not found", 404)


def _existing(sb: SandboxRecord) -> dict[str, Any]:
    if sb.vault is None:
        raise VaultError("credential vault not found", 404)
    return sb.vault


def _sanitized(vault: dict[str, Any]) -> dict[str, Any]:
    credentials = [
        {"name": c["name"], "sourceType": c["sourceType"], "revision": c["revision"]}
        for c in sorted(vault["credentials"].values(), key=lambda c: c["name"])
    ]
    bindings = []
    for b in sorted(vault["bindings"].values(), key=lambda b: b["name"]):
        auth = {"type": b["auth"]["type"]}
        if b["auth"]["type"] == "apiKey":
            auth["name"] = b["auth"]["name"]
        match = {k: b["match"][k] for k in ("schemes", "ports", "hosts", "methods", "paths") if b["match"][k]}
        bindings.append({"name": b["name"], "revision": vault["revision"], "match": match, "auth": auth})
    return {"revision": vault["revision"], "credentials": credentials, "bindings": bindings}


# -- the store -------------------------------------------------------------------------------------


def _create(sb: SandboxRecord, req: dict[str, Any]) -> dict[str, Any]:
    if sb.vault is not None:
        raise VaultError("credential vault already exists", 409)
    credentials: dict[str, dict[str, Any]] = {}
    bindings: dict[str, dict[str, Any]] = {}
    for raw in req["credentials"]:
        rec = _credential(raw, 1)
        if rec["name"] in credentials:
            raise VaultError(f"duplicate credential name {_q(rec['name'])}")
        credentials[rec["name"]] = rec
    for raw in req["bindings"]:
        binding = _binding(raw)
        if binding["name"] in bindings:
            raise VaultError(f"duplicate binding name {_q(binding['name'])}")
        bindings[binding["name"]] = binding
    _validate(credentials, bindings, sb.policy)
    sb.vault = {"revision": 1, "credentials": credentials, "bindings": bindings}
    return _sanitized(sb.vault)


def _patch(sb: SandboxRecord, req: dict[str, Any]) -> dict[str, Any]:
    vault = _existing(sb)
    expected = req["expectedRevision"]
    if expected is not None and expected != vault["revision"]:
        raise VaultError(f"expectedRevision {expected} does not match current revision {vault['revision']}", 409)
    revision = vault["revision"] + 1
    credentials = copy.deepcopy(vault["credentials"])
    bindings = copy.deepcopy(vault["bindings"])
    if req["credentials"] is not None:
        _mutate(credentials, req["credentials"], "credential", lambda raw: _credential(raw, revision))
    if req["bindings"] is not None:
        _mutate(bindings, req["bindings"], "binding", _binding)
    _validate(credentials, bindings, sb.policy)
    sb.vault = {"revision": revision, "credentials": credentials, "bindings": bindings}
    return _sanitized(sb.vault)


def _mutate(items: dict[str, dict[str, Any]], mutations: dict[str, Any], what: str, build: Any) -> None:
    """Apply deletes, then replaces, then adds; a name may be mentioned once."""
    mentioned: set[str] = set()
    for name in mutations["delete"]:
        name = name.strip()
        if not name:
            raise VaultError(f"{what} delete name cannot be blank")
        if name in mentioned:
            raise VaultError(f"{what} {_q(name)} mentioned by multiple operations")
        mentioned.add(name)
        if name not in items:
            raise VaultError(f"{what} {_q(name)} does not exist")
        del items[name]
    for raw in mutations["replace"]:
        item = build(raw)
        if item["name"] in mentioned:
            raise VaultError(f"{what} {_q(item['name'])} mentioned by multiple operations")
        mentioned.add(item["name"])
        if item["name"] not in items:
            raise VaultError(f"{what} {_q(item['name'])} does not exist")
        items[item["name"]] = item
    added: set[str] = set()
    for raw in mutations["add"]:
        item = build(raw)
        if item["name"] in mentioned:
            raise VaultError(f"{what} {_q(item['name'])} mentioned by multiple operations")
        if item["name"] in added:
            raise VaultError(f"duplicate {what} add name {_q(item['name'])}")
        added.add(item["name"])
        if item["name"] in items:
            raise VaultError(f"{what} {_q(item['name'])} already exists")
        items[item["name"]] = item


def _credential(raw: dict[str, Any], revision: int) -> dict[str, Any]:
    name = raw["name"].strip()
    if not name:
        raise VaultError("credential name cannot be blank")
    source = raw["source"]["type"].strip() or "inline"
    if source != "inline":
        raise VaultError(f"unsupported credential source type {_q(source)}")
    if raw["source"]["value"] == "":
        raise VaultError(f"credential {_q(name)} inline value cannot be empty")
    return {"name": name, "sourceType": source, "value": raw["source"]["value"], "revision": revision}


def _binding(raw: dict[str, Any]) -> dict[str, Any]:
    binding = copy.deepcopy(raw)
    binding["name"] = binding["name"].strip()
    if not binding["name"]:
        raise VaultError("binding name cannot be blank")
    try:
        _normalize_match(binding["match"])
        _normalize_auth(binding["auth"])
    except VaultError as exc:
        raise VaultError(f"binding {_q(binding['name'])}: {exc}") from None
    return binding


def _normalize_match(m: dict[str, Any]) -> None:
    m["schemes"] = m["schemes"] or ["https"]
    m["ports"] = m["ports"] or [443]
    m["methods"] = m["methods"] or list(DEFAULT_METHODS)
    m["paths"] = m["paths"] or ["/*"]
    if not m["hosts"]:
        raise VaultError("match.hosts cannot be empty")
    for i, scheme in enumerate(m["schemes"]):
        m["schemes"][i] = scheme = scheme.strip().lower()
        if scheme not in ("https", "http"):
            raise VaultError(f"unsupported scheme {_q(scheme)}")
    for port in m["ports"]:
        if port <= 0 or port > 65535:
            raise VaultError(f"invalid port {port}")
    m["hosts"] = [_host(host) for host in m["hosts"]]
    for i, method in enumerate(m["methods"]):
        m["methods"][i] = method = method.strip().upper()
        if not method:
            raise VaultError("method cannot be blank")
    for i, path in enumerate(m["paths"]):
        m["paths"][i] = path = path.strip()
        if not path.startswith("/"):
            raise VaultError("path pattern must start with /")
    for key in ("schemes", "ports", "hosts", "methods", "paths"):
        m[key] = list(dict.fromkeys(m[key]))


def _normalize_auth(a: dict[str, Any]) -> None:
    a["type"] = kind = a["type"].strip()
    if kind in ("bearer", "basic", "apiKey"):
        if kind == "apiKey":
            a["name"] = _header_name(a["name"])
        a["credential"] = a["credential"].strip()
        if not a["credential"]:
            raise VaultError(f"{kind} auth requires credential")
    elif kind == "customHeaders":
        if not a["headers"]:
            raise VaultError("customHeaders auth requires headers")
        seen: set[str] = set()
        for h in a["headers"]:
            h["name"] = _header_name(h["name"])
            if h["name"].lower() in seen:
                raise VaultError(f"duplicate custom header name {_q(h['name'])}")
            seen.add(h["name"].lower())
            h["credential"] = h["credential"].strip()
            if not h["credential"]:
                raise VaultError(f"customHeaders entry {_q(h['name'])} requires credential")
    else:
        raise VaultError(f"unsupported auth type {_q(kind)}")


def _header_name(raw: str) -> str:
    """Return Go's canonical form of a header name (``x-api-key`` -> ``X-Api-Key``); refuse invalid or reserved ones."""
    name = raw.strip()
    if _HEADER_NAME.match(name):  # Go canonicalises only valid tokens
        out, upper = [], True
        for c in name:
            out.append(c.upper() if upper else c.lower() if c.isascii() else c)
            upper = c == "-"
        name = "".join(out)
    else:
        raise VaultError(f"invalid credential header name {_q(name)}")
    if name.lower() in _RESERVED_HEADERS:
        raise VaultError(f"reserved credential header name {_q(name)}")
    return name


def _host(raw: str) -> str:
    host = raw.strip().removesuffix(".").lower()
    if not host:
        raise VaultError("host cannot be blank")
    if "://" in host or "/" in host:
        raise VaultError(f"host {_q(host)} must not include scheme or path")
    if host.startswith("*."):
        suffix = host[2:]
        if not suffix or "*" in suffix or not _fqdn(suffix):
            if suffix and "*" not in suffix and _is_ip(suffix):
                raise VaultError(f"wildcard host {_q(host)} cannot target an IP address")
            raise VaultError(f"invalid wildcard host {_q(host)}")
        return host
    if "*" in host:
        raise VaultError(f"invalid wildcard host {_q(host)}")
    if _is_ip(host):
        raise VaultError(f"credential binding host {_q(host)} must be an FQDN, not an IP address")
    if not _fqdn(host):
        raise VaultError(f"credential binding host {_q(host)} must be an FQDN")
    return host


def _fqdn(host: str) -> bool:
    return len(host) <= 253 and "." in host and all(_LABEL.match(label) for label in host.split("."))


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _validate(credentials: dict[str, Any], bindings: dict[str, Any], policy: NetworkPolicy | None) -> None:
    """The store's check of a candidate vault against the sandbox's policy (``validateCandidate``)."""
    if bindings and (policy is None or not policy.egress):
        raise VaultError("credential bindings require explicit networkPolicy.egress allow rules")
    for b in bindings.values():
        auth = b["auth"]
        refs = [h["credential"] for h in auth["headers"]] if auth["type"] == "customHeaders" else [auth["credential"]]
        for ref in refs:
            if ref not in credentials:
                raise VaultError(f"binding {_q(b['name'])} references unknown credential {_q(ref)}")
        for port in b["match"]["ports"]:
            if port not in INTERCEPT_PORTS:
                raise VaultError(f"binding {_q(b['name'])} port {port} is not a configured transparent intercept port")
        for host in b["match"]["hosts"]:
            if not _covered(policy, host):
                raise VaultError(
                    f"binding {_q(b['name'])} host {_q(host)} is not covered by an explicit allow egress rule"
                )
    listed = list(bindings.values())
    for i, a in enumerate(listed):
        for b in listed[i + 1 :]:
            if _ambiguous(a["match"], b["match"]):
                raise VaultError(f"bindings {_q(a['name'])} and {_q(b['name'])} can match the same request")


def _covered(policy: NetworkPolicy | None, host: str) -> bool:
    """Tell whether an explicit allow rule names ``host`` (or a wildcard over it) and the policy lets it out."""
    if policy is None:
        return False
    probe = "probe." + host[2:] if host.startswith("*.") else host
    named = any(
        rule.action == "allow" and _pattern_covers(rule.target.strip().removesuffix(".").lower(), host)
        for rule in policy.egress
    )
    try:
        return named and decide_egress(policy, probe).allowed
    except PolicyError:
        return False


def _pattern_covers(target: str, host: str) -> bool:
    if target == host:
        return True
    return target.startswith("*.") and host.endswith(target[1:]) and host != target[2:]


def _ambiguous(a: dict[str, Any], b: dict[str, Any]) -> bool:
    for key in ("schemes", "ports", "methods"):
        if not set(a[key]) & set(b[key]):
            return False
    if not any(_paths_overlap(x, y) for x in a["paths"] for y in b["paths"]):
        return False
    for x in a["hosts"]:
        for y in b["hosts"]:
            wild = x.startswith("*.")
            if wild != y.startswith("*."):
                continue
            if not wild and x == y:
                return True
            if wild and (x[2:] == y[2:] or x[2:].endswith("." + y[2:]) or y[2:].endswith("." + x[2:])):
                return True
    return False


def _paths_overlap(a: str, b: str) -> bool:
    if a == b:
        return True
    if a.endswith("*") and b.startswith(a[:-1]):
        return True
    return b.endswith("*") and a.startswith(b[:-1])


def _q(text: str) -> str:
    """Quote as Go's ``%q`` does for printable text."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# -- Go's encoding/json, for the vault's request types -----------------------------------------------

#: Each request type's fields, as the sidecar's Go structs declare them (package ``credentialvault``).
_STRUCTS: dict[str, list[tuple[str, str]]] = {
    "CreateRequest": [("credentials", "[]Credential"), ("bindings", "[]Binding")],
    "MutationRequest": [
        ("expectedRevision", "*int64"),
        ("credentials", "*CredentialMutationSet"),
        ("bindings", "*BindingMutationSet"),
    ],
    "CredentialMutationSet": [("add", "[]Credential"), ("replace", "[]Credential"), ("delete", "[]string")],
    "BindingMutationSet": [("add", "[]Binding"), ("replace", "[]Binding"), ("delete", "[]string")],
    "Credential": [("name", "string"), ("source", "InlineCredentialSource")],
    "InlineCredentialSource": [("type", "string"), ("value", "string")],
    "Binding": [("name", "string"), ("match", "Match"), ("auth", "Auth")],
    "Match": [
        ("schemes", "[]string"),
        ("ports", "[]int"),
        ("hosts", "[]string"),
        ("methods", "[]string"),
        ("paths", "[]string"),
    ],
    "Auth": [("type", "string"), ("credential", "string"), ("name", "string"), ("headers", "[]CustomHeaderEntry")],
    "CustomHeaderEntry": [("name", "string"), ("credential", "string")],
}


def _decode(raw: bytes, root: str, prefix: str) -> dict[str, Any]:
    """Decode a request body as the sidecar does (``DisallowUnknownFields``); 400 ``<prefix>: <Go's error>``.

    Go reports the first error in document order, naming the innermost struct and the field path from the root
    (``json: cannot unmarshal number into Go struct field InlineCredentialSource.credentials.source.value of type
    string``).
    """
    if not raw.strip():
        raise VaultError(f"{prefix}: EOF")
    try:
        value = parse_json(raw)
    except ValueError as exc:
        raise VaultError(f"{prefix}: {exc}") from None
    errors: list[str] = []
    if not isinstance(value, dict):
        if value is not None:
            errors.append(f"json: cannot unmarshal {_json_kind(value)} into Go value of type credentialvault.{root}")
        value = {}
    out = _struct(value, root, (), errors)
    if errors:
        raise VaultError(f"{prefix}: {errors[0]}")
    return out


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, int):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _zero(go_type: str) -> Any:
    if go_type.startswith("[]"):
        return []
    if go_type.startswith("*"):
        return None
    if go_type in ("int", "int64"):
        return 0
    if go_type == "string":
        return ""
    return {name: _zero(t) for name, t in _STRUCTS[go_type]}


def _go_name(go_type: str) -> str:
    """Return a type as Go prints it (``[]credentialvault.Credential``, ``string``)."""
    if go_type.startswith("[]"):
        return "[]" + _go_name(go_type[2:])
    return go_type if go_type in ("string", "int", "int64") else f"credentialvault.{go_type}"


def _struct(obj: dict[str, Any], name: str, path: tuple[str, ...], errors: list[str]) -> dict[str, Any]:
    fields = _STRUCTS[name]
    out = {field: _zero(t) for field, t in fields}
    for key, value in obj.items():
        found = next((f for f in fields if f[0] == key), None) or next(
            (f for f in fields if f[0].lower() == key.lower()), None
        )
        if found is None:
            errors.append(f"json: unknown field {_q(key)}")
            continue
        field, go_type = found
        where = f"{name}.{'.'.join((*path, field))}"
        out[field] = _value(value, go_type.removeprefix("*"), (*path, field), where, errors)
    return out


def _value(value: Any, go_type: str, path: tuple[str, ...], where: str, errors: list[str]) -> Any:
    """Decode one field's value; ``where`` is how Go names the field in an error."""
    if value is None:
        return _zero(go_type)
    if go_type.startswith("[]"):
        if not isinstance(value, list):
            return _mismatch(value, where, go_type, errors)
        return [_value(item, go_type[2:], path, where, errors) for item in value]
    if go_type == "string":
        return value if isinstance(value, str) else _mismatch(value, where, go_type, errors)
    if go_type in ("int", "int64"):
        ok = isinstance(value, int) and not isinstance(value, bool)
        return value if ok else _mismatch(value, where, go_type, errors)
    if not isinstance(value, dict):
        return _mismatch(value, where, go_type, errors)
    return _struct(value, go_type, path, errors)


def _mismatch(value: Any, where: str, go_type: str, errors: list[str]) -> Any:
    errors.append(
        f"json: cannot unmarshal {_json_kind(value)} into Go struct field {where} of type {_go_name(go_type)}"
    )
    return _zero(go_type)
