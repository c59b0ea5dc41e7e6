"""The ray-gke Pulumi program: one validated stack config -> the GKE Ray platform.

Order: the GCP APIs the stack needs (every GCP resource waits for the APIs it calls) -> network
and security (KMS, service accounts) -> cluster -> node pools and buckets -> workload access
(Workload Identity, bucket roles, secrets) -> image registry and the Ray images (built and pushed)
-> KubeRay (provider, namespace, KSAs, operator) -> Kueue and its queues (components/capacity)
-> Ray resources (RayClusters, RayJobs,
RayServices, referencing the images by digest).
Stack outputs are documented in ``docs/outputs.md``.
"""

from __future__ import annotations

import pulumi

from components.apis.component import Apis, ApisArgs
from components.capacity.component import Kueue, KueueArgs
from components.capacity.superslice import super_slicing_pools
from components.cluster.component import Cluster, ClusterArgs
from components.cluster.render import stack_nap_limits
from components.gcsft.component import GcsFaultTolerance, GcsFaultToleranceArgs
from components.gcsft.render import ft_enabled
from components.gpunet.component import (
    GpuNetworkObjects,
    GpuNetworkObjectsArgs,
    GpuNetworks,
    GpuNetworksArgs,
)
from components.gpunet.render import gpu_vpcs, gpunet_objects, networked_pools, pool_networks
from components.images.component import ImageRegistry, ImageRegistryArgs
from components.kernel.base import StackConfigError
from components.kuberay.component import KubeRay, KubeRayArgs
from components.monitoring.component import Dashboards, DashboardsArgs
from components.network.component import Network, NetworkArgs
from components.nodepools.component import NodePool, NodePoolArgs
from components.nodepools.render import node_pool_specs
from components.plan.plan import plan
from components.raycrs.component import RayResources, RayResourcesArgs
from components.security.component import Security, SecurityArgs, WorkloadAccess, WorkloadAccessArgs
from components.stack.component import load_pulumi_config
from components.stack.outputs import config_outputs
from components.storage.component import Storage, StorageArgs

try:
    cfg = load_pulumi_config()
except StackConfigError as e:
    pulumi.log.error(str(e))
    raise pulumi.RunError(
        f"invalid stack config: {len(e.problems)} problem(s), listed above"
    ) from None
# Deprecated spellings, refusals newer than the stack file, newer defaults it does not get
# (docs/upgrading.md): `pulumi preview` shows them as `raygke check` does.
for notice in (*cfg.notices, *(h.note() for h in cfg.held_defaults)):
    pulumi.log.warn(str(notice))
# Every reference resolved once (components/plan/plan.py): the components read its records.
stack_plan = plan(cfg)
# The cluster's NAP resource limits: the cluster's autoscaling and the Ray namespaces' quota.
nap_limits = stack_nap_limits(cfg.nap, cfg.cluster.system_pool, cfg.node_pools)
# Whether the RayServices get GCS fault tolerance: its API, the cluster's flag, the Redis instance.
gcs_ft_enabled = ft_enabled(cfg.gcs_fault_tolerance, cfg.services)

# The APIs first; every GCP resource below waits for the APIs its type calls.
apis = Apis("apis", ApisArgs(project=cfg.project, gcs_fault_tolerance=gcs_ft_enabled))
apis.wait_for_apis()

network = Network("network", NetworkArgs(context=stack_plan.context, network=cfg.network))
# The extra VPCs of the GPU pools' GPU-to-GPU networking (none without such a pool).
gpu_vpc_list = gpu_vpcs(cfg.node_pools, cfg.zones, cfg.network)
gpu_networks = GpuNetworks(
    "gpunet",
    GpuNetworksArgs(context=stack_plan.context, network=cfg.network, vpcs=gpu_vpc_list),
)
security = Security(
    "security",
    SecurityArgs(
        context=stack_plan.context,
        cluster=cfg.cluster,
        kms=cfg.kms,
        workload_identities=cfg.workload_identities,
        secrets=cfg.secrets,
    ),
)
cluster = Cluster(
    "cluster",
    ClusterArgs(
        plan=stack_plan,
        cluster=cfg.cluster,
        network=cfg.network,
        nap=cfg.nap,
        nap_limits=nap_limits,
        kuberay=cfg.kuberay,
        super_slicing=bool(super_slicing_pools(cfg.node_pools)),
        multi_networking=bool(networked_pools(cfg.node_pools)),
        gcs_fault_tolerance=gcs_ft_enabled,
        vpc=network.network_self_link,
        subnetwork=network.subnetwork_self_link,
        pods_range_name=network.pods_range_name,
        services_range_name=network.services_range_name,
        kms_key_id=security.gke_key.id,
        node_service_account=security.node_sa.email,
        boot_disk_kms_key=security.boot_disk_key.id,
    ),
    opts=pulumi.ResourceOptions(
        depends_on=[security.gke_key_grant, security.boot_disk_key_grant, network.nat]
    ),
)
pools = [
    NodePool(
        f"pool-{spec.name}",
        NodePoolArgs(
            context=stack_plan.context,
            spec=spec,
            cluster=cluster.cluster.id,
            node_service_account=security.node_sa.email,
            boot_disk_kms_key=security.boot_disk_key.id,
            additional_networks=pool_networks(gpu_vpc_list, stack_plan.pools[spec.pool])
            if spec.gpu_networking
            else [],
        ),
        opts=pulumi.ResourceOptions(
            depends_on=[
                *security.node_sa_roles,
                security.boot_disk_key_grant,
                *(gpu_networks.resources if spec.gpu_networking else []),
            ]
        ),
    )
    for spec in node_pool_specs(stack_plan)
]
storage = Storage(
    "storage",
    StorageArgs(
        context=stack_plan.context,
        kms_key_id=security.bucket_key.id,
        depends_on=[security.gcs_key_grant],
    ),
)
access = WorkloadAccess(
    "access",
    WorkloadAccessArgs(
        plan=stack_plan,
        declared_secrets=cfg.secrets,
        gsas=security.gsas,
        buckets=storage.buckets,
        secrets=security.secrets,
    ),
    opts=pulumi.ResourceOptions(depends_on=[cluster]),
)
# The Redis of the RayServices' GCS fault tolerance (Memorystore, private services access, CMEK,
# its AUTH string in Secret Manager): only with services and gcs_fault_tolerance.enabled.
gcs_ft = (
    GcsFaultTolerance(
        "gcsft",
        GcsFaultToleranceArgs(
            plan=stack_plan,
            gcs_fault_tolerance=cfg.gcs_fault_tolerance,
            cluster=cfg.cluster,
            network=cfg.network,
            vpc=network.vpc.id,
            key_ring=security.secrets_key.key_ring,
            secrets_key=security.secrets_key.id,
            project_number=security.project_number,
            depends_on=[security.secrets_key_grant],
            gsas=list(security.gsas.values()),
        ),
    )
    if gcs_ft_enabled
    else None
)
registry = ImageRegistry(
    "images",
    ImageRegistryArgs(
        plan=stack_plan,
        ray=cfg.ray,
        cluster=cfg.cluster,
        kms_key_id=security.registry_key.id,
        node_service_account=security.node_sa.email,
        depends_on=[security.registry_key_grant],
    ),
)
kuberay = KubeRay(
    "kuberay",
    KubeRayArgs(
        plan=stack_plan,
        kuberay=cfg.kuberay,
        cluster=cfg.cluster,
        network=cfg.network,
        nap_limits=nap_limits,
        cluster_name=cluster.name,
        endpoint=cluster.endpoint,
        ca_certificate=cluster.ca_certificate,
        dns_endpoint=cluster.dns_endpoint,
        gsa_emails={k: v.email for k, v in security.gsas.items()},
        depends_on=[pools[0].node_pool, access],  # the system pool runs the operator
    ),
)

# GKE's Network / GKENetworkParamSet objects and the NCCL plugin installers (kube-system).
gpu_objects = GpuNetworkObjects(
    "gpunet-k8s",
    GpuNetworkObjectsArgs(
        objects=gpunet_objects(gpu_vpc_list, cfg.node_pools, cfg.kuberay.namespace),
        provider=kuberay.provider,
        depends_on=[cluster, *gpu_networks.resources],
    ),
)

# Kueue and its queues before the Ray objects: a queued RayJob must meet Kueue's webhook.
capacity = Kueue(
    "capacity",
    KueueArgs(
        stack_plan=stack_plan,
        capacity=cfg.capacity,
        provider=kuberay.provider,
        depends_on=[*kuberay.ready, cluster],
    ),
)

ray = RayResources(
    "ray",
    RayResourcesArgs(
        cfg=cfg,
        provider=kuberay.provider,
        artifacts_bucket=storage.buckets["artifacts"],
        images=registry.refs,
        depends_on=[*kuberay.ready, cluster, *capacity.ready, *gpu_objects.objects.values()],
        stack_plan=stack_plan,
        redis_address=gcs_ft.address if gcs_ft else None,
        redis_ca=gcs_ft.ca_cert if gcs_ft else None,
    ),
)
# Ray's dashboards in Cloud Monitoring (with cluster.managed_prometheus), URLs in the outputs.
dashboards = Dashboards("monitoring", DashboardsArgs(plan=stack_plan, cluster=cfg.cluster))
if dashboards.urls:
    pulumi.export("dashboards", dashboards.urls)
pulumi.export("ray_jobs", ray.jobs)
pulumi.export("ray_services", ray.services)
pulumi.export("workloads_working_dir", ray.working_dir)

pulumi.export("cluster_name", cluster.name)
pulumi.export("cluster_location", cluster.location)
pulumi.export("cluster_endpoint", cluster.endpoint)
if cfg.cluster.dns_endpoint:
    pulumi.export("cluster_dns_endpoint", cluster.dns_endpoint)
pulumi.export("kubeconfig", kuberay.kubeconfig)
pulumi.export("namespace", kuberay.namespace.metadata.apply(lambda m: m.name))
pulumi.export("ray_clusters", ray.ray_clusters)
pulumi.export("image_registry", registry.url)
pulumi.export("images", registry.refs)
# contract_version, bucket_urls/names, service_accounts, node_service_account, kuberay_mode,
# node_pools: from config, so they are known at the first preview (docs/outputs.md).
for key, value in config_outputs(cfg).items():
    pulumi.export(key, value)
