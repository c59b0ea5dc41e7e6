"""Derived and removed keys explain where their value comes from (components/kernel/hints.py),
instead of the generic "unknown key ... (check its spelling)"."""

from __future__ import annotations

import pytest

from components.config.reference import render_reference
from components.kernel.base import StackConfigError
from components.kernel.hints import KEY_HINTS
from components.stack.loader import validate
from tests.helpers import config


def problems(data: dict) -> list[str]:
    with pytest.raises(StackConfigError) as exc:
        validate(data)
    return exc.value.problems


def test_machine_type_under_tpu_pool_names_the_derived_value() -> None:
    """ct6e-standard-4t is the v6e machine type with 4 chips per host
    (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus)."""
    data = config()
    data["node_pools"][1]["machine_type"] = "ct6e-standard-4t"
    assert problems(data) == [
        "node_pools[v6e].machine_type: not set for a TPU pool; it is derived from tpu: "
        "{generation, topology} (ct6e-standard-4t for v6e 4x4)"
    ]


@pytest.mark.parametrize(
    ("pool", "where", "key", "expected"),
    [
        (
            1,
            (),
            "chips_per_host",
            "chips per host are derived from tpu: {generation, topology} "
            "(4 chips per host for v6e 4x4)",
        ),
        (1, ("tpu",), "chips_per_host", "(4 chips per host for v6e 4x4)"),
        (1, (), "hosts", "hosts per slice are derived from tpu: {generation, topology}"),
        (1, ("tpu",), "hosts", "(4 hosts for v6e 4x4)"),
        (2, (), "max_nodes", "write max_slices"),
        (0, (), "max_slices", "scales in nodes; write max_nodes"),
        (3, ("gpu",), "machine_type", "(g2-standard-4 for 1 x nvidia-l4)"),
    ],
)
def test_derived_pool_keys(pool: int, where: tuple, key: str, expected: str) -> None:
    data = config()
    block = data["node_pools"][pool]
    for k in where:
        block = block[k]
    block[key] = 4
    (line,) = problems(data)
    assert expected in line
    assert "check its spelling" not in line
    assert line.split(":", 1)[0].endswith(f"{'.'.join(where) + '.' if where else ''}{key}")


def test_num_workers_on_worker_group_and_job() -> None:
    data = config(
        ray_clusters=[
            {"name": "r", "worker_groups": [{"name": "w", "node_pool": "v6e", "num_workers": 2}]}
        ],
        jobs=[{"name": "t", "workload": "train_lm_jax", "node_pool": "v6e", "num_workers": 8}],
    )
    lines = problems(data)
    assert any(
        ln.startswith("ray_clusters[r].worker_groups[w].num_workers: not set on a worker group")
        for ln in lines
    ), lines
    assert any(ln.startswith("jobs[t].num_workers: not set on a job") for ln in lines), lines


def test_unknown_key_still_says_check_spelling() -> None:
    data = config()
    data["node_pools"][1]["machine_typ"] = "x"
    (line,) = problems(data)
    assert "unknown key 'machine_typ' (check its spelling" in line


def test_invalid_block_gives_the_explanation_without_example() -> None:
    data = config()
    data["node_pools"][1]["tpu"] = {"generation": "v9z", "topology": "4x4"}
    data["node_pools"][1]["machine_type"] = "x"
    lines = problems(data)
    assert (
        "node_pools[v6e].machine_type: not set for a TPU pool; it is derived from tpu: "
        "{generation, topology}" in lines
    )


def test_reference_lists_every_hint() -> None:
    text = render_reference()
    assert "## Derived and removed keys" in text
    for hint in KEY_HINTS.values():
        assert f"`{hint.doc.partition(' (')[0]}`" in text


def test_ray_version_is_a_release_version() -> None:
    """rayVersion is a Ray release (https://github.com/ray-project/ray/releases), MAJOR.MINOR.PATCH."""
    lines = problems(config(ray={"version": "2.60.0\x00"}))
    assert lines == [
        "ray.version: '2.60.0\\x00' is not a Ray release version MAJOR.MINOR.PATCH (e.g. 2.60.0)"
    ]
