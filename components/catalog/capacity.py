"""Capacity facts: Dynamic Workload Scheduler (queued provisioning) and flex-start VMs, as
:mod:`components.capacity` uses them (sources below, in the block's comment)."""

from __future__ import annotations

from .labels import Taint

# ============================================================ capacity: DWS and flex-start facts
# Owned by components/capacity (issue 21); kept in one block apart from the accelerator shapes.
#
# [GKE-DWS-QUEUED] Flex-start with queued provisioning (Dynamic Workload Scheduler through the
#   ProvisioningRequest API): https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest
#   - the node pool is created with ``--flex-start --enable-queued-provisioning``, autoscaling
#     from 0 (``--num-nodes=0``), ``--location-policy=ANY``, ``--reservation-affinity=none`` and
#     ``--no-enable-autorepair`` (a repaired node would break the all-at-once allocation);
#   - GKE taints the nodes ``cloud.google.com/gke-queued=true:NoSchedule``; pods tolerate it;
#   - the ProvisioningRequest class is ``queued-provisioning.gke.io``; GKE accepts one PodSet per
#     ProvisioningRequest (https://github.com/ray-project/ray/issues/57839);
#   - minimum GKE versions, for the node pool this project renders (``--flex-start`` with
#     ``--enable-queued-provisioning``): GPUs 1.32.2-gke.1652000, confirmed by the page ("Ensure
#     that you have a GKE cluster in version 1.32.2-gke.1652000 or later", read in a stored copy
#     of docs.cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest in this session;
#     queued provisioning without flex-start, ``queued-provisioning.gke.io``, is older: "Supported
#     from GKE version 1.28.3-gke.1098000 in Standard clusters",
#     https://cloud.google.com/kubernetes-engine/docs/concepts/cluster-autoscaler). TPUs: no
#     Google page found in this session states a minimum for TPU queued provisioning (the
#     1.28.7-gke.1020000 recorded before was NOT confirmed and is dropped); the pool is a
#     flex-start pool, so the TPU flex-start minimum below applies, 1.33.0-gke.1712000
#     (confirmed, [GKE-FLEX-START]); GKE's own TPU DWS tutorial uses 1.34
#     (https://cloud.google.com/kubernetes-engine/docs/tutorials/ray-kueue-dws, "Use version
#     1.34 or later").
# [GKE-FLEX-START] Flex-start VMs without queueing:
#   https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training and
#   https://cloud.google.com/kubernetes-engine/docs/concepts/dws (GPUs: GKE 1.32.2-gke.1652000,
#   confirmed by the provisioningrequest page above: "1.32.2-gke.1652000 or later, the minimum
#   version for nodes that use Flex-start VMs"; TPUs: GKE 1.33.0-gke.1712000, confirmed by
#   https://cloud.google.com/kubernetes-engine/docs/concepts/provisioning-model "To run TPUs,
#   use GKE version 1.33.0-gke.1712000 or later", and single-host slices only; at most 7 days,
#   ``maxRunDuration`` of the node config,
#   https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/NodeConfig).

QUEUED_TAINT = Taint("cloud.google.com/gke-queued", "true")  # [GKE-DWS-QUEUED]
QUEUED_PROVISIONING_CLASS = "queued-provisioning.gke.io"  # [GKE-DWS-QUEUED]
# [GKE-DWS-QUEUED]: the flex-start + queued provisioning pool this project renders
QUEUED_MIN_GKE_VERSION = {"gpu": "1.32.2-gke.1652000", "tpu": "1.33.0-gke.1712000"}
# [GKE-FLEX-START]
FLEX_START_MIN_GKE_VERSION = {"gpu": "1.32.2-gke.1652000", "tpu": "1.33.0-gke.1712000"}
FLEX_START_MAX_RUN_SECONDS = 7 * 24 * 3600  # [GKE-FLEX-START]
DWS_QUEUED_DOC = "https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest"
DWS_FLEX_DOC = "https://cloud.google.com/kubernetes-engine/docs/how-to/dws-flex-start-training"
