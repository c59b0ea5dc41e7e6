"""Stack config rules: each rule accepts a valid case and rejects an invalid one with a message
naming the field, the value and what is allowed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components import catalog
from components.config.nodepools import GpuPool, TpuPool
from components.kernel.base import StackConfigError, StackFileError
from components.kernel.release import RELEASE
from components.plan.resolve import nap_needs
from components.stack.loader import stack_data_from_yaml, validate
from tests.helpers import STACKS, stack


def base() -> dict[str, Any]:
    return {
        "defaults": RELEASE,  # a new stack
        "project": "ray-gke-test",
        "region": "us-central1",
        "zones": ["us-central1-a"],
        "node_pools": [
            {"name": "cpu", "machine_type": "n2-standard-8", "max_nodes": 2},
            {"name": "tpu", "tpu": {"generation": "v5e", "topology": "2x2"}, "max_slices": 2},
            {"name": "l4", "gpu": {"type": "nvidia-l4", "count": 1}, "max_nodes": 2},
        ],
        "nap": {"enabled": True, "resource_limits": {"cpu": 1000, "memory": 4000}},
        "ray_clusters": [
            {
                "name": "research",
                "worker_groups": [
                    {"name": "cpu", "node_pool": "cpu"},
                    {"name": "tpu", "node_pool": "tpu", "max_replicas": 2},
                ],
            }
        ],
        "jobs": [
            {"name": "prep", "workload": "prepare", "cluster": "research", "worker_group": "cpu"}
        ],
        "workload_identities": [
            {"name": "ray-train", "buckets": {"datasets": "write", "checkpoints": "write"}},
            {"name": "ray-serve", "buckets": {"checkpoints": "read"}},
        ],
    }


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(StackConfigError) as exc:
        validate(data)
    return exc.value.problems


def one_problem(data: dict[str, Any], *needles: str) -> str:
    found = problems(data)
    joined = "\n".join(found)
    for n in needles:
        assert n in joined, f"{n!r} not in:\n{joined}"
    return joined


def test_base_is_valid() -> None:
    cfg = validate(base())
    assert isinstance(cfg.pool("tpu"), TpuPool)
    assert isinstance(cfg.pool("l4"), GpuPool)
    assert cfg.pool("l4").machine_type == "g2-standard-4"
    assert cfg.location == "us-central1-a"


@pytest.mark.parametrize("name", STACKS)
def test_shipped_stacks_are_valid(name: str) -> None:
    cfg = stack(name)
    assert cfg.node_pools


def test_prod_matches_issue() -> None:
    cfg = stack("prod")
    assert cfg.cluster.regional and cfg.cluster.deletion_protection
    tpu = next(p for p in cfg.node_pools if isinstance(p, TpuPool))
    assert (tpu.tpu.generation, tpu.tpu.topology, tpu.max_slices) == ("v6e", "4x4", 2)
    assert any(isinstance(p, GpuPool) and p.gpu.type == "nvidia-h100-80gb" for p in cfg.node_pools)


def test_dev_matches_issue() -> None:
    cfg = stack("dev")
    assert not cfg.cluster.regional and not cfg.cluster.deletion_protection and cfg.nap.enabled
    tpu = next(p for p in cfg.node_pools if isinstance(p, TpuPool))
    assert (tpu.tpu.generation, tpu.tpu.topology, tpu.min_slices) == ("v5e", "2x2", 0)
    assert tpu.spot
    l4 = next(p for p in cfg.node_pools if isinstance(p, GpuPool))
    assert l4.gpu.type == "nvidia-l4" and l4.min_nodes == 0


def test_unknown_generation() -> None:
    d = base()
    d["node_pools"][1]["tpu"]["generation"] = "v4x"
    one_problem(d, "node_pools[tpu].tpu", "'v4x'", "valid: v5e, v6e")


def test_unknown_topology() -> None:
    d = base()
    d["node_pools"][1]["tpu"] = {"generation": "v6e", "topology": "3x3"}
    d["zones"] = ["us-central1-b"]
    one_problem(d, "node_pools[tpu].tpu", "topology 3x3 is not a v6e topology; valid: 1x1, 2x2")


def test_gpu_count_no_machine_offers() -> None:
    d = base()
    d["node_pools"][2]["gpu"]["count"] = 3
    one_problem(d, "node_pools[l4].gpu", "no machine type offers 3 x nvidia-l4", "1, 2, 4, 8")


def test_unknown_gpu_type() -> None:
    d = base()
    d["node_pools"][2]["gpu"]["type"] = "nvidia-k80"
    one_problem(d, "'nvidia-k80'", "nvidia-l4")


def test_zone_not_offered_and_override() -> None:
    d = base()
    d["zones"] = ["us-central1-f"]
    msg = one_problem(d, "node_pools[tpu]", "TPU v5e is not offered in zone us-central1-f")
    assert "allow_unlisted_zone" in msg
    d["node_pools"][1]["allow_unlisted_zone"] = True
    d["node_pools"][2]["allow_unlisted_zone"] = True
    validate(d)


def test_zone_outside_region() -> None:
    d = base()
    d["zones"] = ["europe-west4-a"]
    one_problem(d, "zones: 'europe-west4-a' is not a zone of region us-central1")


def test_worker_group_references_missing_pool() -> None:
    d = base()
    d["ray_clusters"][0]["worker_groups"][0]["node_pool"] = "nope"
    one_problem(
        d, "ray_clusters[research].worker_groups[cpu].node_pool: 'nope'", "declared: cpu, tpu, l4"
    )


def test_worker_group_exceeds_pool() -> None:
    d = base()
    d["ray_clusters"][0]["worker_groups"][1]["max_replicas"] = 3
    one_problem(d, "max_replicas: 3 exceeds node pool 'tpu' capacity of 2 slices")


def test_nap_limit_smaller_than_pools() -> None:
    d = base()
    d["nap"]["resource_limits"]["tpu-v5-lite-podslice"] = 4
    one_problem(d, "nap.resource_limits[tpu-v5-lite-podslice]: 4", "at least 8")
    d["nap"]["resource_limits"]["tpu-v5-lite-podslice"] = 8
    validate(d)


def test_nap_unknown_resource_type() -> None:
    d = base()
    d["nap"]["resource_limits"]["tpu-v9"] = 4
    one_problem(d, "nap.resource_limits", "'tpu-v9' is not a NAP resource type")


def test_nap_needs_counts_chips_and_gpus() -> None:
    cfg = validate(base())
    needs = nap_needs(cfg.cluster.system_pool, cfg.node_pools)
    assert needs["tpu-v5-lite-podslice"] == 8
    assert needs["nvidia-l4"] == 2


def test_duplicate_names() -> None:
    d = base()
    d["node_pools"].append({"name": "cpu", "machine_type": "n2-standard-4"})
    one_problem(d, "node_pools: name 'cpu' is used more than once")
    d = base()
    d["jobs"].append(dict(d["jobs"][0]))
    one_problem(d, "jobs: name 'prep' is used more than once")


def test_system_pool_name_reserved() -> None:
    d = base()
    d["node_pools"].append({"name": "system"})
    one_problem(d, "'system' is used more than once", "built-in system pool")


@pytest.mark.parametrize("name", ["Bad_Name", "1abc", "a" * 41, "trailing-"])
def test_gke_name_rejected(name: str) -> None:
    d = base()
    d["node_pools"][0]["name"] = name
    one_problem(d, "is not a valid GKE name", "1-40 lowercase letters")


def test_cluster_name_rejected() -> None:
    d = base()
    d["cluster"] = {"name": "My Cluster"}
    one_problem(d, "cluster.name", "'My Cluster'", "not a valid GKE name")


def test_ray_image_version_mismatch() -> None:
    d = base()
    d["ray"] = {"version": "2.60.0", "images": {"gpu": "rayproject/ray:2.59.1-py311-gpu"}}
    one_problem(
        d, "images.gpu 'rayproject/ray:2.59.1-py311-gpu' is Ray 2.59.1 but ray.version is 2.60.0"
    )


def test_ray_image_without_tag() -> None:
    d = base()
    d["ray"] = {"images": {"cpu": "rayproject/ray"}}
    one_problem(d, "images.cpu 'rayproject/ray' has no Ray version tag")


@pytest.mark.parametrize(
    ("path", "lo", "hi", "msg"),
    [
        ((0,), "min_nodes", "max_nodes", "min_nodes 3 > max_nodes 2"),
        ((1,), "min_slices", "max_slices", "min_slices 3 > max_slices 2"),
        ((2,), "min_nodes", "max_nodes", "min_nodes 3 > max_nodes 2"),
    ],
)
def test_min_greater_than_max(path: tuple[int], lo: str, hi: str, msg: str) -> None:
    d = base()
    pool = d["node_pools"][path[0]]
    pool[lo], pool[hi] = 3, 2
    one_problem(d, msg)


def test_worker_group_min_gt_max() -> None:
    d = base()
    d["ray_clusters"][0]["worker_groups"][1].update(min_replicas=2, max_replicas=1)
    one_problem(d, "min_replicas 2 > max_replicas 1")


def test_extra_keys_rejected_everywhere() -> None:
    for mutate, where in [
        (lambda d: d.update(clustr={}), "clustr"),
        (lambda d: d["node_pools"][1].update(topolgy="2x2"), "node_pools[tpu].topolgy"),
        (lambda d: d["ray_clusters"][0]["worker_groups"][0].update(numOfHost=2), "numOfHost"),
    ]:
        d = base()
        mutate(d)
        one_problem(d, where, "unknown key")


def test_reservation_needs_name() -> None:
    d = base()
    d["node_pools"][1]["provisioning"] = "reservation"
    one_problem(d, "provisioning 'reservation' needs reservation")
    d["node_pools"][1]["reservation"] = "tpu-res"
    assert validate(d).pool("tpu").reservation == "tpu-res"


def test_min_master_version_too_old_for_v6e(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.components.stack.test_rules import OFFERED_2024

    monkeypatch.setattr(
        catalog.gke, "GKE_OFFERED_MINORS", OFFERED_2024
    )  # where gke_version_problem reads it
    d = base()
    d["zones"] = ["us-central1-b"]
    d["node_pools"] = [{"name": "v6", "tpu": {"generation": "v6e", "topology": "2x2"}}]
    d["ray_clusters"] = []
    d["jobs"] = []
    d["cluster"] = {"min_master_version": "1.30.5-gke.100"}
    one_problem(d, "cluster.min_master_version: 1.30.5-gke.100 is older than 1.31.2-gke.1115000")


def test_job_references() -> None:
    d = base()
    d["jobs"][0]["cluster"] = "ghost"
    one_problem(d, "jobs[prep].cluster: 'ghost' is not a declared ray cluster")
    d = base()
    d["jobs"][0]["workload"] = "train_gpt5"
    one_problem(d, "jobs[prep].workload: 'train_gpt5' is not a registered workload")
    d = base()
    d["jobs"][0]["worker_group"] = "gpu"
    one_problem(d, "jobs[prep].worker_group: 'gpu' is not a worker group of 'research'")


def test_job_cluster_and_node_pool_exclusive() -> None:
    d = base()
    d["jobs"][0]["node_pool"] = "cpu"
    one_problem(d, "set either cluster", "or node_pool")


def test_secret_readers_must_be_identities() -> None:
    d = base()
    d["secrets"] = [{"name": "hf-token", "readers": ["ray-nobody"]}]
    one_problem(d, "secrets[hf-token].readers: 'ray-nobody' is not a declared workload identity")


def test_network_ranges_must_not_overlap() -> None:
    d = base()
    d["network"] = {"subnet_cidr": "10.16.0.0/20"}
    one_problem(d, "subnet_cidr 10.16.0.0/20 overlaps pods_cidr 10.16.0.0/14")


def test_public_cidr_rejected_for_subnet() -> None:
    d = base()
    d["network"] = {"subnet_cidr": "8.8.0.0/20"}
    one_problem(d, "subnet_cidr '8.8.0.0/20' is not a private")


def test_bad_project_and_region() -> None:
    d = base()
    d["project"] = "X"
    d["region"] = "moon"
    msg = one_problem(d, "project 'X' is not a GCP project id", "region 'moon' is not a GCP region")
    assert msg.count("\n") >= 1


def test_wrong_type_names_value() -> None:
    d = base()
    d["node_pools"][0]["max_nodes"] = "lots"
    one_problem(d, "node_pools[cpu].max_nodes", "'lots'")


@pytest.mark.parametrize(
    ("path", "value", "hint"),
    [
        (("node_pools", 0, "max_nodes"), True, "valid integer; got True"),
        (("node_pools", 0, "max_nodes"), "4", "got '4' (write the number without quotes)"),
        (("cluster", "deletion_protection"), "yes", "got 'yes' (write true or false"),
        (("cluster", "deletion_protection"), 1, "valid boolean; got 1"),
        (("kuberay", "chart_version"), 1.1, "got 1.1 (YAML read a number; put the value in quotes"),
        (("labels",), {"team": True}, "got True (YAML read a boolean; put the value in quotes"),
    ],
)
def test_values_of_the_wrong_yaml_type_are_not_coerced(path, value, hint) -> None:
    d = base()
    node = d
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
    node[path[-1]] = value
    (msg,) = problems(d)
    assert hint in msg, msg


def test_yaml_loader_rejects_duplicate_keys_naming_both_places() -> None:
    text = "config:\n  ray-gke:cluster:\n    regional: true\n    regional: false\n"
    with pytest.raises(StackConfigError) as exc:
        stack_data_from_yaml(text)
    assert not isinstance(exc.value, StackFileError), "a config mistake (exit 1), not unreadable"
    (msg,) = exc.value.problems
    assert (
        "duplicate key 'regional' at line 4 column 5 (in the mapping that starts at line 3)" in msg
    )
    with pytest.raises(
        StackConfigError,
        match=r"1 problem:\nlabels.a: duplicate key 'a' at line 2 column 26 \(in the mapping that starts at line 2\)",
    ):
        stack_data_from_yaml("config:\n  ray-gke:labels: {a: x, a: y}\n")


def _stack_yaml(body: str) -> str:
    return "config:\n" + "".join(f"  {line}\n" for line in body.strip("\n").split("\n"))


def test_yaml_is_read_as_pulumi_reads_it_yaml_1_2() -> None:
    data = stack_data_from_yaml(
        _stack_yaml(
            "ray-gke:labels: {a: yes, b: on, c: 23:30}\n"
            "ray-gke:cluster: {deletion_protection: false}\n"
            "ray-gke:local: {workers: 010}"
        )
    )
    # YAML 1.1 (PyYAML) would give True, True, 1410 and 8.
    assert data["labels"] == {"a": "yes", "b": "on", "c": "23:30"}
    assert data["cluster"] == {"deletion_protection": False}
    assert data["local"] == {"workers": 10}


def test_yaml_merge_keys_and_anchors_are_accepted() -> None:
    text = _stack_yaml(
        "ray-gke:node_pools:\n"
        "  - &cpu {name: cpu-a, machine_type: n2-standard-8, max_nodes: 4}\n"
        "  - <<: *cpu\n"
        "    name: cpu-b"
    )
    pools = stack_data_from_yaml(text)["node_pools"]
    assert pools[1] == {"name": "cpu-b", "machine_type": "n2-standard-8", "max_nodes": 4}


def test_spot_yes_is_refused_as_pulumi_would_read_it() -> None:
    d = base()
    d.update(stack_data_from_yaml(_stack_yaml("ray-gke:cluster: {deletion_protection: yes}")))
    (msg,) = problems(d)
    assert "cluster.deletion_protection" in msg and "got 'yes' (write true or false" in msg


def test_every_problem_listed_not_just_first() -> None:
    d = base()
    d["node_pools"][0]["name"] = "Bad"
    d["node_pools"][2]["gpu"]["count"] = 5
    d["ray"] = {"images": {"cpu": "rayproject/ray:1.0.0"}}
    assert len(problems(d)) >= 3


def test_yaml_loader_strips_namespace_and_uses_gcp_fallbacks() -> None:
    text = """
config:
  gcp:project: from-gcp-ns
  gcp:region: us-central1
  ray-gke:zones: [us-central1-a]
  pulumi:tags: {team: ml}
"""
    data = stack_data_from_yaml(text)
    assert data == {"zones": ["us-central1-a"], "project": "from-gcp-ns", "region": "us-central1"}
    assert validate(data).project == "from-gcp-ns"


def test_yaml_loader_rejects_non_stack_files() -> None:
    with pytest.raises(StackConfigError, match="expected a top-level 'config:' mapping"):
        stack_data_from_yaml("- a\n- b\n")
    with pytest.raises(StackConfigError, match="not valid YAML"):
        stack_data_from_yaml("config: [unclosed\n")


def test_pulumi_loader_reads_same_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Pulumi loader (pulumi.Config) yields the same model as the YAML loader."""
    import json

    import pulumi

    from components.stack.component import load_pulumi_config

    data = base()
    values = {f"ray-gke:{k}": (v if isinstance(v, str) else json.dumps(v)) for k, v in data.items()}
    monkeypatch.setattr(pulumi, "get_stack", lambda: "test")
    token = pulumi.runtime.config.CONFIG.set(dict(values))
    try:
        cfg = load_pulumi_config()
    finally:
        pulumi.runtime.config.CONFIG.reset(token)
    assert cfg == validate(copy.deepcopy(data))


def test_multi_host_tpu_needs_the_webhook_in_helm_mode() -> None:
    from tests.components.stack.test_rules import _webhook

    d = base()
    _webhook(d)
    d["nap"]["resource_limits"]["memory"] = 8000
    one_problem(
        d,
        "worker_groups[tpu]: the multi-host TPU slice v6e 4x4 needs the TPU initialization webhook",
    )
    d["kuberay"] = {"mode": "gke-addon"}
    validate(d)
    d["kuberay"] = {"mode": "helm", "tpu_webhook": True}
    validate(d)
    # single-host slices need no webhook
    validate(base())


def test_job_args_are_checked_against_the_workload() -> None:
    d = base()
    d["jobs"][0]["args"] = {"context_lenght": 128}
    one_problem(d, "jobs[prep].args: unknown argument 'context_lenght' for workload prepare")
    d["jobs"][0]["args"] = {"context_length": "long"}
    one_problem(d, "argument 'context_length' of workload prepare is 'long'; expected int")
    d["jobs"][0]["args"] = {"context_length": 128, "include": "*.txt"}
    validate(d)


def test_job_must_be_allowed_to_write_what_its_workload_writes() -> None:
    d = base()
    d["workload_identities"] = [
        {"name": "ray-train", "buckets": {"datasets": "read", "checkpoints": "write"}}
    ]
    one_problem(
        d,
        "jobs[prep]: workload prepare writes to the datasets bucket but runs as 'ray-train', which has read access",
    )
    d["workload_identities"][0]["buckets"]["datasets"] = "write"
    validate(d)


def test_yaml_loader_rejects_unknown_namespaces_and_conflicting_gcp_keys() -> None:
    with pytest.raises(StackConfigError) as exc:
        stack_data_from_yaml("config:\n  rya-gke:labels: {a: b}\n  ray-gke:zones: [x]\n")
    assert "rya-gke:labels: unknown config namespace 'rya-gke'" in exc.value.problems[0]
    with pytest.raises(StackConfigError) as exc:
        stack_data_from_yaml("config:\n  gcp:project: other-one\n  ray-gke:project: mine-123\n")
    assert (
        "gcp:project 'other-one' differs from ray-gke:project 'mine-123'" in exc.value.problems[0]
    )
    assert stack_data_from_yaml("config:\n  pulumi:tags: {a: b}\n  kubernetes:context: x\n") == {}


def test_bound_errors_name_the_value_and_unknown_pool_kind_says_what_exists() -> None:
    d = base()
    d["node_pools"][0]["max_nodes"] = -4
    one_problem(d, "node_pools[cpu].max_nodes", "must be from 1 to 4000; got -4")
    d = base()
    d["node_pools"][0]["kind"] = "cpuu"
    one_problem(d, "node_pools[cpu]: kind 'cpuu' is not a node pool kind", "tpu: or gpu: block")


@pytest.mark.parametrize(
    "where, key, value, needles",
    [
        ("head", "cpu", "0", ("head.cpu '0' is zero", 'num-cpus: "0"')),
        ("head", "cpu", 0, ("head.cpu 0 is zero", "above 0")),
        ("head", "memory", "0Gi", ("head.memory '0Gi' is zero", "above 0 (e.g. 8Gi)")),
        ("worker", "cpu", "0m", ("worker_groups[tpu].cpu: worker group cpu '0m' is zero",)),
        ("worker", "memory", "0.0", ("worker group memory '0.0' is zero", "or unset")),
    ],
)
def test_zero_pod_resources_refused(where: str, key: str, value: Any, needles: tuple) -> None:
    data = base()
    cluster = data["ray_clusters"][0]
    if where == "head":
        cluster["head"] = {key: value}
    else:
        cluster["worker_groups"][1][key] = value
    found = problems(data)
    assert len(found) == 1, found
    for n in needles:
        assert n in found[0], found[0]


def test_negative_pod_resource_is_refused_for_its_sign() -> None:
    """Kubernetes' grammar takes a sign; a request (or a quota) of ``-1`` is refused as signed,
    not as something that is no quantity at all."""
    data = base()
    data["ray_clusters"][0]["head"] = {"cpu": "-1"}
    assert problems(data) == [
        "ray_clusters[research].head.cpu: head.cpu '-1' has a sign; this takes a quantity of 0 "
        "or more (e.g. 4, 500m, 16Gi)"
    ]


def test_small_positive_pod_resources_accepted() -> None:
    data = base()
    data["ray_clusters"][0]["head"] = {"cpu": "100m", "memory": "512Mi"}
    data["ray_clusters"][0]["worker_groups"][0]["cpu"] = "500m"
    cfg = validate(data)
    assert cfg.ray_clusters[0].head.cpu == "100m"


# ---------------------------------------------------------------- from test_bounds.py: Bounds the GCP APIs enforce, checked before anything is created.


@pytest.mark.parametrize("days", [1, 3, 6, 91])
def test_soft_delete_retention_outside_gcs_range_is_refused(days: int) -> None:
    """GCS soft delete retention: 0 or 7-90 days
    (https://cloud.google.com/storage/docs/soft-delete#retention-duration)."""
    data = base()
    data["buckets"] = {"checkpoints": {"soft_delete_days": days}}
    one_problem(data, "buckets.checkpoints.soft_delete_days", str(days))


@pytest.mark.parametrize("days", [0, 7, 90])
def test_soft_delete_retention_in_range_is_accepted(days: int) -> None:
    from components.stack.loader import validate

    data = base()
    data["buckets"] = {"checkpoints": {"soft_delete_days": days}}
    assert validate(data).buckets.checkpoints.soft_delete_days == days


def _networks(*cidrs: str, **network: object) -> dict:
    data = base()
    data["network"] = {
        **network,
        "master_authorized_networks": [{"name": f"n{i}", "cidr": c} for i, c in enumerate(cidrs)],
    }
    return data


def test_whole_internet_is_not_an_authorized_network() -> None:
    """https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks"""
    one_problem(_networks("0.0.0.0/0"), "master_authorized_networks[n0].cidr 0.0.0.0/0")


def test_private_endpoint_needs_internal_ranges() -> None:
    """A private endpoint is reachable only from internal addresses
    (https://cloud.google.com/kubernetes-engine/docs/how-to/private-clusters)."""
    one_problem(_networks("35.1.0.0/16", private_endpoint=True), "private_endpoint: true")
    from components.stack.loader import validate

    assert validate(_networks("10.100.0.0/16", private_endpoint=True))


def test_authorized_network_count_limit() -> None:
    """Public clusters: at most 50 ranges, private: 100
    (https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks#limitations)."""
    cidrs = [f"198.51.{i}.0/24" for i in range(101)]
    one_problem(_networks(*cidrs), "has 101 ranges", "at most 100")
    one_problem(_networks(*cidrs[:51], private_nodes=False), "at most 50")
    assert not [p for p in _try(_networks(*cidrs[:100])) if "ranges" in p]


def _try(data: dict) -> list[str]:
    from components.kernel.base import StackConfigError
    from components.stack.loader import validate

    try:
        validate(data)
    except StackConfigError as e:
        return e.problems
    return []


def test_duplicate_authorized_network_names() -> None:
    data = _networks("35.1.0.0/16", "35.2.0.0/16")
    for n in data["network"]["master_authorized_networks"]:
        n["name"] = "office"
    one_problem(data, "name 'office' is used more than once")


@pytest.mark.parametrize(
    ("version", "channel", "ok"),
    [
        ("1.31.2-gke.1115000", "STABLE", False),  # the old prod pin: no longer offered
        ("1.35", "STABLE", True),
        ("1.33", "REGULAR", False),
        ("1.33", "EXTENDED", True),
        ("1.40", "RAPID", False),
    ],
)
def test_gke_version_pin_is_offered(version: str, channel: str, ok: bool) -> None:
    """Pins are checked against the catalog's dated record of the minors GKE offers for new
    clusters per channel (https://cloud.google.com/kubernetes-engine/docs/release-schedule)."""
    from components.stack.loader import validate

    data = base()
    data["cluster"] = {"min_master_version": version, "release_channel": channel}
    if ok:
        assert validate(data).cluster.min_master_version == version
    else:
        one_problem(data, "cluster", version, "not offered for new clusters", channel)


def test_authorized_network_needs_a_prefix_length_and_pod_ranges_no_host_bits() -> None:
    """GKE takes CIDR blocks (``cidrBlock``,
    https://cloud.google.com/kubernetes-engine/docs/how-to/authorized-networks); a range with
    host bits set is named with the network it means."""
    data = _networks("203.0.113.7")
    one_problem(data, "no prefix length", "203.0.113.7/32")
    data = base()
    data["network"] = {"pods_cidr": "10.10.0.0/14"}
    one_problem(data, "network.pods_cidr", "host bits set", "10.8.0.0/14")


@pytest.mark.parametrize(("name", "ok"), [("a" * 47, True), ("a" * 48, False), ("1job", False)])
def test_job_names_follow_kuberay(name: str, ok: bool) -> None:
    """RayJob names are DNS-1035 labels of at most 47 characters (KubeRay constant.go
    MaxRayJobNameLength, validation.go ValidateRayJobMetadata)."""
    from components.stack.loader import validate

    data = base()
    data["jobs"][0]["name"] = name
    if ok:
        assert validate(data).jobs[0].name == name
    else:
        one_problem(data, "job name", "1-47", "starting with a letter")


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("region", "us-east9", "did you mean us-east5"),
        ("zones", ["us-central1-z"], "its zones: us-central1-a"),
        ("buckets", {"location": "us-centrall"}, "not a Cloud Storage location"),
    ],
)
def test_regions_zones_and_bucket_locations_are_real(key: str, value: object, needle: str) -> None:
    """Regions and zones from the catalog's dated record
    (https://cloud.google.com/compute/docs/regions-zones); bucket locations are regions,
    multi-regions or predefined dual-regions (https://cloud.google.com/storage/docs/locations).
    GCP refuses the others at `pulumi up`."""
    data = base()
    data[key] = value
    one_problem(data, needle)


def test_every_catalog_accelerator_zone_is_a_recorded_zone() -> None:
    from components import catalog

    for acc in [*catalog.TPU_GENERATIONS.values(), *catalog.GPU_TYPES.values()]:
        for z in acc.zones:
            assert catalog.zone_problem(z, z.rsplit("-", 1)[0]) is None, z


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("disk_size_gb", 10, "must be from 20 to 65536; got 10"),
        ("max_nodes", 5000, "must be from 1 to 4000; got 5000"),
        ("min_nodes", -1, "must be from 0 to 4000; got -1"),
    ],
)
def test_an_out_of_range_number_names_both_ends_of_its_range(key: str, value: int, says: str):
    """Not the library's one-sided ``Input should be greater than or equal to 20``: the field's
    whole range, from its ``Field(ge=, le=)``, and the value given."""
    d = base()
    d["node_pools"][0][key] = value
    one_problem(d, f"node_pools[cpu].{key}", says)


def test_a_key_of_another_pool_kind_says_which_kinds_take_it() -> None:
    """``gpu_networking`` on a CPU pool is no misspelling: the problem names the kind that takes
    it; a key no kind has still asks for its spelling."""
    d = base()
    d["node_pools"][0]["gpu_networking"] = "auto"
    one_problem(
        d,
        "node_pools[cpu].gpu_networking",
        "'gpu_networking' is a key of gpu pools only, not of a cpu pool",
    )
    d = base()
    d["node_pools"][0]["zzz"] = 1
    one_problem(d, "node_pools[cpu].zzz", "unknown key 'zzz' (check its spelling")
