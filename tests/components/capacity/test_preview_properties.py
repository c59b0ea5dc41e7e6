"""Property: the admission preview (components/capacity/preview.py) and the capacity render checks
return verdicts and problems, never an exception, for every small queued RayJob or RayCluster
the carried KubeRay CRD schema admits (issue 37: a worker group without ``template`` raised
``KeyError: 'template'``)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from components.capacity.checks import render_problems
from components.capacity.preview import pod_sets, preview
from components.capacity.render import QUEUE_LABEL
from components.plan.plan import plan
from components.raycrs.crd import validate_manifest
from tests.components.capacity.common import cfg

CFG = cfg()

names = st.sampled_from(["w", "tpu", "head", "g-1", "cpu"])
# quantities the CRD pattern admits (strings) and any integer (the schema's int-or-string)
quantities = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40),
    st.sampled_from(["1", "500m", "16Gi", "-1", "+2", ".5", "1e3", "1E", "0", "2.", "1e400"]),
)
resources = st.dictionaries(
    st.sampled_from(["cpu", "memory", "google.com/tpu", "nvidia.com/gpu", "example.com/foo"]),
    quantities,
    max_size=3,
)
containers = st.lists(
    st.fixed_dictionaries(
        {"name": st.just("c"), "image": st.just("ray")},
        optional={
            "resources": st.fixed_dictionaries(
                {}, optional={"requests": resources, "limits": resources}
            )
        },
    ),
    max_size=2,
)
pod_spec = st.fixed_dictionaries(
    {"containers": containers},
    optional={
        "nodeSelector": st.dictionaries(
            st.sampled_from(["cloud.google.com/gke-nodepool", "cloud.google.com/gke-tpu-topology"]),
            st.sampled_from(["system", "v6e", "4x4", "2x2"]),
            max_size=2,
        ),
        "tolerations": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "key": st.sampled_from(["google.com/tpu", "cloud.google.com/gke-queued", ""]),
                    "operator": st.sampled_from(["Exists", "Equal"]),
                    "value": st.sampled_from(["present", "true", ""]),
                    "effect": st.sampled_from(["NoSchedule", "NoExecute", ""]),
                },
            ),
            max_size=2,
        ),
    },
)
template = st.fixed_dictionaries({}, optional={"spec": pod_spec})
worker_group = st.fixed_dictionaries(
    {
        "groupName": names,
        "minReplicas": st.integers(0, 3),
        "maxReplicas": st.integers(0, 3),
        "template": template,
    },
    optional={"replicas": st.integers(0, 3), "numOfHosts": st.integers(1, 4)},
)
cluster_spec = st.fixed_dictionaries(
    {"headGroupSpec": st.fixed_dictionaries({"template": template})},
    optional={
        "workerGroupSpecs": st.lists(worker_group, max_size=3),
        "enableInTreeAutoscaling": st.booleans(),
    },
)


@st.composite
def queued_objects(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["RayJob", "RayCluster"]))
    meta = {"name": "obj", "namespace": "ray", "labels": {QUEUE_LABEL: "team-a"}}
    if draw(st.booleans()):
        meta["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}
    if kind == "RayCluster":
        spec = draw(cluster_spec)
    else:
        spec = draw(
            st.fixed_dictionaries(
                {"entrypoint": st.just("python x.py")},
                optional={
                    "rayClusterSpec": cluster_spec,
                    "shutdownAfterJobFinishes": st.booleans(),
                    "submissionMode": st.sampled_from(["K8sJobMode", "HTTPMode"]),
                    "submitterPodTemplate": template,
                },
            )
        )
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": meta, "spec": spec}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(queued_objects())
def test_preview_and_checks_never_raise_on_what_the_schema_admits(obj: dict[str, Any]) -> None:
    assume(validate_manifest(obj) == [])
    (verdict,) = preview(plan(CFG), CFG.capacity, [obj])
    assert verdict.state in ("admitted", "waits", "never")
    if verdict.state == "never":
        assert verdict.reason or any(a.mode == "never" for a in verdict.assignments)
    lines = render_problems(plan(CFG), CFG.capacity, [obj])
    assert all(isinstance(line, str) and line for line in lines)


def test_worker_group_without_template_counts_as_an_empty_pod():
    """Kueue deep-copies the (zero) template: the group's pods request nothing."""
    rc = {
        "kind": "RayCluster",
        "metadata": {"name": "rc", "labels": {QUEUE_LABEL: "team-a"}},
        "spec": {"headGroupSpec": {}, "workerGroupSpecs": [{"groupName": "w", "replicas": 2}]},
    }
    head, w = pod_sets(rc)
    assert (head.count, head.per_pod, w.name, w.count, w.per_pod) == (1, {}, "w", 2, {})
    (v,) = preview(plan(CFG), CFG.capacity, [rc])
    assert v.state == "admitted"


def test_a_negative_request_is_a_never_verdict_naming_the_field():
    c = {"name": "c", "resources": {"requests": {"cpu": -1}}}
    rc = {
        "kind": "RayCluster",
        "metadata": {"name": "rc", "labels": {QUEUE_LABEL: "team-a"}},
        "spec": {"headGroupSpec": {"template": {"spec": {"containers": [c]}}}},
    }
    (v,) = preview(plan(CFG), CFG.capacity, [rc])
    assert v.state == "never"
    assert "spec.headGroupSpec.template.spec.containers[0].resources cpu -1" in v.reason
    (line,) = [
        p for p in render_problems(plan(CFG), CFG.capacity, [rc]) if "can never be admitted" in p
    ]
    assert line.startswith("ray_clusters[rc]: can never be admitted by queue team-a")
