"""A consumer of the ray-gke platform, owned by another team.

It reads the platform stack's outputs (docs/outputs.md of ray-gke, contract version "1") through a
``pulumi.StackReference`` and submits one RayJob to the platform's cluster:

* ``kubeconfig`` (secret): the Kubernetes provider (the DNS-based endpoint, authenticated by
  ``gke-gcloud-auth-plugin`` with the deployer's own Google credentials);
* ``namespace``: where the job and its RayCluster go;
* ``service_accounts``: the workload identities; the job runs as one of them (KSA = its name);
* ``bucket_urls``: the job reads the ``checkpoints`` bucket.

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


def rayjob_spec(args: list) -> dict:
    """The RayJob's ``spec`` once the platform's outputs are known: a small RayCluster of its own
    (head only) that runs as the chosen KSA and is deleted after the job."""
    _, sa, url = args
    head = {
        "rayStartParams": {"dashboard-host": "0.0.0.0"},
        "template": {
            "spec": {
                "serviceAccountName": sa,
                "containers": [
                    {
                        "name": "ray-head",
                        "image": image,
                        "env": [{"name": "CHECKPOINTS_URL", "value": url}],
                        "resources": {
                            "requests": {"cpu": "1", "memory": "4Gi"},
                            "limits": {"cpu": "1", "memory": "4Gi"},
                        },
                    }
                ],
            }
        },
    }
    return {
        "entrypoint": ENTRYPOINT,
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": 300,
        "rayClusterSpec": {"headGroupSpec": head},
    }


job = k8s.apiextensions.CustomResource(
    "checkpoint-report",
    api_version="ray.io/v1",
    kind="RayJob",
    metadata=k8s.meta.v1.ObjectMetaArgs(
        name="checkpoint-report",
        namespace=namespace,
        labels={"app.kubernetes.io/part-of": "ray-gke-consumer"},
    ),
    spec=pulumi.Output.all(contract, ksa, checkpoints).apply(rayjob_spec),
    opts=pulumi.ResourceOptions(provider=provider),
)

pulumi.export("rayjob", pulumi.Output.concat(namespace, "/checkpoint-report"))
