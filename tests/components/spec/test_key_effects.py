"""No key without an effect: changing any leaf of the shipped stacks (Pulumi.dev.yaml,
Pulumi.prod.yaml) to another valid value changes what the program renders (resource records and
outputs, which hold every manifest), unless the key is on :data:`STEERS_CHECKS_ONLY`; ``local.*``
keys change the local target (``raygke.local_cluster.make_target``) instead.

Leaves are those of the validated model, so keys left at their default in the files are covered
too: every leaf written in a file must have an effect where it is written; a leaf only defaulted
must have an effect in at least one place the files reach it (e.g. ``shutdown_after_job_finishes``
only matters for a job that brings its own RayCluster).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from components.spec import ConfigError, stack_data_from_yaml, validate
from raygke.local_cluster import make_target
from raygke.synth import config_entries, run_program
from tests.helpers import ROOT, STACKS

# Keys that only steer checks (nothing rendered may change), by schema path:
STEERS_CHECKS_ONLY = {
    # accepts a TPU/GPU zone the catalog does not list (the zone rule in components/spec/rules.py)
    "node_pools[].allow_unlisted_zone",
    # says the KubeRay TPU webhook is installed, which the multi-host TPU rule asks for in helm mode
    "kuberay.tpu_webhook",
    # the pool kind discriminator: each kind has one value, implied by a tpu:/gpu: block
    "node_pools[].kind",
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
        if isinstance(data, dict) and p in data:
            data = data[p]
        elif isinstance(data, list) and isinstance(p, int) and p < len(data):
            data = data[p]
        else:
            return False
    return True


def _set(data: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    """A deep copy of ``data`` with ``path`` set (mappings on the way created)."""
    out = copy.deepcopy(data)
    node: Any = out
    for p in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(p, {})
        else:
            node = node[p]
    node[path[-1]] = value
    return out


def _schema(path: Path) -> str:
    """``('node_pools', 1, 'tpu', 'topology')`` -> ``node_pools[].tpu.topology``."""
    out = ""
    for p in path:
        out += "[]" if isinstance(p, int) else (f".{p}" if out else str(p))
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


FREE_MAPPINGS = {"labels", "resource_limits", "args", "buckets"}


def _is_free_mapping(path: Path) -> bool:
    return bool(path) and path[-1] in FREE_MAPPINGS and _schema(path) != "buckets"


def _model_leaves(data: dict[str, Any]) -> list[Path]:
    dump = validate(data).model_dump(mode="json", by_alias=True)
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
            text = repr(data).replace(f"'{old}-", f"'{new}-").replace(f"'{old}'", f"'{new}'")
            yield eval(text)  # noqa: S307 - a repr of our own plain data


def _candidates(data: dict[str, Any], path: Path) -> Iterator[dict[str, Any]]:
    """Changed copies of ``data`` where ``path`` holds another value (some also adjust the keys
    that must change with it: references to a renamed object, images with the Ray version)."""
    schema, key = _schema(path), path[-1]
    value = _get(data, path) if _has(data, path) else _get_dumped(data, path)
    if schema == "region":
        yield from _region_variants(data)
        return
    if schema == "ray.version":
        new = "2.61.0"
        images = {k: f"rayproject/ray:{new}-py311" for k in ("cpu", "tpu")}
        yield _set(_set(data, path, new), ("ray", "images"), {**images, "gpu": f"rayproject/ray:{new}-py311-gpu"})
        return
    if schema.startswith("ray.images."):
        yield _set(data, path, str(value).replace("-py311", "-py312"))
        return
    if schema == "node_pools[].reservation":
        yield _set(_set(data, path, "res-a"), (*path[:-1], "provisioning"), "reservation")
        return
    if isinstance(value, bool):
        yield _set(data, path, not value)
    elif isinstance(value, int):
        for new in (value + 1, value - 1, value * 2, value + 30):
            yield _set(data, path, new)
    elif isinstance(value, dict):  # an empty free mapping
        for new in ({"team": "x"}, {"cpu": 4096}, {"steps": 3}, {"context_length": 128}, {"seed": 1}):
            yield _set(data, path, new)
    elif isinstance(value, list):  # zones, readers, an empty list of authorized networks
        if key == "master_authorized_networks":
            yield _set(data, path, [*value, {"name": "office", "cidr": "198.51.100.0/24"}])
        elif key == "zones" or schema.endswith(".zones"):
            zones = value or data["zones"]
            m = ZONE.match(zones[0])
            for s in "abcdf":
                other = f"{m.group(1)}-{s}"
                if other not in zones:
                    yield _set(data, path, [*zones, other])
                    yield _set(data, path, [other])
        else:
            for new in ([], *([n] for n in _names(data, "workload_identities"))):
                yield _set(data, path, new)
    elif value is None:
        table: dict[str, list[Any]] = {
            "zones": [[data["zones"][-1]]],
            "min_master_version": ["1.33.1-gke.1000000"],
            "prefix": ["acme-ray"],
            "location": ["US", "EU"],
            "active_deadline_seconds": [7200],
            "noncurrent_version_days": [3],
            "delete_after_days": [30],
            "machine_type": ["g2-standard-8", "a3-megagpu-8g", "g2-standard-16"],
            "max_replicas": [1, 2],
            "cpu": ["1"],
            "memory": ["2Gi"],
            "worker_group": [],
        }
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
        if key == "node_pool" and job.get("cluster"):  # give the job its own RayCluster
            group = next(
                wg
                for rc in data["ray_clusters"]
                if rc["name"] == job["cluster"]
                for wg in rc["worker_groups"]
                if wg["name"] == job.get("worker_group")
            )
            moved = {k: v for k, v in job.items() if k not in ("cluster", "worker_group")}
            yield _set(data, path[:-1], {**moved, "node_pool": group["node_pool"]})
    else:
        value = str(value)
        literals = {
            "release_channel": ["STABLE", "REGULAR", "RAPID"],
            "autoscaling_profile": ["BALANCED", "OPTIMIZE_UTILIZATION"],
            "provisioning": ["spot", "on-demand"],
            "mode": ["gke-addon", "helm"],
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
            "min_master_version": ["1.33.1-gke.1000000"],
            "cpu": ["3", "1"],
            "memory": ["12Gi", "4Gi"],
            "workload": ["train_lm", "evaluate", "prepare", "train_lm_jax"],
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
            "root": ["/tmp/raygke-other"],
            "data": ["gs://other/text/"],
        }
        for new in literals.get(key, []):
            if new != value:
                yield _set(data, path, new)
        new = f"{value}x" if key != "project" else "ray-gke-other"
        yield _set(data, path, new)
        if key == "name" or key in ("project",):
            renamed = _rename_everywhere(data, value, new)
            yield _set(renamed, path, new)


def _get_dumped(data: dict[str, Any], path: Path) -> Any:
    dump = validate(data).model_dump(mode="json", by_alias=True)
    return _get(dump, path)


def _valid(data: dict[str, Any]) -> bool:
    try:
        validate(data)
    except ConfigError:
        return False
    return True


def _render(data: dict[str, Any], stack: str) -> tuple[list[dict], dict]:
    gcp = {"project": data["project"], "region": data["region"]}
    return run_program(config_entries(data, gcp), stack)


# ------------------------------------------------------------------------------------- tests


def _occurrences() -> dict[str, list[tuple[str, Path, bool]]]:
    """schema path -> [(stack, path, written in the file)] over both shipped stacks."""
    out: dict[str, list[tuple[str, Path, bool]]] = {}
    for name in STACKS:
        data = _stack_data(name)
        for path in _model_leaves(data):
            out.setdefault(_schema(path), []).append((name, path, _has(data, path)))
    return out


def _changed(name: str, path: Path, baseline: Any) -> tuple[bool | None, str]:
    """(whether some valid other value at ``path`` changes the render; None if there is none)."""
    data = _stack_data(name)
    tried = 0
    for variant in _candidates(data, path):
        if variant == data or not _valid(variant):
            continue
        tried += 1
        if _schema(path).startswith(LOCAL_PREFIX):
            before = make_target(name, validate(data).local)
            after = make_target(name, validate(variant).local)
            return before != after, "local target"
        if _render(variant, name) != baseline:
            return True, "render"
        if tried >= 2:
            break
    return (None if tried == 0 else False), "render"


@pytest.mark.slow
def test_every_key_of_the_shipped_stacks_has_an_effect(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAYGKE_LOCAL_ROOT", raising=False)
    baselines = {name: _render(_stack_data(name), name) for name in STACKS}
    problems: list[str] = []
    for schema, occurrences in sorted(_occurrences().items()):
        if schema in STEERS_CHECKS_ONLY:
            continue
        written = [o for o in occurrences if o[2]]
        to_try = written or occurrences
        effects = []
        for name, path, in_file in to_try:
            changed, what = _changed(name, path, baselines[name])
            where = f"{name}: {_schema(path)} at {'.'.join(map(str, path))}"
            if changed is None:
                problems.append(f"{where}: no valid other value to try (extend _candidates)")
            elif in_file and not changed:
                problems.append(f"{where}: changing it leaves the {what} unchanged")
            effects.append(bool(changed))
            if not written and changed:
                break
        if not written and not any(effects):
            problems.append(f"{schema}: no change to it has an effect in either stack")
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
