"""Secure-default rules over rendered Kubernetes objects, one implementation for ``raygke check``
(:func:`components.stack.checks.check_stack`) and the Pulumi policy pack: ``ray-auth``
(:func:`check_ray_auth`), ``pod-security`` (:func:`check_pod_security`) and ``network-policy``
(:func:`check_network_policy`), listed in :data:`RULES`. Pure functions over plain dicts.
Sources (what each rule requires, and why): docs/sources.md#security-rules
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from components.kernel.problems import Problem

Obj = dict[str, Any]
RAY_KINDS = ("RayCluster", "RayJob", "RayService")
WORKLOAD_KINDS = ("Pod", "Job", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet")
HEAD_API_PORTS = (6379, 8265, 10001)
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
# (namespace, kind, name) of the objects the pod-security rule leaves alone (docs/sources.md#security-rules);
# the names are components.catalog.gpu_network.INSTALLERS' (written out: the policy pack runs
# these rules without the catalog).
INSTALLER_EXEMPT = frozenset(
    ("kube-system", "DaemonSet", n)
    for n in (
        "nccl-rdma-installer",
        "nccl-rdma-installer-arm64",
        "nccl-tcpx-installer",
        "nccl-tcpxo-installer",
        "device-injector",
    )
)


# The GPUDirect namespace's exception (docs/sources.md#security-rules), written out as
# components.catalog.gpudirect.RXDM and components.kernel.names have it (a test compares them).
GPUDIRECT_SUFFIX = "-gpudirect"
GPUDIRECT_LABEL = ("ray-gke.io/gpudirect", "rxdm")
ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
_LIB = "/home/kubernetes/bin/nvidia/lib64"


@dataclass(frozen=True)
class RxdmShape:
    """What the exception allows one RxDM sidecar: its image repository (``<repo>:``),
    capabilities, accelerator, the host paths of the pod's hostPath volumes, and those of them
    the other containers may mount."""

    image_prefix: str
    capabilities: tuple[str, ...]
    accelerator: str
    host_paths: frozenset[str]
    shared_paths: frozenset[str]


RXDM_SHAPES: dict[str, RxdmShape] = {
    "tcpx-daemon": RxdmShape(
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:",
        ("NET_ADMIN",),
        "nvidia-h100-80gb",
        frozenset({_LIB, "/sys", "/proc/sys"}),
        frozenset({_LIB}),
    ),
    "tcpxo-daemon": RxdmShape(
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:",
        ("NET_ADMIN", "NET_BIND_SERVICE"),
        "nvidia-h100-mega-80gb",
        frozenset({_LIB, "/sys", "/proc/sys", "/dev/aperture_devices"}),
        frozenset({_LIB, "/dev/aperture_devices"}),
    ),
}


def gpudirect_namespace(name: str | None) -> bool:
    """A namespace the exception may apply in: its name ends in :data:`GPUDIRECT_SUFFIX`."""
    return bool(name) and str(name).endswith(GPUDIRECT_SUFFIX)


def _gpudirect_namespace_ok(o: Obj) -> bool:
    """A Namespace that may enforce ``privileged``: the GPUDirect namespace (its name, its
    label) whose ``warn`` and ``audit`` levels stay ``restricted``."""
    meta = o.get("metadata") or {}
    labels = meta.get("labels") or {}
    key, value = GPUDIRECT_LABEL
    return (
        gpudirect_namespace(meta.get("name"))
        and labels.get(key) == value
        and labels.get("pod-security.kubernetes.io/warn") == "restricted"
        and labels.get("pod-security.kubernetes.io/audit") == "restricted"
    )


def _rxdm_shape(c: Obj, spec: Obj) -> RxdmShape | None:
    """The exception's shape for container ``c`` of pod spec ``spec``: its name's, when its
    image is that sidecar's and the pod selects that sidecar's accelerator; else None."""
    shape = RXDM_SHAPES.get(str(c.get("name")))
    if shape is None or not str(c.get("image") or "").startswith(shape.image_prefix):
        return None
    if (spec.get("nodeSelector") or {}).get(ACCELERATOR_LABEL) != shape.accelerator:
        return None
    return shape


def rxdm_container_problems(
    where: str, sc: dict[str, Any] | None, pod_sc: dict[str, Any] | None, shape: RxdmShape
) -> list[Problem]:
    """What an RxDM sidecar's ``securityContext`` holds beyond the exception: it may run as
    root and add ``shape``'s capabilities without dropping the rest; nothing else differs from
    :func:`container_problems`."""
    sc, pod_sc = sc or {}, pod_sc or {}
    out = []
    if sc.get("privileged") is True:
        out.append(Problem("", f"{where}: privileged: true"))
    if sc.get("allowPrivilegeEscalation") is not False:
        out.append(Problem("", f"{where}: securityContext.allowPrivilegeEscalation is not false"))
    extra = sorted(set((sc.get("capabilities") or {}).get("add") or []) - set(shape.capabilities))
    if extra:
        out.append(
            Problem(
                "",
                f"{where}: securityContext.capabilities.add holds {', '.join(extra)}, beyond the "
                f"RxDM sidecar's {', '.join(shape.capabilities)}",
            )
        )
    seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        out.append(Problem("", f"{where}: seccompProfile.type is {seccomp!r}, not RuntimeDefault"))
    return out


def _exempt(o: Obj) -> bool:
    meta = o.get("metadata") or {}
    return (meta.get("namespace"), o.get("kind"), meta.get("name")) in INSTALLER_EXEMPT


def _name(o: Obj) -> str:
    meta = o.get("metadata") or {}
    return f"{o.get('kind')} {meta.get('namespace') or 'default'}/{meta.get('name')}"


def ray_cluster_specs(o: Obj) -> Iterator[tuple[str, Obj]]:
    """``(path, RayCluster spec)`` of the Ray cluster a Ray object creates: a RayCluster's
    ``spec``, a RayJob's ``spec.rayClusterSpec`` (none with ``clusterSelector``), a RayService's
    ``spec.rayClusterConfig``."""
    spec = o.get("spec") or {}
    kind = o.get("kind")
    if kind == "RayCluster":
        yield "spec", spec
    elif kind == "RayJob" and isinstance(spec.get("rayClusterSpec"), dict):
        yield "spec.rayClusterSpec", spec["rayClusterSpec"]
    elif kind == "RayService" and isinstance(spec.get("rayClusterConfig"), dict):
        yield "spec.rayClusterConfig", spec["rayClusterConfig"]


def check_ray_auth(objects: list[Obj]) -> list[Problem]:
    """Rule ``ray-auth`` (docs/sources.md#security-rules)."""
    out = []
    for o in objects:
        if o.get("kind") not in RAY_KINDS:
            continue
        for path, cluster in ray_cluster_specs(o):
            auth = cluster.get("authOptions") or {}
            if auth.get("mode") != "token":
                out.append(
                    Problem(
                        "",
                        f"ray-auth: {_name(o)}: {path}.authOptions.mode is "
                        f"{auth.get('mode')!r}, not 'token': the Ray dashboard / Jobs API would run "
                        "code from anyone who reaches it",
                    )
                )
    return out


# ---------------------------------------------------------------------------------- pod security


def pod_templates(o: Obj) -> Iterator[tuple[str, str, Obj]]:
    """``(path, role, pod template)`` of every pod template in an object; role is ``head``,
    ``worker``, ``submitter`` or ``pod``."""
    kind = o.get("kind")
    spec = o.get("spec") or {}
    if kind in RAY_KINDS:
        for path, cluster in ray_cluster_specs(o):
            head = (cluster.get("headGroupSpec") or {}).get("template")
            if isinstance(head, dict):
                yield f"{path}.headGroupSpec.template", "head", head
            for i, g in enumerate(cluster.get("workerGroupSpecs") or []):
                if isinstance(g.get("template"), dict):
                    yield (
                        f"{path}.workerGroupSpecs[{g.get('groupName', i)}].template",
                        "worker",
                        g["template"],
                    )
        if kind == "RayJob" and isinstance(spec.get("submitterPodTemplate"), dict):
            yield "spec.submitterPodTemplate", "submitter", spec["submitterPodTemplate"]
    elif kind == "Pod":
        yield "spec", "pod", {"metadata": o.get("metadata") or {}, "spec": spec}
    elif kind in WORKLOAD_KINDS:
        tmpl = spec.get("template")
        if (kind == "Job" and isinstance(tmpl, dict)) or isinstance(tmpl, dict):
            yield "spec.template", "pod", tmpl


def container_problems(
    where: str, sc: dict[str, Any] | None, pod_sc: dict[str, Any] | None
) -> list[Problem]:
    """What a container's ``securityContext`` (with its pod's) lacks of the rule, one line each."""
    sc, pod_sc = sc or {}, pod_sc or {}
    out = []
    if sc.get("privileged") is True:
        out.append(Problem("", f"{where}: privileged: true"))
    if sc.get("allowPrivilegeEscalation") is not False:
        out.append(Problem("", f"{where}: securityContext.allowPrivilegeEscalation is not false"))
    drop = ((sc.get("capabilities") or {}).get("drop")) or []
    if "ALL" not in drop:
        out.append(Problem("", f"{where}: securityContext.capabilities.drop does not hold ALL"))
    if (sc.get("capabilities") or {}).get("add"):
        out.append(Problem("", f"{where}: securityContext.capabilities.add is set"))
    non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
    if non_root is not True:
        out.append(
            Problem("", f"{where}: runAsNonRoot is not true (container or pod securityContext)")
        )
    if sc.get("runAsUser", pod_sc.get("runAsUser")) == 0:
        out.append(Problem("", f"{where}: runAsUser is 0 (root)"))
    seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
    if seccomp not in ("RuntimeDefault", "Localhost"):
        out.append(Problem("", f"{where}: seccompProfile.type is {seccomp!r}, not RuntimeDefault"))
    return out


def _template_problems(
    name: str, path: str, role: str, tmpl: Obj, gpudirect: bool = False
) -> list[Problem]:
    spec = tmpl.get("spec") or {}
    pod_sc = spec.get("securityContext") or {}
    out = []
    # the GPUDirect exception: a worker's RxDM sidecar in the GPUDirect namespace (module doc)
    rxdm: dict[int, RxdmShape] = {}
    if gpudirect and role == "worker":
        for c in spec.get("containers") or []:
            if (shape := _rxdm_shape(c, spec)) is not None:
                rxdm[id(c)] = shape
    host_ok = set().union(*(s.host_paths for s in rxdm.values())) if rxdm else set()
    shared_ok = set().union(*(s.shared_paths for s in rxdm.values())) if rxdm else set()
    host_volumes = {
        v.get("name"): (v.get("hostPath") or {}).get("path")
        for v in spec.get("volumes") or []
        if "hostPath" in v
    }
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            where = f"pod-security: {name}: {path} container {c.get('name')!r}"
            shape = rxdm.get(id(c)) if key == "containers" else None
            if shape is not None:
                out += rxdm_container_problems(where, c.get("securityContext"), pod_sc, shape)
                continue
            out += container_problems(where, c.get("securityContext"), pod_sc)
            for m in (c.get("volumeMounts") or []) if rxdm else []:
                if host_volumes.get(m.get("name")) in host_ok - shared_ok:
                    out.append(
                        Problem(
                            "",
                            f"{where}: mounts hostPath {host_volumes[m.get('name')]} (volume "
                            f"{m.get('name')!r}), which only the RxDM sidecar may mount",
                        )
                    )
    for v in spec.get("volumes") or []:
        ed = v.get("emptyDir")
        if isinstance(ed, dict) and ed.get("medium") == "Memory" and not ed.get("sizeLimit"):
            out.append(
                Problem(
                    "",
                    f"pod-security: {name}: {path} volume {v.get('name')!r}: memory-backed emptyDir "
                    "without sizeLimit",
                )
            )
        if "hostPath" in v and (v.get("hostPath") or {}).get("path") not in host_ok:
            out.append(
                Problem("", f"pod-security: {name}: {path} volume {v.get('name')!r}: hostPath")
            )
    for flag in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(flag) is True:
            out.append(Problem("", f"pod-security: {name}: {path}: {flag}: true"))
    if role in ("worker", "submitter") and spec.get("automountServiceAccountToken") is not False:
        out.append(
            Problem(
                "",
                f"pod-security: {name}: {path}: automountServiceAccountToken is not false ({role} "
                "pods do not call the Kubernetes API)",
            )
        )
    return out


def check_pod_security(objects: list[Obj]) -> list[Problem]:
    """Rule ``pod-security`` (docs/sources.md#security-rules): the restricted fields on every
    container, but the installers of :data:`INSTALLER_EXEMPT` and the GPUDirect RxDM exception
    (:data:`GPUDIRECT_SUFFIX`, :data:`RXDM_SHAPES`)."""
    out = []
    for o in objects:
        name = _name(o)
        if _exempt(o):
            continue
        if o.get("kind") == "Namespace":
            level = ((o.get("metadata") or {}).get("labels") or {}).get(PSA_ENFORCE)
            if level == "privileged" and _gpudirect_namespace_ok(o):
                continue  # the GPUDirect exception
            if level not in ("baseline", "restricted"):
                why = (
                    " (privileged only for the GPUDirect namespace: a name ending "
                    f"{GPUDIRECT_SUFFIX}, label {GPUDIRECT_LABEL[0]}: {GPUDIRECT_LABEL[1]}, "
                    "warn and audit restricted)"
                    if level == "privileged"
                    else ""
                )
                out.append(
                    Problem(
                        "",
                        f"pod-security: {name}: label {PSA_ENFORCE} is {level!r}, not restricted "
                        f"or baseline{why}",
                    )
                )
            continue
        gpudirect = gpudirect_namespace((o.get("metadata") or {}).get("namespace"))
        for path, cluster in ray_cluster_specs(o) if o.get("kind") in RAY_KINDS else ():
            if cluster.get("enableInTreeAutoscaling") is True:
                where = f"pod-security: {name}: {path}.autoscalerOptions (autoscaler sidecar)"
                sc = (cluster.get("autoscalerOptions") or {}).get("securityContext")
                head = ((cluster.get("headGroupSpec") or {}).get("template") or {}).get("spec")
                out += container_problems(where, sc, (head or {}).get("securityContext"))
        head_accounts: set[str] = set()
        templates = list(pod_templates(o))
        for path, role, tmpl in templates:
            out += _template_problems(name, path, role, tmpl, gpudirect)
            if role == "head":
                head_accounts.add((tmpl.get("spec") or {}).get("serviceAccountName") or "default")
        for path, role, tmpl in templates:
            account = (tmpl.get("spec") or {}).get("serviceAccountName") or "default"
            if role == "worker" and account in head_accounts:
                out.append(
                    Problem(
                        "",
                        f"pod-security: {name}: {path} runs as the head's service account "
                        f"{account!r}, which holds the autoscaler's RBAC; give workers their own",
                    )
                )
    return out


# -------------------------------------------------------------------------------- network policy


def _selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """Whether a ``matchLabels``-only label selector selects pods with ``labels``."""
    selector = selector or {}
    if selector.get("matchExpressions"):
        return False  # not evaluated: such a policy does not count as the cluster's own
    match = selector.get("matchLabels") or {}
    return bool(match) and all(labels.get(k) == v for k, v in match.items())


def _head_labels(o: Obj, cluster: Obj) -> dict[str, str]:
    tmpl = (cluster.get("headGroupSpec") or {}).get("template") or {}
    labels = dict((tmpl.get("metadata") or {}).get("labels") or {})
    labels["ray.io/node-type"] = "head"
    if o.get("kind") == "RayCluster":
        labels["ray.io/cluster"] = (o.get("metadata") or {}).get("name")
    return labels


def _open_to_all(rule: dict[str, Any]) -> bool:
    peers = rule.get("from")
    if not peers:
        return True
    return any(
        (p.get("ipBlock") or {}).get("cidr") in ("0.0.0.0/0", "::/0")
        or (p.get("namespaceSelector") == {} and not p.get("podSelector"))
        for p in peers
    )


def _covers_head_ports(rule: dict[str, Any]) -> bool:
    ports = rule.get("ports")
    if not ports:
        return True
    return any(p.get("port") in HEAD_API_PORTS or p.get("port") is None for p in ports)


def check_network_policy(objects: list[Obj]) -> list[Problem]:
    """Rule ``network-policy`` (docs/sources.md#security-rules)."""
    policies: dict[str, list[Obj]] = {}
    for o in objects:
        if o.get("kind") == "NetworkPolicy":
            ns = (o.get("metadata") or {}).get("namespace") or "default"
            policies.setdefault(ns, []).append(o)
    out = []
    seen_ns: set[str] = set()
    for o in objects:
        if o.get("kind") not in RAY_KINDS:
            continue
        ns = (o.get("metadata") or {}).get("namespace") or "default"
        pols = policies.get(ns, [])
        if ns not in seen_ns:
            seen_ns.add(ns)
            if not any(
                (p.get("spec") or {}).get("podSelector") in ({}, None)
                and "Ingress" in ((p.get("spec") or {}).get("policyTypes") or [])
                and not (p.get("spec") or {}).get("ingress")
                for p in pols
            ):
                out.append(
                    Problem(
                        "",
                        f"network-policy: namespace {ns}: no default-deny ingress NetworkPolicy "
                        "(empty podSelector, policyTypes [Ingress], no ingress rule)",
                    )
                )
        for path, cluster in ray_cluster_specs(o):
            labels = _head_labels(o, cluster)
            own = [p for p in pols if _selects((p.get("spec") or {}).get("podSelector"), labels)]
            if not own:
                out.append(
                    Problem(
                        "",
                        f"network-policy: {_name(o)}: no NetworkPolicy selects the head of "
                        f"{path} (labels {labels})",
                    )
                )
            for p in own:
                for rule in (p.get("spec") or {}).get("ingress") or []:
                    if _open_to_all(rule) and _covers_head_ports(rule):
                        out.append(
                            Problem(
                                "",
                                f"network-policy: {_name(p)} opens the head of {_name(o)} "
                                f"({path}) on ports {HEAD_API_PORTS} to every source",
                            )
                        )
    return out


# Rule name -> rule. Each takes Kubernetes objects as plain dicts (``{"apiVersion", "kind",
# "metadata", "spec"}``; other kinds are ignored; the policy pack feeds them the synth render's
# Kubernetes resource inputs) and returns problem lines, each starting with the rule's name: an
# empty list means the rule passes.
RULES: dict[str, Callable[[list[Obj]], list[Problem]]] = {
    "ray-auth": check_ray_auth,
    "pod-security": check_pod_security,
    "network-policy": check_network_policy,
}


def security_problems(objects: list[Obj]) -> list[Problem]:
    """Every rule of :data:`RULES` over ``objects``, in that order."""
    return [line for rule in RULES.values() for line in rule(objects)]
