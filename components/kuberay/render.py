"""Pure pieces of the KubeRay side: the kubeconfig, the operator chart and its values.

* Kubeconfig with the ``gke-gcloud-auth-plugin`` exec user:
  https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin
* KSA annotation ``iam.gke.io/gcp-service-account``:
  https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity
* ``kuberay-operator`` chart: https://ray-project.github.io/kuberay-helm/
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from components import catalog
from components.config.kuberay import KUBERAY_CHART_VERSIONS
from components.kernel.yamlcache import load_yaml_cached

if TYPE_CHECKING:
    from components.config.network import NetworkConfig
    from components.config.serve import ServiceConfig
    from components.plan.plan import Context

KUBERAY_HELM_REPO = "https://ray-project.github.io/kuberay-helm/"
KUBERAY_CHART = "kuberay-operator"
WI_ANNOTATION = "iam.gke.io/gcp-service-account"
# The KubeRay CRDs the product carries, one folder ``v<version>`` per version of
# KUBERAY_CHART_VERSIONS (see its README): the kuberay-operator chart's ``crds/`` of that tag.
CARRIED_CRDS = Path(__file__).resolve().parent / "crds"
# The chart's default ``featureGates`` list ({name, enabled}; the chart turns it into the
# operator's ``--feature-gates=`` flag, ``kuberay.featureGates`` in templates/_helpers.tpl), per
# chart version: helm-chart/kuberay-operator/values.yaml of the ray-project/kuberay tag.
CHART_FEATURE_GATES: dict[str, tuple[tuple[str, bool], ...]] = {
    "1.7.0": (
        ("RayClusterStatusConditions", True),
        ("RayJobDeletionPolicy", True),
        ("RayMultiHostIndexing", True),
        ("RayServiceIncrementalUpgrade", True),
        ("RayCronJob", False),
        ("RayClusterMTLS", False),
        ("RayClusterNetworkPolicy", False),
        ("RayClusterHistoryServer", False),
    ),
    "1.6.2": (
        ("RayClusterStatusConditions", True),
        ("RayJobDeletionPolicy", True),
        ("RayMultiHostIndexing", True),
        ("RayServiceIncrementalUpgrade", False),
        ("RayCronJob", False),
    ),
}
INCREMENTAL_UPGRADE_GATE = "RayServiceIncrementalUpgrade"
INCREMENTAL_UPGRADE = "NewClusterWithIncrementalUpgrade"
CRD_FILES = {
    "RayCluster": "ray.io_rayclusters.yaml",
    "RayJob": "ray.io_rayjobs.yaml",
    "RayService": "ray.io_rayservices.yaml",
}


def carried_crds_dir(version: str) -> Path:
    """``components/kuberay/crds/v<version>``.

    Raises:
        ValueError: ``version`` is not one of ``KUBERAY_CHART_VERSIONS``.
    """
    if version not in KUBERAY_CHART_VERSIONS:
        raise ValueError(
            f"KubeRay {version!r} CRDs are not carried; valid: {', '.join(KUBERAY_CHART_VERSIONS)}"
        )
    return CARRIED_CRDS / f"v{version}"


@functools.lru_cache(maxsize=4)
def crd_documents(version: str) -> tuple[dict[str, Any], ...]:
    """The carried RayCluster, RayJob and RayService CustomResourceDefinitions of ``version`` as
    parsed YAML (``apiVersion: apiextensions.k8s.io/v1``), in that order. Callers must not mutate
    them.

    Raises:
        ValueError: version not carried. FileNotFoundError: a file is missing from the folder.
    """
    d = carried_crds_dir(version)
    return tuple(load_yaml_cached((d / f).read_bytes()) for f in CRD_FILES.values())


def crd_spec_digest(spec: dict[str, Any]) -> dict[str, Any]:
    """A CRD ``spec`` in brief: its ``group``, ``names``, the version names and the sha256 of the
    whole spec (sorted-key JSON), so two specs that differ anywhere have different digests."""
    return {
        "group": spec.get("group"),
        "names": spec.get("names"),
        "versions": [v.get("name") for v in spec.get("versions", [])],
        "sha256": hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest(),
    }


@functools.lru_cache(maxsize=4)
def crd_digests(version: str) -> tuple[dict[str, Any], ...]:
    """:func:`crd_documents` with each ``spec`` replaced by :func:`crd_spec_digest`: what a
    render that reads no CRD schema needs (the policy pack's GCP rules, prices). Built once per
    version; callers must not mutate them.

    Raises:
        as :func:`crd_documents`.
    """
    return tuple({**doc, "spec": crd_spec_digest(doc["spec"])} for doc in crd_documents(version))


# Whether the program renders the CRDs' full specs ("full", what is deployed and what
# ``raygke synth`` writes) or their digests ("digest": about 6 MB less for Pulumi to serialise
# per helm-mode render, most of a render's time). Set with :func:`crd_specs`.
_CRD_SPECS: ContextVar[str] = ContextVar("raygke_crd_specs", default="full")


@contextlib.contextmanager
def crd_specs(mode: str) -> Iterator[None]:
    """Within the block, :func:`program_crd_documents` gives ``mode``'s documents: ``"full"``
    (:func:`crd_documents`) or ``"digest"`` (:func:`crd_digests`).

    Raises:
        ValueError: another ``mode``.
    """
    if mode not in ("full", "digest"):
        raise ValueError(f"crd_specs mode {mode!r}: expected 'full' or 'digest'")
    token = _CRD_SPECS.set(mode)
    try:
        yield
    finally:
        _CRD_SPECS.reset(token)


def program_crd_documents(version: str) -> tuple[dict[str, Any], ...]:
    """The CRD documents the Pulumi program renders for ``version``: :func:`crd_documents`, or
    :func:`crd_digests` inside ``crd_specs("digest")``."""
    return crd_digests(version) if _CRD_SPECS.get() == "digest" else crd_documents(version)


def kubeconfig(cluster_name: str, endpoint: str, ca_certificate: str | None) -> str:
    """A kubeconfig (JSON, which is YAML) for ``https://<endpoint>`` and the
    ``gke-gcloud-auth-plugin`` exec user.

    ``endpoint`` is the IP endpoint with ``ca_certificate`` (base64 PEM as GKE returns it), or the
    DNS-based endpoint (``<uid>.<location>.gke.goog``) with ``ca_certificate=None``: that endpoint
    serves a publicly trusted certificate, and ``gcloud container clusters get-credentials
    --dns-endpoint`` writes no CA data either
    (https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation).
    """
    ctx = f"gke_{cluster_name}"
    server: dict[str, str] = {"server": f"https://{endpoint}"}
    if ca_certificate:
        server["certificate-authority-data"] = ca_certificate
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": ctx,
                "cluster": server,
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


def cluster_identifier(ctx: Context, net: NetworkConfig) -> str:
    """The Kubernetes provider's ``clusterIdentifier``: ``gke/<project>/<location>/<name>/<gen>``.

    pulumi-kubernetes replaces its provider - and with it every object the provider manages -
    when it judges that the kubeconfig points at another cluster; with ``clusterIdentifier`` set
    it replaces the provider *only* when this value changes and treats every other change of its
    configuration (kubeconfig: CA rotation, IP/DNS endpoint switch, credentials) as an update
    (``Provider.cluster_identifier`` in pulumi_kubernetes 4.34.2, ``provider.py``; schema of
    https://www.pulumi.com/registry/packages/kubernetes/api-docs/provider/#clusteridentifier).

    The value is known at preview (config only, no output) and changes exactly when the GKE
    cluster itself is replaced, so a new cluster still gets every object recreated in it:
    ``<gen>`` is the first 12 hex digits of the sha256 of the cluster inputs that force a
    replacement and come from the config (``name``, ``project``, ``location``, the network's
    ``name``, ``subnet_cidr``, ``pods_cidr``, ``services_cidr``, ``master_ipv4_cidr``: the
    stack's :class:`~components.plan.plan.Context` and its ``network`` section; the
    ``ForceNew`` attributes of terraform-provider-google v7.30.0
    ``container/resource_container_cluster.go``, see :mod:`raygke.diff.replacement`).
    """
    forcing = {
        "name": ctx.cluster,
        "project": ctx.project,
        "location": ctx.location,
        "network": net.name,
        "subnet": net.subnet_cidr,
        "pods": net.pods_cidr,
        "services": net.services_cidr,
        "master": net.master_ipv4_cidr,
    }
    gen = hashlib.sha256(json.dumps(forcing, sort_keys=True).encode()).hexdigest()[:12]
    return f"gke/{ctx.project}/{ctx.location}/{ctx.cluster}/{gen}"


def incremental_services(services: Iterable[ServiceConfig]) -> list[str]:
    """Names of the ``services`` with ``upgrade_strategy: NewClusterWithIncrementalUpgrade``,
    sorted."""
    return sorted(s.name for s in services if s.strategy == INCREMENTAL_UPGRADE)


def feature_gates(
    chart_version: str, services: Iterable[ServiceConfig]
) -> list[dict[str, Any]] | None:
    """The chart value ``featureGates`` (``[{"name", "enabled"}]``): None (the chart's default)
    unless one of ``services`` uses ``NewClusterWithIncrementalUpgrade``; then the chart's
    default list of ``chart_version`` (``kuberay.chart_version``; :data:`CHART_FEATURE_GATES`) with ``RayServiceIncrementalUpgrade``
    enabled. The whole list, because Helm replaces a list value rather than merging it.

    Why: KubeRay honours the strategy only with that gate on (``IsIncrementalUpgradeEnabled`` in
    ray-operator/controllers/ray/utils/util.go; without it ``isZeroDowntimeUpgradeEnabled`` in
    rayservice_controller.go treats the type as no zero-downtime upgrade, so a cluster change
    brings up no new cluster, ``shouldPrepareNewCluster``). Its default (ray-operator/pkg/
    features/features.go ``defaultFeatureGates``): true (beta) in v1.7.0, false (alpha) in
    v1.6.2; set explicitly so the stack does not depend on the chart's default. The chart's
    ClusterRole already grants ``gateway.networking.k8s.io`` gateways/httproutes in both
    versions (templates/_helpers.tpl). The docs' own install line sets the same value
    (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/rayservice-incremental-upgrade.html).
    """
    if not incremental_services(services):
        return None
    return [
        {"name": name, "enabled": True if name == INCREMENTAL_UPGRADE_GATE else enabled}
        for name, enabled in CHART_FEATURE_GATES[chart_version]
    ]


def helm_values(chart_version: str, services: Iterable[ServiceConfig]) -> dict[str, Any]:
    """Values for the ``kuberay-operator`` chart: operator pinned to the system pool, its
    container ``securityContext`` the Pod Security Standards' ``restricted`` shape (the operator
    runs in the Ray namespace, which enforces ``restricted``: components/kuberay/namespace.py;
    chart value ``securityContext``, as KubeRay's pod-security guide sets it,
    https://docs.ray.io/en/latest/cluster/kubernetes/k8s-ecosystem/pod-security.html), and
    ``featureGates`` (:func:`feature_gates` of ``chart_version`` and ``services``) when a service
    needs the incremental upgrade gate."""
    values: dict[str, Any] = {
        "nodeSelector": {catalog.NODE_POOL_LABEL: "system"},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "resources": {
            "requests": {"cpu": "100m", "memory": "512Mi"},
            "limits": {"memory": "512Mi"},
        },
    }
    gates = feature_gates(chart_version, services)
    if gates is not None:
        values["featureGates"] = gates
    return values
