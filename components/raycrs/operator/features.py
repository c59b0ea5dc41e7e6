"""KubeRay operator rules of the optional features of a RayCluster spec (the history server
collector, token auth, the network policy, TLS): ``ValidateRayClusterSpec``,
``validateCollectorOptions``, ``validateNetworkPolicy`` and ``validateTLSOptions`` of KubeRay
v1.7.0 ``ray-operator/controllers/ray/utils/validation.go``; split from
:mod:`components.raycrs.operator.cluster` (the same ``check(ClusterSpec)`` rules).
"""

from __future__ import annotations

from components.kernel.labels import DNS1123_LABEL
from components.kernel.problems import Problem, in_object
from components.raycrs.operator.common import (
    COLLECTOR_CONTAINER,
    COLLECTOR_MANAGED_ENV,
    TLS_MANAGED_ENV,
    TLS_MOUNT_PATH,
    TLS_VOLUME,
    ClusterSpec,
    containers_of,
    env_by_name,
    version_tuple,
)


def history_server(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec / validateCollectorOptions: with
    ``historyServerOptions`` the ``collectorOptions`` are set with an ``image``, their env has none
    of the KubeRay-managed names, has ``STORAGE_BACKEND`` with a literal value and the variables
    that backend needs (:func:`collector_backend_env`), and no pod has a container named
    ``ray-history-collector``. The RayClusterHistoryServer feature gate is
    :mod:`components.raycrs.gates`' check.

    The stack model has no key that renders ``historyServerOptions`` (no ``history_server`` in
    ``ray_clusters``, ``jobs`` or ``services``; an unknown key is refused by the model), so this
    rule guards hand-edited or externally produced manifests checked with the stack's rules,
    not a stack field."""
    h = c.spec.get("historyServerOptions")
    if h is None:
        return []
    p, src = f"{c.path}.historyServerOptions", "(validation.go validateCollectorOptions)"
    co = (h or {}).get("collectorOptions")
    if not isinstance(co, dict):
        f = f"{p}.collectorOptions"
        return [in_object(f, f"{f} must be set (validation.go ValidateRayClusterSpec)")]
    out: list[Problem] = []
    if not co.get("image"):
        out.append(
            in_object(
                f"{p}.collectorOptions.image", f"{p}.collectorOptions.image must be set {src}"
            )
        )
    env = env_by_name(co)
    f = f"{p}.collectorOptions.env"
    out += [
        in_object(f, f"{f} {n} is managed by KubeRay {src}")
        for n in COLLECTOR_MANAGED_ENV
        if n in env
    ]
    if not (env.get("STORAGE_BACKEND") or {}).get("value"):
        out.append(in_object(f, f"{f} needs STORAGE_BACKEND with a literal value {src}"))
    else:
        out += [in_object(f, f"{f}: {why} {src}") for why in collector_backend_env(env)]
    groups = [(f"{c.path}.headGroupSpec", c.head)] + [
        (c.worker_path(i), g) for i, g in enumerate(c.workers)
    ]
    out += [
        in_object(
            gp,
            f"{gp}: a container named {COLLECTOR_CONTAINER!r} is refused with "
            "historyServerOptions (validation.go ValidateRayClusterSpec)",
        )
        for gp, g in groups
        if any(x.get("name") == COLLECTOR_CONTAINER for x in containers_of(g))
    ]
    return out


def collector_backend_env(env: dict[str, dict]) -> list[str]:
    """What the collector's ``STORAGE_BACKEND`` (case-insensitive) needs in the same env, each
    variable set with a ``value`` or a ``valueFrom`` (validation.go validateCollectorOptions,
    names from constant.go): ``GCS`` -> ``GCS_BUCKET``; ``S3`` -> ``S3_REGION``; ``AZUREBLOB`` ->
    ``AZURE_STORAGE_CONNECTION_STRING`` when ``AZURE_STORAGE_AUTH_MODE`` is
    ``connection_string``, ``AZURE_STORAGE_ACCOUNT_URL`` when it is ``workload_identity`` or
    ``default``, either of the two otherwise; ``ALIYUNOSS`` -> ``OSS_BUCKET``, ``OSS_ENDPOINT``
    and ``OSS_REGION``. Another backend needs nothing here. Empty when satisfied."""

    def has(name: str) -> bool:
        e = env.get(name) or {}
        return name in env and (bool(e.get("value")) or e.get("valueFrom") is not None)

    backend = str((env.get("STORAGE_BACKEND") or {}).get("value") or "")
    need = f"when STORAGE_BACKEND is {backend}"
    upper = backend.upper()
    if upper == "GCS":
        return [] if has("GCS_BUCKET") else [f"GCS_BUCKET must be set {need}"]
    if upper == "S3":
        return [] if has("S3_REGION") else [f"S3_REGION must be set {need}"]
    if upper == "ALIYUNOSS":
        names = ("OSS_BUCKET", "OSS_ENDPOINT", "OSS_REGION")
        return [f"{n} must be set {need}" for n in names if not has(n)]
    if upper != "AZUREBLOB":
        return []
    mode = str((env.get("AZURE_STORAGE_AUTH_MODE") or {}).get("value") or "").strip().lower()
    conn, url = "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_URL"
    if mode == "connection_string":
        return (
            []
            if has(conn)
            else [f"{conn} must be set {need} and AZURE_STORAGE_AUTH_MODE is {mode}"]
        )
    if mode in ("workload_identity", "default"):
        return (
            [] if has(url) else [f"{url} must be set {need} and AZURE_STORAGE_AUTH_MODE is {mode}"]
        )
    return [] if has(conn) or has(url) else [f"either {conn} or {url} must be set {need}"]


def auth_options(c: ClusterSpec) -> list[Problem]:
    """validation.go ValidateRayClusterSpec: ``authOptions.mode: token`` needs a parseable
    ``rayVersion`` >= 2.52.0; ``enableK8sTokenAuth`` needs mode token, ``rayVersion`` >= 2.55.0 and
    no ``secretName``."""
    a, src = c.auth, "(validation.go ValidateRayClusterSpec)"
    k8s = a.get("enableK8sTokenAuth") is True
    p = f"{c.path}.authOptions"
    if a.get("mode") != "token":
        f = f"{p}.enableK8sTokenAuth"
        return [in_object(f, f"{f} needs {p}.mode: token {src}")] if k8s else []
    raw = str(c.spec.get("rayVersion") or "")
    v = version_tuple(raw)
    if v is None:
        return [
            in_object(
                f"{p}.mode",
                f"{p}.mode token needs {c.path}.rayVersion 2.52.0 or later (got {raw!r}) {src}",
            )
        ]
    out: list[Problem] = []
    if v < (2, 52, 0):
        out.append(
            in_object(
                f"{p}.mode",
                f"{p}.mode token needs {c.path}.rayVersion 2.52.0 or later, got {raw} {src}",
            )
        )
    if k8s and v < (2, 55, 0):
        out.append(
            in_object(
                f"{p}.enableK8sTokenAuth",
                f"{p}.enableK8sTokenAuth needs {c.path}.rayVersion 2.55.0 or later, got {raw} {src}",
            )
        )
    if k8s and a.get("secretName"):
        out.append(
            in_object(
                f"{p}.enableK8sTokenAuth",
                f"{p}.enableK8sTokenAuth and {p}.secretName are both set {src}",
            )
        )
    return out


def network_policy(c: ClusterSpec) -> list[Problem]:
    """validation.go validateNetworkPolicy: ingress rules only when ingress is denied, egress rules
    only when egress is denied (mode default ``DenyAll``); worker group names are DNS-1123 labels;
    every ``workerGroups[]`` entry names a worker group. (The RayClusterNetworkPolicy feature gate
    is not checked.)"""
    np = c.spec.get("networkPolicy")
    if not isinstance(np, dict):
        return []
    mode, p = np.get("mode") or "DenyAll", f"{c.path}.networkPolicy"
    src = "(validation.go validateNetworkPolicy)"
    out: list[Problem] = []
    scopes = [(f"{p}.head", np.get("head")), (f"{p}.worker", np.get("worker"))] + [
        (f"{p}.workerGroups[{i}]", wg) for i, wg in enumerate(np.get("workerGroups") or [])
    ]
    for sp, scope in scopes:
        scope = scope or {}
        if mode == "DenyAllEgress" and scope.get("ingressRules"):
            f = f"{sp}.ingressRules"
            out.append(in_object(f, f"{f} cannot be set with mode {mode} {src}"))
        if mode == "DenyAllIngress" and scope.get("egressRules"):
            f = f"{sp}.egressRules"
            out.append(in_object(f, f"{f} cannot be set with mode {mode} {src}"))
    names = set()
    for i, g in enumerate(c.workers):
        name = str(g.get("groupName", ""))
        names.add(name)
        if len(name) > 63 or not DNS1123_LABEL.fullmatch(name):
            out.append(
                in_object(
                    f"{c.worker_path(i)}.groupName",
                    f"{c.worker_path(i)}.groupName {name!r} must be a DNS-1123 label with "
                    f"networkPolicy {src}",
                )
            )
    for i, wg in enumerate(np.get("workerGroups") or []):
        if (wg or {}).get("groupName") not in names:
            out.append(
                in_object(
                    f"{p}.workerGroups[{i}].groupName",
                    f"{p}.workerGroups[{i}].groupName {(wg or {}).get('groupName')!r} matches "
                    f"no worker group {src}",
                )
            )
    return out


def tls_options(c: ClusterSpec) -> list[Problem]:
    """validation.go validateTLSOptions / validateNoConflictingTLSVolumeMount: with
    ``tlsOptions.enabled`` no Ray container and no ``autoscalerOptions`` sets the operator-managed
    TLS env (``RAY_USE_TLS``, ``RAY_TLS_*``) or a volume mount named ``ray-tls`` / at
    ``/etc/ray/tls``. (The RayClusterMTLS feature gate is not checked.)"""
    if (c.spec.get("tlsOptions") or {}).get("enabled") is not True:
        return []
    src = "(validation.go validateTLSOptions)"
    places = []
    groups = [(f"{c.path}.headGroupSpec", c.head)] + [
        (c.worker_path(i), g) for i, g in enumerate(c.workers)
    ]
    for gp, g in groups:
        cs = containers_of(g)
        if cs:
            places.append((gp, cs[0]))
    if isinstance(c.spec.get("autoscalerOptions"), dict):
        places.append((f"{c.path}.autoscalerOptions", c.spec["autoscalerOptions"]))
    out: list[Problem] = []
    for where, holder in places:
        env = env_by_name(holder)
        out += [
            in_object(where, f"{where}: env {n} is managed by KubeRay with tlsOptions {src}")
            for n in TLS_MANAGED_ENV
            if n in env
        ]
        for m in holder.get("volumeMounts") or []:
            if isinstance(m, dict) and (
                m.get("name") == TLS_VOLUME or m.get("mountPath") == TLS_MOUNT_PATH
            ):
                out.append(
                    in_object(
                        where,
                        f"{where}: volume mount {m.get('name')!r} at {m.get('mountPath')} "
                        f"conflicts with the KubeRay-managed TLS mount {src}",
                    )
                )
    return out
