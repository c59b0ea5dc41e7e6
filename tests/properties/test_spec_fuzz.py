"""Fuzz: random and mutated configs give a valid model or a clean StackConfigError — nothing else."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.config.stack import StackConfig
from components.kernel.base import StackConfigError
from components.stack.loader import stack_data_from_yaml, validate

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [stack_data_from_yaml((ROOT / f"Pulumi.{s}.yaml").read_text()) for s in ("dev", "prod")]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    # the bounds of the systems rendered into (int32, int64, GKE's node limits; issue 24)
    st.sampled_from([2**31 - 1, 2**31, 2**63 - 1, 2**63, 4000, 4001, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            *("v5e", "v6e", "2x2", "4x4", "3x3", "nvidia-l4", "spot", "reservation", "", "-"),
            *("kube-system", "default", "gmp-system", "192.0.2.0/24", "203.0.113.0/24", "UPPER"),
        ]
    ),
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _assert_clean(data: Any) -> None:
    try:
        result = validate(data)
    except StackConfigError as e:
        assert e.problems, "a StackConfigError must carry at least one problem"
        assert all(isinstance(p, str) and p and "\n" not in p for p in e.problems)
    else:
        assert isinstance(result, StackConfig)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(st.sampled_from([*list(StackConfig.model_fields), "junk"]), values, max_size=8)
)
def test_random_configs(data: dict[str, Any]) -> None:
    _assert_clean(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SEEDS), st.data())
def test_mutated_configs(seed: dict[str, Any], data: st.DataObject) -> None:
    cfg = copy.deepcopy(seed)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(cfg) if p]
        path = data.draw(st.sampled_from(paths))
        parent = cfg
        for key in path[:-1]:
            parent = parent[key]
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "replace":
            parent[path[-1]] = data.draw(values)
        elif isinstance(parent, dict):
            parent[data.draw(st.text(max_size=10))] = data.draw(values)
        else:
            parent.append(data.draw(values))
    _assert_clean(cfg)


@given(values)
def test_non_mapping_top_level(value: Any) -> None:
    if isinstance(value, dict):
        return _assert_clean(value)
    try:
        validate(value)  # type: ignore[arg-type]
    except StackConfigError as e:
        assert "expected a mapping" in e.problems[0]
