"""Pure render of the Kueue objects (components/capacity/render.py), against the carried CRDs."""

from __future__ import annotations

import hashlib

import yaml

from components import catalog
from components.capacity.checks import kueue_crds_dir, kueue_schema_problems
from components.capacity.render import (
    PRIORITY_LABEL,
    QUEUE_LABEL,
    cluster_queue,
    helm_values,
    render_capacity,
    resource_flavor,
)
from components.plan.plan import plan
from components.raycrs.render import render_manifests
from tests.components.capacity.common import cfg
from tests.helpers import WORKING_DIR


def test_carried_crds_match_their_sha256sums():
    d = kueue_crds_dir("0.19.2")
    lines = (d / "SHA256SUMS").read_text().split("\n")
    sums = dict(reversed(line.split("  ")) for line in lines if line)
    assert len(sums) == 8
    for name, digest in sums.items():
        assert hashlib.sha256((d / name).read_bytes()).hexdigest() == digest, name


def test_every_rendered_kueue_object_validates_against_the_carried_crds():
    objects = render_capacity(plan(cfg()), cfg().capacity)
    kinds = {o["kind"] for o in objects}
    assert kinds == {
        "WorkloadPriorityClass",
        "ResourceFlavor",
        "ProvisioningRequestConfig",
        "AdmissionCheck",
        "ClusterQueue",
        "LocalQueue",
    }
    assert kueue_schema_problems(objects, "0.19.2") == []


def test_schema_check_catches_a_misspelled_field_and_a_bad_enum():
    cq = cluster_queue(plan(cfg()), cfg().capacity.cluster_queues[0])
    cq["spec"]["cohort"] = "ml"  # v1beta1's name; v1beta2 calls it cohortName
    cq["spec"]["queueingStrategy"] = "LIFO"
    problems = kueue_schema_problems([cq], "0.19.2")
    assert any("spec.cohort: unknown field" in p for p in problems)
    assert any("spec.queueingStrategy" in p and "LIFO" in p for p in problems)


def test_flavor_comes_from_the_node_pool_spec():
    c = cfg()
    on_demand = resource_flavor(plan(c), "v6e")["spec"]
    specs = list(plan(c).pool_specs["v6e"])
    assert len(specs) == 2  # one GKE node pool per multi-host slice: labels shared by both
    assert on_demand["nodeLabels"] == {
        catalog.TPU_ACCELERATOR_LABEL: "tpu-v6e-slice",
        catalog.TPU_TOPOLOGY_LABEL: "4x4",
    }
    assert on_demand["nodeTaints"] == [
        {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}
    ]
    assert "tolerations" not in on_demand
    dws = resource_flavor(plan(c), "v6e-dws")["spec"]
    assert dws["nodeLabels"]["capacity"] == "dws"
    assert {"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"} in dws[
        "nodeTaints"
    ]
    assert dws["tolerations"] == [catalog.QUEUED_TAINT.toleration()]
    assert (
        resource_flavor(plan(c), "system")["spec"]["nodeLabels"][catalog.NODE_POOL_LABEL]
        == "system"
    )


def test_cluster_queue_scopes_the_dws_check_to_queued_flavors():
    c = cfg()
    spec = cluster_queue(plan(c), c.capacity.cluster_queues[0])["spec"]
    assert spec["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "dws-provisioning", "onFlavors": ["v6e-dws"]}]
    }
    group = spec["resourceGroups"][0]
    assert group["coveredResources"] == ["cpu", "memory", "google.com/tpu"]
    system = group["flavors"][0]["resources"]
    assert {"name": "google.com/tpu", "nominalQuota": "0"} in system  # every flavor lists all
    assert spec["cohortName"] == "ml"
    assert spec["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "ray"}


def test_queued_rayjob_carries_queue_and_priority_labels_and_no_suspend():
    c = cfg()
    (job,) = [m for m in render_manifests(c, WORKING_DIR) if m["kind"] == "RayJob"]
    labels = job["metadata"]["labels"]
    assert labels[QUEUE_LABEL] == "team-a" and labels[PRIORITY_LABEL] == "high"
    assert "suspend" not in job["spec"] and "rayClusterSpec" in job["spec"]


def test_helm_values_turn_on_the_ray_integrations_on_the_system_pool():
    values = helm_values(cfg().capacity.kueue.elastic_jobs)
    assert values["controllerManager"]["nodeSelector"] == {catalog.NODE_POOL_LABEL: "system"}
    manager = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    assert manager["integrations"]["frameworks"] == [
        "ray.io/rayjob",
        "ray.io/raycluster",
        "ray.io/rayservice",
    ]
    assert manager["manageJobsWithoutQueueName"] is False


def test_no_queues_renders_nothing():
    from components.stack.loader import validate
    from tests.helpers import config

    c = validate(config())
    assert render_capacity(plan(c), c.capacity) == []
