"""Limits of what the check reads and renders (issue 24): rendered object sizes against the API
server's limit, the YAML expansion budget, damaged carried CRD files (exit 3 naming the file) and
stack files that are not regular files."""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
from pathlib import Path

import pytest

from components.kernel.base import StackConfigError, StackFileError
from components.raycrs import crd
from components.stack.checks import OBJECT_BYTES_MAX, check_stack, object_size_problems
from components.stack.loader import (
    MAX_DEPTH,
    MAX_EXPANDED_CHARS,
    MAX_VALUES,
    SetError,
    apply_overrides,
    load_stack_file,
    parse_set,
    read_stack_yaml,
    stack_data_from_yaml,
    validate,
)
from raygke.cli import main

ROOT = Path(__file__).resolve().parents[3]
COMPONENTS = ROOT / "components"


def _cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(list(args))
    return rc, out.getvalue()


# ------------------------------------------------------------------------------- object sizes


def test_object_size_limit_is_etcds_request_limit() -> None:
    small = {"kind": "RayJob", "metadata": {"name": "a"}, "spec": {"entrypoint": "x" * 1000}}
    big = {
        "kind": "RayJob",
        "metadata": {"name": "b"},
        "spec": {"entrypoint": "x" * OBJECT_BYTES_MAX},
    }
    cm = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "x" * (1024 * 1024 + 1)}}
    assert OBJECT_BYTES_MAX == 1536 * 1024
    found = object_size_problems([small, big, cm])
    assert [p.split(":")[0] for p in found] == ["RayJob b", "ConfigMap c"], found
    assert "at most 1.5 MiB per object" in found[0] and "at most 1 MiB" in found[1]


def test_a_job_whose_rayjob_outgrows_the_api_server_is_reported_with_nothing_else_slow() -> None:
    data = stack_data_from_yaml((ROOT / "Pulumi.dev.yaml").read_text())
    data["jobs"][0]["args"] = {"include": "x" * 1_700_000}  # a 1.7 MB RayJob
    problems = check_stack(validate(data))
    assert problems == [
        f"RayJob {data['jobs'][0]['name']}: 1.6 MiB rendered; the API server stores at most "
        "1.5 MiB per object (etcd's request limit): shorten what the stack puts in it (a job's "
        "args, a runtime_env)"
    ], problems


def test_aliased_long_strings_are_refused_at_load() -> None:
    """A small file whose aliases expand into many MB: refused before anything renders."""
    text = "config:\n  x: &s " + "a" * 400_000 + "\n  y: [" + ", ".join(["*s"] * 10) + "]\n"
    assert len(text) < 500_000
    with pytest.raises(StackFileError) as e:
        read_stack_yaml(text)
    assert f"more than {MAX_EXPANDED_CHARS} characters" in e.value.problems[0]
    # the same string used once is fine
    assert read_stack_yaml("config:\n  x: " + "a" * 400_000 + "\n")


# ---------------------------------------------------------------------------- damaged CRDs


def test_every_carried_crd_file_matches_its_recorded_digest() -> None:
    sums = sorted(COMPONENTS.glob(f"*/crds/**/{crd.SUMS_FILE}"))
    assert len(sums) == 4, sums  # kuberay v1.7.0, v1.6.2, gmp, kueue v0.19.2
    for s in sums:
        listed = {line.split()[1] for line in s.read_text().splitlines()}
        assert listed == {p.name for p in s.parent.glob("*.yaml")}, s
        for name in listed:
            crd._verify(s.parent / name)  # raises when damaged


def _copy_crds(tmp_path: Path, with_sums: bool) -> Path:
    d = tmp_path / "crds"
    shutil.copytree(COMPONENTS / "kuberay" / "crds" / "v1.7.0", d)
    if not with_sums:
        (d / crd.SUMS_FILE).unlink()
    f = d / "ray.io_rayclusters.yaml"
    f.write_bytes(f.read_bytes()[:400_000])  # truncated inside the schema: still YAML
    return d


@pytest.mark.parametrize("with_sums", [True, False])
def test_a_truncated_crd_is_an_internal_error_naming_the_file(tmp_path, monkeypatch, with_sums):
    """Not 20 lines telling the user to edit their RayCluster: exit 3, the file named."""
    d = _copy_crds(tmp_path, with_sums)
    crd._load_schema.cache_clear()
    crd._validator.cache_clear()
    monkeypatch.setenv(crd.CRDS_ENV, str(d))
    try:
        rc, out = _cli("check", "--stack", "dev", "--no-policy")
    finally:
        crd._load_schema.cache_clear()
        crd._validator.cache_clear()
    assert rc == 3, out
    assert f"internal error: CarriedFileError: {d / 'ray.io_rayclusters.yaml'}" in out, out
    assert "edit ray_clusters" not in out
    why = "SHA-256" if with_sums else "not a complete CustomResourceDefinition"
    assert why in out, out


def test_a_crd_file_that_is_not_yaml_is_an_internal_error(tmp_path) -> None:
    f = tmp_path / "ray.io_rayjobs.yaml"
    f.write_text("spec: [unclosed\n")
    with pytest.raises(crd.CarriedFileError, match="not readable YAML"):
        crd._load_schema(str(f), "v1")
    assert not issubclass(crd.CarriedFileError, ValueError)  # never turned into a problem line


# ----------------------------------------------------------------------- non-regular files


def test_a_fifo_stack_file_is_not_a_regular_file(tmp_path) -> None:
    fifo = tmp_path / "Pulumi.fifo.yaml"
    os.mkfifo(fifo)
    rc, out = _cli("check", "--config", str(fifo))  # would block forever if it were read
    assert rc == 2 and f"cannot read {fifo}: not a regular file" in out, out
    with pytest.raises(StackFileError, match="not a regular file"):
        from components.stack.loader import load_stack_file

        load_stack_file(fifo)


def test_a_directory_and_a_missing_file_say_what_they_are(tmp_path) -> None:
    rc, out = _cli("check", "--config", str(tmp_path))
    assert rc == 2 and "is a directory" in out, out
    rc, out = _cli("check", "--config", str(tmp_path / "nope.yaml"))
    assert rc == 2 and "no such file" in out, out


# ---------------------------------------------------------------- from test_loader_limits.py: The stack-file reader refuses pathological input with one line instead of crashing or


@pytest.mark.parametrize("depth", [40, 492, 5000])
def test_deep_nesting_is_refused(depth: int) -> None:
    text = "config:\n  ray-gke:jobs: " + "[" * depth + "]" * depth + "\n"
    with pytest.raises(StackFileError) as exc:
        read_stack_yaml(text, "f")
    assert len(exc.value.problems) == 1 and "nest" in exc.value.problems[0]


def test_shallow_nesting_is_read() -> None:
    depth = MAX_DEPTH - 3
    doc = read_stack_yaml("x: " + "[" * depth + "]" * depth)
    assert isinstance(doc["x"], list)


def test_alias_expansion_is_refused() -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i, name in enumerate("bcdef"):
        prev = "abcdef"[i]
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    text = "\n".join(lines) + "\n"
    assert len(text) < 700
    with pytest.raises(StackFileError) as exc:
        read_stack_yaml(text)
    assert str(MAX_VALUES) in exc.value.problems[0] and "aliases" in exc.value.problems[0]


def test_invalid_timestamp_and_binary_are_file_errors(tmp_path: Path) -> None:
    with pytest.raises(StackFileError, match="not valid YAML"):
        read_stack_yaml("config:\n  ray-gke:project: 2001-02-30\n")
    f = tmp_path / "Pulumi.bin.yaml"
    f.write_bytes(b"config:\n  ray-gke:project: \xff\xfe\n")
    with pytest.raises(StackFileError, match="not UTF-8"):
        load_stack_file(f)


def test_oversized_file_is_refused() -> None:
    with pytest.raises(StackFileError, match="at most"):
        read_stack_yaml("#" * 2_000_000)


# ------------------------------------------------------------- what the user wrote, where


def test_a_duplicate_key_is_a_problem_of_its_stack_path_at_the_duplicate() -> None:
    text = (
        "config:\n"
        "  ray-gke:project: p\n"
        "  ray-gke:node_pools:\n"
        "    - name: tpu\n"
        "      max_nodes: 1\n"
        "      max_nodes: 2\n"
    )
    with pytest.raises(StackConfigError) as exc:
        read_stack_yaml(text)
    (problem,) = exc.value.items
    assert problem.path == "node_pools[tpu].max_nodes"
    assert problem.rule == "duplicate-key"
    assert (problem.line, problem.column) == (6, 7)  # the second max_nodes, 1-based
    assert problem.message.startswith("node_pools[tpu].max_nodes: duplicate key 'max_nodes'")


def test_a_duplicate_key_outside_the_projects_keys_keeps_its_position_without_a_path() -> None:
    with pytest.raises(StackConfigError) as exc:
        read_stack_yaml("config: {}\nconfig: {}\n")
    (problem,) = exc.value.items
    assert problem.path == "" and problem.position == (2, 1)


@pytest.mark.parametrize("written", ["1e400", "-1E+400", "12e999"])
def test_a_number_too_large_for_a_float_is_shown_as_written(written: str) -> None:
    value = read_stack_yaml(f"a: {written}\n")["a"]
    assert value == float(written) and math.isinf(value)  # YAML's value: what validation sees
    assert str(value) == repr(value) == written
    assert read_stack_yaml("a: .inf\n")["a"] == math.inf  # YAML's own infinity is one
    with pytest.raises(StackConfigError) as exc:
        validate(
            {
                "project": "my-project",
                "region": "us-central1",
                "zones": ["us-central1-a"],
                "node_pools": [
                    {"name": "cpu", "machine_type": "n2-standard-8", "max_nodes": value}
                ],
            }
        )
    (line,) = exc.value.problems
    assert line.startswith("node_pools[cpu].max_nodes: ")
    assert f"got {written}" in line and "inf" not in line


# ------------------------------------------------------------------ --set into list entries

DATA = {
    "project": "p",
    "node_pools": [{"name": "cpu", "max_nodes": 2}, {"name": "tpu", "max_slices": 1}],
    "capacity": {"cluster_queues": [{"name": "q", "flavors": [{"pool": "tpu", "nominal": {}}]}]},
}


@pytest.mark.parametrize(
    "key",
    [
        "node_pools[tpu].max_slices",
        "node_pools[1].max_slices",
        "node_pools.1.max_slices",
        "node_pools[-1].max_slices",
    ],
)
def test_set_reaches_a_list_entry_by_name_or_index(key: str) -> None:
    out = apply_overrides(DATA, parse_set([f"{key}=4"]))
    assert out["node_pools"][1] == {"name": "tpu", "max_slices": 4}
    assert out["node_pools"][0] == DATA["node_pools"][0]
    assert DATA["node_pools"][1]["max_slices"] == 1  # the input is not changed


def test_set_names_a_kueue_flavor_by_its_pool_as_problem_paths_do() -> None:
    key = "capacity.cluster_queues[q].flavors[tpu].nominal.cpu"
    out = apply_overrides(DATA, parse_set([f"{key}=8"]))
    assert out["capacity"]["cluster_queues"][0]["flavors"][0]["nominal"] == {"cpu": 8}


@pytest.mark.parametrize(
    "key",
    [
        "capacity.cluster_queues[q].flavors[tpu].nominal[google.com/tpu]",
        "capacity.cluster_queues[q].flavors[tpu].nominal['google.com/tpu']",
    ],
)
def test_set_takes_a_mapping_key_in_brackets_as_problems_print_it(key: str) -> None:
    """``nap.resource_limits[cpu]``, as a problem prints it, and a key with dots in it, which
    the dotted form cannot name: ``[google.com/tpu]`` sets that key of the mapping."""
    out = apply_overrides(DATA, parse_set([f"{key}=16"]))
    assert out["capacity"]["cluster_queues"][0]["flavors"][0]["nominal"] == {"google.com/tpu": 16}
    limits = apply_overrides(
        {"nap": {"resource_limits": {"cpu": 8}}}, parse_set(["nap.resource_limits[cpu]=64"])
    )
    assert limits == {"nap": {"resource_limits": {"cpu": 64}}}


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ("node_pools[gpu].max_nodes", "node_pools has no entry 'gpu'; its entries: cpu, tpu"),
        ("node_pools[5].max_nodes", "node_pools has no entry '5'"),
        ("node_pools.tpu.max_nodes", "node_pools is a list; name an entry as node_pools[<name>]"),
        ("project[0]", "project is not a mapping or a list"),
        ("zones[0]", "zones is not in the file, so it has no entry to set"),
        ("capacity[0]", "capacity is a mapping, not a list"),
    ],
)
def test_a_set_that_does_not_fit_the_file_is_a_set_error(key: str, says: str) -> None:
    with pytest.raises(SetError) as exc:
        apply_overrides(DATA, parse_set([f"{key}=1"]))
    assert len(exc.value.problems) == 1 and says in exc.value.problems[0]
    assert exc.value.problems[0].startswith(f"--set {key}: ")


@pytest.mark.parametrize("item", ["node_pools[tpu.max_nodes=1", "a..b=1", "a b=1", "[0]=1"])
def test_a_set_key_of_another_shape_is_refused(item: str) -> None:
    with pytest.raises(StackConfigError, match="expected KEY=VALUE, KEY a stack path"):
        parse_set([item])


@pytest.mark.parametrize(
    ("where", "typo", "meant"),
    [
        (("cluster",), "regoinal", "regional"),
        (("node_pools", 1), "max_slice", "max_slices"),  # a TPU pool: its own keys
        (("node_pools", 0), "max_node", "max_nodes"),  # a CPU pool
        (("nap",), "resource_limit", "resource_limits"),
        ((), "napp", "nap"),
    ],
)
def test_an_unknown_key_close_to_a_known_one_names_it(where, typo, meant) -> None:
    from tests.helpers import config

    data = config()
    node = data
    for part in where:
        node = node[part]
    node[typo] = 1
    with pytest.raises(StackConfigError) as exc:
        validate(data)
    assert (
        f"unknown key {typo!r}; did you mean {meant!r}? (extra keys are rejected)"
        in (exc.value.problems[0])
    )


def test_an_unknown_key_close_to_none_says_check_its_spelling() -> None:
    from tests.helpers import config

    data = config()
    data["cluster"]["zzz_unrelated"] = 1
    with pytest.raises(StackConfigError) as exc:
        validate(data)
    assert (
        "unknown key 'zzz_unrelated' (check its spelling; extra keys are rejected)"
        in (exc.value.problems[0])
    )


def test_a_text_read_again_is_parsed_once_and_each_reader_gets_its_own_copy(monkeypatch) -> None:
    from components.kernel import stackyaml

    parses: list[str] = []
    parse = stackyaml._parse
    monkeypatch.setattr(
        stackyaml, "_parse", lambda text, source: parses.append(text) or parse(text, source)
    )
    text = "config:\n  ray-gke:labels: &l {team: ml}\n  ray-gke:other: *l\n  big: 1e400\n"
    first = read_stack_yaml(text)
    first["config"]["ray-gke:labels"]["team"] = "changed by a caller"
    second = read_stack_yaml(text)
    assert parses == [text]
    assert second["config"]["ray-gke:labels"] == {"team": "ml"}
    # the copy keeps what the parse made: aliases stay one object, a large number as written
    assert second["config"]["ray-gke:other"] is second["config"]["ray-gke:labels"]
    assert str(second["config"]["big"]) == "1e400"
    # a text that fails is not kept: each read raises, naming its own source
    for source in ("a.yaml", "b.yaml"):
        with pytest.raises(StackFileError) as exc:
            read_stack_yaml("config: [\n", source)
        assert exc.value.source == source
    assert parses[1:] == ["config: [\n", "config: [\n"]


@pytest.mark.parametrize(
    "text",
    ["config:\n  ray-gke:project: [oops\n", 'config:\n  ray-gke:project: "oops\n'],
)
def test_an_unclosed_bracket_or_quote_is_reported_where_it_opened(text: str) -> None:
    """The parser notices an unclosed ``[`` or quote at the end of the file; the problem points
    at the line that opened it (the one to fix) and says where the file ends."""
    with pytest.raises(StackFileError) as e:
        read_stack_yaml(text, "f")
    (problem,) = e.value.items
    assert problem.message.startswith("not valid YAML at line 2: ")
    assert problem.message.endswith("(the file ends at line 3)")
    assert (problem.line, problem.column) == (2, 20)
