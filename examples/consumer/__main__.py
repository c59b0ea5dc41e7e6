"""A consumer of the ray-gke platform, owned by another team.

It reads the platform stack's outputs (docs/outputs.md of ray-gke, contract version "1") through a
``pulumi.StackReference`` and submits one RayJob to the platform's cluster:

* ``kubeconfig`` (secret): the Kubernetes provider (the DNS-based endpoint, authenticated by
  ``gke-gcloud-auth-plugin`` with the deployer's own Google credentials);
* ``namespace``: where the job and its RayCluster go;
* ``service_accounts``: the workload identities; the job runs as one of them (KSA = its name);
* ``bucket_urls``: the job reads the ``checkpoints`` bucket;
* ``kuberay_mode``: where the KubeRay operator connects from, for the head's NetworkPolicy
  (``gke-addon``: the control plane's range, config ``operator_cidr``).

The RayJob passes the platform's own security rules (``components/security/rules.py`` of
ray-gke, run by its test): restricted Pod Security ``securityContext`` on the head and the
submitter, Ray token authentication, and a NetworkPolicy for its head in the platform's
default-deny namespace.

``contract_version`` other than the one this program was written for stops the deployment with
one line instead of deploying against outputs it does not understand.

KubeRay RayJob fields: https://docs.ray.io/en/latest/cluster/kubernetes/getting-started/rayjob-quick-start.html
StackReference: https://www.pulumi.com/docs/iac/concepts/stacks/#stackreferences
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

SUPPORTED_CONTRACT = "1"

config = pulumi.Config()
platform = pulumi.StackReference(config.require("platform_stack"))
identity = config.get("identity") or "ray-serve"
image = config.get("image") or "rayproject/ray:2.60.0-py311"


def _contract(version: object) -> str:
    if str(version) != SUPPORTED_CONTRACT:
        raise pulumi.RunError(
            f"platform outputs contract_version {version!r}; this program reads version "
            f"{SUPPORTED_CONTRACT!r} (see the platform's docs/outputs.md)"
        )
    return str(version)


def _identity(service_accounts: dict[str, str]) -> str:
    if identity not in service_accounts:
        raise pulumi.RunError(
            f"identity {identity!r} is not a workload identity of the platform; it has: "
            f"{', '.join(sorted(service_accounts)) or 'none'}"
        )
    return identity


contract = platform.require_output("contract_version").apply(_contract)
namespace = platform.require_output("namespace")
ksa = platform.require_output("service_accounts").apply(_identity)
checkpoints = platform.require_output("bucket_urls").apply(lambda b: b["checkpoints"])

provider = k8s.Provider(
    "platform",
    kubeconfig=platform.require_output("kubeconfig"),
)

ENTRYPOINT = "python -c \"import os, ray; ray.init(); print('checkpoints at', os.environ['CHECKPOINTS_URL'])\""
JOB = "checkpoint-report"

# The platform's namespace enforces Pod Security "restricted" and denies all ingress by default
# (ray-gke docs: components/kuberay/namespace.py); its Ray clusters run token authentication.
# So this job's pods carry the restricted securityContext (the Ray image's user: uid 1000, gid
# 100; https://kubernetes.io/docs/concepts/security/pod-security-standards/#restricted), its
# cluster runs `authOptions.mode: token` (KubeRay v1.7.0 generates the token Secret and gives it
# to the head and the submitter, https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/
# kuberay-auth.html), and a NetworkPolicy of its own lets the KubeRay operator and this job's
# submitter reach the head's GCS / dashboard / client ports.
RAY_UID, RAY_GID = 1000, 100
HEAD_PORTS = (6379, 8265, 10001)
JOB_LABEL = "ray-gke-consumer/job"
SUBMITS_TO = "ray-gke-consumer/submits-to"
OPERATOR_POD_LABELS = {"app.kubernetes.io/name": "kuberay-operator"}

POD_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": RAY_UID,
    "runAsGroup": RAY_GID,
    "fsGroup": RAY_GID,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "runAsUser": RAY_UID,
    "runAsGroup": RAY_GID,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def _resources(cpu: str, memory: str) -> dict:
    return {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}


def rayjob_spec(args: list) -> dict:
    """The RayJob's ``spec`` once the platform's outputs are known: a small RayCluster of its own
    (head only, token auth) that runs as the chosen KSA and is deleted after the job; the
    submitter pod runs without a service account token."""
    _, sa, url = args
    head = {
        "rayStartParams": {"dashboard-host": "0.0.0.0"},
        "template": {
            "metadata": {"labels": {JOB_LABEL: JOB}},
            "spec": {
                "serviceAccountName": sa,
                "securityContext": POD_SECURITY,
                "containers": [
                    {
                        "name": "ray-head",
                        "image": image,
                        "env": [{"name": "CHECKPOINTS_URL", "value": url}],
                        "resources": _resources("1", "4Gi"),
                        "securityContext": CONTAINER_SECURITY,
                    }
                ],
            },
        },
    }
    submitter = {
        "metadata": {"labels": {SUBMITS_TO: JOB}},
        "spec": {
            "serviceAccountName": sa,
            "automountServiceAccountToken": False,
            "securityContext": POD_SECURITY,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": image,
                    "resources": _resources("500m", "1Gi"),
                    "securityContext": CONTAINER_SECURITY,
                }
            ],
        },
    }
    return {
        "entrypoint": ENTRYPOINT,
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": 300,
        "rayClusterSpec": {"authOptions": {"mode": "token"}, "headGroupSpec": head},
        "submitterPodTemplate": submitter,
    }


def _operator_peer(mode: str) -> dict:
    """Where the KubeRay operator connects from: its pods in the namespace (``helm``), or the GKE
    control plane's range (``gke-addon`` hosts the operator there; config ``operator_cidr``, the
    platform stack's ``network.master_ipv4_cidr``)."""
    if mode == "helm":
        return {"podSelector": {"matchLabels": dict(OPERATOR_POD_LABELS)}}
    cidr = config.get("operator_cidr")
    if not cidr:
        raise pulumi.RunError(
            f"the platform runs KubeRay as {mode!r}: set operator_cidr to its control plane range "
            "(the platform stack's network.master_ipv4_cidr) so the operator reaches the job's head"
        )
    return {"ipBlock": {"cidr": cidr}}


def head_policy_spec(args: list) -> dict:
    """The NetworkPolicy ``spec`` admitting the operator and this job's submitter to the head."""
    _, mode = args
    return {
        "podSelector": {"matchLabels": {JOB_LABEL: JOB, "ray.io/node-type": "head"}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [_operator_peer(mode), {"podSelector": {"matchLabels": {SUBMITS_TO: JOB}}}],
                "ports": [{"protocol": "TCP", "port": p} for p in HEAD_PORTS],
            }
        ],
    }


labels = {"app.kubernetes.io/part-of": "ray-gke-consumer"}
policy = k8s.networking.v1.NetworkPolicy(
    f"{JOB}-head",
    metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{JOB}-head", namespace=namespace, labels=labels),
    spec=pulumi.Output.all(contract, platform.require_output("kuberay_mode")).apply(
        head_policy_spec
    ),
    opts=pulumi.ResourceOptions(provider=provider),
)

job = k8s.apiextensions.CustomResource(
    JOB,
    api_version="ray.io/v1",
    kind="RayJob",
    metadata=k8s.meta.v1.ObjectMetaArgs(name=JOB, namespace=namespace, labels=labels),
    spec=pulumi.Output.all(contract, ksa, checkpoints).apply(rayjob_spec),
    opts=pulumi.ResourceOptions(provider=provider, depends_on=[policy]),
)

pulumi.export("rayjob", pulumi.Output.concat(namespace, f"/{JOB}"))
