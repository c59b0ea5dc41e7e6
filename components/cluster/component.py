"""The GKE Standard cluster (its node pools are :mod:`components.nodepools.component`).
Sources (GKE docs): docs/sources.md#cluster-component
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.cluster.maintenance import exclusion_inputs
from components.cluster.render import (
    gateway_api_channel,
    secret_manager_enabled,
)
from components.config.cluster import ClusterConfig, NapConfig
from components.config.kuberay import KubeRayConfig
from components.config.network import NetworkConfig
from components.plan.naming import workload_pool
from components.plan.plan import Plan
from components.security.iam import CLOUD_PLATFORM_SCOPE


@dataclass
class ClusterArgs:
    """Inputs of :class:`Cluster`.

    Attributes:
        plan: the stack's plan (its context, services and jobs).
        cluster: the ``cluster`` block.
        network: the ``network`` block.
        nap: the ``nap`` block.
        nap_limits: its NAP resource limits
            (:func:`components.cluster.render.nap_resource_limits` of the pools' needs).
        kuberay: the ``kuberay`` block (its ``mode``).
        super_slicing: a pool has ``super_slicing: true``
            (:func:`components.capacity.superslice.super_slicing_pools`).
        multi_networking: a GPU pool has GPU networking
            (:func:`components.gpunet.render.networked_pools`).
        gcs_fault_tolerance: the services' GCS fault tolerance is on
            (:func:`components.gcsft.render.ft_enabled`).
        vpc / subnetwork: VPC and subnet self links.
        pods_range_name / services_range_name: the subnet's secondary range names.
        kms_key_id: the GKE secrets key id.
        node_service_account: email of the nodes' service account (NAP defaults, default pool).
        boot_disk_kms_key: id of the KMS key that encrypts node boot disks (NAP defaults, default
            pool; https://cloud.google.com/kubernetes-engine/docs/how-to/using-cmek).
    """

    plan: Plan
    cluster: ClusterConfig
    network: NetworkConfig
    nap: NapConfig
    nap_limits: Sequence[Mapping[str, Any]]
    kuberay: KubeRayConfig
    super_slicing: bool
    multi_networking: bool
    gcs_fault_tolerance: bool
    vpc: pulumi.Input[str]
    subnetwork: pulumi.Input[str]
    pods_range_name: str
    services_range_name: str
    kms_key_id: pulumi.Input[str]
    node_service_account: pulumi.Input[str]
    boot_disk_kms_key: pulumi.Input[str]


class Cluster(pulumi.ComponentResource):
    """``ray-gke:cluster:Cluster``: the GKE Standard cluster, default node pool removed.

    Attributes: ``cluster`` (``gcp.container.Cluster``), ``name``, ``location``, ``endpoint``
    (IP endpoint), ``ca_certificate`` (base64 PEM), ``dns_endpoint`` (the DNS-based endpoint's
    host name, ``<uid>.<location>.gke.goog``).
    """

    def __init__(
        self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:cluster:Cluster", name, None, opts)
        p = args.plan
        ctx = p.context
        cc, net, nap = args.cluster, args.network, args.nap
        services = [s for s, _ in p.services]
        shielded = {"enable_secure_boot": True, "enable_integrity_monitoring": True}
        # Master authorized networks are always on: with none listed, no address outside the VPC
        # (Google Cloud's public ranges included) reaches the control plane
        # (https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks).
        authorized = gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
            cidr_blocks=[
                gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                    cidr_block=n.cidr, display_name=n.name
                )
                for n in net.master_authorized_networks
            ],
            gcp_public_cidrs_access_enabled=False,
        )
        autoscaling = gcp.container.ClusterClusterAutoscalingArgs(
            enabled=nap.enabled,
            autoscaling_profile=nap.autoscaling_profile,
            resource_limits=[
                gcp.container.ClusterClusterAutoscalingResourceLimitArgs(**lim)
                for lim in args.nap_limits
            ]
            if nap.enabled
            else None,
            auto_provisioning_defaults=gcp.container.ClusterClusterAutoscalingAutoProvisioningDefaultsArgs(
                service_account=args.node_service_account,
                oauth_scopes=[CLOUD_PLATFORM_SCOPE],
                boot_disk_kms_key=args.boot_disk_kms_key,
                shielded_instance_config=gcp.container.ClusterClusterAutoscalingAutoProvisioningDefaultsShieldedInstanceConfigArgs(
                    **shielded
                ),
                management=gcp.container.ClusterClusterAutoscalingAutoProvisioningDefaultsManagementArgs(
                    auto_repair=True, auto_upgrade=True
                ),
            )
            if nap.enabled
            else None,
        )
        gateway_channel = gateway_api_channel(services)
        addons = gcp.container.ClusterAddonsConfigArgs(
            gcs_fuse_csi_driver_config=gcp.container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(
                enabled=cc.gcs_fuse_csi
            ),
            # The Ray add-on's own log and metric collection: Ray cluster logs to Cloud Logging,
            # Ray metrics to Managed Prometheus (needs it on); in helm mode the same comes from
            # GKE's workload logging and the stack's PodMonitorings
            # (https://cloud.google.com/kubernetes-engine/docs/add-on/ray-on-gke/how-to/collect-view-logs-metrics).
            ray_operator_configs=[
                gcp.container.ClusterAddonsConfigRayOperatorConfigArgs(
                    enabled=True,
                    ray_cluster_logging_config=gcp.container.ClusterAddonsConfigRayOperatorConfigRayClusterLoggingConfigArgs(
                        enabled=True
                    ),
                    ray_cluster_monitoring_config=gcp.container.ClusterAddonsConfigRayOperatorConfigRayClusterMonitoringConfigArgs(
                        enabled=cc.managed_prometheus
                    ),
                )
            ]
            if args.kuberay.mode == "gke-addon"
            else None,
            # GKE's slice controller stitches TPU7x cubes into super-slices
            # (components.capacity.superslice); set only where a pool asks for it.
            slice_controller_config=gcp.container.ClusterAddonsConfigSliceControllerConfigArgs(
                enabled=True
            )
            if args.super_slicing
            else None,
        )
        self.cluster = gcp.container.Cluster(
            f"{name}-gke",
            name=cc.name,
            project=ctx.project,
            location=ctx.location,
            node_locations=list(ctx.zones) if cc.regional else None,
            remove_default_node_pool=True,
            initial_node_count=1,
            # Only for the short-lived default pool, which is removed right away.
            node_config=gcp.container.ClusterNodeConfigArgs(
                service_account=args.node_service_account,
                oauth_scopes=[CLOUD_PLATFORM_SCOPE],
                boot_disk_kms_key=args.boot_disk_kms_key,
                workload_metadata_config=gcp.container.ClusterNodeConfigWorkloadMetadataConfigArgs(
                    mode="GKE_METADATA"
                ),
                shielded_instance_config=gcp.container.ClusterNodeConfigShieldedInstanceConfigArgs(
                    **shielded
                ),
            ),
            network=args.vpc,
            subnetwork=args.subnetwork,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_secondary_range_name=args.pods_range_name,
                services_secondary_range_name=args.services_range_name,
            ),
            private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=net.private_nodes,
                enable_private_endpoint=net.private_endpoint,
                master_ipv4_cidr_block=net.master_ipv4_cidr,
            ),
            master_authorized_networks_config=authorized,
            # The DNS-based endpoint takes user traffic when cluster.dns_endpoint (IAM checks
            # each request); the authorized networks above keep governing the IP endpoint.
            control_plane_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigArgs(
                dns_endpoint_config=gcp.container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(
                    allow_external_traffic=cc.dns_endpoint
                )
            ),
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=workload_pool(ctx.project)
            ),
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel=cc.release_channel),
            min_master_version=cc.min_master_version,
            datapath_provider="ADVANCED_DATAPATH",
            enable_multi_networking=True if args.multi_networking else None,
            enable_shielded_nodes=True,
            database_encryption=gcp.container.ClusterDatabaseEncryptionArgs(
                state="ENCRYPTED", key_name=args.kms_key_id
            ),
            monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
                enable_components=["SYSTEM_COMPONENTS"],
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(
                    enabled=cc.managed_prometheus
                ),
            ),
            addons_config=addons,
            # The Gateway API for KubeRay's incremental RayService upgrades (gateway_api_channel).
            gateway_api_config=gcp.container.ClusterGatewayApiConfigArgs(channel=gateway_channel)
            if gateway_channel
            else None,
            # GKE's Secret Manager add-on for the services' and jobs' Hugging Face token files
            # (secret_manager_enabled) and the GCS fault tolerance Redis AUTH string
            # (components.gcsft.render); left unset otherwise.
            secret_manager_config=gcp.container.ClusterSecretManagerConfigArgs(enabled=True)
            if secret_manager_enabled([*services, *(t.job for t in p.jobs)])
            or args.gcs_fault_tolerance
            else None,
            cluster_autoscaling=autoscaling,
            maintenance_policy=gcp.container.ClusterMaintenancePolicyArgs(
                daily_maintenance_window=gcp.container.ClusterMaintenancePolicyDailyMaintenanceWindowArgs(
                    start_time=cc.maintenance_window.start_time
                ),
                # Upgrades that wait for the job (components.cluster.maintenance).
                maintenance_exclusions=[
                    gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                        exclusion_name=e["exclusion_name"],
                        start_time=e["start_time"],
                        end_time=e["end_time"],
                        exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                            scope=e["scope"], end_time_behavior=e["end_time_behavior"]
                        ),
                    )
                    for e in exclusion_inputs(cc.maintenance_exclusions)
                ]
                or None,
            ),
            deletion_protection=cc.deletion_protection,
            resource_labels={**ctx.labels, **cc.labels},
            # Fixed name: a replacement (network, location, IP ranges...) must delete first, or
            # the new cluster fails with "already exists"; deletion_protection still blocks it.
            opts=pulumi.ResourceOptions(
                parent=self,
                ignore_changes=["nodeConfig", "initialNodeCount"],
                delete_before_replace=True,
            ),
        )
        self.name = self.cluster.name
        self.location = self.cluster.location
        self.endpoint = self.cluster.endpoint
        self.ca_certificate = self.cluster.master_auth.apply(
            lambda m: m.cluster_ca_certificate if m else None
        )
        self.dns_endpoint = self.cluster.control_plane_endpoints_config.apply(
            lambda c: c.dns_endpoint_config.endpoint if c and c.dns_endpoint_config else None
        )
        self.register_outputs(
            {"name": self.name, "location": self.location, "endpoint": self.endpoint}
        )
