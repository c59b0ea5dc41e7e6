"""Ray's ports, the pod labels of the stack's Ray objects and Ray's token authentication
(:func:`auth_options`): what the Ray pods, the Ray namespace's NetworkPolicies, the
PodMonitorings, the Serve ingress and the clients all name, so none of them imports another
concept for it. Sources: docs/sources.md#kernel-ray
"""

from __future__ import annotations

from typing import Any

HEAD_PORTS = {"gcs-server": 6379, "dashboard": 8265, "client": 10001, "metrics": 8080}
DASHBOARD_PORT = HEAD_PORTS["dashboard"]
CLIENT_PORT = HEAD_PORTS["client"]
METRICS_PORT = HEAD_PORTS["metrics"]  # KubeRay constant.go DefaultMetricsPort
SERVE_PORT = 8000  # Ray Serve HTTP; KubeRay constant.go DefaultServingPort
TPU_RUNTIME_PORT = 8471
TPU_METRICS_PORT = 8431
MEGASCALE_PORT = 8081

CLUSTER_LABEL = "ray.io/cluster"  # KubeRay constant.go RayClusterLabelKey
JOB_CLUSTER_LABEL = "ray-gke.io/job-cluster"  # the pods of a RayJob's own cluster: the job
SUBMITTER_LABEL = "ray-gke.io/submits-to"  # a submitter or client pod: the cluster it calls
SERVICE_LABEL = "ray-gke/service"  # the pods of a RayService: the service
PART_OF = "ray-gke"  # the value of app.kubernetes.io/part-of on everything the stack renders

# Token authentication (:func:`auth_options`).
AUTH_MODE = "token"
AUTH_TOKEN_KEY = "auth_token"


def auth_secret_name(cluster: str) -> str:
    """The Kubernetes Secret holding the Ray auth token of one Ray cluster (a long-lived
    RayCluster's name, or a RayJob's name for the cluster it brings): ``<name>-ray-auth``. The
    stack creates it (``pulumi_random.RandomPassword``) with the key ``auth_token``
    (:data:`AUTH_TOKEN_KEY`, KubeRay's ``RAY_AUTH_TOKEN_SECRET_KEY`` in
    ``ray-operator/controllers/ray/utils/constant.go``)."""
    return f"{cluster}-ray-auth"


def auth_options(cluster: str) -> dict[str, Any]:
    """``authOptions`` of a RayCluster spec: ``{mode: token, secretName: <auth_secret_name>}``.

    KubeRay v1.7.0 then sets ``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN`` (``secretKeyRef``
    to that Secret's ``auth_token``) on every Ray container, and on the RayJob submitter
    (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/kuberay-auth.html; the
    submitter: ``rayjob_controller`` test "Auth env vars should be injected"), so the pod
    templates do not repeat them. Without ``secretName`` KubeRay would generate a Secret named
    after the RayCluster; we name it ourselves because a RayJob's own RayCluster gets a
    generated name, and in-cluster clients (a Serve gateway, a notebook) need a name known at
    preview time. Needs ``rayVersion`` >= 2.52.0 (validation.go ``ValidateRayClusterSpec``).
    """
    return {"mode": AUTH_MODE, "secretName": auth_secret_name(cluster)}


def auth_client_env(cluster: str) -> list[dict[str, Any]]:
    """Container ``env`` for an in-cluster client of Ray cluster ``cluster`` that KubeRay does not
    inject into (a Serve gateway, a notebook, a CI pod): ``RAY_AUTH_MODE=token`` and
    ``RAY_AUTH_TOKEN`` from the cluster's Secret (:func:`auth_secret_name`, key ``auth_token``);
    Ray's clients read both (https://docs.ray.io/en/latest/ray-security/token-auth.html). The
    client pod must also match the head's NetworkPolicy (label ``ray-gke.io/submits-to:
    <cluster>``, :mod:`components.kuberay.namespace`)."""
    return [
        {"name": "RAY_AUTH_MODE", "value": AUTH_MODE},
        {
            "name": "RAY_AUTH_TOKEN",
            "valueFrom": {
                "secretKeyRef": {"name": auth_secret_name(cluster), "key": AUTH_TOKEN_KEY}
            },
        },
    ]
