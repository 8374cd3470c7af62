"""The egress sidecar's credential vault (``/credential-vault…`` on port 18080), per sandbox.

The cases follow the 1.1.1 sidecar's source (egress v1.1.0, ``policy_server.go`` and
``pkg/credentialvault/vault.go``): status codes, ``text/plain`` refusals with Go's wording, revisions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mockserver.opensandbox import OpenSandboxMock

from ..create_cases import BODY

POLICY = {"defaultAction": "deny", "egress": [{"action": "allow", "target": "api.example.com"}]}
BEARER = {"name": "gh", "match": {"hosts": ["API.example.com."]}, "auth": {"type": "bearer", "credential": "tok"}}
TOKEN = {"name": "tok", "source": {"type": "inline", "value": "s3cret"}}


@pytest.fixture(scope="module")
def mock() -> Iterator[OpenSandboxMock]:
    made = OpenSandboxMock(egress_token="egress-secret")
    with made.server() as srv:
        made.url = srv.url  # type: ignore[attr-defined]
        yield made


def _sidecar(mock: OpenSandboxMock, policy: dict[str, Any] | None = POLICY) -> httpx.Client:
    url: str = mock.url  # type: ignore[attr-defined]
    resp = httpx.post(f"{url}/v1/sandboxes", json={**BODY, "networkPolicy": policy} if policy else BODY)
    assert resp.status_code == 202, resp.text
    return httpx.Client(
        base_url=f"{url}/direct/{resp.json()['id']}/18080", headers={"OPENSANDBOX-EGRESS-AUTH": "egress-secret"}
    )


def _text(resp: httpx.Response) -> tuple[int, str]:
    assert resp.headers["content-type"].startswith("text/plain"), resp.headers
    return resp.status_code, resp.text


def test_lifecycle_create_patch_read_delete(mock: OpenSandboxMock) -> None:
    with _sidecar(mock) as side:
        assert _text(side.get("/credential-vault")) == (404, "credential vault not found\n")
        made = side.post("/credential-vault", json={"credentials": [TOKEN], "bindings": [BEARER]})
        assert made.status_code == 201, made.text
        binding = {
            "name": "gh",
            "revision": 1,
            "match": {
                "schemes": ["https"],
                "ports": [443],
                "hosts": ["api.example.com"],
                "methods": ["GET", "POST", "PUT", "PATCH", "DELETE"],
                "paths": ["/*"],
            },
            "auth": {"type": "bearer"},
        }
        assert made.json() == {
            "revision": 1,
            "credentials": [{"name": "tok", "sourceType": "inline", "revision": 1}],
            "bindings": [binding],
        }
        assert "s3cret" not in side.get("/credential-vault").text
        assert _text(side.post("/credential-vault", json={})) == (409, "credential vault already exists\n")
        patch = {
            "expectedRevision": 1,
            "credentials": {"add": [{"name": "key", "source": {"value": "k"}}]},
            "bindings": {"replace": [{**BEARER, "auth": {"type": "apiKey", "name": "x-api-key", "credential": "key"}}]},
        }
        patched = side.patch("/credential-vault", json=patch)
        assert patched.status_code == 200, patched.text
        state = patched.json()
        assert state["revision"] == 2
        assert [(c["name"], c["revision"]) for c in state["credentials"]] == [("key", 2), ("tok", 1)]
        assert state["bindings"][0]["auth"] == {"type": "apiKey", "name": "X-Api-Key"}
        assert state["bindings"][0]["revision"] == 2  # bindings carry the vault's revision
        stale = side.patch("/credential-vault", json={"expectedRevision": 1})
        assert _text(stale) == (409, "expectedRevision 1 does not match current revision 2\n")
        assert side.get("/credential-vault/credentials").json() == {"revision": 2, "credentials": state["credentials"]}
        assert side.get("/credential-vault/bindings/gh").json() == state["bindings"][0]
        assert side.get("/credential-vault/credentials/%20key").json()["name"] == "key"  # the name is trimmed
        assert _text(side.get("/credential-vault/bindings/nope")) == (404, "binding not found\n")
        assert side.delete("/credential-vault").status_code == 204
        assert _text(side.delete("/credential-vault")) == (404, "credential vault not found\n")
        assert side.post("/credential-vault", json={"credentials": [TOKEN]}).json()["revision"] == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"credentials": [TOKEN], "bindings": [BEARER], "x": 1}, 'json: unknown field "x"'),
        (
            {"credentials": [{"name": "a", "source": {"value": 5}}]},
            "json: cannot unmarshal number into Go struct field InlineCredentialSource.credentials.source.value"
            " of type string",
        ),
        (
            {"credentials": [1]},
            "json: cannot unmarshal number into Go struct field CreateRequest.credentials"
            " of type credentialvault.Credential",
        ),
        ([], "json: cannot unmarshal array into Go value of type credentialvault.CreateRequest"),
    ],
)
def test_bodies_are_decoded_as_go_does(mock: OpenSandboxMock, body: Any, message: str) -> None:
    with _sidecar(mock) as side:
        assert _text(side.post("/credential-vault", json=body)) == (
            400,
            f"invalid credential vault request: {message}\n",
        )
        assert _text(side.post("/credential-vault", content=b"")) == (400, "invalid credential vault request: EOF\n")


@pytest.mark.parametrize(
    ("bindings", "credentials", "message"),
    [
        ([BEARER], [], 'binding "gh" references unknown credential "tok"'),
        (
            [{**BEARER, "match": {"hosts": ["other.example.com"]}}],
            [TOKEN],
            'binding "gh" host "other.example.com" is not covered by an explicit allow egress rule',
        ),
        (
            [{**BEARER, "match": {"hosts": ["api.example.com"], "ports": [8443]}}],
            [TOKEN],
            'binding "gh" port 8443 is not a configured transparent intercept port',
        ),
        (
            [{**BEARER, "match": {"hosts": ["10.0.0.1"]}}],
            [TOKEN],
            'binding "gh": credential binding host "10.0.0.1" must be an FQDN, not an IP address',
        ),
        (
            [BEARER, {**BEARER, "name": "gh2", "match": {"hosts": ["api.example.com"], "paths": ["/v1/*"]}}],
            [TOKEN],
            'bindings "gh" and "gh2" can match the same request',
        ),
        (
            [{**BEARER, "auth": {"type": "apiKey", "name": "Host", "credential": "tok"}}],
            [TOKEN],
            'binding "gh": reserved credential header name "Host"',
        ),
        ([], [{"name": " ", "source": {"value": "v"}}], "credential name cannot be blank"),
    ],
)
def test_candidates_are_checked_against_the_policy(
    mock: OpenSandboxMock, bindings: list[Any], credentials: list[Any], message: str
) -> None:
    with _sidecar(mock) as side:
        resp = side.post("/credential-vault", json={"credentials": credentials, "bindings": bindings})
        assert _text(resp) == (400, message + "\n")
        assert side.get("/credential-vault").status_code == 404  # nothing was made


def test_bindings_need_a_policy_and_hold_it(mock: OpenSandboxMock) -> None:
    """Bindings need explicit allow rules; a sidecar policy change that would uncover one is refused."""
    with _sidecar(mock, {"defaultAction": "allow", "egress": []}) as side:
        resp = side.post("/credential-vault", json={"credentials": [TOKEN], "bindings": [BEARER]})
        assert _text(resp) == (400, "credential bindings require explicit networkPolicy.egress allow rules\n")
    two_rules = {"defaultAction": "deny", "egress": [*POLICY["egress"], {"action": "allow", "target": "pypi.org"}]}
    with _sidecar(mock, two_rules) as side:
        assert side.post("/credential-vault", json={"credentials": [TOKEN], "bindings": [BEARER]}).status_code == 201
        refused = side.request("DELETE", "/policy", json=["api.example.com"])
        assert _text(refused) == (
            400,
            'credential vault policy validation: binding "gh" host "api.example.com" is not covered by an explicit'
            " allow egress rule\n",
        )
        assert side.get("/policy").json()["policy"]["egress"] == two_rules["egress"]  # unchanged
        assert side.request("DELETE", "/policy", json=["pypi.org"]).status_code == 200


def test_token_methods_and_unknown_paths(mock: OpenSandboxMock) -> None:
    with _sidecar(mock) as side:
        assert _text(side.get("/credential-vault", headers={"OPENSANDBOX-EGRESS-AUTH": "wrong"}))[0] == 401
        put = side.put("/credential-vault", json={})
        assert (_text(put), put.headers["allow"]) == ((405, "method not allowed\n"), "GET, POST, PATCH, DELETE")
        post = side.post("/credential-vault/credentials", json={})
        assert (post.status_code, post.headers["allow"]) == (405, "GET")
        assert _text(side.get("/credential-vault/other")) == (404, "not found\n")
        assert _text(side.get("/credential-vault/_active", headers={"OPENSANDBOX-EGRESS-AUTH": ""})) == (
            403,
            "forbidden\n",
        )


def test_each_sandbox_has_its_own_vault(mock: OpenSandboxMock) -> None:
    with _sidecar(mock) as one, _sidecar(mock) as two:
        assert one.post("/credential-vault", json={"credentials": [TOKEN]}).status_code == 201
        assert two.get("/credential-vault").status_code == 404
