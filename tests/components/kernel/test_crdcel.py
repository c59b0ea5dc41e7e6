"""The CRDs' CEL rules (components/kernel/crdcel.py): every carried rule compiles, and a rule of each
carried CRD that has create-time rules refuses a broken rendered object with the rule's message."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from components.capacity.checks import kueue_crd_file, kueue_schema_problems
from components.capacity.render import render_capacity
from components.kernel import crdcel
from components.kernel.crdcel import compile_rule, escape, is_url, parse_duration, schema_rules
from components.kernel.crdschema import load_crd
from components.monitoring.render import render_monitoring
from components.plan.plan import plan
from components.raycrs.crd import validate_manifest, validate_other
from components.raycrs.render import render_manifests
from tests.helpers import WORKING_DIR, stack

COMPONENTS = Path(__file__).resolve().parents[3] / "components"
CARRIED = sorted(p for p in COMPONENTS.glob("*/crds/**/*.yaml"))
# A carried rule the runtime cannot compile is named here (and reported as a note by the check).
UNSUPPORTED: set[str] = set()


def _rules(path: Path) -> list[tuple[str, str, dict]]:
    doc = load_crd(str(path))
    return [
        (v["name"], where, rule)
        for v in doc["spec"]["versions"]
        for where, rule in schema_rules(v["schema"]["openAPIV3Schema"])
    ]


@pytest.mark.parametrize("path", CARRIED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_carried_cel_rule_is_found_and_compiles(path: Path) -> None:
    """The walker finds as many rules as the file has ``rule:`` keys, and each rule (and each
    messageExpression) compiles, or is listed in UNSUPPORTED by its text."""
    rules = _rules(path)
    in_text = len(re.findall(r"^\s*(?:- )?rule: ", path.read_text(), re.MULTILINE))
    assert len(rules) == in_text
    for _version, where, rule in rules:
        for text in (rule["rule"], rule.get("messageExpression")):
            if text and text not in UNSUPPORTED:
                program, why = compile_rule(text)
                assert program is not None, f"{path.name} {where}: {text!r}: {why}"


def test_the_carried_crds_with_rules_and_their_transition_rules() -> None:
    """Kueue's and KubeRay's CRDs, PodMonitoring and the ComputeClass schema (written from GKE's
    reference page and GKE's ComputeClass API types, whose validation rules it carries, the
    create-time ones: components/computeclass/crds/README.md) carry rules. Immutability rules
    read ``oldSelf`` and so are transition rules."""
    counts = {p.name: len(_rules(p)) for p in CARRIED}
    for name in (
        "kueue.x-k8s.io_clusterqueues.yaml",
        "kueue.x-k8s.io_resourceflavors.yaml",
        "kueue.x-k8s.io_cohorts.yaml",
        "kueue.x-k8s.io_localqueues.yaml",
        "kueue.x-k8s.io_admissionchecks.yaml",
        "ray.io_rayjobs.yaml",
        "monitoring.googleapis.com_podmonitorings.yaml",
        "cloud.google.com_computeclasses.yaml",
    ):
        assert counts[name] > 0, name
    for path in CARRIED:
        for _, _, rule in _rules(path):
            assert crdcel.transition(rule) == ("oldSelf" in rule["rule"]), rule


def _kueue(kind: str, name: str | None = None) -> dict:
    objs = [
        o for o in render_capacity(plan(stack("prod")), stack("prod").capacity) if o["kind"] == kind
    ]
    return copy.deepcopy(next(o for o in objs if name in (None, o["metadata"]["name"])))


VERSION = "0.19.2"


def test_clusterqueue_borrowing_limit_without_a_cohort() -> None:
    cq = _kueue("ClusterQueue", "research")
    assert kueue_schema_problems([cq], VERSION) == []
    del cq["spec"]["cohortName"]
    assert kueue_schema_problems([cq], VERSION) == [
        "ClusterQueue research: spec: borrowingLimit must be nil when cohort is empty"
    ]


def test_clusterqueue_flavor_resources_must_match_covered_resources() -> None:
    cq = _kueue("ClusterQueue", "ml-batch")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop()
    assert kueue_schema_problems([cq], VERSION) == [
        "ClusterQueue ml-batch: spec.resourceGroups[0]: flavors must have the same number of "
        "resources as the coveredResources"
    ]


def test_resourceflavor_toleration_rules() -> None:
    rf = _kueue("ResourceFlavor", "h100")
    assert kueue_schema_problems([rf], VERSION) == []
    rf["spec"]["tolerations"] = [{"key": "k", "operator": "Exists", "value": "v"}]
    assert kueue_schema_problems([rf], VERSION) == [
        "ResourceFlavor h100: spec.tolerations: a value must be empty when 'operator' is 'Exists'"
    ]


def test_cohort_resource_groups_rule() -> None:
    """The stack renders no Cohort; one built from a rendered queue's resource group."""
    cq = _kueue("ClusterQueue", "research")
    cohort = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": "ml"},
        "spec": {"resourceGroups": copy.deepcopy(cq["spec"]["resourceGroups"])},
    }
    for f in cohort["spec"]["resourceGroups"][0]["flavors"]:
        for r in f["resources"]:
            r.pop("borrowingLimit", None)
    assert kueue_schema_problems([cohort], VERSION) == []
    cohort["spec"]["resourceGroups"][0]["coveredResources"].append("ephemeral-storage")
    assert kueue_schema_problems([cohort], VERSION) == [
        "Cohort ml: spec.resourceGroups[0]: flavors must have the same number of resources as "
        "the coveredResources"
    ]


@pytest.mark.parametrize(
    ("kind", "field"), [("LocalQueue", "clusterQueue"), ("AdmissionCheck", "controllerName")]
)
def test_kinds_with_only_transition_rules_are_not_refused_on_create(kind: str, field: str) -> None:
    """LocalQueue's and AdmissionCheck's only rules are ``self == oldSelf`` (immutability): the API
    server skips them on create, and so does the check, whatever the value."""
    obj = _kueue(kind)
    rules = _rules(kueue_crd_file(kind, VERSION))
    assert rules and all(crdcel.transition(r) for _, _, r in rules)
    obj["spec"][field] = "another-value"
    assert kueue_schema_problems([obj], VERSION) == []


def _ray(kind: str) -> dict:
    objs = render_manifests(stack("prod"), WORKING_DIR)
    return copy.deepcopy(next(o for o in objs if o["kind"] == kind))


@pytest.mark.parametrize("version", ["1.7.0", "1.6.2"])
def test_rayjob_deletion_strategy_rules(version: str) -> None:
    job = _ray("RayJob")
    name = job["metadata"]["name"]
    assert validate_manifest(job, version=version) == []
    job["spec"]["deletionStrategy"] = {"onSuccess": {"policy": "DeleteCluster"}}
    assert validate_manifest(job, version=version) == [
        f"RayJob {name}: spec.deletionStrategy: deletionStrategy requires either BOTH onSuccess "
        "and onFailure, OR the deletionRules field (cannot be empty)"
    ]
    assert validate_manifest(job, version=version)[0].object_field == "spec.deletionStrategy"


@pytest.mark.parametrize(
    ("kind", "where"),
    [
        ("RayCluster", ("spec",)),
        ("RayJob", ("spec", "rayClusterSpec")),
        ("RayService", ("spec", "rayClusterConfig")),
    ],
)
def test_managed_by_must_be_kuberay_or_multikueue(kind: str, where: tuple[str, ...]) -> None:
    obj = _ray(kind)
    node = obj
    for key in where:
        node = node[key]
    node["managedBy"] = "someone-else"
    at = ".".join(where) + ".managedBy"
    assert validate_manifest(obj) == [
        f"{kind} {obj['metadata']['name']}: {at}: the managedBy field value must be either "
        "'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'"
    ]


def test_podmonitoring_rules_message_expression_duration_escaping_and_isurl() -> None:
    prod = stack("prod")
    pm = copy.deepcopy(render_monitoring(plan(prod), prod.cluster)[0])
    head = f"PodMonitoring {pm['metadata']['name']}"
    assert validate_other(pm) == []
    endpoint = pm["spec"]["endpoints"][0]
    endpoint["interval"] = "30s"
    endpoint["timeout"] = "1m"  # durations: 1m > 30s (as strings, '1m' < '30s' would pass)
    assert validate_other(pm) == [  # CEL prints a duration in seconds (cel-spec string(duration))
        f"{head}: spec.endpoints[0]: scrape timeout (60s) must not be greater than scrape "
        "interval (30s)"
    ]
    endpoint["timeout"] = "10s"
    pm["spec"]["targetLabels"]["fromPod"][0]["to"] = "namespace"
    endpoint["proxyUrl"] = "not a url"
    endpoint["authorization"] = {
        "credentials": {"secret": {"name": "s", "key": "k", "namespace": "other"}}
    }
    assert validate_other(pm) == [
        f"{head}: <root>: Namespace not allowed on PodMonitoring secret references.",
        f"{head}: spec.endpoints[0].proxyUrl: failed rule: isURL(self) && !self.matches('@')",
        f'{head}: spec.targetLabels.fromPod[0].to: cannot relabel onto protected label "namespace"',
    ]


def test_escape_follows_kubernetes() -> None:
    assert escape("namespace") == "__namespace__"
    assert escape("x-prop") == "x__dash__prop"
    assert escape("redact__d") == "redact__underscores__d"
    assert escape("a.b/c") == "a__dot__b__slash__c"
    assert escape("9lives") is None


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://example.com:8080/path?q=1", True),
        ("/absolute/path", True),
        ("mailto:someone", True),
        ("http://[::1]:80/", True),
        ("relative/path", False),
        ("", False),
        ("http://exa mple.com/", False),
        ("http://example.com:port/", False),
        ("http://example.com/%zz", False),
        ("http://example.com/\x7f", False),
    ],
)
def test_is_url_is_go_parse_request_uri(url: str, ok: bool) -> None:
    assert is_url(url) is ok


def test_parse_duration_units_and_garbage() -> None:
    assert parse_duration("1m30s") == 90 * 10**9
    assert parse_duration("1h") == 3600 * 10**9
    assert parse_duration("2d") == 2 * 86400 * 10**9
    assert parse_duration("250ms") == 250 * 10**6
    assert parse_duration("soon") is None
    assert parse_duration("5") is None


def test_kubernetes_library_functions_registered() -> None:
    for text in (
        "[1, 2, 3].isSorted() && ![2, 1].isSorted()",
        "[1, 2, 3].sum() == 6 && [3, 1].min() == 1 && [3, 1].max() == 3",
        "'abc123'.find('[0-9]+') == '123' && 'a1b2'.findAll('[0-9]') == ['1', '2']",
        "isURL('https://example.com') && !isURL('example')",
        "'%s-%d'.format(['a', 1]) == 'a-1'",
    ):
        program, why = compile_rule(text)
        assert program is not None, why
        assert program.eval(data={"self": None}).value() is True, text


def test_check_reports_a_cel_refusal_at_the_stack_field_and_an_unevaluated_rule_as_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``raygke check``'s render checks: a RayCluster refused by a CEL rule is a Problem
    of ``ray_clusters[<name>]`` (rule ``crd-schema``); a CRD whose rule the runtime cannot
    compile (here a copy of the carried CRDs with a ``quantity()`` rule added) gives a warning
    naming the rule, never a silent pass."""
    import shutil

    import yaml

    from components.stack.checks import check_manifests

    cfg = stack("prod")
    manifests = render_manifests(cfg, WORKING_DIR)
    rc = next(m for m in manifests if m["kind"] == "RayCluster")
    rc["spec"]["managedBy"] = "someone-else"
    name = rc["metadata"]["name"]
    found = [p for p in check_manifests(cfg, manifests) if p.rule == "crd-schema"]
    assert [(p.path, p.severity) for p in found] == [(f"ray_clusters[{name}]", "error")]
    assert "the managedBy field value must be either" in found[0]

    d = tmp_path / "crds"
    shutil.copytree(COMPONENTS / "kuberay" / "crds" / "v1.7.0", d)
    (d / "SHA256SUMS").unlink(missing_ok=True)
    f = d / "ray.io_rayclusters.yaml"
    doc = yaml.load(f.read_text(), Loader=yaml.CSafeLoader)
    spec = next(v for v in doc["spec"]["versions"] if v["name"] == "v1")
    spec_schema = spec["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["x-kubernetes-validations"] = [{"rule": "quantity('1') == quantity('1')"}]
    f.write_text(yaml.dump(doc, Dumper=yaml.CSafeDumper))
    monkeypatch.setenv("RAYGKE_CRDS_DIR", str(d))
    del rc["spec"]["managedBy"]
    notes = [p for p in check_manifests(cfg, manifests) if p.rule == "crd-cel-not-evaluated"]
    assert [(p.path, p.severity) for p in notes] == [(f"ray_clusters[{name}]", "warning")]
    assert "quantity('1') == quantity('1')" in notes[0] and "not checked" in notes[0]


def test_raygke_check_prints_an_unevaluated_rule_as_a_warning_and_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``raygke check --format json``: the note is a ``warning`` record, the exit code 0."""
    import contextlib
    import io
    import json
    import shutil

    import yaml

    from raygke.cli import main

    d = tmp_path / "crds"
    shutil.copytree(COMPONENTS / "kuberay" / "crds" / "v1.7.0", d)
    (d / "SHA256SUMS").unlink(missing_ok=True)
    f = d / "ray.io_rayclusters.yaml"
    doc = yaml.load(f.read_text(), Loader=yaml.CSafeLoader)
    spec = next(v for v in doc["spec"]["versions"] if v["name"] == "v1")
    spec["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        {"rule": "ip('10.0.0.1').family() == 4"}
    ]
    f.write_text(yaml.dump(doc, Dumper=yaml.CSafeDumper))
    monkeypatch.setenv("RAYGKE_CRDS_DIR", str(d))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = main(["check", "--stack", "dev", "--no-policy", "--format", "json"])
    assert rc == 0, out.getvalue()
    text = out.getvalue()
    records = json.loads(text[text.index("{") :])
    found = [r for r in records["problems"] if r["rule"] == "crd-cel-not-evaluated"]
    assert [r["severity"] for r in found] == ["warning"]
    assert "ip('10.0.0.1').family() == 4" in found[0]["message"]
    assert "edit " not in found[0]["message"]  # about the CRD, not a stack field
