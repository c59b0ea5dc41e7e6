"""The per-series capability table (components/catalog/capabilities.py) and the two rules that
read it: a node pool's provisioning and a ComputeClass's fallbacks get the same answer."""

from __future__ import annotations

import pytest

from components import catalog
from components.kernel.base import StackConfigError
from components.stack.loader import validate
from tests.helpers import config


def test_every_cell_is_a_capability_with_a_source_or_unrecorded():
    for series, row in catalog.FAMILY_CAPABILITIES.items():
        assert set(row) == set(catalog.CAPABILITIES), series
        for name, cell in row.items():
            assert cell.offered is None or cell.source.startswith("https://"), (series, name)


def test_every_catalog_accelerator_machine_has_a_row():
    machines = [m for g in catalog.GPU_TYPES.values() for m in g.machine_types.values()]
    machines += [m for g in catalog.TPU_GENERATIONS.values() for m in g.machine_types.values()]
    assert {catalog.machine_series(m) for m in machines} <= set(catalog.FAMILY_CAPABILITIES)


@pytest.mark.parametrize(
    ("machine", "cap", "multi", "refused"),
    [
        ("a4x-highgpu-4g", "flex-start", False, "not offered for the a4x machine series"),
        ("a4x-highgpu-4g", "queued-provisioning", False, "a4x"),
        ("a3-highgpu-8g", "flex-start", False, None),
        ("ct6e-standard-4t", "flex-start", True, "single-host TPU slices only"),
        ("ct6e-standard-4t", "flex-start", False, None),
        ("ct6e-standard-4t", "queued-provisioning", True, None),
        ("n2-standard-8", "flex-start", False, None),  # not recorded: never refused
    ],
)
def test_capability_problem(machine, cap, multi, refused):
    why = catalog.capability_problem(machine, cap, multi)
    if refused is None:
        assert why is None
    else:
        assert refused in why and "https://cloud.google.com/" in why


def _problems(data) -> list:
    with pytest.raises(StackConfigError) as e:
        validate(data)
    return e.value.items


A4X = {"name": "gb200", "gpu": {"type": "nvidia-gb200", "count": 4}, "zones": ["us-central1-b"]}


def _with(pool, classes=()):
    data = config(node_pools=[*config()["node_pools"], pool], jobs=[])
    data["ray"] = {"images": {"gpu": {"tag": "2.60.0", "architectures": ["arm64"]}}}
    data["cluster"] = {**data.get("cluster", {}), "min_master_version": "1.35.0-gke.100"}
    if classes:
        data["compute_classes"] = list(classes)
    return data


def test_flex_start_on_a4x_is_refused_for_the_pool_and_the_compute_class_alike():
    pool = _problems(_with({**A4X, "provisioning": "flex-start", "max_run_duration": "24h"}))
    (p,) = [p for p in pool if "a4x" in p and p.path.endswith(".provisioning")]
    assert p.path == "node_pools[gb200].provisioning"
    assert "about-flex-start-vms" in p
    cls = _problems(_with(A4X, [{"name": "gb", "node_pool": "gb200", "fallback": ["flex-start"]}]))
    (q,) = [q for q in cls if "a4x" in q]
    assert q.path == "compute_classes[gb].fallback"
    assert p.message.split(": ", 2)[-1] == q.message.split(": ", 2)[-1]  # the same reason


def test_flex_start_on_a_multi_host_v6e_gets_one_answer_for_pool_and_class():
    v6e = {
        "name": "v6e-flex",
        "tpu": {"generation": "v6e", "topology": "4x4"},
        "zones": ["us-east5-b"],
        "max_slices": 1,
    }
    data = _with({**v6e, "provisioning": "flex-start"})
    data["kuberay"] = {"mode": "gke-addon"}
    pool = [p for p in _problems(data) if "single-host TPU slices only" in p]
    assert [p.path for p in pool] == ["node_pools[v6e-flex].provisioning"]
    data = _with(v6e, [{"name": "v6", "node_pool": "v6e-flex", "fallback": ["flex-start"]}])
    data["kuberay"] = {"mode": "gke-addon"}
    cls = [p for p in _problems(data) if "single-host TPU slices only" in p]
    assert [p.path for p in cls] == ["compute_classes[v6].fallback"]
