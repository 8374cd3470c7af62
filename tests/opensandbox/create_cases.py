"""Create requests with bad ``volumes``, ``platform``, ``networkPolicy``, ``lifecycle`` or ``secureAccess`` and the answers the real opensandbox-server 1.1.1 gave.

Measured on the real server (Docker runtime, default configuration, on the fake Docker Engine API) with the
default create body plus the field shown; ``tests/harness/differential/test_real_server.py`` replays each case
against the real server, ``tests/opensandbox/model/test_volumes.py`` against the mock's model.
"""

from __future__ import annotations

from typing import Any

Answer = tuple[int, dict[str, Any]]

BODY: dict[str, Any] = {
    "image": {"uri": "python:3.11"},
    "entrypoint": ["tail", "-f", "/dev/null"],
    "timeout": 600,
    "resourceLimits": {"cpu": "1", "memory": "2Gi"},
}
DNS_LABEL = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
HOST_PATH = r"^(/|[A-Za-z]:[\\/])"


def volume(**fields: Any) -> dict[str, Any]:
    """Return a volume named ``data`` mounted at ``/data`` with ``fields`` added."""
    return {"name": "data", "mountPath": "/data", **fields}


def bad_request(code: str, message: str) -> Answer:
    return 400, {"code": code, "message": message}


def invalid(**entry: Any) -> Answer:
    return 422, {"detail": [entry]}


def mismatch(loc: list[Any], value: str, pattern: str) -> Answer:
    msg = f"String should match pattern '{pattern}'"
    return invalid(type="string_pattern_mismatch", loc=loc, msg=msg, input=value, ctx={"pattern": pattern})


def value_error(loc: list[Any], value: Any, message: str) -> Answer:
    return invalid(type="value_error", loc=loc, msg=f"Value error, {message}", input=value, ctx={"error": {}})


def not_allowed(path: str) -> Answer:
    message = f"Host path '{path}' is not under any allowed prefix. Allowed prefixes: []"
    return bad_request("VOLUME::HOST_PATH_NOT_ALLOWED", message)


V0 = ["body", "volumes", 0]
OSSFS = {"bucket": "bkt", "endpoint": "oss.example"}
KEYS = {"accessKeyId": "a", "accessKeySecret": "b"}
NONE_GIVEN = "Exactly one backend (host, pvc, ossfs) must be specified, but none was provided."
MANY_GIVEN = "Exactly one backend (host, pvc, ossfs) must be specified, but multiple were provided."

#: ``volumes`` value -> the real answer.
VOLUME_CASES: dict[str, tuple[Any, Answer]] = {
    "host-outside-allow-list": ([volume(host={"path": "/tmp/x"})], not_allowed("/tmp/x")),
    "host-windows-drive": ([volume(host={"path": "C:\\x"})], not_allowed("C:\\x")),
    "host-relative": ([volume(host={"path": "tmp/x"})], mismatch([*V0, "host", "path"], "tmp/x", HOST_PATH)),
    "host-dotdot": (
        [volume(host={"path": "/tmp/../etc"})],
        bad_request("VOLUME::INVALID_HOST_PATH", "Host path '/tmp/../etc' contains path traversal component '..'."),
    ),
    "host-double-slash": (
        [volume(host={"path": "/tmp//x"})],
        bad_request("VOLUME::INVALID_HOST_PATH", "Host path '/tmp//x' is not normalized. Remove redundant slashes."),
    ),
    "host-trailing-slash": (
        [volume(host={"path": "/tmp/x/"})],
        bad_request("VOLUME::INVALID_HOST_PATH", "Host path '/tmp/x/' is not normalized. Remove redundant slashes."),
    ),
    "no-backend": ([volume()], value_error(V0, volume(), NONE_GIVEN)),
    "two-backends": (
        [volume(host={"path": "/tmp/x"}, pvc={"claimName": "c"})],
        value_error(V0, volume(host={"path": "/tmp/x"}, pvc={"claimName": "c"}), MANY_GIVEN),
    ),
    "bad-name": ([volume(name="Bad_Name", pvc={"claimName": "c"})], mismatch([*V0, "name"], "Bad_Name", DNS_LABEL)),
    "long-name": (
        [volume(name="a" * 64, pvc={"claimName": "c"})],
        invalid(
            type="string_too_long",
            loc=[*V0, "name"],
            msg="String should have at most 63 characters",
            input="a" * 64,
            ctx={"max_length": 63},
        ),
    ),
    "relative-mount-path": (
        [volume(mountPath="data", pvc={"claimName": "c"})],
        mismatch([*V0, "mountPath"], "data", "^/.*"),
    ),
    "empty-mount-path": ([volume(mountPath="", pvc={"claimName": "c"})], mismatch([*V0, "mountPath"], "", "^/.*")),
    "duplicate-name": (
        [volume(pvc={"claimName": "c"}), volume(pvc={"claimName": "d"})],
        bad_request("VOLUME::DUPLICATE_NAME", "Duplicate volume name 'data'. Each volume must have a unique name."),
    ),
    "first-volume-checked-first": (
        [volume(host={"path": "/tmp/x"}), volume(host={"path": "/tmp/y"})],
        not_allowed("/tmp/x"),
    ),
    "ossfs-without-keys": (
        [volume(ossfs=OSSFS)],
        value_error([*V0, "ossfs"], OSSFS, "OSSFS inline credentials are required: accessKeyId and accessKeySecret."),
    ),
    "ossfs-blank-bucket": (
        [volume(ossfs={**OSSFS, "bucket": "   ", **KEYS})],
        bad_request("VOLUME::INVALID_OSSFS_BUCKET", "OSSFS bucket cannot be empty."),
    ),
    "ossfs-bad-version": (
        [volume(ossfs={**OSSFS, "version": "3", **KEYS})],
        invalid(
            type="literal_error",
            loc=[*V0, "ossfs", "version"],
            msg="Input should be '1.0' or '2.0'",
            input="3",
            ctx={"expected": "'1.0' or '2.0'"},
        ),
    ),
    "pvc-bad-claim-name": ([volume(pvc={"claimName": "C_x"})], mismatch([*V0, "pvc", "claimName"], "C_x", DNS_LABEL)),
    "absolute-sub-path": (
        [volume(pvc={"claimName": "c"}, subPath="/x")],
        bad_request("VOLUME::INVALID_SUB_PATH", "SubPath '/x' must be a relative path, not absolute."),
    ),
    "sub-path-traversal": (
        [volume(pvc={"claimName": "c"}, subPath="a/../b")],
        bad_request("VOLUME::INVALID_SUB_PATH", "SubPath 'a/../b' contains path traversal '..' which is not allowed."),
    ),
    "not-a-list": (
        {"a": 1},
        invalid(type="list_type", loc=["body", "volumes"], msg="Input should be a valid list", input={"a": 1}),
    ),
    "item-not-an-object": (
        ["x"],
        invalid(
            type="model_attributes_type",
            loc=V0,
            msg="Input should be a valid dictionary or object to extract fields from",
            input="x",
        ),
    ),
    "missing-name": (
        [{"mountPath": "/d", "host": {"path": "/tmp"}}],
        invalid(
            type="missing", loc=[*V0, "name"], msg="Field required", input={"mountPath": "/d", "host": {"path": "/tmp"}}
        ),
    ),
    "missing-mount-path": (
        [{"name": "d", "host": {"path": "/tmp"}}],
        invalid(
            type="missing", loc=[*V0, "mountPath"], msg="Field required", input={"name": "d", "host": {"path": "/tmp"}}
        ),
    ),
    "read-only-not-a-boolean": (
        [volume(pvc={"claimName": "c"}, readOnly="maybe")],
        invalid(
            type="bool_parsing",
            loc=[*V0, "readOnly"],
            msg="Input should be a valid boolean, unable to interpret input",
            input="maybe",
        ),
    ),
}

#: ``platform`` value -> the real answer.
PLATFORM_CASES: dict[str, tuple[Any, Answer]] = {
    "plan9": (
        {"os": "plan9", "arch": "amd64"},
        bad_request(
            "SANDBOX::INVALID_PARAMETER", "Unsupported platform.os 'plan9'. Supported values: ['linux', 'windows']."
        ),
    ),
    "mips": (
        {"os": "linux", "arch": "mips"},
        bad_request(
            "SANDBOX::INVALID_PARAMETER", "Unsupported platform.arch 'mips'. Supported values: ['amd64', 'arm64']."
        ),
    ),
    "no-arch": (
        {"os": "linux"},
        invalid(type="missing", loc=["body", "platform", "arch"], msg="Field required", input={"os": "linux"}),
    ),
    "os-not-a-string": (
        {"os": 1, "arch": "amd64"},
        invalid(type="string_type", loc=["body", "platform", "os"], msg="Input should be a valid string", input=1),
    ),
}

#: Accepted values (202); a platform is echoed stripped and in lower case.
ACCEPTED_VOLUMES: tuple[Any, ...] = ([], None)
ECHOED_PLATFORM = ({"os": " Linux ", "arch": "AMD64"}, {"os": "linux", "arch": "amd64"})

NO_EGRESS_IMAGE = bad_request(
    "SANDBOX::INVALID_PARAMETER", "egress.image must be configured when networkPolicy is provided."
)
EGRESS_0 = ["body", "networkPolicy", "egress", 0]

#: Fields added to the default body with a ``networkPolicy`` -> the real answer on a server without an egress
#: sidecar image (its default): the policy's shape is the body model's (422, field by field in the model's
#: order), then any policy is refused after ``secureAccess`` and before ``resourceLimits`` are checked. The
#: targets themselves are not looked at.
NETWORK_POLICY_CASES: dict[str, tuple[dict[str, Any], Answer]] = {
    "allow-all": (
        {"networkPolicy": {"defaultAction": "deny", "egress": [{"action": "allow", "target": "*"}]}},
        NO_EGRESS_IMAGE,
    ),
    "cidr": ({"networkPolicy": {"egress": [{"action": "allow", "target": "10.0.0.0/8"}]}}, NO_EGRESS_IMAGE),
    "empty-policy": ({"networkPolicy": {}}, NO_EGRESS_IMAGE),
    "unknown-default-action": ({"networkPolicy": {"defaultAction": "bogus"}}, NO_EGRESS_IMAGE),
    "before-resource-limits": (
        {
            "networkPolicy": {"egress": [{"action": "ALLOW", "target": "example.com:443"}]},
            "resourceLimits": {"cpu": "lots"},
        },
        NO_EGRESS_IMAGE,
    ),
    "after-secure-access": (
        {"networkPolicy": {}, "secureAccess": True},
        bad_request(
            "SANDBOX::INVALID_PARAMETER",
            "secureAccess is not supported when runtime.type='docker'. "
            "Use the Kubernetes runtime to create secured sandboxes.",
        ),
    ),
    "empty-target": (
        {"networkPolicy": {"egress": [{"action": "allow", "target": ""}]}},
        invalid(
            type="string_too_short",
            loc=[*EGRESS_0, "target"],
            msg="String should have at least 1 character",
            input="",
            ctx={"min_length": 1},
        ),
    ),
    "rule-fields-in-model-order": (
        {"networkPolicy": {"egress": [{"action": 1}]}},
        (
            422,
            {
                "detail": [
                    {
                        "type": "string_type",
                        "loc": [*EGRESS_0, "action"],
                        "msg": "Input should be a valid string",
                        "input": 1,
                    },
                    {"type": "missing", "loc": [*EGRESS_0, "target"], "msg": "Field required", "input": {"action": 1}},
                ]
            },
        ),
    ),
}


#: ``lifecycle`` value -> the real answer: the hook models' 422s (fields in order, then unknown keys, then each
#: model's own validator), and the Docker runtime's 400 for hooks that pass them.
LIFECYCLE_CASES: dict[str, tuple[Any, Answer]] = {
    "unknown-key": (
        {"x": 1},
        (
            422,
            {
                "detail": [
                    {
                        "type": "extra_forbidden",
                        "loc": ["body", "lifecycle", "x"],
                        "msg": "Extra inputs are not permitted",
                        "input": 1,
                    }
                ]
            },
        ),
    ),
    "pre-start-without-command": (
        {"preStart": {}},
        (
            422,
            {
                "detail": [
                    {
                        "type": "missing",
                        "loc": ["body", "lifecycle", "preStart", "command"],
                        "msg": "Field required",
                        "input": {},
                    }
                ]
            },
        ),
    ),
    "blank-command": (
        {"preStart": {"command": [" "]}},
        (
            422,
            {
                "detail": [
                    {
                        "type": "value_error",
                        "loc": ["body", "lifecycle", "preStart"],
                        "msg": "Value error, Lifecycle hook command must not be empty.",
                        "input": {"command": [" "]},
                        "ctx": {"error": {}},
                    }
                ]
            },
        ),
    ),
    "timeout-over-10800": (
        {"preStart": {"command": ["a"], "timeoutSeconds": 10801}},
        (
            422,
            {
                "detail": [
                    {
                        "type": "less_than_equal",
                        "loc": ["body", "lifecycle", "preStart", "timeoutSeconds"],
                        "msg": "Input should be less than or equal to 10800",
                        "input": 10801,
                        "ctx": {"le": 10800},
                    }
                ]
            },
        ),
    ),
    "python-names-and-an-extra-key": (
        {"preStart": {"command": ["a"], "timeout_seconds": "5", "y": 2}},
        (
            422,
            {
                "detail": [
                    {
                        "type": "extra_forbidden",
                        "loc": ["body", "lifecycle", "preStart", "y"],
                        "msg": "Extra inputs are not permitted",
                        "input": 2,
                    }
                ]
            },
        ),
    ),
    "alias-and-name-both": (
        {"preStart": {"command": ["a"]}, "pre_start": {"command": []}},
        (
            422,
            {
                "detail": [
                    {
                        "type": "extra_forbidden",
                        "loc": ["body", "lifecycle", "pre_start"],
                        "msg": "Extra inputs are not permitted",
                        "input": {"command": []},
                    }
                ]
            },
        ),
    ),
    "periodic-blank-name": (
        {"periodic": [{"name": " ", "schedule": "x", "command": ["a"]}]},
        (
            422,
            {
                "detail": [
                    {
                        "type": "value_error",
                        "loc": ["body", "lifecycle", "periodic", 0],
                        "msg": "Value error, Periodic lifecycle hook name must not be blank.",
                        "input": {"name": " ", "schedule": "x", "command": ["a"]},
                        "ctx": {"error": {}},
                    }
                ]
            },
        ),
    ),
    "periodic-names-unique-after-strip": (
        {
            "periodic": [
                {"name": "a", "schedule": "s", "command": ["x"]},
                {"name": " a ", "schedule": "s", "command": ["x"]},
            ]
        },
        (
            422,
            {
                "detail": [
                    {
                        "type": "value_error",
                        "loc": ["body", "lifecycle"],
                        "msg": "Value error, Periodic lifecycle hook names must be unique.",
                        "input": {
                            "periodic": [
                                {"name": "a", "schedule": "s", "command": ["x"]},
                                {"name": " a ", "schedule": "s", "command": ["x"]},
                            ]
                        },
                        "ctx": {"error": {}},
                    }
                ]
            },
        ),
    ),
    "periodic-fields-then-extras": (
        {"periodic": [{"name": "a", "schedule": "s", "command": ["x"], "timeoutSeconds": 301}], "z": 1},
        (
            422,
            {
                "detail": [
                    {
                        "type": "less_than_equal",
                        "loc": ["body", "lifecycle", "periodic", 0, "timeoutSeconds"],
                        "msg": "Input should be less than or equal to 300",
                        "input": 301,
                        "ctx": {"le": 300},
                    },
                    {
                        "type": "extra_forbidden",
                        "loc": ["body", "lifecycle", "z"],
                        "msg": "Extra inputs are not permitted",
                        "input": 1,
                    },
                ]
            },
        ),
    ),
    "valid-hooks": (
        {
            "preStart": {"command": ["a"], "timeoutSeconds": 5},
            "periodic": [{"name": "a", "schedule": "* * * * *", "command": ["x"]}],
        },
        (
            400,
            {
                "code": "SANDBOX::INVALID_PARAMETER",
                "message": "lifecycle hooks are not supported by the Docker provider.",
            },
        ),
    ),
}

#: ``secureAccess`` value -> the real status, and the 422's error type. pydantic's lax booleans: 0/1, 0.0/1.0 and
#: the words on/off, t/f, true/false, y/n, yes/no, 1/0 in any case; another whole number or word is ``bool_parsing``,
#: and anything else (null, 1.5, a list) is ``bool_type``. The field is a plain bool with a default, so null is refused. A true value is then
#: the Docker runtime's 400.
SECURE_ACCESS_CASES: dict[str, tuple[Any, int, str | None]] = {
    "null": (None, 422, "bool_type"),
    "int-minus-one": (-1, 422, "bool_parsing"),
    "int-two": (2, 422, "bool_parsing"),
    "float-fraction": (1.5, 422, "bool_type"),
    "float-two": (2.0, 422, "bool_parsing"),
    "float-one": (1.0, 400, None),
    "float-zero": (0.0, 202, None),
    "int-zero": (0, 202, None),
    "word-y": ("y", 400, None),
    "word-T": ("T", 400, None),
    "word-f": ("f", 202, None),
    "word-No": ("No", 202, None),
    "word-padded": (" true", 422, "bool_parsing"),
    "word-maybe": ("maybe", 422, "bool_parsing"),
    "list": ([], 422, "bool_type"),
}


#: Create bodies in template mode (``templateId``), with ``credentialProxy`` or in pool mode -> the real answer
#: (``"<created>"`` for a 202): the body model's validator in its order, then the Docker runtime's checks.
MODE_CASES: dict[str, tuple[dict[str, Any], tuple[int, Any]]] = {
    "template-only": (
        {"templateId": "t", "timeout": 600},
        (400, {"code": "DOCKER::INVALID_ENTRYPOINT", "message": "Entrypoint must contain at least one command."}),
    ),
    "template-no-timeout": (
        {"templateId": "t"},
        (
            422,
            {
                "detail": [
                    {
                        "type": "value_error",
                        "loc": ["body"],
                        "msg": "Value error, timeout is required when templateId is provided.",
                        "input": {"templateId": "t"},
                        "ctx": {"error": {}},
                    }
                ]
            },
        ),
    ),
    "template-blank": (
        {
            "image": {"uri": "python:3.11"},
            "timeout": 600,
            "resourceLimits": {"cpu": "1"},
            "entrypoint": ["x"],
            "templateId": " ",
        },
        (202, "<created>"),
    ),
    "template-empty": (
        {
            "image": {"uri": "python:3.11"},
            "timeout": 600,
            "resourceLimits": {"cpu": "1"},
            "entrypoint": ["x"],
            "templateId": "",
        },
        (
            422,
            {
                "detail": [
                    {
                        "type": "string_too_short",
                        "loc": ["body", "templateId"],
                        "msg": "String should have at least 1 character",
                        "input": "",
                        "ctx": {"min_length": 1},
                    }
                ]
            },
        ),
    ),
    "template-with-meta-env": (
        {"templateId": "t", "timeout": 600, "env": {}, "metadata": {"a": "b"}, "secureAccess": False},
        (
            422,
            {
                "detail": [
                    {
                        "type": "value_error",
                        "loc": ["body"],
                        "msg": "Value error, templateId cannot be combined with: env; the workload shape is fixed by the template's golden image.",
                        "input": {
                            "templateId": "t",
                            "timeout": 600,
                            "env": {},
                            "metadata": {"a": "b"},
                            "secureAccess": False,
                        },
                        "ctx": {"error": {}},
                    }
                ]
            },
        ),
    ),
    "template-secure": (
        {"templateId": "t", "timeout": 600, "secureAccess": True, "extensions": {"poolRef": "p"}},
        (
            422,
            {
                "detail": [
                    {
                        "type": "value_error",
                        "loc": ["body"],
                        "msg": "Value error, templateId cannot be combined with: secureAccess; the workload shape is fixed by the template's golden image.",
                        "input": {
                            "templateId": "t",
                            "timeout": 600,
                            "secureAccess": True,
                            "extensions": {"poolRef": "p"},
                        },
                        "ctx": {"error": {}},
                    }
                ]
            },
        ),
    ),
    "template-bad-label": (
        {"templateId": "t", "timeout": 600, "metadata": {"a": "b c"}},
        (400, {"code": "DOCKER::INVALID_ENTRYPOINT", "message": "Entrypoint must contain at least one command."}),
    ),
    "template-env-reserved": (
        {"templateId": "t", "env": {"OPENSANDBOX_LIFECYCLE": "x"}},
        (
            422,
            {
                "detail": [
                    {
                        "type": "value_error",
                        "loc": ["body"],
                        "msg": "Value error, Environment variable 'OPENSANDBOX_LIFECYCLE' is reserved. Use the lifecycle request field instead.",
                        "input": {"templateId": "t", "env": {"OPENSANDBOX_LIFECYCLE": "x"}},
                        "ctx": {"error": {}},
                    }
                ]
            },
        ),
    ),
    "cp-enabled-no-policy": (
        {
            "image": {"uri": "python:3.11"},
            "timeout": 600,
            "resourceLimits": {"cpu": "1"},
            "entrypoint": ["x"],
            "credentialProxy": {"enabled": True},
        },
        (
            422,
            {
                "detail": [
                    {
                        "type": "value_error",
                        "loc": ["body"],
                        "msg": "Value error, credentialProxy.enabled requires networkPolicy.",
                        "input": {
                            "image": {"uri": "python:3.11"},
                            "timeout": 600,
                            "resourceLimits": {"cpu": "1"},
                            "entrypoint": ["x"],
                            "credentialProxy": {"enabled": True},
                        },
                        "ctx": {"error": {}},
                    }
                ]
            },
        ),
    ),
    "cp-enabled-policy": (
        {
            "image": {"uri": "python:3.11"},
            "timeout": 600,
            "resourceLimits": {"cpu": "1"},
            "entrypoint": ["x"],
            "credentialProxy": {"enabled": True},
            "networkPolicy": {},
        },
        (
            400,
            {
                "code": "SANDBOX::INVALID_PARAMETER",
                "message": "egress.image must be configured when networkPolicy is provided.",
            },
        ),
    ),
    "cp-disabled": (
        {
            "image": {"uri": "python:3.11"},
            "timeout": 600,
            "resourceLimits": {"cpu": "1"},
            "entrypoint": ["x"],
            "credentialProxy": {"enabled": False, "x": 1},
        },
        (202, "<created>"),
    ),
    "cp-null-enabled": (
        {
            "image": {"uri": "python:3.11"},
            "timeout": 600,
            "resourceLimits": {"cpu": "1"},
            "entrypoint": ["x"],
            "credentialProxy": {"enabled": None},
        },
        (
            422,
            {
                "detail": [
                    {
                        "type": "bool_type",
                        "loc": ["body", "credentialProxy", "enabled"],
                        "msg": "Input should be a valid boolean",
                        "input": None,
                    }
                ]
            },
        ),
    ),
    "cp-empty": (
        {
            "image": {"uri": "python:3.11"},
            "timeout": 600,
            "resourceLimits": {"cpu": "1"},
            "entrypoint": ["x"],
            "credentialProxy": {},
        },
        (202, "<created>"),
    ),
    "cp-null": (
        {
            "image": {"uri": "python:3.11"},
            "timeout": 600,
            "resourceLimits": {"cpu": "1"},
            "entrypoint": ["x"],
            "credentialProxy": None,
        },
        (202, "<created>"),
    ),
    "pool-no-image": (
        {"timeout": 600, "extensions": {"poolRef": "p"}},
        (
            400,
            {
                "code": "SANDBOX::UNSUPPORTED_POOL_REF",
                "message": "poolRef is not supported by the Docker provider. Use Kubernetes BatchSandbox provider instead.",
            },
        ),
    ),
    "pool-lifecycle": (
        {"timeout": 600, "extensions": {"poolRef": "p"}, "lifecycle": {}},
        (
            422,
            {
                "detail": [
                    {
                        "type": "value_error",
                        "loc": ["body"],
                        "msg": "Value error, lifecycle cannot be used together with poolRef.",
                        "input": {"timeout": 600, "extensions": {"poolRef": "p"}, "lifecycle": {}},
                        "ctx": {"error": {}},
                    }
                ]
            },
        ),
    ),
    "pool-snapshot": (
        {
            "image": {"uri": "python:3.11"},
            "timeout": 600,
            "resourceLimits": {"cpu": "1"},
            "entrypoint": ["x"],
            "extensions": {"poolRef": "p"},
            "snapshotId": "s",
        },
        (
            422,
            {
                "detail": [
                    {
                        "type": "value_error",
                        "loc": ["body"],
                        "msg": "Value error, snapshotId cannot be used together with poolRef.",
                        "input": {
                            "image": {"uri": "python:3.11"},
                            "timeout": 600,
                            "resourceLimits": {"cpu": "1"},
                            "entrypoint": ["x"],
                            "extensions": {"poolRef": "p"},
                            "snapshotId": "s",
                        },
                        "ctx": {"error": {}},
                    }
                ]
            },
        ),
    ),
    "pool-blank-snapshot": (
        {"extensions": {"poolRef": "p"}, "snapshotId": " "},
        (
            400,
            {
                "code": "SANDBOX::UNSUPPORTED_POOL_REF",
                "message": "poolRef is not supported by the Docker provider. Use Kubernetes BatchSandbox provider instead.",
            },
        ),
    ),
    "pool-cp-enabled": (
        {
            "image": {"uri": "python:3.11"},
            "timeout": 600,
            "resourceLimits": {"cpu": "1"},
            "entrypoint": ["x"],
            "extensions": {"poolRef": "p"},
            "credentialProxy": {"enabled": True},
        },
        (
            400,
            {
                "code": "SANDBOX::UNSUPPORTED_POOL_REF",
                "message": "poolRef is not supported by the Docker provider. Use Kubernetes BatchSandbox provider instead.",
            },
        ),
    ),
    "cp-enabled-no-image": (
        {"credentialProxy": {"enabled": True}},
        (
            422,
            {
                "detail": [
                    {
                        "type": "value_error",
                        "loc": ["body"],
                        "msg": "Value error, credentialProxy.enabled requires networkPolicy.",
                        "input": {"credentialProxy": {"enabled": True}},
                        "ctx": {"error": {}},
                    }
                ]
            },
        ),
    ),
}
