"""The Kubernetes export for checkov (raygke/k8s_export.py): every Ray pod template becomes a Pod,
the autoscaler sidecar is added where KubeRay adds it, and the committed skip list explains
every skip."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from raygke.k8s_export import (
    AUTOSCALER_DEFAULT_RESOURCES,
    SKIPS_FILE,
    Skip,
    SkipListError,
    annotate,
    export,
    main,
    read_skips,
    render_stack,
)


@pytest.fixture(scope="module")
def prod_files(tmp_path_factory) -> tuple[Path, list[str]]:
    out = tmp_path_factory.mktemp("scan")
    return out, export(render_stack("prod"), out)


def test_every_ray_pod_template_is_a_pod(prod_files):
    out, files = prod_files
    pods = {f for f in files if f.startswith("pod-")}
    # prod: RayCluster training (head + 3 worker groups), each queued job's own cluster (head + 1
    # group: prepare-corpus, train-lm-h100, train-lm-jax-v6e, tokenize-llama, finetune-llama-h100),
    # a submitter for each of the 5 jobs,
    # and RayService lm (head + 1 group)
    assert pods == {
        "pod-ray-prepare-corpus-head.yaml",
        "pod-ray-prepare-corpus-worker-cpu.yaml",
        "pod-ray-train-lm-jax-v6e-head.yaml",
        "pod-ray-train-lm-jax-v6e-worker-tpu-v6e-4x4.yaml",
        "pod-ray-lm-head.yaml",
        "pod-ray-lm-worker-l4-serve.yaml",
        "pod-ray-training-head.yaml",
        "pod-ray-training-worker-cpu.yaml",
        "pod-ray-training-worker-tpu-v6e.yaml",
        "pod-ray-training-worker-h100.yaml",
        "pod-ray-train-lm-h100-head.yaml",
        "pod-ray-train-lm-h100-worker-h100.yaml",
        "pod-ray-train-lm-h100-submitter.yaml",
        "pod-ray-prepare-corpus-submitter.yaml",
        "pod-ray-train-lm-jax-v6e-submitter.yaml",
        "pod-ray-tokenize-llama-head.yaml",
        "pod-ray-tokenize-llama-worker-cpu.yaml",
        "pod-ray-tokenize-llama-submitter.yaml",
        "pod-ray-finetune-llama-h100-head.yaml",
        "pod-ray-finetune-llama-h100-worker-h100.yaml",
        "pod-ray-finetune-llama-h100-submitter.yaml",
    }
    for f in pods:
        doc = yaml.safe_load((out / f).read_text())
        assert doc["apiVersion"] == "v1" and doc["kind"] == "Pod"
        assert doc["metadata"]["namespace"] == "ray"
        assert doc["spec"]["containers"]
    assert not any(f.startswith("customresourcedefinition") for f in files)


def test_autoscaled_head_gets_the_autoscaler_sidecar(prod_files):
    out, _ = prod_files
    head = yaml.safe_load((out / "pod-ray-training-head.yaml").read_text())
    names = [c["name"] for c in head["spec"]["containers"]]
    assert names == ["ray-head", "autoscaler"]
    sidecar = head["spec"]["containers"][1]
    assert sidecar["image"] == head["spec"]["containers"][0]["image"]
    # prod sets no autoscalerOptions.resources: KubeRay's defaults apply
    assert sidecar["resources"] == AUTOSCALER_DEFAULT_RESOURCES
    assert sidecar["securityContext"]["allowPrivilegeEscalation"] is False
    # the RayJob's own cluster does not autoscale: no sidecar
    job_head = yaml.safe_load((out / "pod-ray-train-lm-h100-head.yaml").read_text())
    assert [c["name"] for c in job_head["spec"]["containers"]] == ["ray-head"]


def test_committed_skip_list_explains_every_skip():
    skips = read_skips(SKIPS_FILE)
    assert skips
    for s in skips:
        assert s.check.startswith(("CKV_K8S_", "CKV2_K8S_"))
        assert len(s.why) > 40, s


def test_skip_without_reason_is_one_clear_line(tmp_path):
    bad = tmp_path / "skips.yaml"
    bad.write_text("CKV_K8S_22:\n  only: [x]\n")
    with pytest.raises(SkipListError, match=r"CKV_K8S_22: every skipped check needs a 'why'"):
        read_skips(bad)
    assert main(["dev", "--skips", str(bad), "--out", str(tmp_path / "o")]) == 2


def test_scoped_skip_annotates_only_matching_objects():
    skip = Skip("CKV_K8S_38", "the head's autoscaler calls the Kubernetes API", ("*-head",))
    head = annotate({"metadata": {"name": "training-head"}}, [skip])
    worker = annotate({"metadata": {"name": "training-worker-cpu"}}, [skip])
    assert head["metadata"]["annotations"] == {
        "checkov.io/skip1": "CKV_K8S_38=the head's autoscaler calls the Kubernetes API"
    }
    assert "annotations" not in worker["metadata"]


def test_unknown_stack_is_a_usage_error(tmp_path):
    assert main(["nope", "--out", str(tmp_path)]) == 2
