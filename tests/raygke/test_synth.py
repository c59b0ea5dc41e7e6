"""Whole-program renders of the dev and prod stacks via ``raygke synth`` (in process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from raygke.cli import app
from raygke.synth import synth

ROOT = Path(__file__).resolve().parents[2]


def _files(d: Path) -> dict[str, bytes]:
    return {
        p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def prod(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("prod")
    return out, synth(ROOT / "Pulumi.prod.yaml", out)


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """``raygke synth`` of Pulumi.dev.yaml (its output folder, its result), once for the tests
    that only read it."""
    out = tmp_path_factory.mktemp("dev")
    return out, synth(ROOT / "Pulumi.dev.yaml", out)


def test_prod_whole_program(prod):
    out, result = prod
    records = json.loads((out / "resources.json").read_text())
    assert records == result.resources
    assert all(set(r) == {"type", "name", "urn", "parent", "inputs", "options"} for r in records)
    types = result.by_type()
    assert types["gcp:container/cluster:Cluster"] == 1
    # system + cpu + 2 v6e 4x4 slices (one pool each) + h100 + l4-serve (the vLLM service), and
    # the DWS pools behind them (2 v6e slices + h100-dws)
    assert types["gcp:container/nodePool:NodePool"] == 9
    # prod runs KubeRay as the GKE Ray add-on (it brings the TPU webhook multi-host slices need);
    # the one Helm release is Kueue's
    (release,) = [r for r in records if r["type"] == "kubernetes:helm.sh/v3:Release"]
    assert release["inputs"]["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    (cluster,) = [r for r in records if r["type"] == "gcp:container/cluster:Cluster"]
    assert cluster["inputs"]["deletionProtection"] is True
    assert cluster["inputs"]["addonsConfig"]["rayOperatorConfigs"] == [
        {
            "enabled": True,
            "rayClusterLoggingConfig": {"enabled": True},
            "rayClusterMonitoringConfig": {"enabled": True},
        }
    ]
    # every resource except the stack's direct children has a ray-gke component parent
    for r in records:
        assert r["parent"] is not None
        if not r["type"].startswith("ray-gke:"):
            assert r["parent"].startswith("ray-gke:"), r
    outputs = json.loads((out / "outputs.json").read_text())
    assert outputs["cluster_name"] == "ray-prod"
    assert outputs["cluster_location"] == "us-east5"
    assert outputs["kubeconfig"] == "[secret]"
    assert outputs["namespace"] == "ray"
    assert (
        outputs["service_accounts"]["ray-train"] == "ray-train@ray-gke-prod.iam.gserviceaccount.com"
    )
    assert outputs["ray_clusters"]["training"]["dashboard"] == (
        "http://training-head-svc.ray.svc.cluster.local:8265"
    )
    tpu = outputs["node_pools"]["tpu-v6e-4x4"]
    assert (tpu["machine_type"], tpu["hosts_per_slice"], tpu["chips_per_host"]) == (
        "ct6e-standard-4t",
        4,
        4,
    )
    assert tpu["gke_node_pools"] == ["tpu-v6e-4x4-0", "tpu-v6e-4x4-1"]
    manifests = out / "manifests"
    assert sorted(p.name for p in manifests.glob("helm-*")) == [
        "helm-kueue-release.yaml",
        "helm-kueue-values.yaml",
    ]
    # issue 21's "done when": Kueue's objects, a queued node pool, every RayJob queued with its
    # own cluster
    kinds = {yaml.safe_load(p.read_text()).get("kind") for p in manifests.glob("*.yaml")}
    assert {
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "AdmissionCheck",
        "ProvisioningRequestConfig",
    } <= kinds
    pools = [r["inputs"] for r in records if r["type"] == "gcp:container/nodePool:NodePool"]
    assert any(p.get("queuedProvisioning") == {"enabled": True} for p in pools)
    rayjobs = [yaml.safe_load(p.read_text()) for p in manifests.glob("rayjob-*.yaml")]
    assert len(rayjobs) == 5  # prepare, train on v6e and H100, tokenize and fine-tune
    for job in rayjobs:
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "ml-batch"
        assert "rayClusterSpec" in job["spec"] and "clusterSelector" not in job["spec"]
    ns = yaml.safe_load((manifests / "namespace-cluster-ray.yaml").read_text())
    assert (ns["apiVersion"], ns["kind"], ns["metadata"]["name"]) == ("v1", "Namespace", "ray")
    # every Kubernetes object the program declares is written out
    k8s = [
        r
        for r in records
        if r["type"].startswith("kubernetes:") and r["type"] != "kubernetes:helm.sh/v3:Release"
    ]
    plain = [p for p in manifests.glob("*.yaml") if not p.name.startswith("helm-")]
    assert len(plain) == len(k8s)


def test_dev_whole_program_and_determinism(dev, tmp_path):
    (a, ra), b = dev, tmp_path / "b"
    synth(ROOT / "Pulumi.dev.yaml", b)  # a second render in the same process
    fa, fb = _files(a), _files(b)
    assert fa == fb  # identical bytes, file for file
    assert "resources.json" in fa and any(k.startswith("manifests/") for k in fa)
    (cluster,) = [r for r in ra.resources if r["type"] == "gcp:container/cluster:Cluster"]
    assert cluster["inputs"]["deletionProtection"] is False
    pools = {
        r["inputs"]["name"]: r["inputs"]
        for r in ra.resources
        if r["type"] == "gcp:container/nodePool:NodePool"
    }
    assert "placementPolicy" not in pools["tpu-v5e-2x2"]  # single-host slice
    assert pools["tpu-v5e-2x2"]["nodeConfig"]["spot"] is True


def test_cli_synth_and_invalid_config_exit_like_check(tmp_path):
    runner = CliRunner()
    out = tmp_path / "out"
    res = runner.invoke(
        app, ["synth", "--config", str(ROOT / "Pulumi.dev.yaml"), "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert "gcp:container/nodePool:NodePool" in res.output
    assert (out / "resources.json").is_file()

    bad = tmp_path / "Pulumi.bad.yaml"
    text = (ROOT / "Pulumi.dev.yaml").read_text().replace("topology: 2x2", "topology: 3x3")
    bad.write_text(text)
    synth_res = runner.invoke(app, ["synth", "--config", str(bad), "--out", str(tmp_path / "x")])
    check_res = runner.invoke(app, ["check", "--config", str(bad), "--no-render"])
    assert synth_res.exit_code == 1 and check_res.exit_code == 1
    lines = [ln for ln in synth_res.output.splitlines() if ln.strip().startswith("- ")]
    assert lines and "3x3" in "\n".join(lines)
    assert lines == [ln for ln in check_res.output.splitlines() if ln.strip().startswith("- ")]
    assert not (tmp_path / "x").exists()


def test_program_reports_invalid_config_as_one_clean_error():
    import pulumi

    from raygke.synth import config_entries, run_program

    data = {"project": "ray-gke-test", "region": "us-east5", "zones": ["us-east5-b"]}
    data["node_pools"] = [{"name": "t", "tpu": {"generation": "v7x", "topology": "2x2"}}]
    with pytest.raises(pulumi.RunError, match="invalid stack config: 1 problem"):
        run_program(config_entries(data), "bad")


def test_crd_schemas_are_summarised_in_resources_json(dev, tmp_path: Path) -> None:
    """The carried KubeRay CRDs are stack resources in helm mode (dev); resources.json keeps their
    group, names, versions and a sha256 of the full spec instead of ~6 MB of schema, and a
    different chart version shows as a different digest."""
    import hashlib

    from components.kuberay.render import crd_documents
    from raygke.synth import CRD_TYPE, read_stack_config, run_program

    out, _ = dev
    records = json.loads((out / "resources.json").read_text())
    crds = [r for r in records if r["type"] == CRD_TYPE]
    assert len(crds) == 3
    assert (out / "resources.json").stat().st_size < 500_000
    by_kind = {r["inputs"]["spec"]["names"]["kind"]: r["inputs"]["spec"] for r in crds}
    for doc in crd_documents("1.7.0"):
        full = json.dumps(doc["spec"], sort_keys=True).encode()
        assert by_kind[doc["spec"]["names"]["kind"]]["sha256"] == hashlib.sha256(full).hexdigest()
    # the digest render (raygke check's policy run, raygke cost) is the same render with each
    # CRD spec given as that summary from the start
    digest, _ = run_program(read_stack_config(ROOT / "Pulumi.dev.yaml"), "dev", crd_specs="digest")
    assert json.loads(json.dumps(digest)) == records
    # `raygke synth --resources-only` (what raygke diff reads) writes those bytes from it
    full = {k: v for k, v in _files(out).items() if not k.startswith("manifests/")}
    only = tmp_path / "only"
    synth(ROOT / "Pulumi.dev.yaml", only, manifests=False)
    assert _files(only) == full
    with pytest.raises(ValueError, match="crd_specs mode 'schema'"):
        run_program(read_stack_config(ROOT / "Pulumi.dev.yaml"), "dev", crd_specs="schema")


def test_render_records_resource_options(prod):
    """The render carries what review needs: URNs, protect, ignore/replace-on changes,
    delete-before-replace, dependencies and the explicit provider."""
    _, result = prod
    by = {(r["type"], r["name"]): r for r in result.resources}
    pool = by[("gcp:container/nodePool:NodePool", "pool-h100-pool")]
    assert pool["urn"] == (
        "urn:pulumi:prod::ray-gke::ray-gke:nodepool:NodePool$gcp:container/nodePool:NodePool"
        "::pool-h100-pool"
    )
    assert pool["options"]["delete_before_replace"] is True
    assert pool["options"]["ignore_changes"] == ["initialNodeCount"]
    assert "gcp:container/cluster:Cluster::cluster-gke" in pool["options"]["depends_on"]
    key = by[("gcp:kms/cryptoKey:CryptoKey", "security-gke-secrets")]
    assert key["options"]["protect"] is True  # prod: deletion protection on
    job = by[("kubernetes:ray.io/v1:RayJob", "ray-rayjob-train-lm-h100")]
    # a queue change re-runs the job too (Kueue refuses it on a running job)
    assert job["options"]["replace_on_changes"] == [
        'metadata.labels["kueue.x-k8s.io/queue-name"]',
        "spec",
    ]
    assert job["options"]["delete_before_replace"] is True
    assert job["options"]["provider"] == "pulumi:providers:kubernetes::kuberay-k8s"
    cluster = by[("kubernetes:ray.io/v1:RayCluster", "ray-raycluster-training")]
    assert cluster["options"]["replace_on_changes"] == []


def test_dev_keys_are_not_protected(dev) -> None:
    _, result = dev
    keys = [r for r in result.resources if r["type"] == "gcp:kms/cryptoKey:CryptoKey"]
    assert keys and not any(r["options"]["protect"] for r in keys)


def test_policy_problems_are_problems_of_the_block_that_declares_the_resource(monkeypatch):
    """A GCP policy violation of a rendered resource is a problem of the stack block that
    declares it (a node pool's entry, a bucket's key, the cluster), found from the resource's
    type and name (data), so --format github annotates that line; the line is the pack's."""
    from components.kernel.problems import Problem
    from components.security import policy
    from raygke.synth import policy_problems

    def every_resource_breaks(resources, rules):
        return [
            policy.Violation(policy.display_name(r), Problem("", "broken", "r")) for r in resources
        ]

    monkeypatch.setattr(policy, "run_rules", every_resource_breaks)
    found = {p.message: p for p in policy_problems(ROOT / "Pulumi.prod.yaml", "prod")}
    assert found["r: NodePool pool-tpu-v6e-4x4-1-pool: broken"].path == "node_pools[tpu-v6e-4x4]"
    assert found["r: NodePool pool-h100-dws-pool: broken"].path == "node_pools[h100-dws]"
    assert found["r: NodePool pool-system-pool: broken"].path == "cluster.system_pool"
    assert found["r: Bucket storage-checkpoints: broken"].path == "buckets.checkpoints"
    kinds = {m.split(" ", 2)[1]: p.path for m, p in found.items()}
    assert (kinds["Cluster"], kinds["CryptoKey"], kinds["Subnetwork"]) == (
        "cluster",
        "kms",
        "network",
    )
    assert all(p.rule == "policy" for p in found.values())


def test_prod_h100_pools_render_gpudirect_tcpx_networking(prod):
    """Prod's A3 High pools get GPUDirect-TCPX's 4 extra NICs by default (gpu_networking: auto):
    4 VPCs, each pool's additional node networks, multi-networking, and the interfaces in the
    H100 workers of the job and the long-lived cluster (docs/deploying.md, GPU networking)."""
    out, result = prod
    records = result.resources
    nets = sorted(
        r["inputs"]["name"] for r in records if r["type"] == "gcp:compute/network:Network"
    )
    assert nets == ["ray-prod", *(f"ray-prod-tcpx-{i}" for i in range(1, 5))]
    pools = {
        r["inputs"]["name"]: r["inputs"].get("networkConfig")
        for r in records
        if r["type"] == "gcp:container/nodePool:NodePool"
    }
    for name in ("h100", "h100-dws"):
        extra = pools[name]["additionalNodeNetworkConfigs"]
        assert [e["network"] for e in extra] == [f"ray-prod-tcpx-{i}" for i in range(1, 5)]
    assert pools["cpu"] is None
    (cluster,) = [r for r in records if r["type"] == "gcp:container/cluster:Cluster"]
    assert cluster["inputs"]["enableMultiNetworking"] is True
    job = yaml.safe_load((out / "manifests" / "rayjob-ray-train-lm-h100.yaml").read_text())
    (group,) = job["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    notes = group["template"]["metadata"]["annotations"]
    interfaces = json.loads(notes["networking.gke.io/interfaces"])
    assert [(i["interfaceName"], i["network"]) for i in interfaces] == [
        ("eth0", "default"),
        *((f"eth{i}", f"tcpx-{i}") for i in range(1, 5)),
    ]
    rc = yaml.safe_load((out / "manifests" / "raycluster-ray-training.yaml").read_text())
    groups = {g["groupName"]: g for g in rc["spec"]["workerGroupSpecs"]}
    assert "networking.gke.io/interfaces" in groups["h100"]["template"]["metadata"]["annotations"]
    assert "networking.gke.io/interfaces" not in groups["cpu"]["template"]["metadata"].get(
        "annotations", {}
    )


def test_prod_renders_the_lm_service_as_vllm_on_the_l4_pool(prod):
    """The program's RayService runs the Ray Serve LLM app (vLLM) on the l4-serve pool, head and
    workers in the pushed gpu image (vLLM's CUDA build), the model read through the FUSE mount."""
    out, _ = prod
    m = yaml.safe_load((out / "manifests" / "rayservice-ray-lm.yaml").read_text())
    (app,) = yaml.safe_load(m["spec"]["serveConfigV2"])["applications"]
    assert app["import_path"] == "workloads.serve_llm:build_app"
    assert app["args"]["model"] == "/mnt/gcs/checkpoints/train-lm-h100"
    assert (app["args"]["accelerator"], app["args"]["accelerator_type"]) == ("gpu", "L4")
    assert app["args"]["tensor_parallel_size"] == 1
    cluster = m["spec"]["rayClusterConfig"]
    (worker,) = cluster["workerGroupSpecs"]
    pod = worker["template"]["spec"]
    assert pod["nodeSelector"]["cloud.google.com/gke-accelerator"] == "nvidia-l4"
    images = {
        c["image"]
        for g in (cluster["headGroupSpec"], worker)
        for c in g["template"]["spec"]["containers"]
        if c["name"].startswith("ray")
    }
    assert len(images) == 1 and "/ray-gpu@sha256:" in images.pop()
