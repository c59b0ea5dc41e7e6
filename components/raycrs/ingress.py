"""Pure builders of the Kubernetes objects a service needs besides its RayService
(:func:`render_service_objects`): the Hugging Face token's ``SecretProviderClass`` and pod volume
(:func:`add_hf_token`), the Gateway API ``Gateway`` + ``HTTPRoute`` of ``services[].gateway``.
Sources: docs/sources.md#raycrs-ingress
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from components.config.raycrs import JobConfig
from components.config.serve import INCREMENTAL, ServiceConfig
from components.kernel.ray import PART_OF, SERVE_PORT
from components.plan.plan import Context

SECRETS_STORE_API = "secrets-store.csi.x-k8s.io/v1"
GKE_SECRETS_CSI_DRIVER = "secrets-store-gke.csi.k8s.io"
HF_TOKEN_VOLUME = "hf-token"
HF_TOKEN_DIR = "/var/run/secrets/hf"
HF_TOKEN_FILE = "hf-token"
HF_TOKEN_PATH = f"{HF_TOKEN_DIR}/{HF_TOKEN_FILE}"
GATEWAY_API = "gateway.networking.k8s.io/v1"
GATEWAY_HTTP_PORT = 80


def _meta(ctx: Context, name: str, service: str, kind: str = "service") -> dict[str, Any]:
    return {
        "name": name,
        "namespace": ctx.namespace_of(service),
        "labels": {
            "app.kubernetes.io/part-of": PART_OF,
            "app.kubernetes.io/managed-by": "pulumi",
            f"ray-gke/{kind}": service,
        },
    }


def hf_token_class_name(svc: ServiceConfig | JobConfig) -> str:
    """The SecretProviderClass of ``svc``'s Hub token: ``<service>-hf-token``, for a job
    (fine-tuning a Hub model, ``jobs[].hf_token_secret``) ``<job>-job-hf-token``."""
    return f"{svc.name}-job-hf-token" if isinstance(svc, JobConfig) else f"{svc.name}-hf-token"


def secret_provider_class(ctx: Context, svc: ServiceConfig | JobConfig) -> dict[str, Any]:
    """The ``SecretProviderClass`` mounting the latest version of Secret Manager secret
    ``svc.hf_token_secret`` (project ``ctx.project``) as the file :data:`HF_TOKEN_FILE`."""
    resource = f"projects/{ctx.project}/secrets/{svc.hf_token_secret}/versions/latest"
    kind = "job" if isinstance(svc, JobConfig) else "service"
    return {
        "apiVersion": SECRETS_STORE_API,
        "kind": "SecretProviderClass",
        "metadata": _meta(ctx, hf_token_class_name(svc), svc.name, kind),
        "spec": {
            "provider": "gke",
            "parameters": {
                "secrets": f'- resourceName: "{resource}"\n  path: "{HF_TOKEN_FILE}"\n',
            },
        },
    }


def add_hf_token(templates: Iterable[dict[str, Any]], svc: ServiceConfig | JobConfig) -> None:
    """Give each of ``templates`` (pod templates, changed in place) ``svc``'s Hub token: a
    read-only ``csi`` volume of :data:`GKE_SECRETS_CSI_DRIVER` naming
    :func:`hf_token_class_name`, mounted read-only at :data:`HF_TOKEN_DIR` in the first (Ray)
    container, and ``HF_TOKEN_PATH`` set to the file. None when ``svc.hf_token_secret`` is
    unset."""
    if svc.hf_token_secret is None:
        return
    volume = {
        "name": HF_TOKEN_VOLUME,
        "csi": {
            "driver": GKE_SECRETS_CSI_DRIVER,
            "readOnly": True,
            "volumeAttributes": {"secretProviderClass": hf_token_class_name(svc)},
        },
    }
    for template in templates:
        spec = template["spec"]
        spec.setdefault("volumes", []).append(copy.deepcopy(volume))
        container = spec["containers"][0]
        container.setdefault("volumeMounts", []).append(
            {"name": HF_TOKEN_VOLUME, "mountPath": HF_TOKEN_DIR, "readOnly": True}
        )
        container.setdefault("env", []).append({"name": "HF_TOKEN_PATH", "value": HF_TOKEN_PATH})


def gateway_manifests(ctx: Context, svc: ServiceConfig) -> list[dict[str, Any]]:
    """``svc``'s ``Gateway`` ``<name>-gateway`` (class ``gateway.gateway_class_name``, one HTTP
    listener on port 80, routes from its own namespace) and ``HTTPRoute`` ``<name>-route``
    (``hostnames`` when ``gateway.hostname`` is set; every path to ``<name>-serve-svc`` port
    8000); ``[]`` without ``gateway``, and with the incremental upgrade strategy, whose gateway
    and route KubeRay creates itself under these names (``<name>-gateway``, ``<name>-httproute``:
    rayservice_controller.go ``createGateway`` / ``createHTTPRoute``; the two would fight over
    the Gateway)."""
    gw = svc.gateway
    if gw is None or svc.strategy == INCREMENTAL:
        return []
    gateway_name = f"{svc.name}-gateway"
    route: dict[str, Any] = {
        "parentRefs": [{"name": gateway_name}],
        "rules": [
            {
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": [{"name": f"{svc.name}-serve-svc", "port": SERVE_PORT}],
            }
        ],
    }
    listener: dict[str, Any] = {
        "name": "http",
        "protocol": "HTTP",
        "port": GATEWAY_HTTP_PORT,
        "allowedRoutes": {"namespaces": {"from": "Same"}},
    }
    if gw.hostname is not None:
        route["hostnames"] = [gw.hostname]
        listener["hostname"] = gw.hostname
    return [
        {
            "apiVersion": GATEWAY_API,
            "kind": "Gateway",
            "metadata": _meta(ctx, gateway_name, svc.name),
            "spec": {"gatewayClassName": gw.gateway_class_name, "listeners": [listener]},
        },
        {
            "apiVersion": GATEWAY_API,
            "kind": "HTTPRoute",
            "metadata": _meta(ctx, f"{svc.name}-route", svc.name),
            "spec": route,
        },
    ]


def render_service_objects(
    ctx: Context, services: list[ServiceConfig], jobs: list[JobConfig]
) -> list[dict[str, Any]]:
    """Per service of ``services`` (sorted by name): its Hub token's SecretProviderClass (with
    ``hf_token_secret``), then its Gateway and HTTPRoute (with ``gateway``); then the Hub token
    SecretProviderClass of each of ``jobs`` with ``hf_token_secret`` and its own cluster
    (sorted). The GCS fault tolerance Redis AUTH string's follow them in the program
    (:func:`components.gcsft.render.redis_objects`)."""
    out: list[dict[str, Any]] = []
    for svc in sorted(services, key=lambda s: s.name):
        if svc.hf_token_secret is not None:
            out.append(secret_provider_class(ctx, svc))
        out += gateway_manifests(ctx, svc)
    for job in sorted(jobs, key=lambda j: j.name):
        if job.hf_token_secret is not None and not job.cluster:
            out.append(secret_provider_class(ctx, job))
    return out


__all__ = [
    "GKE_SECRETS_CSI_DRIVER",
    "HF_TOKEN_PATH",
    "add_hf_token",
    "gateway_manifests",
    "hf_token_class_name",
    "render_service_objects",
    "secret_provider_class",
]
