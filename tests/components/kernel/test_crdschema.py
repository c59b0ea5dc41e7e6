"""The one CRD checker (components/kernel/crdschema.py): structural schemas, metadata, list types,
notes for CEL rules not evaluated, runtime errors and rules blocked by type errors."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from components.kernel.crdschema import (
    NOTE_RULE,
    load_crd,
    metadata_problems,
    problems_with_notes,
    structural_problems,
    validate_object,
)
from tests.components.kernel.test_crdcel import CARRIED


def _crd(tmp_path: Path, spec_schema: dict, scope: str = "Namespaced") -> Path:
    doc = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec_schema,
                            },
                        }
                    },
                }
            ],
        },
    }
    path = tmp_path / "example.com_widgets.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _widget(spec: dict, **meta: object) -> dict:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", **meta},
        "spec": spec,
    }


@pytest.mark.parametrize("path", CARRIED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_carried_crd_is_structural(path: Path) -> None:
    for v in load_crd(str(path))["spec"]["versions"]:
        assert structural_problems(v["schema"]["openAPIV3Schema"]) == [], v["name"]


def test_a_non_structural_schema_is_named() -> None:
    schema = {
        "type": "object",
        "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
            "spec": {"properties": {"a": {"type": "string"}}, "additionalProperties": {}},
            "x": {"type": "string", "anyOf": [{"type": "integer"}]},
        },
    }
    assert structural_problems(schema) == [
        ".metadata: restricts labels (only name, generateName)",
        ".spec: no type",
        ".spec: properties and additionalProperties together",
        ".spec[*]: no type",
        ".x.anyOf: type inside anyOf",
    ]


def test_metadata_rules() -> None:
    meta = {
        "name": "Bad_Name",
        "namespace": "ray",
        "labels": {"ok": "fine", "bad key!": "v", "k": "-bad-value"},
        "annotations": {"example.com/a": "x" * (256 * 1024)},
    }
    found = dict(metadata_problems(meta, namespaced=False))
    assert set(found) == {
        ("metadata", "name"),
        ("metadata", "namespace"),
        ("metadata", "labels", "bad key!"),
        ("metadata", "labels", "k"),
        ("metadata", "annotations"),
    }
    assert "RFC 1123 subdomain" in found[("metadata", "name")]
    assert "cluster-scoped" in found[("metadata", "namespace")]
    assert metadata_problems({"generateName": "job-"}, namespaced=True) == []


def test_list_type_map_and_set_duplicates(tmp_path: Path) -> None:
    crd = _crd(
        tmp_path,
        {
            "type": "object",
            "properties": {
                "groups": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                },
                "tags": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
            },
        },
    )
    obj = _widget({"groups": [{"name": "a"}, {"name": "a"}], "tags": ["x", "y", "x"]})
    assert validate_object(obj, crd) == [
        "Widget w: spec.groups[1]: Duplicate value: {'name': 'a'}",
        "Widget w: spec.tags[2]: Duplicate value: 'x'",
    ]


def test_cel_rule_defaults_field_path_runtime_error_and_unsupported_note(tmp_path: Path) -> None:
    crd = _crd(
        tmp_path,
        {
            "type": "object",
            "properties": {
                "min": {"type": "integer", "default": 1},
                "max": {"type": "integer"},
                "size": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {"rule": "quantity(self).isLessThan(quantity('1Gi'))"}
                    ],
                },
            },
            "x-kubernetes-validations": [
                # sees the defaulted min
                {"rule": "self.min <= self.max", "message": "min above max", "fieldPath": ".max"},
                {"rule": "self.nope == 1"},  # no such key: refused, as the API server does
                {"rule": "self.max == oldSelf.max", "message": "immutable"},  # transition
                {"rule": "!oldSelf.hasValue()", "optionalOldSelf": True},  # runs on create
            ],
        },
    )
    found = validate_object(_widget({"max": 0, "size": "2Gi"}), crd)
    assert [str(p) for p in found] == [
        "Widget w: spec.max: min above max",
        'Widget w: spec: NOT_FOUND: Key not found in map : "nope" evaluating rule: self.nope == 1',
        "Widget w: spec: x-kubernetes-validations rule '!oldSelf.hasValue()' not checked: "
        "optionalOldSelf (oldSelf as an optional) is not modelled",
        "Widget w: spec.size: x-kubernetes-validations rule "
        "\"quantity(self).isLessThan(quantity('1Gi'))\" not checked: ERROR: <input>:1:9: "
        "undeclared reference to 'quantity' (in container '')",
    ]
    assert [p.rule for p in found] == ["", "", NOTE_RULE, NOTE_RULE]
    problems = problems_with_notes(found, "widgets", "widget-schema")
    assert [p.severity for p in problems] == ["error", "error", "warning", "warning"]
    assert problems[2].rule == "crd-cel-not-evaluated"
    assert [p.path for p in problems] == ["widgets"] * 4
    assert found[0].object_field == "spec.max"


def test_a_type_error_blocks_the_cel_rules_as_on_the_api_server(tmp_path: Path) -> None:
    crd = _crd(
        tmp_path,
        {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.n > 0", "message": "positive"}],
        },
    )
    assert validate_object(_widget({"n": 0}), crd) == ["Widget w: spec: positive"]
    found = validate_object(_widget({"n": "zero"}), crd)
    assert found[0] == "Widget w: spec.n: 'zero' is not of type 'integer'"
    assert "some validation rules were not checked" in found[-1]
    assert not any("positive" in p for p in found)


def test_message_expression_falls_back_to_message(tmp_path: Path) -> None:
    rules = [
        {"rule": "self.n > 0", "messageExpression": "''", "message": "fallback"},
        {"rule": "self.n > 1", "messageExpression": "'n is ' + string(self.n)"},
        {"rule": "self.n > 2", "messageExpression": "string(self.nope)", "message": "no key"},
    ]
    crd = _crd(
        tmp_path,
        {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "x-kubernetes-validations": rules,
        },
    )
    assert validate_object(_widget({"n": 0}), crd) == [
        "Widget w: spec: fallback",
        "Widget w: spec: n is 0",
        "Widget w: spec: no key",  # the messageExpression's error is no message
    ]


def test_a_null_value_is_not_validated(tmp_path: Path) -> None:
    rule = {"rule": "self.size() > 0", "message": "empty"}
    crd = _crd(
        tmp_path,
        {
            "type": "object",
            "properties": {
                "tags": {
                    "type": "array",
                    "nullable": True,
                    "items": {"type": "string"},
                    "x-kubernetes-validations": [rule],
                },
            },
        },
    )
    assert validate_object(_widget({"tags": None}), crd) == []
    assert validate_object(_widget({"tags": []}), crd) == ["Widget w: spec.tags: empty"]


def test_cluster_scoped_object_with_a_namespace(tmp_path: Path) -> None:
    crd = _crd(tmp_path, {"type": "object"}, scope="Cluster")
    obj = copy.deepcopy(_widget({}, namespace="ray"))
    assert validate_object(obj, crd) == [
        "Widget w: metadata.namespace: not allowed on this type (cluster-scoped)"
    ]
