"""RayResources under Pulumi mocks: one CustomResource per manifest, hash-named archive object."""

from __future__ import annotations

import pulumi
import pytest

from components.raycrs.archive import archive_object_name, workloads_archive
from components.raycrs.render import render_manifests
from tests.helpers import stack

CREATED: list[tuple[str, str, dict]] = []


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        CREATED.append((args.typ, args.name, dict(args.inputs)))
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs):
        return {}


@pytest.fixture(autouse=True)
def mocks():
    CREATED.clear()
    pulumi.runtime.set_mocks(Mocks(), project="ray-gke", stack="dev", preview=False)
    yield


@pulumi.runtime.test
def test_one_custom_resource_per_manifest_and_hashed_archive():
    import pulumi_kubernetes as k8s

    from components.raycrs.component import TYPE_TOKEN, RayResources, RayResourcesArgs

    cfg = stack("prod")
    provider = k8s.Provider("k8s", kubeconfig="{}")
    operator = k8s.core.v1.Namespace("ns")
    rr = RayResources(
        "ray",
        RayResourcesArgs(
            cfg=cfg,
            provider=provider,
            artifacts_bucket="ray-gke-prod-ray-prod-artifacts",
            depends_on=[operator],
        ),
    )
    _, sha = workloads_archive()

    def check(_):
        types = [t for t, _, _ in CREATED]
        assert TYPE_TOKEN in types
        (obj,) = [i for t, _, i in CREATED if t == "gcp:storage/bucketObject:BucketObject"]
        assert obj["name"] == archive_object_name(sha)
        assert sha[:16] in obj["name"] and obj["bucket"] == "ray-gke-prod-ray-prod-artifacts"
        crs = [(n, i) for t, n, i in CREATED if t.startswith("kubernetes:ray.io/v1:")]
        expected = render_manifests(cfg, rr.working_dir)
        assert len(crs) == len(expected) == 7
        kinds = sorted(t.rsplit(":", 1)[1] for t, _, _ in CREATED if t.startswith("kubernetes:ray"))
        assert kinds == ["RayCluster", *["RayJob"] * 5, "RayService"]
        monitors = [
            i["metadata"]["name"]
            for t, _, i in CREATED
            if t == "kubernetes:monitoring.googleapis.com/v1:PodMonitoring"
        ]
        assert (
            sorted(monitors)
            == sorted(rr.pod_monitorings)
            == [
                "finetune-llama-h100-ray-metrics",
                "lm-ray-metrics",
                "prepare-corpus-ray-metrics",
                "tokenize-llama-ray-metrics",
                "train-lm-h100-ray-metrics",
                "train-lm-jax-v6e-ray-metrics",
                "training-ray-metrics",
            ]
        )
        # KubeRay's Serve Service of RayService lm: <name>-serve-svc, port 8000
        assert rr.services == {"lm": "http://lm-serve-svc.ray.svc.cluster.local:8000"}
        by_name = {i["metadata"]["name"]: i for _, i in crs}
        for m in expected:
            assert by_name[m["metadata"]["name"]]["spec"] == m["spec"]
        assert rr.working_dir.endswith(archive_object_name(sha))
        assert rr.ray_clusters == {
            "training": {
                "dashboard": "http://training-head-svc.ray.svc.cluster.local:8265",
                "client": "ray://training-head-svc.ray.svc.cluster.local:10001",
            }
        }
        assert rr.jobs == [
            "finetune-llama-h100",
            "prepare-corpus",
            "tokenize-llama",
            "train-lm-h100",
            "train-lm-jax-v6e",
        ]

    ids = [cr.id for cr in rr.custom_resources.values()]
    return pulumi.Output.all(rr.archive.name, *ids).apply(check)
