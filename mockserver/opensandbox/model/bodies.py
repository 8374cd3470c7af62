"""The lifecycle API's request bodies, declared once as pydantic v2 models, as the real server declares them.

The real opensandbox-server 1.1.1 is FastAPI over pydantic 2.14 (``api/schema.py``): each body is a model,
FastAPI validates the decoded JSON with ``validate_python(body, from_attributes=True)`` and answers 422
``{"detail": errors}`` with the ``loc`` of each error behind ``"body"``. The models below declare the same
fields (names, aliases, types, defaults, constraints, validators and their messages), so the 422 types,
locations and messages come from pydantic itself; :func:`validated` is the one place a body is checked and
its errors rendered. The runtime's own checks (the 400s) stay in :mod:`.spec` and :mod:`.volumes`; they read
the validated model.

Every model accepts a field by its alias or its Python name (``populate_by_name``), as the real ones do;
unknown keys are ignored except in the lifecycle hooks and the template request, which forbid them.

Importing this module imports pydantic and builds the models (tens of milliseconds), so the rules import it on
first use, not at start-up.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from .validation import RequestValidationError

__all__ = [
    "CREATE_KEYS",
    "CreatePoolRequest",
    "CreateSandboxRequest",
    "CreateSnapshotRequest",
    "CreateTemplateRequest",
    "MetricsEvent",
    "NetworkPolicy",
    "NetworkRule",
    "RenewRequest",
    "UpdatePoolRequest",
    "Volume",
    "detail",
    "validated",
]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

#: The environment variable the server keeps for the lifecycle hooks (``constants.OPENSANDBOX_LIFECYCLE``).
RESERVED_ENV = "OPENSANDBOX_LIFECYCLE"
#: The fields a template fixes, so a create with ``templateId`` refuses them (the wire names, sorted in the message).
_TEMPLATE_CONFLICTS = (
    "image",
    "snapshotId",
    "entrypoint",
    "env",
    "resourceLimits",
    "resourceRequests",
    "volumes",
    "platform",
    "credentialProxy",
    "secureAccess",
    "lifecycle",
)
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"

StrMap = dict[str, str]


class _Body(BaseModel):
    """A request model: a field is taken by its alias or its Python name; unknown keys are ignored."""

    model_config = ConfigDict(populate_by_name=True)


class _Closed(BaseModel):
    """A request model that refuses unknown keys (``extra_forbidden``)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class ImageAuth(_Body):
    """Registry credentials: accepted, never returned."""

    username: str
    password: str


class ImageSpec(_Body):
    """``image``: the URI and optional registry credentials."""

    uri: str
    auth: ImageAuth | None = None


class PlatformSpec(_Body):
    """``platform``: the operating system and CPU architecture asked for."""

    os: str
    arch: str


class NetworkRule(_Body):
    """One egress rule: the action is any string here (the sidecar judges it), the target is not empty."""

    action: str
    target: str = Field(min_length=1)


class NetworkPolicy(_Body):
    """An egress policy as the sidecar's ``/policy`` takes it."""

    default_action: str | None = Field(None, alias="defaultAction")
    egress: list[NetworkRule] = Field(default_factory=list)


class CredentialProxy(_Body):
    """``credentialProxy``: whether the sandbox's credential proxy starts."""

    enabled: bool = False


class LifecycleHook(_Closed):
    """``lifecycle.preStart``: a command run before the entrypoint."""

    command: list[str] = Field(min_length=1)
    timeout_seconds: int | None = Field(None, alias="timeoutSeconds", ge=1, le=10800)

    @model_validator(mode="after")
    def _command_given(self) -> LifecycleHook:
        if not self.command[0].strip():
            raise ValueError("Lifecycle hook command must not be empty.")
        return self


class PeriodicHook(_Closed):
    """One of ``lifecycle.periodic``: a named command on a schedule (name and schedule stripped)."""

    name: str = Field(min_length=1)
    schedule: str = Field(min_length=1)
    command: list[str] = Field(min_length=1)
    timeout_seconds: int | None = Field(None, alias="timeoutSeconds", ge=1, le=300)

    @model_validator(mode="after")
    def _stripped_and_given(self) -> PeriodicHook:
        self.name, self.schedule = self.name.strip(), self.schedule.strip()
        if not self.name:
            raise ValueError("Periodic lifecycle hook name must not be blank.")
        if not self.schedule:
            raise ValueError("Periodic lifecycle hook schedule must not be blank.")
        if not self.command[0].strip():
            raise ValueError("Periodic lifecycle hook command must not be empty.")
        return self


class SandboxLifecycle(_Closed):
    """``lifecycle``: hooks execd runs (the Docker runtime refuses any with 400)."""

    pre_start: LifecycleHook | None = Field(None, alias="preStart")
    periodic: list[PeriodicHook] | None = None

    @model_validator(mode="after")
    def _unique_names(self) -> SandboxLifecycle:
        names = [hook.name for hook in self.periodic or ()]
        if len(names) != len(set(names)):
            raise ValueError("Periodic lifecycle hook names must be unique.")
        return self


class HostBackend(_Body):
    """A host-path bind mount: an absolute POSIX path or a drive path."""

    path: str = Field(pattern=r"^(/|[A-Za-z]:[\\/])")


class PvcBackend(_Body):
    """A platform-managed named volume (a Docker named volume on Docker)."""

    claim_name: str = Field(alias="claimName", pattern=_DNS_LABEL, max_length=253)
    create_if_not_exists: bool = Field(True, alias="createIfNotExists")
    delete_on_sandbox_termination: bool = Field(False, alias="deleteOnSandboxTermination")
    storage_class: str | None = Field(None, alias="storageClass")
    storage: str | None = Field(None, pattern=r"^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei)?$")
    access_modes: list[str] | None = Field(None, alias="accessModes")


class OssfsBackend(_Body):
    """An Alibaba Cloud OSS bucket mounted with ossfs; inline credentials are required."""

    bucket: str = Field(min_length=3, max_length=63)
    endpoint: str = Field(min_length=1)
    version: Literal["1.0", "2.0"] = "2.0"
    options: list[str] | None = None
    access_key_id: str | None = Field(None, alias="accessKeyId", min_length=1)
    access_key_secret: str | None = Field(None, alias="accessKeySecret", min_length=1)

    @model_validator(mode="after")
    def _credentials_given(self) -> OssfsBackend:
        if not self.access_key_id or not self.access_key_secret:
            raise ValueError("OSSFS inline credentials are required: accessKeyId and accessKeySecret.")
        return self


class Volume(_Body):
    """One of ``volumes``: a name, exactly one backend, and where it is mounted."""

    name: str = Field(pattern=_DNS_LABEL, max_length=63)
    host: HostBackend | None = None
    pvc: PvcBackend | None = None
    ossfs: OssfsBackend | None = None
    mount_path: str = Field(alias="mountPath", pattern=r"^/.*")
    read_only: bool = Field(False, alias="readOnly")
    sub_path: str | None = Field(None, alias="subPath")

    @model_validator(mode="after")
    def _one_backend(self) -> Volume:
        given = sum(backend is not None for backend in (self.host, self.pvc, self.ossfs))
        if given != 1:
            how = "none was provided" if given == 0 else "multiple were provided"
            raise ValueError(f"Exactly one backend (host, pvc, ossfs) must be specified, but {how}.")
        return self


class CreateSandboxRequest(_Body):
    """``POST /v1/sandboxes``: from an image, a snapshot, a template or a pool.

    The validator runs once every field passed, in the real order: the reserved environment variable; template
    mode (nothing that shapes the workload, a timeout required) or pool mode (no lifecycle, no snapshot), each
    ending the checks; then a credential proxy needs a policy, exactly one of image and snapshot, an entrypoint
    with an image, and ``resourceLimits``. A blank ``templateId``, ``snapshotId`` or image URI reads as absent.
    """

    image: ImageSpec | None = None
    snapshot_id: str | None = Field(None, alias="snapshotId")
    platform: PlatformSpec | None = None
    timeout: int | None = Field(None, ge=60)
    resource_limits: StrMap | None = Field(None, alias="resourceLimits")
    resource_requests: StrMap | None = Field(None, alias="resourceRequests")
    env: dict[str, str | None] | None = None
    metadata: StrMap | None = None
    lifecycle: SandboxLifecycle | None = None
    entrypoint: list[str] | None = Field(None, min_length=1)
    network_policy: NetworkPolicy | None = Field(None, alias="networkPolicy")
    credential_proxy: CredentialProxy | None = Field(None, alias="credentialProxy")
    secure_access: bool = Field(False, alias="secureAccess")
    volumes: list[Volume] | None = None
    extensions: StrMap | None = None
    template_id: str | None = Field(None, alias="templateId", min_length=1)

    @property
    def pool_ref(self) -> str:
        """Return the non-blank ``extensions.poolRef``, or ``""``."""
        return (self.extensions or {}).get("poolRef", "").strip()

    @property
    def has_image(self) -> bool:
        """Tell whether an image with a non-blank URI is given."""
        return self.image is not None and bool(self.image.uri.strip())

    @property
    def has_snapshot(self) -> bool:
        """Tell whether a non-blank ``snapshotId`` is given."""
        return bool((self.snapshot_id or "").strip())

    @model_validator(mode="after")
    def _consistent(self) -> CreateSandboxRequest:
        if self.env and RESERVED_ENV in self.env:
            raise ValueError(
                f"Environment variable '{RESERVED_ENV}' is reserved. Use the lifecycle request field instead."
            )
        if (self.template_id or "").strip():
            self._template_mode()
            return self
        self.template_id = None
        if self.pool_ref:
            if self.lifecycle is not None:
                raise ValueError("lifecycle cannot be used together with poolRef.")
            if self.has_snapshot:
                raise ValueError("snapshotId cannot be used together with poolRef.")
            return self
        if self.credential_proxy is not None and self.credential_proxy.enabled and self.network_policy is None:
            raise ValueError("credentialProxy.enabled requires networkPolicy.")
        if self.has_image == self.has_snapshot:
            raise ValueError("Exactly one of image or snapshotId must be provided.")
        if self.has_image and not self.entrypoint:
            raise ValueError("Entrypoint is required when image is provided.")
        if self.resource_limits is None:
            raise ValueError("resourceLimits is required when poolRef is not provided.")
        return self

    def _template_mode(self) -> None:
        """Refuse what a template fixes, and a template without a timeout."""
        given = {name: getattr(self, field) for field, name in _WIRE_NAMES.items() if name in _TEMPLATE_CONFLICTS}
        given["snapshotId"] = self.has_snapshot
        present = sorted(name for name, value in given.items() if value not in (None, False))
        if present:
            raise ValueError(
                f"templateId cannot be combined with: {', '.join(present)}; "
                "the workload shape is fixed by the template's golden image."
            )
        if self.timeout is None:
            raise ValueError("timeout is required when templateId is provided.")


class RenewRequest(_Body):
    """``POST /v1/sandboxes/{id}/renew-expiration``: the new expiry (RFC 3339 text or a Unix time)."""

    expires_at: datetime = Field(alias="expiresAt")


class CreateSnapshotRequest(_Body):
    """``POST /v1/sandboxes/{id}/snapshots``: an optional name."""

    name: str | None = Field(None, min_length=1)


class MetricsEvent(_Body):
    """``POST /v1/metrics``: an SDK's report of one create."""

    event_type: Literal["sandbox.create"] = Field(alias="eventType")
    sandbox_id: str | None = Field(None, alias="sandboxId")
    image: str | None = None
    create_duration_ms: int = Field(alias="createDurationMs", ge=0)
    success: bool


class PoolCapacity(_Body):
    """A pool's ``capacitySpec``: four non-negative sizes."""

    buffer_max: int = Field(alias="bufferMax", ge=0)
    buffer_min: int = Field(alias="bufferMin", ge=0)
    pool_max: int = Field(alias="poolMax", ge=0)
    pool_min: int = Field(alias="poolMin", ge=0)


class CreatePoolRequest(_Body):
    """``POST /v1/pools``: a Kubernetes-named pool, its pod template and its capacity."""

    name: str = Field(pattern=_DNS_LABEL, max_length=253)
    template: dict[Any, Any]
    capacity_spec: PoolCapacity = Field(alias="capacitySpec")


class UpdatePoolRequest(_Body):
    """``PUT /v1/pools/{name}``: a new capacity."""

    capacity_spec: PoolCapacity = Field(alias="capacitySpec")


class TemplateReadiness(_Body):
    """A template build's readiness gate."""

    probe: str | None = None
    warmup_seconds: int | None = Field(None, alias="warmupSeconds", ge=0)


class CreateTemplateRequest(_Closed):
    """``POST /v1/templates``: a golden-image build (no unknown keys)."""

    image: str = Field(min_length=1)
    resource_limits: StrMap | None = Field(None, alias="resourceLimits")
    entrypoint: list[str] | None = Field(None, min_length=1)
    env: StrMap | None = None
    metadata: StrMap | None = None
    readiness: TemplateReadiness | None = None
    publish: str = Field(min_length=1)
    format: Literal["native", "overlaybd"] = "overlaybd"


#: Each create field's Python name -> its wire name.
_WIRE_NAMES = {name: info.alias or name for name, info in CreateSandboxRequest.model_fields.items()}
#: Every key a create body may carry (wire names and Python names); any other is an unknown field.
CREATE_KEYS = frozenset(_WIRE_NAMES) | frozenset(_WIRE_NAMES.values())

#: The bodies that are not a model: the metadata merge-patch, a list of rules and a list of targets.
METADATA_PATCH: TypeAdapter[dict[str, str | None]] = TypeAdapter(dict[str, str | None])
RULES: TypeAdapter[list[NetworkRule]] = TypeAdapter(list[NetworkRule])
TARGETS: TypeAdapter[list[str]] = TypeAdapter(list[str])


@overload
def validated(kind: type[M], body: Any) -> M: ...


@overload
def validated(kind: TypeAdapter[T], body: Any) -> T: ...


def validated(kind: type[M] | TypeAdapter[T], body: Any) -> M | T:
    """Validate a decoded body as FastAPI validates a body parameter; raise its 422 as a RequestValidationError."""
    try:
        if isinstance(kind, TypeAdapter):
            return kind.validate_python(body, from_attributes=True)
        return kind.model_validate(body, from_attributes=True)
    except ValidationError as exc:
        raise RequestValidationError(detail(exc)) from None


def detail(exc: ValidationError, prefix: tuple[str | int, ...] = ("body",)) -> list[dict[str, Any]]:
    """Return pydantic's errors as FastAPI's 422 lists them: no URL, ``loc`` behind ``prefix``, JSON-ready.

    FastAPI passes the list through ``jsonable_encoder``, which turns the exception a validator raised
    (``ctx.error`` of a ``value_error``) into ``{}``.
    """
    return [
        {**entry, "loc": [*prefix, *entry["loc"]], **({"ctx": _jsonable(entry["ctx"])} if "ctx" in entry else {})}
        for entry in exc.errors(include_url=False)
    ]


def _jsonable(value: Any) -> Any:
    """Return a ``ctx`` value as ``jsonable_encoder`` renders it (an exception has no fields: ``{}``)."""
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, BaseException):
        return {}
    return value
