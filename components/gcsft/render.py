"""Pure pieces of GCS fault tolerance (config in, ``dict`` out): the names of the stack's Redis
objects, a RayService's ``gcsFaultToleranceOptions`` and what its head pod adds for them, and
the two Kubernetes objects the head reads (the AUTH string's ``SecretProviderClass``, the
instance's CA in a ``ConfigMap``). The password is never in the stack, the RayService or a
Kubernetes Secret. How the head reaches Redis, with sources:
docs/sources.md#gcsft-render
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from components.plan.gcsft_names import auth_secret_id, ft_enabled, instance_name, psa_range_name

if TYPE_CHECKING:
    from components.config.serve import ServiceConfig
    from components.plan.context import Context
    from components.plan.plan import Plan

# GKE's Secret Manager add-on (as for the Hub token, components.raycrs.ingress)
SECRETS_STORE_API = "secrets-store.csi.x-k8s.io/v1"
GKE_SECRETS_CSI_DRIVER = "secrets-store-gke.csi.k8s.io"
REDIS_TLS_PORT = 6378  # Memorystore with in-transit encryption (module docstring)
PASSWORD_ENV = "REDIS_PASSWORD"  # KubeRay utils.REDIS_PASSWORD
CA_ENV = "RAY_REDIS_CA_CERT"
INIT_CONTAINER = "redis-auth-env"
AUTH_VOLUME = "redis-auth"
AUTH_DIR = "/var/run/secrets/redis"
AUTH_FILE = "auth"
ENV_VOLUME = "redis-env"
ENV_DIR = "/var/run/redis-env"
ENV_FILE = "redis.env"
CA_VOLUME = "redis-ca"
CA_DIR = "/etc/ray-gke/redis"
CA_FILE = "ca.crt"


def auth_class_name(namespace: str | None = None, home: str | None = None) -> str:
    """The ``SecretProviderClass`` of the AUTH string in ``namespace``: ``gcs-redis-auth`` in
    ``home`` (``kuberay.namespace``) or with ``namespace`` None, ``gcs-redis-auth-<namespace>``
    in another (one object per name in the program)."""
    if namespace is None or namespace == home:
        return "gcs-redis-auth"
    return f"gcs-redis-auth-{namespace}"


def ca_config_map_name() -> str:
    """The ``ConfigMap`` holding the instance's CA certificate in the Ray namespace."""
    return "gcs-redis-ca"


def redis_address(host: str, port: int | str = REDIS_TLS_PORT) -> str:
    """``rediss://<host>:<port>`` (TLS, module docstring)."""
    return f"rediss://{host}:{port}"


def planned_address(psa_cidr: str) -> str:
    """The address an offline render shows before the instance exists (``raygke check``): the
    first host of ``psa_cidr`` (``network.psa_cidr``), where Memorystore takes its address
    from."""
    host = next(ipaddress.ip_network(psa_cidr).hosts())
    return redis_address(str(host))


def gcs_ft_options(address: Any) -> dict[str, Any]:
    """``rayClusterConfig.gcsFaultToleranceOptions``: ``redisAddress`` and ``redisPassword`` read
    from the env file the head's init container writes (:func:`add_gcs_ft`)."""
    return {
        "redisAddress": address,
        "redisPassword": {
            "valueFrom": {
                "fileKeyRef": {"volumeName": ENV_VOLUME, "path": ENV_FILE, "key": PASSWORD_ENV}
            }
        },
    }


def init_container(image: Any, security_context: dict[str, Any]) -> dict[str, Any]:
    """The head's init container: it writes ``REDIS_PASSWORD='<AUTH string>'`` from the mounted
    secret into the env file (a Memorystore AUTH string is a UUID: no quote to escape)."""
    script = (
        f'printf "{PASSWORD_ENV}=\'%s\'\\n" "$(cat {AUTH_DIR}/{AUTH_FILE})" > {ENV_DIR}/{ENV_FILE}'
    )
    return {
        "name": INIT_CONTAINER,
        "image": image,
        "command": ["/bin/sh", "-c", script],
        "securityContext": dict(security_context),
        "resources": {
            "requests": {"cpu": "10m", "memory": "32Mi"},
            "limits": {"cpu": "100m", "memory": "64Mi"},
        },
        "volumeMounts": [
            {"name": AUTH_VOLUME, "mountPath": AUTH_DIR, "readOnly": True},
            {"name": ENV_VOLUME, "mountPath": ENV_DIR},
        ],
    }


def add_gcs_ft(template: dict[str, Any], auth_class: str | None = None) -> dict[str, Any]:
    """``template`` (a head pod template) with what GCS fault tolerance reads: the init container
    (the Ray container's image and security context), the AUTH string's CSI volume, the env
    file's memory-backed ``emptyDir`` and the CA ``configMap`` volume; the Ray container mounts
    the CA read-only and names it in ``RAY_REDIS_CA_CERT``."""
    spec = template["spec"]
    ray = spec["containers"][0]
    spec.setdefault("initContainers", []).append(
        init_container(ray["image"], ray.get("securityContext") or {})
    )
    spec.setdefault("volumes", []).extend(
        [
            {
                "name": AUTH_VOLUME,
                "csi": {
                    "driver": GKE_SECRETS_CSI_DRIVER,
                    "readOnly": True,
                    "volumeAttributes": {"secretProviderClass": auth_class or auth_class_name()},
                },
            },
            {"name": ENV_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
            {"name": CA_VOLUME, "configMap": {"name": ca_config_map_name()}},
        ]
    )
    ray.setdefault("volumeMounts", []).append(
        {"name": CA_VOLUME, "mountPath": CA_DIR, "readOnly": True}
    )
    ray.setdefault("env", []).append({"name": CA_ENV, "value": f"{CA_DIR}/{CA_FILE}"})
    return template


def redis_namespaces(p: Plan) -> list[str]:
    """The namespaces of the RayServices of plan ``p`` (``kuberay.namespace``, or the GPUDirect
    namespace of a service on such a pool: :meth:`components.plan.context.Context.namespace_of`),
    sorted: each holds the two objects the heads there mount."""
    return sorted({p.context.namespace_of(s.name) for s, _ in p.services})


def _meta(namespace: str, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": namespace,
        "labels": {
            "app.kubernetes.io/part-of": "ray-gke",
            "app.kubernetes.io/managed-by": "pulumi",
            "ray-gke/gcs-ft": "redis",
        },
    }


def auth_provider_class(ctx: Context, namespace: str) -> dict[str, Any]:
    """The ``SecretProviderClass`` (in ``namespace``) mounting the latest version of
    :func:`auth_secret_id` (of ``ctx``'s project and cluster) as the file :data:`AUTH_FILE`."""
    resource = f"projects/{ctx.project}/secrets/{auth_secret_id(ctx.cluster)}/versions/latest"
    return {
        "apiVersion": SECRETS_STORE_API,
        "kind": "SecretProviderClass",
        "metadata": _meta(namespace, auth_class_name(namespace, ctx.namespace)),
        "spec": {
            "provider": "gke",
            "parameters": {"secrets": f'- resourceName: "{resource}"\n  path: "{AUTH_FILE}"\n'},
        },
    }


def ca_config_map(namespace: str, ca_cert: Any) -> dict[str, Any]:
    """The ``v1`` ConfigMap :func:`ca_config_map_name` (in ``namespace``) with ``ca_cert`` (every
    PEM of the instance's ``server_ca_certs``, :func:`components.gcsft.component.ca_bundle`; a
    ``pulumi.Output`` in the program) under :data:`CA_FILE`."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(namespace, ca_config_map_name()),
        "data": {CA_FILE: ca_cert},
    }


def redis_objects(p: Plan, ft: bool) -> list[dict[str, Any]]:
    """The AUTH string's ``SecretProviderClass`` in each namespace of a RayService of plan ``p``
    (:func:`redis_namespaces`); ``[]`` without GCS fault tolerance (``ft``: :func:`ft_enabled`).
    The CA ConfigMap holds an output of the instance: the program renders it
    (:func:`ca_config_map`)."""
    if not ft:
        return []
    return [auth_provider_class(p.context, ns) for ns in redis_namespaces(p)]


def redis_head_readers(services: Iterable[ServiceConfig]) -> list[str]:
    """The head accounts (KSA name = GSA id, :func:`components.plan.naming.head_account_id`)
    that read the AUTH string: the head of every service's identity, sorted, each once."""
    from components.plan.naming import head_account_id

    return sorted({head_account_id(s.service_account) for s in services})


__all__ = [
    "add_gcs_ft",
    "auth_provider_class",
    "auth_secret_id",
    "ca_config_map",
    "ft_enabled",
    "gcs_ft_options",
    "instance_name",
    "planned_address",
    "psa_range_name",
    "redis_address",
    "redis_head_readers",
    "redis_namespaces",
    "redis_objects",
]
