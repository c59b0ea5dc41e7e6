"""Pure pieces of the KubeRay side: the kubeconfig, the operator chart and its values.

* Kubeconfig with the ``gke-gcloud-auth-plugin`` exec user:
  https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin
* KSA annotation ``iam.gke.io/gcp-service-account``:
  https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity
* ``kuberay-operator`` chart: https://ray-project.github.io/kuberay-helm/
"""

from __future__ import annotations

import json
from typing import Any

from components import catalog
from components.spec import StackConfig

KUBERAY_HELM_REPO = "https://ray-project.github.io/kuberay-helm/"
KUBERAY_CHART = "kuberay-operator"
WI_ANNOTATION = "iam.gke.io/gcp-service-account"


def kubeconfig(cluster_name: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig (JSON, which is YAML) for ``https://<endpoint>`` with CA data (base64 PEM as
    GKE returns it) and the ``gke-gcloud-auth-plugin`` exec user."""
    ctx = f"gke_{cluster_name}"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": ctx,
                "cluster": {
                    "server": f"https://{endpoint}",
                    "certificate-authority-data": ca_certificate,
                },
            }
        ],
        "contexts": [{"name": ctx, "context": {"cluster": ctx, "user": ctx}}],
        "current-context": ctx,
        "users": [
            {
                "name": ctx,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "gke-gcloud-auth-plugin",
                        "installHint": "Install gke-gcloud-auth-plugin: "
                        "gcloud components install gke-gcloud-auth-plugin",
                        "provideClusterInfo": True,
                    }
                },
            }
        ],
    }
    return json.dumps(doc, indent=2, sort_keys=True)


def helm_values(cfg: StackConfig) -> dict[str, Any]:
    """Values for the ``kuberay-operator`` chart: operator pinned to the system pool."""
    return {
        "nodeSelector": {catalog.NODE_POOL_LABEL: "system"},
        "resources": {
            "requests": {"cpu": "100m", "memory": "512Mi"},
            "limits": {"memory": "512Mi"},
        },
    }
