"""The outputs contract (docs/outputs.md): the program exports exactly the documented names with
the documented types, and the outputs that follow from config are known at the first preview."""

from __future__ import annotations

import re
from typing import Any

import pytest

from components.stack.outputs import CONTRACT_VERSION
from raygke.synth import SECRET, read_stack_config, run_program
from tests.helpers import ROOT, STACKS, config, preview_outputs, render

DOC = ROOT / "docs" / "outputs.md"


def documented() -> dict[str, tuple[str, bool]]:
    """Output name -> (type column, optional) from the first table of docs/outputs.md."""
    rows: dict[str, tuple[str, bool]] = {}
    lines = DOC.read_text().splitlines()
    start = lines.index("| name | type | meaning |")
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        name, typ, meaning = (c.strip() for c in line.strip("|").split("|", 2))
        rows[name.strip("`")] = (typ, "present when" in meaning)
    return rows


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def type_matches(typ: str, value: Any) -> bool:
    """Does ``value`` have the documented type (the table's grammar: ``string``, ``string,
    **secret**``, ``list of string``, ``map K -> string``, ``map K -> {...}``, ``map K ->
    object``)?"""
    if typ == "string":
        return _is_str(value) and value != SECRET
    if typ == "string, **secret**":
        return value == SECRET
    if typ == "list of string":
        return isinstance(value, list) and all(map(_is_str, value))
    m = re.fullmatch(r"map \S+ -> (.+)", typ)
    if m:
        if not isinstance(value, dict) or not all(map(_is_str, value)):
            return False
        inner = m.group(1)
        if inner == "string":
            return all(map(_is_str, value.values()))
        if inner == "object":
            return all(isinstance(v, dict) for v in value.values())
        fields = re.findall(r"`(\w+)`: (\w+)", inner)
        if fields:
            return all(
                isinstance(v, dict)
                and set(v) == {f for f, _ in fields}
                and all(_is_str(v[f]) for f, t in fields if t == "string")
                for v in value.values()
            )
    raise AssertionError(f"docs/outputs.md type {typ!r} is not in the table's grammar")


@pytest.fixture(scope="module", params=STACKS)
def shipped(request) -> dict[str, Any]:
    path = ROOT / f"Pulumi.{request.param}.yaml"
    # the outputs read no CRD schema (see tests/helpers.py render)
    _, outputs = run_program(read_stack_config(path), request.param, crd_specs="digest")
    return outputs


def test_shipped_stacks_export_the_documented_names_and_types(shipped):
    doc = documented()
    assert set(shipped) <= set(doc), f"undocumented outputs: {set(shipped) - set(doc)}"
    required = {n for n, (_, optional) in doc.items() if not optional}
    assert required <= set(shipped), f"documented but not exported: {required - set(shipped)}"
    wrong = {n: v for n, v in shipped.items() if not type_matches(doc[n][0], v)}
    assert not wrong, f"outputs whose type differs from docs/outputs.md: {wrong}"
    assert shipped["contract_version"] == CONTRACT_VERSION


def test_optional_output_absent_when_off():
    _, outputs = render(
        config(
            cluster={"name": "ray-test", "deletion_protection": False, "dns_endpoint": False},
            network={"master_authorized_networks": [{"name": "ci", "cidr": "198.18.0.0/24"}]},
        )
    )
    assert "cluster_dns_endpoint" not in outputs
    assert documented()["cluster_dns_endpoint"][1]  # documented as optional


def test_type_grammar_rejects_wrong_shapes():
    assert not type_matches("string", 1)
    assert not type_matches("map purpose -> string", {"a": 1})
    assert not type_matches("list of string", "a")
    assert not type_matches(
        "map name -> {`dashboard`: string, `client`: string}", {"r": {"x": "y"}}
    )
    assert type_matches(
        "map name -> {`dashboard`: string, `client`: string}",
        {"r": {"dashboard": "d", "client": "c"}},
    )


def test_config_outputs_are_known_at_first_preview():
    outputs = preview_outputs(config())
    # the mocks compute nothing, so resource-computed outputs stay unknown: the check can fail
    assert outputs["cluster_endpoint"][0] is False
    for name in (
        "contract_version",
        "bucket_urls",
        "bucket_names",
        "service_accounts",
        "node_service_account",
        "kuberay_mode",
        "node_pools",
        "namespace",
    ):
        known, value = outputs[name]
        assert known and value, name
    assert outputs["service_accounts"][1] == {
        "ray-train": "ray-train@ray-gke-test.iam.gserviceaccount.com",
        "ray-serve": "ray-serve@ray-gke-test.iam.gserviceaccount.com",
    }
    assert outputs["bucket_urls"][1]["checkpoints"] == "gs://ray-gke-test-ray-test-checkpoints"
