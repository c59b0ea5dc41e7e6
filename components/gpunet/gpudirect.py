"""GPUDirect-TCPX / -TCPXO (``gpu_networking: gpudirect``), pure: what a Ray worker pod on such
a pool gets beside its NICs (:func:`worker_parts`), the NRI device injector
(:func:`device_injector`), and the admission policy (:func:`admission_policy`) that keeps its
namespace to exactly that. Sources: docs/sources.md#gpunet-gpudirect
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.catalog.gpu_network import GPU_NET_FAMILIES, GpuNetFamily, nccl_env
from components.catalog.gpudirect import (
    DEVICE_INJECTOR_DIRS,
    DEVICE_INJECTOR_IMAGE,
    DEVICE_INJECTOR_NAME,
    RXDM,
    RXDM_RESOURCES,
    Rxdm,
)
from components.kernel.problems import Problem

if TYPE_CHECKING:
    from components.plan.plan import Plan

ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
ADMISSION_API = "admissionregistration.k8s.io/v1"
POLICY_NAME = "ray-gke-gpudirect-rxdm"
RESTRICTED_VOLUMES = (
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
)  # [PSS] restricted, "Volume Types"
SAFE_SYSCTLS = (
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
)  # [PSS] baseline, "Sysctls"
SELINUX_TYPES = ("", "container_t", "container_init_t", "container_kvm_t", "container_engine_t")


def rxdm_of(pool: Any) -> Rxdm | None:
    """The RxDM sidecar a pool's Ray workers run: its kind's for a ``gpudirect`` pool, else
    None (the model refuses ``gpudirect`` on a family without TCPX / TCPXO)."""
    if not getattr(pool, "gpudirect", False):
        return None
    fam = pool.gpu_net
    return RXDM.get(fam.kind) if fam is not None else None


@dataclass(frozen=True)
class WorkerParts:
    """What a ``gpudirect`` pool's Ray worker pod gets beside its interfaces.

    Attributes:
        annotations: the NRI device annotation of the sidecar.
        env: the Ray container's NCCL environment (Google's, for the plugin).
        sidecar: the RxDM container.
        volumes: the pod's hostPath and emptyDir volumes for it.
        mounts: the Ray container's mounts of them.
    """

    annotations: dict[str, str]
    env: dict[str, str]
    sidecar: dict[str, Any]
    volumes: list[dict[str, Any]]
    mounts: list[dict[str, Any]]


def sidecar_security_context(r: Rxdm) -> dict[str, Any]:
    """The RxDM container's ``securityContext`` (docs/sources.md#catalog-gpudirect): root, the
    kind's capabilities added, no escalation."""
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"add": list(r.capabilities)},
        "runAsNonRoot": False,
        "runAsUser": 0,
        "runAsGroup": 0,
    }


def worker_parts(fam: GpuNetFamily) -> WorkerParts | None:
    """The RxDM sidecar and the rest of :class:`WorkerParts` for a Ray worker on a
    ``gpudirect`` pool of the GPU networking family ``fam``; None for a family without TCPX /
    TCPXO (the model refuses ``gpudirect`` there)."""
    r = RXDM.get(fam.kind)
    if r is None:
        return None
    sidecar: dict[str, Any] = {"name": r.container, "image": r.image, "command": list(r.command)}
    if r.args:
        sidecar["args"] = list(r.args)
    sidecar.update(
        env=[{"name": "LD_LIBRARY_PATH", "value": "/usr/local/nvidia/lib64"}],
        resources={"requests": dict(RXDM_RESOURCES), "limits": dict(RXDM_RESOURCES)},
        securityContext=sidecar_security_context(r),
        volumeMounts=[{"name": n, "mountPath": p} for n, p in r.sidecar_mounts.items()],
    )
    volumes = [{"name": n, "hostPath": {"path": p}} for n, p in r.host_paths.items()]
    volumes += [{"name": n, "emptyDir": {}} for n in r.empty_dirs]
    mounts = [
        {"name": n, "mountPath": p, **({"readOnly": True} if ro else {})}
        for n, (p, ro) in r.worker_mounts.items()
    ]
    key, value = r.device_annotation()
    return WorkerParts({key: value}, nccl_env(fam), sidecar, volumes, mounts)


def gpudirect_accelerators(pools: Iterable[Any]) -> list[str]:
    """The ``cloud.google.com/gke-accelerator`` values of the ``gpudirect`` pools, sorted."""
    return sorted({pool.gpu.type for pool in pools if rxdm_of(pool) is not None})


def device_injector(accelerators: list[str]) -> dict[str, Any]:
    """Google's NRI device injector DaemonSet ([CEA] ``nri_device_injector/
    nri-device-injector.yaml``: ``kube-system``, privileged, ``hostNetwork``/``hostPID``, hostPath
    ``/dev`` and ``/var/run/nri``, ``system-node-critical``), on nodes of ``accelerators``."""
    labels = {"k8s-app": DEVICE_INJECTOR_NAME}
    match = [{"key": ACCELERATOR_LABEL, "operator": "In", "values": list(accelerators)}]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": DEVICE_INJECTOR_NAME,
            "namespace": "kube-system",
            "labels": {**labels, "app.kubernetes.io/part-of": "ray-gke"},
        },
        "spec": {
            "selector": {"matchLabels": labels},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {"name": DEVICE_INJECTOR_NAME, **labels}},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [{"matchExpressions": match}]
                            }
                        }
                    },
                    "tolerations": [{"operator": "Exists"}],
                    "hostNetwork": True,
                    "hostPID": True,
                    "containers": [
                        {
                            "name": DEVICE_INJECTOR_NAME,
                            "image": DEVICE_INJECTOR_IMAGE,
                            "resources": {"requests": {"cpu": "150m"}},
                            "securityContext": {"privileged": True},
                            "volumeMounts": [
                                {"name": n, "mountPath": m}
                                for n, (_, m) in DEVICE_INJECTOR_DIRS.items()
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": n, "hostPath": {"path": h}}
                        for n, (h, _) in DEVICE_INJECTOR_DIRS.items()
                    ],
                },
            },
        },
    }


# ------------------------------------------------------------------------ the admission policy


def _sc(c: str, field: str) -> str:
    """CEL: ``c.securityContext.<field>`` is set."""
    return f"(has({c}.securityContext) && has({c}.securityContext.{field}))"


def _common(c: str) -> str:
    """CEL over container ``c``: what ``restricted`` asks of every container, the RxDM sidecar
    included: not privileged, no privilege escalation, default /proc mount, no host port, an
    allowed seccomp profile (its own or the pod's), SELinux / AppArmor / Windows host process
    within ``baseline`` [PSS]."""
    return " && ".join(
        [
            f"!({_sc(c, 'privileged')} && {c}.securityContext.privileged)",
            f"({_sc(c, 'allowPrivilegeEscalation')} && "
            f"!{c}.securityContext.allowPrivilegeEscalation)",
            f"(!{_sc(c, 'procMount')} || {c}.securityContext.procMount == 'Default')",
            f"(!has({c}.ports) || {c}.ports.all(p, !has(p.hostPort) || p.hostPort == 0))",
            f"({_sc(c, 'seccompProfile')} ? {c}.securityContext.seccompProfile.type in "
            "['RuntimeDefault', 'Localhost'] : variables.podSeccomp)",
            f"(!{_sc(c, 'seLinuxOptions')} || (!has({c}.securityContext.seLinuxOptions.user) && "
            f"!has({c}.securityContext.seLinuxOptions.role) && "
            f"(!has({c}.securityContext.seLinuxOptions.type) || "
            f"{c}.securityContext.seLinuxOptions.type in {json.dumps(list(SELINUX_TYPES))})))",
            f"(!{_sc(c, 'appArmorProfile')} || {c}.securityContext.appArmorProfile.type in "
            "['RuntimeDefault', 'Localhost'])",
            f"!({_sc(c, 'windowsOptions')} && has({c}.securityContext.windowsOptions.hostProcess)"
            f" && {c}.securityContext.windowsOptions.hostProcess)",
        ]
    )


def _restricted_caps(c: str) -> str:
    """CEL: ``c`` drops ``ALL`` and adds nothing but ``NET_BIND_SERVICE`` [PSS]."""
    caps = f"{c}.securityContext.capabilities"
    return (
        f"({_sc(c, 'capabilities')} && has({caps}.drop) && 'ALL' in {caps}.drop && "
        f"(!has({caps}.add) || {caps}.add.all(a, a == 'NET_BIND_SERVICE')))"
    )


def _non_root(c: str) -> str:
    """CEL: ``c`` runs as non-root (its own ``runAsNonRoot``, else the pod's) and not as uid 0."""
    return (
        f"({_sc(c, 'runAsNonRoot')} ? {c}.securityContext.runAsNonRoot : variables.podNonRoot)"
        f" && !({_sc(c, 'runAsUser')} && {c}.securityContext.runAsUser == 0)"
    )


def _is_rxdm(c: str, r: Rxdm) -> str:
    """CEL: ``c`` is ``r``'s sidecar: its name, Google's image repository, on a node of its
    accelerator."""
    repo = r.image.rsplit(":", 1)[0]
    return (
        f"({c}.name == '{r.container}' && has({c}.image) && {c}.image.startsWith('{repo}:') && "
        f"variables.accelerator == '{r.accelerator}')"
    )


def _rxdm_caps(c: str, r: Rxdm) -> str:
    """CEL: ``c`` adds exactly ``r``'s capabilities or fewer."""
    caps = f"{c}.securityContext.capabilities"
    return f"(!{_sc(c, 'capabilities')} || !has({caps}.add) || {caps}.add.all(a, a in {json.dumps(list(r.capabilities))}))"


def admission_policy(namespace: str, kinds: Iterable[str]) -> list[dict[str, Any]]:
    """The ``ValidatingAdmissionPolicy`` and its binding to ``namespace``: every pod there is
    ``restricted`` but for the RxDM sidecar of ``kinds`` (``tcpx``, ``tcpxo``: the stack's
    ``gpudirect`` pools'). Each rule of [PSS] ``restricted`` is one validation, with the message
    the API server returns.

    The namespace enforces Pod Security ``privileged`` (the only level the sidecar passes), and
    Pod Security cannot allow one container more than another: this narrows it back, so that
    whoever may create a RayCluster there (or a head's autoscaler) gets no privileged pod through
    the operator (docs/sources.md#gpunet-gpudirect)."""
    rx = [RXDM[k] for k in sorted(set(kinds))]
    any_rxdm = " || ".join(_is_rxdm("c", r) for r in rx)
    kind_expr = "''"
    for r in reversed(rx):
        kind_expr = (
            f"object.spec.containers.exists(c, {_is_rxdm('c', r)}) ? '{r.kind}' : ({kind_expr})"
        )
    host_paths = {r.kind: sorted(r.host_paths.values()) for r in rx}
    worker_paths = sorted(
        {r.host_paths[n] for r in rx for n in r.worker_mounts if n in r.host_paths}
    )
    pod_sc = "object.spec.securityContext"
    variables = [
        ("accelerator", f"has(object.spec.nodeSelector) && '{ACCELERATOR_LABEL}' in "
         f"object.spec.nodeSelector ? object.spec.nodeSelector['{ACCELERATOR_LABEL}'] : ''"),
        ("podNonRoot", f"has({pod_sc}) && has({pod_sc}.runAsNonRoot) && {pod_sc}.runAsNonRoot"),
        ("podSeccomp", f"has({pod_sc}) && has({pod_sc}.seccompProfile) && "
         f"{pod_sc}.seccompProfile.type in ['RuntimeDefault', 'Localhost']"),
        ("rxdmKind", kind_expr),
        ("hostPaths", f"{json.dumps(host_paths)}"),
    ]  # fmt: skip
    # no list-valued conditionals (has(x) ? x : []): every optional list is guarded by has()
    mounts_ok = (
        "!has(c.volumeMounts) || !has(object.spec.volumes) || c.volumeMounts.all(m, "
        "!object.spec.volumes.exists(v, v.name == m.name && has(v.hostPath) && "
        f"!(v.hostPath.path in {json.dumps(worker_paths)})))"
    )
    init = "!has(object.spec.initContainers) || object.spec.initContainers.all(c, {})"
    restricted = "{c} && {caps} && {root}"
    validations = [
        (
            "!(has(object.spec.hostNetwork) && object.spec.hostNetwork) && "
            "!(has(object.spec.hostPID) && object.spec.hostPID) && "
            "!(has(object.spec.hostIPC) && object.spec.hostIPC)",
            "host namespaces (hostNetwork, hostPID, hostIPC) are not allowed",
        ),
        (
            "!has(object.spec.volumes) || object.spec.volumes.all(v, "
            + " || ".join(f"has(v.{t})" for t in RESTRICTED_VOLUMES)
            + " || (has(v.hostPath) && variables.rxdmKind != '' && "
            "v.hostPath.path in variables.hostPaths[variables.rxdmKind]))",
            "volumes: restricted types only; hostPath only at the RxDM sidecar's paths, in a pod "
            "with that sidecar",
        ),
        (
            f"object.spec.containers.all(c, {any_rxdm} || {mounts_ok}) && "
            + init.format(mounts_ok),
            "hostPath mounts: the host's /sys and /proc/sys by the RxDM sidecar only",
        ),
        (
            f"!has({pod_sc}) || !has({pod_sc}.sysctls) || {pod_sc}.sysctls.all(s, s.name in "
            f"{json.dumps(list(SAFE_SYSCTLS))})",
            "sysctls: the safe set only",
        ),
        (
            f"!(has({pod_sc}) && has({pod_sc}.runAsUser) && {pod_sc}.runAsUser == 0) && "
            f"!(has({pod_sc}) && has({pod_sc}.seccompProfile) && "
            f"{pod_sc}.seccompProfile.type == 'Unconfined')",
            "the pod's securityContext: no runAsUser 0, no Unconfined seccomp",
        ),
        (
            f"object.spec.containers.all(c, {_common('c')})",
            "containers: privileged, privilege escalation, host ports, /proc mount, seccomp, "
            "SELinux and AppArmor as restricted requires",
        ),
        (
            "object.spec.containers.all(c, "
            + " || ".join(f"({_is_rxdm('c', r)} && {_rxdm_caps('c', r)})" for r in rx)
            + f" || {_restricted_caps('c')})",
            "containers: capabilities drop ALL and add only NET_BIND_SERVICE (the RxDM sidecar: "
            "its own capabilities)",
        ),
        (
            f"object.spec.containers.all(c, {any_rxdm} || ({_non_root('c')}))",
            "containers: run as non-root (the RxDM sidecar alone runs as root)",
        ),
        (
            init.format(
                restricted.format(c=_common("c"), caps=_restricted_caps("c"), root=_non_root("c"))
            ),
            "init containers: restricted",
        ),
        (
            "!has(object.spec.ephemeralContainers) || object.spec.ephemeralContainers.all(c, "
            + restricted.format(c=_common("c"), caps=_restricted_caps("c"), root=_non_root("c"))
            + ")",
            "ephemeral containers: restricted",
        ),
    ]
    policy = {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY_NAME, "labels": {"app.kubernetes.io/part-of": "ray-gke"}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["pods", "pods/ephemeralcontainers"],
                    }
                ]
            },
            "variables": [{"name": n, "expression": e} for n, e in variables],
            "validations": [
                {"expression": e, "message": f"{namespace} (GPUDirect RxDM only): {m}"}
                for e, m in validations
            ],
        },
    }
    binding = {
        "apiVersion": ADMISSION_API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY_NAME, "labels": {"app.kubernetes.io/part-of": "ray-gke"}},
        "spec": {
            "policyName": POLICY_NAME,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            },
        },
    }
    return [policy, binding]


# ------------------------------------------------------------------------- what raygke check says


def gpudirect_grants(p: Plan) -> list[Problem]:
    """One warning per ``gpudirect`` pool of plan ``p``, which ``raygke check`` prints (never
    failing): what the choice grants, where, and what stays as it was (docs/security.md,
    GPUDirect)."""
    ctx = p.context
    out = []
    for pool in p.declared_pools:
        r = rxdm_of(pool)
        if r is None:
            continue
        fam = GPU_NET_FAMILIES[pool.machine_type]
        moved = sorted(n for n, ns in ctx.ray_namespaces.items() if ns == ctx.gpudirect_namespace)
        field = f"node_pools[{pool.name}].gpu_networking"
        out.append(
            Problem(
                field,
                f"{field} 'gpudirect' grants, in the Ray workers on this pool only, a "
                f"{r.container} sidecar ({r.image}) running as root with "
                f"{' and '.join(r.capabilities)} and the host's "
                f"{', '.join(sorted(r.host_paths.values()))} mounted, and NCCL's "
                f"GPUDirect-{fam.kind.upper()} plugin from Google's installer DaemonSet "
                "(privileged, kube-system, with the NRI device injector); the Ray clusters "
                f"{', '.join(moved) or '(none yet)'} run in namespace {ctx.gpudirect_namespace} at "
                "Pod Security privileged, which a ValidatingAdmissionPolicy narrows to exactly "
                "that sidecar; every other Ray pod stays restricted in "
                f"{ctx.namespace} (docs/security.md, GPUDirect)",
                "gpudirect-grants",
                "warning",
            )
        )
    return out
