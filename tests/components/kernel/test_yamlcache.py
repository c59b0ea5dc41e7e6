"""components/kernel/yamlcache.py: a YAML file is parsed once per content, its JSON copy read after."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml

from components.kernel import yamlcache
from components.kernel.yamlcache import CACHE_ENV, cache_dir, load_yaml_cached

DOC = b"kind: CustomResourceDefinition\nspec:\n  versions:\n  - name: v1\n    served: true\n"
PARSED = yaml.safe_load(DOC)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    return tmp_path / "c"


def _no_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*a, **k):
        raise AssertionError("parsed the YAML again")

    monkeypatch.setattr(yamlcache.yaml, "load", refuse)


def test_the_second_load_reads_the_json_copy_not_the_yaml(cache, monkeypatch) -> None:
    first = load_yaml_cached(DOC)
    assert first == PARSED
    assert len(list((cache / "yaml").glob("*.json"))) == 1
    _no_yaml(monkeypatch)
    second = load_yaml_cached(DOC)
    assert second == first and second is not first
    second["kind"] = "changed"  # a caller may mutate what it gets
    assert load_yaml_cached(DOC)["kind"] == "CustomResourceDefinition"


def test_other_bytes_are_another_entry(cache) -> None:
    load_yaml_cached(DOC)
    assert load_yaml_cached(DOC.replace(b"v1", b"v2"))["spec"]["versions"][0]["name"] == "v2"
    assert len(list((cache / "yaml").glob("*.json"))) == 2


def test_a_damaged_entry_is_parsed_again_and_replaced(cache, monkeypatch) -> None:
    load_yaml_cached(DOC)
    (entry,) = (cache / "yaml").glob("*.json")
    entry.write_text('{"kind": "CustomRes')  # cut mid-write by something else
    assert load_yaml_cached(DOC) == PARSED
    _no_yaml(monkeypatch)
    assert load_yaml_cached(DOC) == PARSED


def test_an_unwritable_cache_costs_only_the_parse(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "c"))
    assert load_yaml_cached(DOC) == PARSED


def test_a_document_json_cannot_hold_is_returned_and_not_cached(cache) -> None:
    assert load_yaml_cached(b"when: 2026-12-03\n") == {"when": datetime.date(2026, 12, 3)}
    assert load_yaml_cached(b"1: one\n") == {1: "one"}  # JSON would make the key "1"
    assert not (cache / "yaml").exists()


def test_not_yaml_raises_yaml_error_and_caches_nothing(cache) -> None:
    with pytest.raises(yaml.YAMLError):
        load_yaml_cached(b"a: [unclosed\n")
    assert not (cache / "yaml").exists()


def test_the_folder_follows_xdg_when_unset(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "raygke"
