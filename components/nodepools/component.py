"""GKE node pools (:class:`NodePool`) from the pure :class:`components.plan.nodepools.NodePoolSpec`
(never re-derived). Sources: docs/sources.md#nodepools-component
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components.nodepools.render import (
    RESERVATION_KEY,
    NodePoolSpec,
    autoscaling,
    config_labels,
    image_streaming,
    initial_node_count,
    upgrade_settings,
)
from components.plan.plan import Context
from components.security.iam import CLOUD_PLATFORM_SCOPE


@dataclass
class NodePoolArgs:
    """Inputs of :class:`NodePool`.

    Attributes:
        context: the stack's :class:`~components.plan.plan.Context` (project, region, cluster
            location, labels), from the stack's plan.
        spec: the pure node pool spec.
        cluster: the cluster's id (or name).
        node_service_account: email of the nodes' service account.
        boot_disk_kms_key: id of the KMS key that encrypts the nodes' boot disks
            (https://cloud.google.com/kubernetes-engine/docs/how-to/using-cmek).
        additional_networks: ``(VPC, subnetwork)`` per extra node NIC of a GPU pool with GPU
            networking (:func:`components.gpunet.render.pool_networks`), the node pool's
            ``network_config.additional_node_network_configs`` (GoogleCloudPlatform/
            cluster-toolkit ``modules/compute/gke-node-pool/main.tf``); a change replaces the
            pool (the provider's ForceNew, :mod:`raygke.diff.replacement`).
    """

    context: Context
    spec: NodePoolSpec
    cluster: pulumi.Input[str]
    node_service_account: pulumi.Input[str]
    boot_disk_kms_key: pulumi.Input[str]
    additional_networks: list[tuple[pulumi.Input[str], pulumi.Input[str]]] = field(
        default_factory=list
    )


class NodePool(pulumi.ComponentResource):
    """``ray-gke:nodepool:NodePool``: one ``gcp.container.NodePool`` for one spec."""

    def __init__(
        self, name: str, args: NodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:nodepool:NodePool", name, None, opts)
        ctx, spec = args.context, args.spec
        placement = (
            gcp.container.NodePoolPlacementPolicyArgs(
                type=spec.placement_policy or "COMPACT", tpu_topology=spec.tpu_topology
            )
            if spec.tpu_topology
            else None
        )
        self.resource_policy: gcp.compute.ResourcePolicy | None = None
        if spec.workload_policy and spec.placement_policy_name:
            # The policy must be in the node pool's project and region (pulumi_gcp
            # NodePoolPlacementPolicyArgs.policy_name).
            self.resource_policy = gcp.compute.ResourcePolicy(
                f"{name}-workload-policy",
                name=spec.placement_policy_name,
                project=ctx.project,
                region=ctx.region,
                description=f"TPU7x workload policy of GKE node pool {spec.name}",
                workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                    **spec.workload_policy
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            placement = gcp.container.NodePoolPlacementPolicyArgs(
                type=spec.placement_policy or "COMPACT",
                policy_name=self.resource_policy.name,
            )
        self.node_pool = gcp.container.NodePool(
            f"{name}-pool",
            name=spec.name,
            project=ctx.project,
            location=ctx.location,
            cluster=args.cluster,
            node_locations=list(spec.zones),
            initial_node_count=initial_node_count(spec),
            autoscaling=gcp.container.NodePoolAutoscalingArgs(**autoscaling(spec)),
            placement_policy=placement,
            network_config=gcp.container.NodePoolNetworkConfigArgs(
                additional_node_network_configs=[
                    gcp.container.NodePoolNetworkConfigAdditionalNodeNetworkConfigArgs(
                        network=net, subnetwork=sub
                    )
                    for net, sub in args.additional_networks
                ]
            )
            if args.additional_networks
            else None,
            # Queued provisioning: auto-repair off, no reservation ([GKE-DWS-QUEUED] in
            # components.catalog); flex-start: queued or not, with its maxRunDuration.
            management=gcp.container.NodePoolManagementArgs(
                auto_repair=not spec.queued, auto_upgrade=True
            ),
            upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(**upgrades)
            if (upgrades := upgrade_settings(spec))
            else None,
            queued_provisioning=gcp.container.NodePoolQueuedProvisioningArgs(enabled=True)
            if spec.queued
            else None,
            node_config=node_config_args(ctx, spec, args),
            # The pool's name is fixed (spec.name: node selectors, NAP limits and outputs refer to
            # it), so a replacement must delete the old pool first: create-before-delete fails
            # with "already exists". A name suffix would avoid the gap but would need twice the
            # accelerator quota or reservation during the swap, which TPU/H100 capacity rarely
            # has. https://www.pulumi.com/docs/iac/concepts/options/deletebeforereplace/
            opts=pulumi.ResourceOptions(
                parent=self, ignore_changes=["initialNodeCount"], delete_before_replace=True
            ),
        )
        self.register_outputs({"name": self.node_pool.name})


def node_config_args(
    ctx: Context,
    spec: NodePoolSpec,
    args: NodePoolArgs,
) -> gcp.container.NodePoolNodeConfigArgs:
    """The ``node_config`` of the GKE node pool of ``spec``: the one place the settings every
    node pool shares are read, from the declared pool (``spec.config``,
    :class:`components.config.nodepools.NodeSettings`) as it was validated; a new shared setting
    is a field there and an argument here (tests/components/nodepools/test_component.py
    ``test_a_shared_node_setting_takes_two_edits``)."""
    guest = (
        [
            gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
                type=spec.accelerator_type,
                count=spec.accelerator_count,
                gpu_driver_installation_config=gcp.container.NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(
                    gpu_driver_version=spec.driver_version or "DEFAULT"
                ),
            )
        ]
        if spec.accelerator_type
        else None
    )
    reservation = (
        gcp.container.NodePoolNodeConfigReservationAffinityArgs(
            consume_reservation_type="SPECIFIC_RESERVATION",
            key=RESERVATION_KEY,
            values=[spec.reservation],
        )
        if spec.reservation
        else None
    )
    return gcp.container.NodePoolNodeConfigArgs(
        machine_type=spec.machine_type,
        disk_size_gb=spec.config.disk_size_gb,
        labels=config_labels(spec),
        resource_labels=dict(ctx.labels),
        taints=[gcp.container.NodePoolNodeConfigTaintArgs(**t.gke()) for t in spec.taints],
        guest_accelerators=guest,
        spot=spec.spot,
        reservation_affinity=reservation
        or (
            gcp.container.NodePoolNodeConfigReservationAffinityArgs(
                consume_reservation_type="NO_RESERVATION"
            )
            if spec.queued
            else None
        ),
        flex_start=True if spec.flex_start else None,
        max_run_duration=spec.max_run_duration,
        service_account=args.node_service_account,
        oauth_scopes=[CLOUD_PLATFORM_SCOPE],
        boot_disk_kms_key=args.boot_disk_kms_key,
        workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(
            mode="GKE_METADATA"
        ),
        shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_integrity_monitoring=True
        ),
        gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True) if spec.gvnic else None,
        gcfs_config=gcp.container.NodePoolNodeConfigGcfsConfigArgs(enabled=True)
        if image_streaming(spec)
        else None,
    )
