"""KubeRay side: the Kubernetes provider, namespace, workload KSAs and the KubeRay operator (Helm
release and its CRDs with ``kuberay.mode: helm``; GKE runs KubeRay with ``gke-addon``).
What it creates, and why, with sources:
docs/sources.md#kuberay-component
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.config.cluster import ClusterConfig
from components.config.kuberay import KubeRayConfig
from components.config.network import NetworkConfig
from components.kuberay.namespace import (
    gpudirect_namespace_manifest,
    namespace_manifest,
    namespace_objects,
)
from components.kuberay.render import (
    KUBERAY_CHART,
    KUBERAY_HELM_REPO,
    WI_ANNOTATION,
    cluster_identifier,
    helm_values,
    kubeconfig,
    program_crd_documents,
)
from components.plan.plan import Plan, namespace_accounts


@dataclass
class KubeRayArgs:
    """Inputs of :class:`KubeRay`.

    Attributes:
        plan: the stack's plan (its context, Ray clusters, jobs, services, identities).
        kuberay: the ``kuberay`` block.
        cluster: the ``cluster`` block (its ``dns_endpoint``).
        network: the ``network`` block (the provider's identifier, the control plane's range).
        nap_limits: the cluster's NAP resource limits
            (:func:`components.cluster.render.nap_resource_limits`), the quota's defaults.
        cluster_name / endpoint / ca_certificate: from the cluster (IP endpoint and its CA).
        dns_endpoint: the cluster's DNS-based endpoint host; the kubeconfig and the provider use
            it (without CA data) when ``cluster.dns_endpoint`` is on, else the IP endpoint.
        gsa_emails: workload identity name -> GSA email output.
        depends_on: resources the Kubernetes objects wait for (node pools, WI bindings).
    """

    plan: Plan
    kuberay: KubeRayConfig
    cluster: ClusterConfig
    network: NetworkConfig
    nap_limits: Sequence[Mapping[str, Any]]
    cluster_name: pulumi.Input[str]
    endpoint: pulumi.Input[str]
    ca_certificate: pulumi.Input[str]
    gsa_emails: dict[str, pulumi.Input[str]]
    depends_on: list[pulumi.Resource] | None = None
    dns_endpoint: pulumi.Input[str] | None = None


class KubeRay(pulumi.ComponentResource):
    """``ray-gke:kuberay:KubeRay``.

    Attributes: ``kubeconfig`` (secret Output[str]), ``provider`` (``k8s.Provider``, with
    ``cluster_identifier``, :func:`components.kuberay.render.cluster_identifier`),
    ``namespace`` (``k8s.core.v1.Namespace``), ``service_accounts`` (name -> KSA), ``crds``
    (kind -> ``apiextensions.v1.CustomResourceDefinition``, helm mode only), ``operator`` (the
    ``helm.v3.Release`` in helm mode, else None), ``ready`` (resources Ray objects must wait for:
    namespace, KSAs, CRDs, operator).
    """

    def __init__(
        self, name: str, args: KubeRayArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:kuberay:KubeRay", name, None, opts)
        p, kuberay = args.plan, args.kuberay
        if args.cluster.dns_endpoint and args.dns_endpoint is not None:
            config = pulumi.Output.all(args.cluster_name, args.dns_endpoint).apply(
                lambda a: kubeconfig(a[0], a[1], None)
            )
        else:
            config = pulumi.Output.all(args.cluster_name, args.endpoint, args.ca_certificate).apply(
                lambda a: kubeconfig(a[0], a[1], a[2])
            )
        self.kubeconfig = pulumi.Output.secret(config)
        # A stable identity: a new CA, endpoint or credential updates the provider in place
        # instead of replacing it and every object it manages (builders.kuberay.cluster_identifier).
        self.cluster_identifier = cluster_identifier(p.context, args.network)
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            cluster_identifier=self.cluster_identifier,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on or [])),
        )
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=self.provider)
        ns = kuberay.namespace
        ns_doc = namespace_manifest(kuberay)
        self.namespace = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ns, labels=ns_doc["metadata"]["labels"]),
            opts=k8s_opts,
        )
        # The gpudirect namespace (gpu_networking: gpudirect pools only): its own guards and
        # KSAs below; objects there get resource names with "gpudirect" in them.
        gd_doc = gpudirect_namespace_manifest(p.context)
        self.gpudirect_namespace: k8s.core.v1.Namespace | None = None
        if gd_doc is not None:
            self.gpudirect_namespace = k8s.core.v1.Namespace(
                f"{name}-ns-gpudirect",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=gd_doc["metadata"]["name"], labels=gd_doc["metadata"]["labels"]
                ),
                opts=k8s_opts,
            )
        namespaces = [self.namespace]
        if self.gpudirect_namespace is not None:
            namespaces.append(self.gpudirect_namespace)
        ns_opts = pulumi.ResourceOptions(parent=self, provider=self.provider, depends_on=namespaces)

        def _rname(kind: str, oname: str, namespace: str) -> tuple[str, str]:
            if namespace == ns:  # the Ray namespace's objects keep the names they had
                return f"{kind}/{oname}", f"{name}-{kind.lower()}-{oname}"
            return f"{namespace}/{kind}/{oname}", f"{name}-gpudirect-{kind.lower()}-{oname}"

        # NetworkPolicies, ResourceQuota, LimitRange (components/kuberay/namespace.py).
        self.guards: dict[str, pulumi.CustomResource] = {}
        kinds = {
            "NetworkPolicy": k8s.networking.v1.NetworkPolicy,
            "ResourceQuota": k8s.core.v1.ResourceQuota,
            "LimitRange": k8s.core.v1.LimitRange,
        }
        for doc in namespace_objects(p, kuberay, args.network.master_ipv4_cidr, args.nap_limits):
            kind, oname = doc["kind"], doc["metadata"]["name"]
            key, rname = _rname(kind, oname, doc["metadata"]["namespace"])
            self.guards[key] = kinds[kind](
                rname,
                metadata=doc["metadata"],
                spec=doc["spec"],
                opts=ns_opts,
            )
        self.service_accounts: dict[str, k8s.core.v1.ServiceAccount] = {}
        for acct_ns, acct in namespace_accounts(p):
            key, rname = _rname("ksa", acct.name, acct_ns)
            self.service_accounts[acct.name if acct_ns == ns else key] = k8s.core.v1.ServiceAccount(
                rname,
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=acct.name,
                    namespace=acct_ns,
                    annotations={WI_ANNOTATION: args.gsa_emails[acct.name]},
                    labels={"app.kubernetes.io/part-of": "ray-gke"},
                ),
                # Pods that call the Kubernetes API (the head's autoscaler) opt in per pod.
                automount_service_account_token=False,
                opts=ns_opts,
            )
        self.crds: dict[str, k8s.apiextensions.v1.CustomResourceDefinition] = {}
        self.operator: k8s.helm.v3.Release | None = None
        if kuberay.mode == "helm":
            for doc in program_crd_documents(kuberay.chart_version):
                meta = doc["metadata"]
                self.crds[doc["spec"]["names"]["kind"]] = (
                    k8s.apiextensions.v1.CustomResourceDefinition(
                        f"{name}-crd-{doc['spec']['names']['plural']}",
                        metadata=k8s.meta.v1.ObjectMetaArgs(
                            name=meta["name"],
                            annotations={
                                **(meta.get("annotations") or {}),
                                "pulumi.com/patchForce": "true",
                            },
                            labels={"app.kubernetes.io/part-of": "ray-gke"},
                        ),
                        spec=doc["spec"],
                        opts=k8s_opts,
                    )
                )
            self.operator = k8s.helm.v3.Release(
                f"{name}-operator",
                name=KUBERAY_CHART,
                chart=KUBERAY_CHART,
                version=kuberay.chart_version,
                repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=KUBERAY_HELM_REPO),
                namespace=ns,
                values=helm_values(kuberay.chart_version, [s for s, _ in p.services]),
                atomic=True,
                wait_for_jobs=True,
                skip_crds=True,  # the CRDs above are the stack's (see the module docstring)
                opts=pulumi.ResourceOptions(
                    parent=self,
                    provider=self.provider,
                    depends_on=[self.namespace, *self.crds.values()],
                ),
            )
        self.ready: list[pulumi.Resource] = [
            *namespaces,
            *self.guards.values(),
            *self.service_accounts.values(),
            *self.crds.values(),
            *([self.operator] if self.operator else []),
        ]
        self.register_outputs({"namespace": ns, "kubeconfig": self.kubeconfig})
