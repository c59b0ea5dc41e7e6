"""No key without an effect: changing any leaf of the shipped stacks (Pulumi.dev.yaml,
Pulumi.prod.yaml) to another valid value changes what the program renders (resource records and
outputs, which hold every manifest), unless the key is on :data:`STEERS_CHECKS_ONLY`; ``local.*``
keys change the local target (``raygke.local.cluster.make_target``) instead.

A change whose Kubernetes objects (the Ray CRs, Kueue's objects, ComputeClasses, the namespace and
its guard rails, PodMonitorings: :data:`PURE_KINDS`) differ from the baseline's has an effect
without running the program: every program run of the sweep asserts that its records of those
kinds are exactly the pure renders' objects. Only a change with the same objects runs the program.

Leaves are those of the validated model, so keys left at their default in the files are covered
too: every leaf written in a file must have an effect where it is written; a leaf only defaulted
must have an effect in at least one place the files reach it (e.g. ``shutdown_after_job_finishes``
only matters for a job that brings its own RayCluster).
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from components.capacity.render import render_capacity
from components.computeclass.render import render_compute_classes
from components.config.images import IMAGE_KINDS
from components.config.stack import StackConfig
from components.gcsft.render import ft_enabled, redis_objects
from components.images.render import BASE_SUFFIX
from components.kernel.base import StackConfigError
from components.monitoring.render import render_monitoring
from components.plan.plan import plan
from components.raycrs import component as raycrs_component
from components.raycrs.archive import working_dir_uri, workloads_archive
from components.raycrs.ingress import render_service_objects
from components.raycrs.render import render_manifests
from components.stack.loader import stack_data_from_yaml, validate
from raygke.local.cluster import make_target
from raygke.synth import config_entries, run_program
from tests.components.kuberay.test_namespace import guards, namespaces
from tests.helpers import ROOT, STACKS

# Keys that only steer checks (nothing rendered may change), by schema path:
STEERS_CHECKS_ONLY = {
    # accepts a TPU/GPU zone the catalog does not list (the zone rule in components/stack/rules.py)
    "node_pools[].allow_unlisted_zone",
    # says the KubeRay TPU webhook is installed, which the multi-host TPU rule asks for in helm mode
    "kuberay.tpu_webhook",
    # the pool kind discriminator: each kind has one value, implied by a tpu:/gpu: block
    "node_pools[].kind",
    # the CPU architectures a prebuilt image is built for: the arm64 GPU pool rule only
    # (gpu_pool_arch_has_image in components/stack/rules.py); the pod selects the node's arch
    "ray.images.gpu.architectures",
    "ray.images.cpu.architectures",
    "ray.images.tpu.architectures",
    "ray.images.gpu-tf.architectures",
    "ray.images.tpu-serve.architectures",
    "ray.images.cpu-serve.architectures",
    # allows a public GatewayClass (service_gateway_not_public, components/raycrs/rules.py):
    # refused with an internal class, required with a public one; the class is what renders
    "services[].gateway.public",
}
# A maintenance exclusion for a stack that declares none (cluster.maintenance_exclusions).
EXCLUSION = {
    "name": "run",
    "start_time": "2026-12-01T00:00:00Z",
    "end_time": "2026-12-08T00:00:00Z",
}
# Keys of the local environment (`raygke local`): they must change the local target instead.
LOCAL_PREFIX = "local."

Path = tuple[Any, ...]


def _stack_data(name: str) -> dict[str, Any]:
    return stack_data_from_yaml((ROOT / f"Pulumi.{name}.yaml").read_text())


def _get(data: Any, path: Path) -> Any:
    for p in path:
        data = data[p]
    return data


def _has(data: Any, path: Path) -> bool:
    for p in path:
        found = (isinstance(data, dict) and p in data) or (
            isinstance(data, list) and isinstance(p, int) and p < len(data)
        )
        if not found:
            return False
        data = data[p]
    return True


def _set(data: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    """A deep copy of ``data`` with ``path`` set (mappings on the way created)."""
    out = copy.deepcopy(data)
    node: Any = out
    for p in path[:-1]:
        node = node.setdefault(p, {}) if isinstance(node, dict) else node[p]
    node[path[-1]] = value
    return out


def _schema(path: Path) -> str:
    """``('node_pools', 1, 'tpu', 'topology')`` -> ``node_pools[].tpu.topology``; an entry of a
    free mapping (labels, resource limits, args, bucket roles) is ``<mapping>.*``: its entries
    share one meaning."""
    out = ""
    for i, p in enumerate(path):
        if isinstance(p, int):
            out += "[]"
        elif i and _is_free_mapping(path[:i]):
            out += ".*"
        else:
            out += f".{p}" if out else str(p)
    return out


def _leaves(value: Any, path: Path, dict_leaf: Callable[[Path], bool]) -> Iterator[Path]:
    """Paths of the leaves of a model dump: scalars, lists of scalars, and mappings of free keys
    (labels, resource limits, args) entry by entry (the whole mapping when empty)."""
    if isinstance(value, dict) and (not dict_leaf(path) or value):
        for k, v in value.items():
            yield from _leaves(v, (*path, k), dict_leaf)
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i), dict_leaf)
    else:
        yield path


FREE_MAPPINGS = {
    "labels",
    "resource_limits",
    "args",
    "buckets",
    # capacity.cluster_queues[].flavors[]: quota per resource
    "nominal",
    "borrowing_limit",
    "lending_limit",
}


def _is_free_mapping(path: Path) -> bool:
    return bool(path) and path[-1] in FREE_MAPPINGS and _schema(path) != "buckets"


def _model_leaves(data: dict[str, Any]) -> list[Path]:
    dump = _validated(data).model_dump(mode="json", by_alias=True)
    return list(_leaves(dump, (), _is_free_mapping))


# ------------------------------------------------------------------------ alternative values

ZONE = re.compile(r"^(.*)-([a-f])$")


def _names(data: dict[str, Any], key: str) -> list[str]:
    return [x["name"] for x in data.get(key, [])]


def _rename_everywhere(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {k: _rename_everywhere(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename_everywhere(v, old, new) for v in value]
    return new if value == old else value


def _region_variants(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    old = data["region"]
    for new in ("us-east5", "us-central1", "us-east1", "us-west4", "europe-west4"):
        if new != old:
            text = json.dumps(data).replace(f'"{old}-', f'"{new}-').replace(f'"{old}"', f'"{new}"')
            yield json.loads(text)


def _unlisted_zones_ok(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``allow_unlisted_zone`` on every accelerator pool: it renders nothing (see
    :data:`STEERS_CHECKS_ONLY`), so a zone or accelerator change is not refused by the catalog's
    zone list alone."""
    out = copy.deepcopy(data)
    for p in out.get("node_pools", []):
        if "tpu" in p or "gpu" in p:
            p["allow_unlisted_zone"] = True
    return out


def _full(data: dict[str, Any]) -> dict[str, Any]:
    """The stack with every default written out (renders the same)."""
    return _validated(data).model_dump(mode="json", by_alias=True, exclude_none=True)


def _candidates(data: dict[str, Any], path: Path) -> Iterator[dict[str, Any]]:
    for variant in _candidates_of(data, path):
        if variant != data:
            yield variant
            yield _unlisted_zones_ok(variant)


def _own_cluster(data: dict[str, Any], job_path: Path) -> dict[str, Any]:
    """``data`` with the job at ``job_path`` moved off its RayCluster onto its own, on the node
    pool of the worker group it used."""
    job = _get(data, job_path)
    group = next(
        wg
        for rc in data["ray_clusters"]
        if rc["name"] == job["cluster"]
        for wg in rc["worker_groups"]
        if wg["name"] == job.get("worker_group")
    )
    moved = {k: v for k, v in job.items() if k not in ("cluster", "worker_group")}
    return _set(data, job_path, {**moved, "node_pool": group["node_pool"]})


def _candidates_of(data: dict[str, Any], path: Path) -> Iterator[dict[str, Any]]:
    """Changed copies of ``data`` where ``path`` holds another value (some also adjust the keys
    that must change with it: references to a renamed object, images with the Ray version)."""
    schema, key = _schema(path), path[-1]
    value = _get(data, path) if _has(data, path) else _get_dumped(data, path)
    if schema == "region":
        yield from _region_variants(data)
        return
    if schema == "ray.version":
        new = "2.61.0"
        out = _set(data, path, new)
        for kind, image in (data.get("ray", {}).get("images") or {}).items():
            ref = image if isinstance(image, str) else image["image"]
            out["ray"]["images"][kind] = {"image": ref.replace(value, new)}
        # the repository locks one Ray version for the images it builds (ray_version_locked):
        # another version comes with prebuilt images for the kinds it would build
        images = out["ray"].setdefault("images", {})
        for kind in IMAGE_KINDS:
            suffix = _image_suffix(kind)
            images.setdefault(kind, {"image": f"rayproject/ray:{new}{suffix}@sha256:{'0' * 64}"})
        yield out
        return
    if schema.startswith("ray.images.") and value is None:
        # a prebuilt image instead of the project's (by digest: prod refuses tags)
        suffix = _image_suffix(path[-1])
        version = _get_dumped(data, ("ray", "version"))
        yield _set(data, path, f"rayproject/ray:{version}{suffix}@sha256:{'0' * 64}")
        return
    if schema.startswith("ray.images."):
        yield _set(data, path, str(value).replace("-py311", "-py312"))
        return
    if schema == "jobs[].cluster" and value is not None:
        yield _own_cluster(data, path[:-1])
        return
    if key == "service_account" and value is not None:  # a copy of the identity, named anew
        full = _full(data)
        ident = next(w for w in full["workload_identities"] if w["name"] == value)
        full["workload_identities"].append({**ident, "name": f"{value}-b"})
        yield _set(full, path, f"{value}-b")
        return
    if schema == "kuberay.mode" and value == "gke-addon":
        yield _set(_set(data, path, "helm"), ("kuberay", "tpu_webhook"), True)
        return
    if schema == "jobs[].workload":  # another workload, with its default args
        for new in ("train_lm", "evaluate", "prepare", "train_lm_jax"):
            if new != value:
                yield _set(_set(data, path, new), (*path[:-1], "args"), {})
        return
    if schema == "services" and value == []:  # a vLLM service on a GPU pool, a trainer's model
        pool = next(p["name"] for p in data["node_pools"] if "gpu" in p)
        job = next(j["name"] for j in data["jobs"] if j["workload"].startswith("train_lm"))
        svc = {"name": "lm", "checkpoint": job, "node_pool": pool}
        yield _set(data, path, [{**svc, "args": {"tensor_parallel_size": 1}}])
        return
    if schema == "services[].hf_model" and value is None:  # a Hub model instead of the checkpoint
        out = _set(data, path, "Qwen/Qwen2.5-0.5B-Instruct")
        yield _set(out, (*path[:-1], "checkpoint"), None)
        return
    if schema == "services[].hf_model":
        yield _set(data, path, "Qwen/Qwen2.5-1.5B-Instruct")
        return
    if schema == "services[].hf_revision":
        yield _set(data, path, "v2" if value else "main")
        return
    if schema in ("services[].hf_token_secret", "jobs[].hf_token_secret") and value is None:
        yield _set(data, path, HUB_TOKEN_SECRET)
        return
    if schema == "services[].gateway" and value is None:
        yield _set(data, path, {})
        return
    if schema == "services[].node_pool":
        # another GPU pool (vLLM refuses multi-host TPU slices; a CPU pool takes other
        # arguments: tensor_parallel_size 1, the pod's memory), one GPU per replica so any
        # trained model's heads divide the tensor-parallel size
        svc = _get(data, path[:-1])
        for pool in (p["name"] for p in data["node_pools"] if "gpu" in p and p["name"] != value):
            out = _set(data, path, pool)
            yield _set(
                out, (*path[:-1], "args"), {**svc.get("args", {}), "tensor_parallel_size": 1}
            )
        return
    if schema == "services[].incremental_upgrade" and value is None:
        # needs kuberay.mode helm (the chart's feature gate; refused with the GKE add-on), and
        # with helm the TPU webhook is the stack's to install
        inc = {"gateway_class_name": "gke-l7-rilb", "step_size_percent": 20}
        out = _set(data, path, inc)
        out = _set(out, (*path[:-1], "upgrade_strategy"), "NewClusterWithIncrementalUpgrade")
        kuberay = {**out.get("kuberay", {}), "mode": "helm", "tpu_webhook": True}
        yield _set(out, ("kuberay",), kuberay)
        return
    if schema == "services[].upgrade_strategy":
        # another strategy than the one in effect (unset: incremental with a gateway); the
        # incremental options are refused with another strategy, so they go with it
        svc = _validated(data).services[path[1]]
        for new in ("NewCluster", "None", "NewClusterWithIncrementalUpgrade"):
            if new == svc.strategy:
                continue
            out = _set(data, path, new)
            if new != "NewClusterWithIncrementalUpgrade":
                out = _set(out, (*path[:-1], "incremental_upgrade"), None)
            yield out
        return
    if schema in ("node_pools[].max_nodes", "node_pools[].max_slices"):
        # one less, with the worker groups on the pool clamped to it (the GKE pools change anyway)
        pool = _get(data, path[:-1])["name"]
        out = _set(data, path, value - 1)
        for rc in out.get("ray_clusters", []):
            for wg in rc["worker_groups"]:
                if wg["node_pool"] == pool and wg.get("max_replicas", 0) > value - 1:
                    wg["max_replicas"] = value - 1
        yield out
    if key in ("nominal", "borrowing_limit", "lending_limit") or (
        len(path) > 1 and path[-2] in ("nominal", "borrowing_limit", "lending_limit")
    ):  # a quota: another amount, or one resource given
        if isinstance(value, dict):
            yield _set(data, path, {"cpu": "7"})
        else:
            yield _set(data, path, "7" if str(value) != "7" else "9")
        return
    if schema == "node_pools[].reservation":
        yield _set(_set(data, path, "res-a"), (*path[:-1], "provisioning"), "reservation")
        return
    if schema == "capacity.priority_classes" and value == []:  # dev declares none
        yield _set(data, path, [{"name": "team", "value": 10}])
        return
    if schema == "compute_classes" and value == []:  # a class on the first TPU/GPU pool
        pool = next(p["name"] for p in data["node_pools"] if "tpu" in p or "gpu" in p)
        yield _set(data, path, [{"name": "fallback", "node_pool": pool, "fallback": ["spot"]}])
        return
    if schema == "compute_classes[].fallback":
        for new in (["spot"], ["flex-start"], ["on-demand", "flex-start", "spot"]):
            if new == value:
                continue
            out = _set(data, path, new)
            if "flex-start" not in new:
                out = _set(out, (*path[:-1], "max_run_duration_seconds"), None)
            yield out
        return
    if schema == "compute_classes[].reservation" and value is None:
        fallback = _get_dumped(data, (*path[:-1], "fallback"))
        out = _set(data, (*path[:-1], "fallback"), ["reservation", *fallback])
        yield _set(out, path, "res-a")
        return
    if schema == "compute_classes[].node_pool_auto_creation" and value is True:
        out = _set(data, (*path[:-1], "fallback"), [])
        out = _set(out, (*path[:-1], "max_run_duration_seconds"), None)
        yield _set(out, path, False)
        return
    if schema == "cluster.maintenance_exclusions" and value == []:  # dev declares none
        yield _set(data, path, [EXCLUSION])
        return
    if schema.startswith("cluster.maintenance_exclusions[]."):  # RFC 3339 times, one end
        if key == "start_time":
            yield _set(data, path, "2026-11-01T00:00:00Z")
        elif key in ("end_time", "until_end_of_support"):  # the other kind of end
            eos = not _get_dumped(data, path[:-1])["until_end_of_support"]
            out = _set(data, (*path[:-1], "until_end_of_support"), eos)
            yield _set(out, (*path[:-1], "end_time"), None if eos else "2027-01-01T00:00:00Z")
        elif key == "scope":
            for new in ("NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES", "NO_UPGRADES"):
                if new != value:
                    yield _set(data, path, new)
        else:
            yield _set(data, path, f"{value}x")
        return
    if schema.startswith("buckets.") and key in (
        "hierarchical_namespace",
        "fuse_profile",
        "file_cache_size",
        "versioning",
        "noncurrent_version_days",
    ):  # (a bucket block the file may leave out; HNS, on for checkpoints, refuses versioning)
        news = {
            "hierarchical_namespace": [path[-2] != "checkpoints"],  # not the purpose's default
            "fuse_profile": ["model", "plain", "dataset"],
            "file_cache_size": ["1Gi", "0"],
            "versioning": [not value],
            "noncurrent_version_days": [3, 5],
        }[key]
        for new in news:
            if new == value:
                continue
            out = _set(data, path, new)
            if key in ("versioning", "noncurrent_version_days") and new:
                out = _set(out, (*path[:-1], "hierarchical_namespace"), False)
                if key == "noncurrent_version_days":
                    out = _set(out, (*path[:-1], "versioning"), True)
            yield out
        return
    if schema == "capacity.topology":
        for new in ("required", "preferred", "off"):
            if new != value:
                yield _set(data, path, new)
        return
    if schema == "node_pools[].super_slicing" and value is False:
        out = _super_slicing_pool(data, path[:-1])
        if out is not None:
            yield out
        return
    if schema == "jobs[].super_slice" and value is None:  # both cubes of the pool as one slice
        yield _set(data, path, "4x4x8")
        return
    if schema == "jobs[].slices" and value is None:  # a TPU job on 1 slice, or elastic 1-2
        yield _set(data, path, {"min": 1, "max": 1})
        yield _set(data, path, {"min": 1, "max": 2})
        return
    if isinstance(value, bool):
        yield _set(data, path, not value)
    elif isinstance(value, int):
        for new in (value + 1, value - 1, value * 2, value + 30, value // 2, 1, 2, 4):
            yield _set(data, path, new)
    elif isinstance(value, dict):  # an empty free mapping
        for new in (
            {"team": "x"},
            {"cpu": 4096},
            {"steps": 3},
            {"context_length": 128},
            {"seed": 1},
        ):
            yield _set(data, path, new)
    elif isinstance(value, list):  # zones, readers, an empty list of authorized networks
        if key == "master_authorized_networks":
            yield _set(data, path, [*value, {"name": "office", "cidr": "198.51.100.0/24"}])
        elif key == "cidrs":  # kuberay.serve_from.cidrs
            yield _set(data, path, [*value, "10.128.0.0/16"])
        elif key == "namespaces":  # kuberay.serve_from.namespaces
            yield _set(data, path, [*value, "gateway"])
        elif key == "zones" or schema.endswith(".zones"):
            zones = value or data["zones"]
            m = ZONE.match(zones[0])
            for s in "abcdf":
                other = f"{m.group(1)}-{s}"
                if other not in zones:
                    yield _set(data, path, [other])
                    # (a TPU pool uses its first zone only: an added zone changes nothing there)
                    yield _set(data, path, [*zones, other])
        else:
            for new in ([], *([n] for n in _names(data, "workload_identities"))):
                yield _set(data, path, new)
    elif value is None:
        table: dict[str, list[Any]] = {
            "zones": [[data["zones"][-1]]],
            "min_master_version": ["1.35.1-gke.1000000", "1.34"],
            "prefix": ["acme-ray"],
            "location": ["US", "EU"],
            "active_deadline_seconds": [7200],
            "ttl_seconds_after_finished": [0, 30, 120],
            "shutdown_after_job_finishes": [False, True],
            "noncurrent_version_days": [3],
            "delete_after_days": [30],
            "machine_type": ["g2-standard-8", "a3-megagpu-8g", "g2-standard-16"],
            "max_replicas": [1, 2],
            "cpu": ["1"],
            "memory": ["2Gi"],
            "worker_group": [],
            "gpus": [4],  # kuberay.quota.*
            "tpus": [8],
            "pods": [100],
            "object_store_memory": ["1Gi"],
            "spill_dir": ["/mnt/ray-spill"],
            "placement_strategy": ["SPREAD", "STRICT_PACK"],
            "max_run_duration": ["1d"],
            "cohort": ["shared"],
            "hostname": ["lm.internal.example.com"],  # services[].gateway.hostname
            "gcs_port": [6390],  # local.*: unset = a free port; a fixed one is the other value
            "dashboard_port": [8276],
        }
        if key == "queue":
            for q in (data.get("capacity") or {}).get("local_queues", []):
                yield _set(data, path, q["name"])
        if key == "priority":
            for p in (data.get("capacity") or {}).get("priority_classes", []):
                yield _set(data, path, p["name"])
        for new in table.get(key, []):
            yield _set(data, path, new)
        job = _get(data, path[:-1])
        if key == "cluster" and job.get("node_pool"):  # move the job onto a RayCluster
            for rc in data.get("ray_clusters", []):
                for wg in rc.get("worker_groups", []):
                    if wg["node_pool"] == job["node_pool"]:
                        moved = {**job, "cluster": rc["name"], "worker_group": wg["name"]}
                        moved.pop("node_pool")
                        yield _set(data, path[:-1], moved)
        if key == "node_pool" and job.get("cluster"):
            yield _own_cluster(data, path[:-1])
    else:
        value = str(value)
        literals = {
            "release_channel": ["STABLE", "REGULAR", "RAPID"],
            "aggregation_interval": ["INTERVAL_1_MIN", "INTERVAL_5_SEC"],
            "flow_sampling": [0.25, 1.0],
            "gpu_flow_sampling": [0.25, 1.0],
            "autoscaling_profile": ["BALANCED", "OPTIMIZE_UTILIZATION"],
            "provisioning": ["spot", "on-demand", "queued", "flex-start"],
            "queueing_strategy": ["StrictFIFO", "BestEffortFIFO"],
            "max_run_duration": ["1d", "3d"],
            "pool": ["system", *(p["name"] for p in data.get("node_pools", []))],
            "queue": [q["name"] for q in (data.get("capacity") or {}).get("local_queues", [])],
            "priority": [
                p["name"] for p in (data.get("capacity") or {}).get("priority_classes", [])
            ],
            "cluster_queue": [
                q["name"] for q in (data.get("capacity") or {}).get("cluster_queues", [])
            ],
            "mode": ["gke-addon", "helm"],
            "metadata": ["EXCLUDE_ALL_METADATA", "INCLUDE_ALL_METADATA"],
            "driver_version": ["DEFAULT", "LATEST"],
            "datasets": ["read", "write"],
            "checkpoints": ["read", "write"],
            "artifacts": ["read", "write"],
            "generation": ["v5e", "v6e", "v5p", "v4"],
            "topology": ["2x4", "2x2", "4x4", "1x1", "4x8"],
            "type": ["nvidia-l4", "nvidia-h100-80gb", "nvidia-a100-80gb"],
            "machine_type": ["n2-standard-16", "e2-standard-16", "n2-standard-8"],
            "chart_version": ["1.6.2"],
            "start_time": ["05:30"],
            "min_master_version": ["1.35.1-gke.1000000", "1.34"],
            "cpu": ["3", "1"],
            "memory": ["12Gi", "4Gi"],
            "workload": ["train_lm", "evaluate", "prepare", "train_lm_jax", "train_lm_tf"],
            "service_account": _names(data, "workload_identities"),
            "node_pool": [p["name"] for p in data.get("node_pools", [])],
            "worker_group": [
                wg["name"] for rc in data.get("ray_clusters", []) for wg in rc["worker_groups"]
            ],
            "location": ["US", "EU"],
            "cidr": ["198.51.100.0/24"],
            "subnet_cidr": ["10.11.0.0/20"],
            "pods_cidr": ["10.24.0.0/14"],
            "services_cidr": ["10.21.0.0/20"],
            "master_ipv4_cidr": ["172.16.0.16/28"],
            "gpu_cidr": ["172.20.0.0/16"],  # network.gpu_cidr: prod's H100 pools' subnets
            "gpu_networking": ["off", "tcpx", "gpudirect"],  # node_pools[]: prod's A3 High pools
            "defaults": ["2026-12-02"],  # older defaults: prod's H100 pools keep one NIC
            "root": ["/tmp/raygke-other"],
            "data": ["gs://other/text/"],
            "pod_security": ["baseline", "restricted"],  # kuberay.pod_security
            "default_cpu": ["2"],  # kuberay.limit_range.*
            "default_memory": ["2Gi"],
            "default_request_cpu": ["200m"],
            "default_request_memory": ["512Mi"],
            "upgrade_strategy": ["None", "NewCluster"],
            "when_unsatisfiable": ["ScaleUpAnyway", "DoNotScaleUp"],  # compute_classes[]
            "checkpoint": _names(data, "jobs"),
            "file_cache_medium": ["memory", "ephemeral"],  # buckets.file_cache_medium
            # gcs_fault_tolerance.* (the Memorystore instance), network.psa_cidr (its range,
            # disjoint from the other ranges), a service gateway's proxy-only subnet
            "tier": ["BASIC", "STANDARD_HA"],
            "redis_version": ["REDIS_7_0", "REDIS_6_X", "REDIS_7_2"],
            "psa_cidr": ["10.32.0.0/20"],
            "proxy_subnet_cidr": ["10.130.0.0/23"],
            # an internal class (a public one needs gateway.public)
            "gateway_class_name": ["gke-l7-rilb", "gke-l7-rilb-mc"],
        }
        for new in literals.get(key, []):
            if new != value:
                yield _set(data, path, new)
        new = f"{value}x" if key != "project" else "ray-gke-other"
        yield _set(data, path, new)
        if key == "name" or key in ("project",):
            renamed = _rename_everywhere(_full(data), value, new)
            yield _set(renamed, path, new)


def _super_slicing_pool(data: dict[str, Any], pool_path: Path) -> dict[str, Any] | None:
    """``data`` with the TPU pool at ``pool_path`` made a TPU7x 4x4x4 super-slicing pool (a
    reservation, the zone accepted as unlisted, the cluster on RAPID at the version dynamic
    slicing needs, NAP off, its flavors' TPU quota one cube per slice), None for a pool Kueue does not queue: super-slicing is
    refused elsewhere (components/capacity/superslice.py)."""
    from components.capacity.superslice import MIN_GKE_VERSION

    pool = _get(data, pool_path)
    if "tpu" not in pool:
        return None
    flavors = {
        f["pool"]
        for q in (data.get("capacity") or {}).get("cluster_queues", [])
        for f in q["flavors"]
    }
    if pool["name"] not in flavors:
        return None
    out = _full(data)
    p = _get(out, pool_path)
    p.update(
        tpu={"generation": "tpu7x", "topology": "4x4x4"},
        provisioning="reservation",
        reservation="ironwood",
        allow_unlisted_zone=True,
        super_slicing=True,
    )
    p.pop("max_run_duration", None)
    out["cluster"] = {
        **out["cluster"],
        "release_channel": "RAPID",
        "min_master_version": MIN_GKE_VERSION,
    }
    out["nap"] = {**out["nap"], "enabled": False}  # NAP's limits would not cover the cubes
    cube = 64 * p.get("max_slices", 1)  # chips of the pool's cubes
    for q in out["capacity"]["cluster_queues"]:
        for f in q["flavors"]:
            if f["pool"] == p["name"]:
                f["nominal"] = {**f["nominal"], "google.com/tpu": cube}
                f.pop("borrowing_limit", None)
    return out


def _get_dumped(data: dict[str, Any], path: Path) -> Any:
    dump = _validated(data).model_dump(mode="json", by_alias=True)
    return _get(dump, path)


# canonical JSON of the data -> its validated model, or the StackConfigError validating it raised: a
# variant is validated by _valid, then by _pure_objects, the same data again by _get_dumped and
# _full; validation is a pure function of the data. Models are read only, never mutated.
_VALIDATED: dict[str, StackConfig | StackConfigError] = {}


def _validated(data: dict[str, Any]) -> StackConfig:
    """:func:`validate` of ``data``, once per data (raises its StackConfigError again)."""
    key = json.dumps(data, sort_keys=True, default=repr)
    if key not in _VALIDATED:
        try:
            _VALIDATED[key] = validate(data)
        except StackConfigError as e:
            _VALIDATED[key] = e
    out = _VALIDATED[key]
    if isinstance(out, StackConfigError):
        raise out.with_traceback(None)
    return out


def _valid(data: dict[str, Any]) -> bool:
    try:
        _validated(data)
    except StackConfigError:
        return False
    return True


# (stack, the data as canonical JSON) -> its render: the same variant recurs (a context maker's
# baseline per occurrence and per key, a candidate shared by two occurrences); the program is a
# pure function of its config, so one run each. Compared only, never mutated.
_RENDERS: dict[tuple[str, str], tuple[list[dict], dict]] = {}
# "run" / "reused" / "objects" (decided by the pure objects, no run), for the record (pytest -s)
RENDER_RUNS: Counter[str] = Counter()


# The kinds of the Kubernetes objects the program applies as pure renders give them (the Ray
# namespace and its guard rails, Kueue's objects, ComputeClasses, the Ray CRs, PodMonitorings).
PURE_KINDS = frozenset(
    {
        "Namespace",
        "LimitRange",
        "ResourceQuota",
        "NetworkPolicy",
        "Topology",
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
        "WorkloadPriorityClass",
        "AdmissionCheck",
        "ProvisioningRequestConfig",
        "ComputeClass",
        "RayCluster",
        "RayJob",
        "RayService",
        "PodMonitoring",
        "SecretProviderClass",
        "Gateway",
        "HTTPRoute",
    }
)
_OBJECTS: dict[str, list[str]] = {}


def _masked(value: Any) -> Any:
    """``value`` with every ``image`` replaced: the program's images are the mocked builds'
    digests, the offline render's the planned references."""
    if isinstance(value, dict):
        return {k: "<image>" if k == "image" else _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def _pure_objects(data: dict[str, Any]) -> list[str]:
    """The stack's :data:`PURE_KINDS` objects rendered without Pulumi (images masked), sorted
    canonical JSON. :func:`_render` asserts that they are exactly the program's records of those
    kinds, so objects that differ mean renders that differ, at a few percent of a render's cost."""
    key = json.dumps(data, sort_keys=True, default=repr)
    if key not in _OBJECTS:
        cfg = _validated(data)
        _, sha = workloads_archive()
        objects = [
            *namespaces(cfg),
            *guards(cfg),
            *render_capacity(plan(cfg), cfg.capacity),
            *render_compute_classes(plan(cfg)),
            *render_service_objects(plan(cfg).context, cfg.services, cfg.jobs),
            *redis_objects(plan(cfg), ft_enabled(cfg.gcs_fault_tolerance, cfg.services)),
            *render_manifests(cfg, working_dir_uri(plan(cfg).context, sha)),
            *render_monitoring(plan(cfg), cfg.cluster),
        ]
        assert {o["kind"] for o in objects} <= PURE_KINDS, "a kind PURE_KINDS does not list"
        _OBJECTS[key] = sorted(json.dumps(_masked(o), sort_keys=True) for o in objects)
    return _OBJECTS[key]


def _record_objects(records: list[dict]) -> list[str]:
    """The program's records of :data:`PURE_KINDS` objects (images masked), as
    :func:`_pure_objects` gives them."""
    return sorted(
        json.dumps(_masked(r["inputs"]), sort_keys=True)
        for r in records
        if r["type"].startswith("kubernetes:") and r["type"].rsplit(":", 1)[1] in PURE_KINDS
    )


def _render(data: dict[str, Any], stack: str) -> tuple[list[dict], dict]:
    """The program's render of ``data``, the KubeRay CRDs' specs as their digests (``crd_specs=
    "digest"``: group, names, version names and the sha256 of the whole spec, so any change to
    a CRD still shows) at a fraction of the time: the schemas are ~6 MB that every helm-mode
    render would serialise."""
    key = (stack, json.dumps(data, sort_keys=True, default=repr))
    if key in _RENDERS:
        RENDER_RUNS["reused"] += 1
        return _RENDERS[key]
    RENDER_RUNS["run"] += 1
    gcp = {"project": data["project"], "region": data["region"]}
    _RENDERS[key] = out = run_program(config_entries(data, gcp), stack, crd_specs="digest")
    assert _record_objects(out[0]) == _pure_objects(data), (
        f"{stack}: the program applies Kubernetes objects other than the pure renders' "
        "(the sweep's shortcut in _changed would be unsound)"
    )
    return out


# ------------------------------------------------------------------------------------- tests


def _occurrences() -> dict[str, list[tuple[str, Path, bool]]]:
    """schema path -> [(stack, path, written in the file)] over both shipped stacks."""
    out: dict[str, list[tuple[str, Path, bool]]] = {}
    for name in STACKS:
        data = _stack_data(name)
        for path in _model_leaves(data):
            out.setdefault(_schema(path), []).append((name, path, _has(data, path)))
    return out


def _local_target(name: str, data: dict[str, Any]) -> Any:
    """The local target of a stack's data, its ports as the stack file gives them (None: a
    free port each run picks, so two targets of one file compare equal)."""
    import dataclasses

    local = _validated(data).local
    target = make_target(name, local)
    return dataclasses.replace(target, gcs_port=local.gcs_port, dashboard_port=local.dashboard_port)


def _changed(
    name: str, path: Path, baseline: Any, data: dict[str, Any] | None = None
) -> tuple[bool | None, str]:
    """(whether some valid other value at ``path`` changes the render; None if there is none).
    ``data``: the stack's data (default the shipped file's)."""
    data = _stack_data(name) if data is None else data
    tried = 0
    for variant in _candidates(data, path):
        if variant == data or not _valid(variant):
            continue
        tried += 1
        if _schema(path).startswith(LOCAL_PREFIX):
            before, after = (_local_target(name, d) for d in (data, variant))
            return before != after, "local target"
        # other Kubernetes objects are another render (see _pure_objects); the same objects
        # may still come with other GKE, IAM or storage resources: run the program
        if _pure_objects(variant) != _pure_objects(data):
            RENDER_RUNS["objects"] += 1
            return True, "render"
        if _render(variant, name) != baseline:
            return True, "render"
        if tried >= 2:
            break
    return (None if tried == 0 else False), "render"


# Written occurrences known to have no effect where they are written: (stack, dotted path) -> why.
# KNOWN GAP, reported to the lead: `worker_group` of a job on a long-lived RayCluster only feeds
# the workload's scaling arguments (components/raycrs/rayjob.job_args); `prepare` takes none, so for it
# the key changes nothing (the RayJob has clusterSelector only).
KNOWN_NO_EFFECT = {
    ("dev", "jobs.0.worker_group"): "prepare takes no scaling arguments",
    ("prod", "jobs.0.worker_group"): "prepare takes no scaling arguments",
}


def _image_suffix(kind: str) -> str:
    """The ``rayproject/ray`` tag suffix of a prebuilt image of ``kind`` (BASE_SUFFIX)."""
    return BASE_SUFFIX[kind]


def _with_tpu_service(data: dict[str, Any]) -> dict[str, Any] | None:
    """``data`` with its first service moved to a single-host v6e 2x4 slice pool (added, NAP's
    TPU and memory limits raised): the tpu-serve image is built and used only for a vLLM service
    on a TPU pool (components/images/render.py kinds_used); None without a service."""
    if not data.get("services"):
        return None
    out = copy.deepcopy(data)
    zone = next((p["zones"][0] for p in out["node_pools"] if "tpu" in p and p.get("zones")), None)
    pool = {"name": "v6e-serve", "tpu": {"generation": "v6e", "topology": "2x4"}, "max_slices": 1}
    if zone:
        pool["zones"] = [zone]
    out["node_pools"].append(pool)
    limits = out.setdefault("nap", {}).setdefault("resource_limits", {})
    limits["tpu-v6e-slice"] = limits.get("tpu-v6e-slice", 0) + 8
    limits["memory"] = limits.get("memory", 0) + 720
    limits["cpu"] = limits.get("cpu", 0) + 180
    svc = out["services"][0]
    svc.update(node_pool="v6e-serve", args={**svc.get("args", {}), "tensor_parallel_size": 1})
    return out


def _with_cpu_service(data: dict[str, Any]) -> dict[str, Any] | None:
    """``data`` with its first service moved to the stack's first CPU pool (vLLM's CPU build,
    tensor parallel 1): the cpu-serve image is built and used only for a vLLM service on a CPU
    pool (components/images/render.py kinds_used); None without a service or a CPU pool."""
    if not data.get("services"):
        return None
    out = copy.deepcopy(data)
    pool = next((p["name"] for p in out["node_pools"] if "tpu" not in p and "gpu" not in p), None)
    if pool is None:
        return None
    svc = out["services"][0]
    args = {k: v for k, v in svc.get("args", {}).items() if k != "tensor_parallel_size"}
    svc.update(node_pool=pool, args=args)
    return out


HUB_TOKEN_SECRET = "hf-token"


def _add_token_readers(data: dict[str, Any], readers: set[str]) -> None:
    """The Hub token secret in ``data`` (prod declares it already) read by ``readers`` too."""
    secrets = data.setdefault("secrets", [])
    found = next((s for s in secrets if s.get("name") == HUB_TOKEN_SECRET), None)
    if found is None:
        secrets.append({"name": HUB_TOKEN_SECRET, "readers": sorted(readers)})
    else:
        found["readers"] = sorted(set(found.get("readers", [])) | readers)


def _with_hub_service(data: dict[str, Any]) -> dict[str, Any] | None:
    """``data`` with its first service serving a Hub model (``hf_model``, no ``checkpoint``) and a
    ``secrets:`` entry its service account reads: ``hf_revision`` and ``hf_token_secret`` act
    only with ``hf_model``; None without a service."""
    if not data.get("services"):
        return None
    out = copy.deepcopy(data)
    svc = out["services"][0]
    svc.pop("checkpoint", None)
    svc["hf_model"] = "Qwen/Qwen2.5-0.5B-Instruct"
    reader = svc.get("service_account", "ray-serve")
    _add_token_readers(out, {reader})
    return out


def _with_hub_job(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with each train_lm job on its own cluster fine-tuning a Hub model
    (``args.init_model``) and a ``secrets:`` entry their service accounts read:
    ``jobs[].hf_token_secret`` acts only there (a job on a long-lived cluster is refused one)."""
    out = copy.deepcopy(data)
    readers = set()
    for job in out.get("jobs", []):
        if job["workload"] == "train_lm" and job.get("node_pool"):
            job["args"] = {**job.get("args", {}), "init_model": "owner/model"}
            readers.add(job.get("service_account", "ray-train"))
    _add_token_readers(out, readers)
    return out


def _with_tf_gpu_job(data: dict[str, Any]) -> dict[str, Any] | None:
    """``data`` plus a train_lm_tf job on its own cluster on the GPU pool of a GPU job (a copy of
    that job), None when the stack has no such job."""
    gpu_pools = {p["name"] for p in data["node_pools"] if "gpu" in p}
    job = next((j for j in data.get("jobs", []) if j.get("node_pool") in gpu_pools), None)
    if job is None:
        return None
    tf = {**job, "name": "tf-gpu", "workload": "train_lm_tf", "args": {}}
    return _set(data, ("jobs",), [*data["jobs"], tf])


# Schema paths whose effect needs something the shipped stacks do not have, and the change that
# adds it to a stack (None: not possible there); the key is measured on that stack against its
# render: path -> maker. The gpu-tf image is built and used only for a TensorFlow job on a GPU
# pool (components/images/render.py kinds_used), which neither shipped stack runs.
def _with_multi_host_tpu_job(data: dict[str, Any]) -> dict[str, Any] | None:
    """``data`` with its single-host TPU pools made 4x4 (multi-host) slices, the TPU webhook
    declared and NAP's TPU, cpu and memory limits raised to fit: ``jobs[].slices`` only acts on a multi-host TPU
    job (components/stack/rules.py job_slices_fit), and dev's TPU job runs on single-host v5e 2x2
    (prod's v6e job writes the key and is measured through ``jobs[].slices.min`` / ``.max``)."""
    out = copy.deepcopy(data)
    changed = False
    limits = out.setdefault("nap", {}).setdefault("resource_limits", {})
    for p in out.get("node_pools", []):
        if "tpu" in p and p["tpu"]["topology"] in ("1x1", "2x2", "2x4"):
            p["tpu"] = {**p["tpu"], "topology": "4x4"}
            gen = p["tpu"]["generation"]
            acc = {"v5e": "tpu-v5-lite-podslice", "v6e": "tpu-v6e-slice"}[gen]
            limits[acc] = max(limits.get(acc, 0), 16 * p.get("max_slices", 1))
            changed = True
    if not changed:
        return None
    out["kuberay"] = {**out.get("kuberay", {}), "tpu_webhook": True}
    for key, floor in (("cpu", 4096), ("memory", 16384)):
        limits[key] = max(limits.get(key, 0), floor)
    return out


def _with_super_slice_job(data: dict[str, Any]) -> dict[str, Any] | None:
    """``data`` with the pool of its first queued job on a two-slice TPU pool made a TPU7x
    super-slicing pool of two cubes (:func:`_super_slicing_pool`), the job at fixed slices:
    ``jobs[].super_slice`` only acts on a job with its own RayCluster on such a pool
    (components/capacity/superslice.py), which neither shipped stack has (Pulumi.scale.yaml
    does; its renders are checked in tests/raygke/test_synth_scale.py). None: no such job."""
    pools = {p["name"]: i for i, p in enumerate(data.get("node_pools", []))}
    for job in data.get("jobs", []):
        i = pools.get(job.get("node_pool"))
        pool = data["node_pools"][i] if i is not None else {}
        if job.get("queue") and "tpu" in pool and pool.get("max_slices", 1) >= 2:
            out = _super_slicing_pool(data, ("node_pools", i))
            if out is None:
                continue
            for j in out["jobs"]:
                if j["name"] == job["name"]:
                    j.pop("slices", None)
            return out
    return None


def _unqueued_jobs(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its jobs out of Kueue: Kueue owns a queued RayJob's ``suspend`` and requires
    ``shutdownAfterJobFinishes`` (components/capacity/rules.py), so those keys only act on a job
    no queue admits (every prod job and dev's GPU job are queued)."""
    out = copy.deepcopy(data)
    for job in out.get("jobs", []):
        job.pop("queue", None)
        job.pop("priority", None)
    return out


def _no_elastic_queued_work(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with no elastic queued work (RayClusters out of Kueue, jobs at fixed slices):
    ``capacity.kueue.elastic_jobs: false`` is refused while some is queued
    (components/capacity/rules.py ``elastic_problems``), and renders the gate off otherwise."""
    out = copy.deepcopy(data)
    for rc in out.get("ray_clusters", []):
        rc.pop("queue", None)
        rc.pop("priority", None)
    for job in out.get("jobs", []):
        if job.get("queue"):
            job.pop("slices", None)
    return out


def _class_pools_free(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with no on-demand/spot TPU or GPU pool listed as a Kueue flavor, so moving a
    ComputeClass to another pool changes no flavor's labels and quota checks with it (a class
    pool's flavor selects the class, components/capacity/render.py ``resource_flavor``; a
    queued pool never has a class: components/computeclass/rules.py
    ``compute_class_pools_not_queued``), and with the first ComputeClass only, so it may move
    onto another class's pool (a pool has at most one class: ``compute_class_pools``), falling
    back to Spot only (flex-start without queueing takes single-host TPU slices only, so a class
    with flex-start moves onto no multi-host TPU pool: components/catalog/capabilities.py)."""
    out = copy.deepcopy(data)
    out["compute_classes"] = [
        {**{k: v for k, v in c.items() if k != "max_run_duration_seconds"}, "fallback": ["spot"]}
        for c in out.get("compute_classes", [])[:1]
    ]
    accel = {
        p["name"]
        for p in out.get("node_pools", [])
        if ("tpu" in p or "gpu" in p) and p.get("provisioning") != "queued"
    }
    for q in (out.get("capacity") or {}).get("cluster_queues", []):
        q["flavors"] = [f for f in q["flavors"] if f["pool"] not in accel]
    return out


def _small_caches(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with 512 MiB file caches, so that moving them into memory fits every Ray pod
    beside its object store (components/storage/fuse.py ``_memory_cache_problems``)."""
    out = copy.deepcopy(data)
    buckets = out.setdefault("buckets", {})
    for purpose in ("datasets", "checkpoints"):
        buckets[purpose] = {**(buckets.get(purpose) or {}), "file_cache_size": "512Mi"}
    return out


def _new_cluster_services(data: dict[str, Any]) -> dict[str, Any] | None:
    """``data`` with its services behind a gateway upgraded with ``NewCluster`` (incremental
    options dropped): the stack's own Gateway and HTTPRoute, and so ``gateway.hostname``, exist
    only then (KubeRay's incremental-upgrade Gateway replaces them and matches every host:
    components/raycrs/rules.py ``incremental_upgrade_gateway``); None without such a service."""
    out = copy.deepcopy(data)
    services = [s for s in out.get("services", []) if s.get("gateway") is not None]
    for svc in services:
        svc["upgrade_strategy"] = "NewCluster"
        svc.pop("incremental_upgrade", None)
    return out if services else None


def _incremental_without_gateway(data: dict[str, Any]) -> dict[str, Any] | None:
    """``data`` with its services behind a gateway upgraded incrementally without one, the
    class written in ``incremental_upgrade``: with a gateway that class may only be the
    gateway's (components/raycrs/rules.py ``incremental_upgrade_gateway``), so
    ``incremental_upgrade.gateway_class_name`` chooses a class only without one; None without
    such a service."""
    out = copy.deepcopy(data)
    services = [s for s in out.get("services", []) if s.get("gateway") is not None]
    for svc in services:
        cls = svc.pop("gateway").get("gateway_class_name", "gke-l7-rilb")
        svc["upgrade_strategy"] = "NewClusterWithIncrementalUpgrade"
        svc["incremental_upgrade"] = {
            **svc.get("incremental_upgrade", {}),
            "gateway_class_name": cls,
        }
    return out if services else None


NEEDS_CONTEXT: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
    "services[].gateway.hostname": _new_cluster_services,
    "services[].incremental_upgrade.gateway_class_name": _incremental_without_gateway,
    "buckets.file_cache_medium": _small_caches,
    "capacity.kueue.elastic_jobs": _no_elastic_queued_work,
    "compute_classes[].node_pool": _class_pools_free,
    "jobs[].suspend": _unqueued_jobs,
    "jobs[].shutdown_after_job_finishes": _unqueued_jobs,
    "ray.images.gpu-tf": _with_tf_gpu_job,
    "ray.images.tpu-serve": _with_tpu_service,
    "ray.images.cpu-serve": _with_cpu_service,
    "services[].hf_revision": _with_hub_service,
    "services[].hf_token_secret": _with_hub_service,
    "jobs[].hf_token_secret": _with_hub_job,
    "jobs[].slices": _with_multi_host_tpu_job,
    "jobs[].super_slice": _with_super_slice_job,
}

# Schema paths with one valid value only (nothing to change them to): path -> why.
ONE_VALID_VALUE = {
    "services[].workload": "serve_llm is the only registered Serve application",
    "capacity.kueue.version": "0.19.2 is the only Kueue release whose CRDs are carried",
}


@pytest.mark.slow
# about 70 s alone on the 2-core Xeon (2026-12-02: 126 program runs, 229 changes decided by the
# pure objects); 195 s beside the Ray tests under xdist when every change ran the program
@pytest.mark.timeout(1200)
def test_every_key_of_the_shipped_stacks_has_an_effect(monkeypatch: pytest.MonkeyPatch) -> None:
    """A written occurrence with a valid other value must change the render; one whose value
    other rules pin (no valid other value) is skipped, but every schema path must show an effect
    somewhere in the two stacks."""
    monkeypatch.delenv("RAYGKE_LOCAL_ROOT", raising=False)
    # the workloads archive (zipped at level 9, ~25 ms) of files that do not change during the
    # sweep, built once instead of once per program run and per pure render
    archive = workloads_archive()
    monkeypatch.setattr(raycrs_component, "workloads_archive", lambda: archive)
    monkeypatch.setattr(f"{__name__}.workloads_archive", lambda: archive)
    baselines = {name: _render(_stack_data(name), name) for name in STACKS}
    problems: list[str] = []
    for schema, occurrences in sorted(_occurrences().items()):
        if schema in STEERS_CHECKS_ONLY or schema in ONE_VALID_VALUE:
            continue
        if schema in NEEDS_CONTEXT:
            effects = []
            for name, path, _ in occurrences:
                data = NEEDS_CONTEXT[schema](_stack_data(name))
                # a context may drop list entries (a compute class): skip their occurrences
                entry = path[
                    : max((i + 1 for i, k in enumerate(path) if isinstance(k, int)), default=0)
                ]
                if data is not None and _has(data, entry):
                    changed, _ = _changed(name, path, _render(data, name), data)
                    effects.append(bool(changed))
            if not any(effects):
                problems.append(f"{schema}: no valid change has an effect with its context")
            continue
        written = [o for o in occurrences if o[2]]
        effects = []
        for name, path, in_file in written or occurrences:
            dotted = ".".join(map(str, path))
            changed, what = _changed(name, path, baselines[name])
            if in_file and changed is False and (name, dotted) not in KNOWN_NO_EFFECT:
                problems.append(f"{name}: {dotted}: changing it leaves the {what} unchanged")
            effects.append(bool(changed))
            if changed and not written:
                break
        if not any(effects):
            tried = [o[0] + ":" + ".".join(map(str, o[1])) for o in written or occurrences]
            problems.append(f"{schema}: no valid change has an effect (tried {tried})")
    print(f"renders: {dict(RENDER_RUNS)}")
    assert not problems, "keys without an effect:\n" + "\n".join(problems)


def test_steers_checks_only_keys_change_nothing_rendered() -> None:
    data = _stack_data("dev")
    baseline = _render(data, "dev")
    pool = next(i for i, p in enumerate(data["node_pools"]) if "tpu" in p)
    for variant in (
        _set(data, ("node_pools", pool, "allow_unlisted_zone"), True),
        _set(data, ("kuberay", "tpu_webhook"), True),
    ):
        assert _valid(variant)
        assert _render(variant, "dev") == baseline
    image = {"image": "rayproject/ray:2.60.0-py311-gpu"}
    amd = _set(data, ("ray", "images"), {"gpu": image})
    multi = _set(data, ("ray", "images"), {"gpu": {**image, "architectures": ["amd64", "arm64"]}})
    assert _valid(amd) and _valid(multi)
    assert _render(multi, "dev") == _render(amd, "dev")
