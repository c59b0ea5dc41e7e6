"""``raygke diff``'s plan from two renders (pure comparison; the git scenarios are in
test_diff_git.py)."""

from __future__ import annotations

import copy
import json

import pytest

from raygke.diff.compare import compare
from raygke.diff.formats import render_json, render_markdown
from raygke.diff.replacement import COMPONENT_RULE, RULES, forcing_fields, rule_for

POOL = "gcp:container/nodePool:NodePool"


def _pool(**node_config) -> dict:
    return {
        "type": POOL,
        "name": "pool-h100-pool",
        "urn": "urn:pulumi:prod::ray-gke::x$" + POOL + "::pool-h100-pool",
        "parent": "ray-gke:nodepool:NodePool::pool-h100",
        "inputs": {
            "name": "h100",
            "initialNodeCount": 0,
            "nodeConfig": {"machineType": "a3-highgpu-8g", "spot": False, **node_config},
        },
        "options": {
            "protect": False,
            "ignore_changes": ["initialNodeCount"],
            "replace_on_changes": [],
            "delete_before_replace": True,
            "retain_on_delete": False,
            "depends_on": [],
            "provider": None,
        },
    }


def _edit(record: dict, **changes) -> dict:
    r = copy.deepcopy(record)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = r
        for p in parents:
            node = node[p]
        node[last] = value
    return r


def test_no_change():
    plan = compare([_pool()], [_pool()], "prod")
    assert plan.changes == [] and plan.unchanged == 1
    assert plan.summary() == "Resources: no changes, 1 unchanged"


def test_spot_replaces_the_pool_and_says_why():
    plan = compare([_pool()], [_pool(spot=True)], "prod")
    (c,) = plan.changes
    assert c.op == "replace" and c.delete_before_replace
    assert c.reasons == ["nodeConfig.spot (node_config.spot: ForceNew)"]
    assert [(f.path, f.old, f.new, f.forces_replacement) for f in c.fields] == [
        ("nodeConfig.spot", False, True, True)
    ]
    assert c.flags == []  # delete_before_replace: no name clash
    assert plan.summary() == "Resources: +-1 to replace, 0 unchanged"


def test_machine_type_updates_in_place():
    plan = compare([_pool()], [_pool(machineType="a3-megagpu-8g")], "prod")
    (c,) = plan.changes
    assert c.op == "update" and c.reasons == []
    assert plan.summary() == "Resources: ~ 1 to update, 0 unchanged"


def test_ignore_changes_hides_the_path():
    plan = compare([_pool()], [_edit(_pool(), inputs__initialNodeCount=3)], "prod")
    assert plan.changes == []


def test_replace_of_fixed_name_without_delete_before_replace_is_flagged():
    old = _edit(_pool(), options__delete_before_replace=False)
    new = _edit(_pool(spot=True), options__delete_before_replace=False)
    (c,) = compare([old], [new], "prod").changes
    assert c.op == "replace" and not c.delete_before_replace
    assert any("already exists" in f for f in c.flags)


def test_losing_protect_is_an_update_and_deleting_protected_is_blocked():
    key = {
        "type": "gcp:kms/cryptoKey:CryptoKey",
        "name": "security-gke-secrets",
        "urn": "urn:k",
        "parent": None,
        "inputs": {"name": "gke-secrets", "keyRing": "r"},
        "options": {**_pool()["options"], "protect": True, "ignore_changes": []},
    }
    (c,) = compare([key], [_edit(key, options__protect=False)], "prod").changes
    assert c.op == "update"
    assert [(f.path, f.old, f.new) for f in c.fields] == [("options.protect", True, False)]
    (d,) = compare([key], [], "prod").changes
    assert d.op == "delete" and any("protect" in f for f in d.flags)
    (r,) = compare([key], [_edit(key, inputs__keyRing="r2")], "prod").changes
    assert r.op == "replace" and any("blocked" in f for f in r.flags)


def test_cluster_deletion_protection_blocks_replacement():
    cl = {
        "type": "gcp:container/cluster:Cluster",
        "name": "cluster-gke",
        "urn": "urn:c",
        "parent": None,
        "inputs": {"name": "ray-prod", "network": "n1", "deletionProtection": True},
        "options": {**_pool()["options"], "ignore_changes": []},
    }
    (c,) = compare([cl], [_edit(cl, inputs__network="n2")], "prod").changes
    assert c.op == "replace"
    assert any("deletionProtection" in f for f in c.flags)


def test_rayjob_spec_change_is_a_rerun():
    job = {
        "type": "kubernetes:ray.io/v1:RayJob",
        "name": "ray-rayjob-train",
        "urn": "urn:j",
        "parent": None,
        "inputs": {"metadata": {"name": "train"}, "spec": {"entrypoint": "python a.py"}},
        "options": {
            **_pool()["options"],
            "ignore_changes": [],
            "replace_on_changes": ["spec"],
        },
    }
    plan = compare([job], [_edit(job, inputs__spec={"entrypoint": "python b.py"})], "prod")
    (c,) = plan.changes
    assert c.op == "replace" and c.rerun
    assert c.reasons == ["spec (replace_on_changes)"]
    assert "job re-run" in render_markdown(plan)


def test_rayjob_queue_label_change_is_a_rerun_and_other_labels_are_not():
    """The RayJob's options quote the label key as Pulumi does
    (``metadata.labels["kueue.x-k8s.io/queue-name"]``); Kueue refuses the label's change on an
    unsuspended job, so a queue change re-runs it; another label is an in-place update."""
    from components.raycrs.component import rerun_options

    labels = {"app.kubernetes.io/part-of": "ray-gke", "kueue.x-k8s.io/queue-name": "ml-batch"}
    job = {
        "type": "kubernetes:ray.io/v1:RayJob",
        "name": "ray-rayjob-train",
        "urn": "urn:j",
        "parent": None,
        "inputs": {"metadata": {"name": "train", "labels": labels}, "spec": {"entrypoint": "a"}},
        "options": {**_pool()["options"], "ignore_changes": [], **rerun_options("RayJob")},
    }
    moved = copy.deepcopy(job)
    moved["inputs"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "vision"
    (c,) = compare([job], [moved], "prod").changes
    assert c.op == "replace" and c.rerun
    assert c.reasons == ['metadata.labels["kueue.x-k8s.io/queue-name"] (replace_on_changes)']
    relabelled = copy.deepcopy(job)
    relabelled["inputs"]["metadata"]["labels"]["app.kubernetes.io/part-of"] = "other"
    (c,) = compare([job], [relabelled], "prod").changes
    assert c.op == "update" and not c.rerun


def test_create_delete_and_summary_shape():
    a = _pool()
    b = _edit(_pool(), urn="urn:other", name="pool-l4-pool")
    plan = compare([a], [b], "prod")
    assert [c.op for c in plan.changes] == ["create", "delete"]
    assert plan.summary() == "Resources: + 1 to create, - 1 to delete, 0 unchanged"


def test_secrets_and_long_values_are_masked():
    prov = {
        "type": "pulumi:providers:kubernetes",
        "name": "k8s",
        "urn": "urn:p",
        "parent": None,
        "inputs": {"kubeconfig": "apiVersion: v1 token=abc", "note": "x" * 400},
        "options": _pool()["options"],
    }
    new = _edit(prov, inputs__kubeconfig="apiVersion: v1 token=def", inputs__note="y" * 400)
    plan = compare([prov], [new], "prod")
    text = render_json(plan)
    assert "token=abc" not in text and "token=def" not in text
    assert "x" * 250 not in text
    fields = {f["path"]: f for f in json.loads(text)["changes"][0]["fields"]}
    assert fields["kubeconfig"]["new"] == "[secret]"


def test_renders_without_options_are_matched_by_type_and_name():
    old = {k: v for k, v in _pool().items() if k not in ("urn", "options")}
    plan = compare([old], [_pool()], "prod")
    assert plan.changes == [] and plan.unchanged == 1


@pytest.mark.parametrize("typ", sorted(RULES))
def test_every_rule_cites_a_source_and_has_fields(typ):
    rule = RULES[typ]
    assert rule.source.startswith("https://") and (rule.fields or rule.in_place)


def test_node_pool_table_matches_the_provider_facts():
    """terraform-provider-google v7.30.0 node_config.go: spot, guest_accelerator (with the GPU
    driver config) and the pool name replace; machine type, disk, labels, taints update."""
    forcing = {
        p: [f.attribute for f in forcing_fields(POOL, [p])]
        for p in (
            "nodeConfig.spot",
            "nodeConfig.guestAccelerators.gpuDriverInstallationConfig.gpuDriverVersion",
            "placementPolicy.tpuTopology",
            "name",
            "nodeConfig.machineType",
            "nodeConfig.diskSizeGb",
            "nodeConfig.diskType",
            "nodeConfig.labels.a",
            "nodeConfig.taints",
            "nodeConfig.resourceLabels.env",
            "autoscaling.maxNodeCount",
        )
    }
    replacing = {p for p, attrs in forcing.items() if attrs}
    assert replacing == {
        "nodeConfig.spot",
        "nodeConfig.guestAccelerators.gpuDriverInstallationConfig.gpuDriverVersion",
        "placementPolicy.tpuTopology",
        "name",
    }


def test_kubernetes_objects_replace_on_rename_only():
    assert rule_for("kubernetes:core/v1:Namespace") is not None
    assert forcing_fields("kubernetes:core/v1:ServiceAccount", ["metadata.name"])
    assert not forcing_fields("kubernetes:core/v1:ServiceAccount", ["metadata.labels.a"])
    assert rule_for("ray-gke:nodepool:NodePool") is COMPONENT_RULE


def test_cli_usage_errors_exit_2(capsys):
    from raygke.cli import main

    assert main(["diff", "--stack", "prod", "--format", "xml"]) == 2
    assert "--format 'xml': expected one of text, markdown, json" in capsys.readouterr().err
    assert main(["cost", "--stack", "prod", "--format", "yaml"]) == 2
    assert main(["cost"]) == 2  # no stack chosen


def test_replacement_under_a_new_parent_does_not_clash_but_a_bucket_name_does():
    key = {
        "type": "gcp:kms/cryptoKey:CryptoKey",
        "name": "security-buckets",
        "urn": "urn:k",
        "parent": None,
        "inputs": {"name": "buckets", "keyRing": "rings/a"},
        "options": {**_pool()["options"], "ignore_changes": [], "delete_before_replace": False},
    }
    (c,) = compare([key], [_edit(key, inputs__keyRing="rings/a-g2")], "dev").changes
    assert c.op == "replace" and not any("already exists" in f for f in c.flags)
    bucket = {
        "type": "gcp:storage/bucket:Bucket",
        "name": "storage-datasets",
        "urn": "urn:b",
        "parent": None,
        "inputs": {"name": "p-datasets", "location": "US-EAST5", "forceDestroy": True},
        "options": key["options"],
    }
    (b,) = compare([bucket], [_edit(bucket, inputs__location="US")], "dev").changes
    assert b.op == "replace" and any("already exists" in f for f in b.flags)


def test_raycluster_template_update_says_running_pods_keep_the_old_template():
    rc = {
        "type": "kubernetes:ray.io/v1:RayCluster",
        "name": "ray-raycluster-training",
        "urn": "urn:rc",
        "parent": None,
        "inputs": {
            "metadata": {"name": "training"},
            "spec": {"headGroupSpec": {"template": {"spec": {"image": "ray:2.59"}}}},
        },
        "options": {**_pool()["options"], "ignore_changes": [], "delete_before_replace": False},
    }
    new = _edit(rc, inputs__spec={"headGroupSpec": {"template": {"spec": {"image": "ray:2.60"}}}})
    plan = compare([rc], [new], "prod")
    (c,) = plan.changes
    assert c.op == "update" and c.notes and "upgradeStrategy" in c.notes[0]
    assert "upgradeStrategy" in render_markdown(plan)


def test_a_document_in_a_string_is_compared_leaf_by_leaf() -> None:
    """A RayService's serveConfigV2 (YAML) and a RayJob's entrypoint (a command line with a JSON
    argument) show the leaf that changed, not two shortened strings."""
    import json
    import shlex

    import yaml

    from raygke.diff.compare import changed_inputs

    def serve(batch: int) -> dict:
        app = {"name": "lm", "args": {"max_batch_size": batch, "checkpoint": "gs://c/" + "x" * 200}}
        return {"spec": {"serveConfigV2": yaml.safe_dump({"applications": [app]})}}

    assert changed_inputs(serve(16), serve(32)) == [
        ("spec.serveConfigV2.applications[0].args.max_batch_size", 16, 32)
    ]

    def job(steps: int) -> dict:
        args = json.dumps({"steps": steps, "dataset": "gs://d/" + "x" * 200})
        return {
            "spec": {
                "entrypoint": f"python -m workloads.train_lm --config-json {shlex.quote(args)}"
            }
        }

    assert changed_inputs(job(100), job(200)) == [("spec.entrypoint.argv[4].steps", 100, 200)]


def test_stack_label_and_default_base(tmp_path) -> None:
    import subprocess
    from pathlib import Path

    from raygke.diff.compare import DiffError
    from raygke.diff.sides import default_base, stack_label

    assert stack_label("prod", None) == "prod"
    assert stack_label(None, Path("stacks/Pulumi.mine.yaml")) == "mine"
    assert stack_label(None, Path("mine.yaml")) == "mine.yaml"
    subprocess.run(["git", "init", "-q", "-b", "work", str(tmp_path)], check=True)
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
        cwd=tmp_path,
        check=True,
    )
    assert default_base(tmp_path, None) == "HEAD"
    with pytest.raises(DiffError, match="give --base REV"):
        default_base(tmp_path, Path("Pulumi.dev.yaml"))
    subprocess.run(["git", "branch", "main"], cwd=tmp_path, check=True)
    assert default_base(tmp_path, Path("Pulumi.dev.yaml")) == "main"


def test_deleting_or_replacing_a_force_destroyed_bucket_is_a_data_loss_warning() -> None:
    bucket = {
        "type": "gcp:storage/bucket:Bucket",
        "name": "storage-checkpoints",
        "urn": "urn:b",
        "parent": None,
        "inputs": {"name": "p-ray-checkpoints", "location": "US", "forceDestroy": True},
        "options": {**_pool()["options"], "ignore_changes": [], "delete_before_replace": False},
    }
    (gone,) = compare([bucket], [], "dev").changes
    assert gone.op == "delete"
    assert any(f.startswith("data loss") and "p-ray-checkpoints" in f for f in gone.flags)
    kept = _edit(bucket, inputs__forceDestroy=False)
    (guarded,) = compare([kept], [], "dev").changes
    assert not any(f.startswith("data loss") for f in guarded.flags)
    assert any("fails if bucket p-ray-checkpoints holds objects" in f for f in guarded.flags)


def test_a_replaced_parent_recreates_its_children_and_the_count_moves() -> None:
    opts = {**_pool()["options"], "ignore_changes": [], "delete_before_replace": False}
    ring = {
        "type": "gcp:kms/keyRing:KeyRing",
        "name": "ring",
        "urn": "urn:ring",
        "parent": None,
        "inputs": {"name": "r1", "location": "us-central1", "project": "p"},
        "options": opts,
    }
    key = {
        "type": "gcp:kms/cryptoKey:CryptoKey",
        "name": "key",
        "urn": "urn:key",
        "parent": None,
        "inputs": {"name": "k", "keyRing": "projects/p/locations/us-central1/keyRings/r1"},
        "options": {**opts, "depends_on": ["gcp:kms/keyRing:KeyRing::ring"]},
    }
    other = {**key, "name": "other", "urn": "urn:o", "options": {**opts, "depends_on": []}}
    moved = _edit(ring, inputs__project="p2")  # the ring is replaced, its name kept
    plan = compare([ring, key, other], [moved, key, other], "dev")
    ops = {c.name: c for c in plan.changes}
    assert ops["ring"].op == "replace"
    assert ops["key"].op == "replace"
    assert ops["key"].reasons == ["recreated: keyRing names r1, which is replaced"]
    assert "other" not in ops and plan.unchanged == 1


def test_a_side_whose_stack_is_invalid_lists_its_problems_and_a_bad_set_stays_exit_2(tmp_path):
    """The render of an invalid side says what is wrong (the problem lines raygke check gives),
    not its last notes; a --set that does not fit that side's file stays a usage error."""
    from pathlib import Path

    from raygke.diff.compare import DiffError
    from raygke.diff.sides import render_tree

    root = Path(__file__).resolve().parents[3]
    text = (root / "Pulumi.dev.yaml").read_text().replace("max_replicas: 4", "max_replicas: 40")
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(text.replace("    regional: false\n", "    regional: false\n    regoinal: 1\n"))
    with pytest.raises(DiffError) as e:
        render_tree(root, "bad", "working tree", None, bad)
    message = str(e.value)
    assert e.value.exit_code == 1
    assert message.startswith("rendering working tree failed: the stack file is invalid")
    assert "\n  - cluster.regoinal: unknown key 'regoinal'; did you mean 'regional'?" in message
    assert "note:" not in message
    with pytest.raises(DiffError) as e:
        render_tree(root, "dev", "working tree", ["node_pools[nope].max_nodes=1"])
    assert e.value.exit_code == 2 and "node_pools has no entry 'nope'" in str(e.value)
    assert "error: error:" not in f"error: {e.value}"


def test_a_removed_node_exclusion_is_flagged_as_letting_upgrades_drain_nodes_again() -> None:
    excl = {
        "exclusionName": "training-runs",
        "startTime": "2026-12-01T00:00:00Z",
        "exclusionOptions": {
            "scope": "NO_MINOR_OR_NODE_UPGRADES",
            "endTimeBehavior": "UNTIL_END_OF_SUPPORT",
        },
    }
    window = {"dailyMaintenanceWindow": {"startTime": "04:00"}}
    cl = {
        "type": "gcp:container/cluster:Cluster",
        "name": "cluster-gke",
        "urn": "urn:c",
        "parent": None,
        "inputs": {"name": "ray-prod", "maintenancePolicy": window},
        "options": {**_pool()["options"], "ignore_changes": []},
    }
    held = _edit(cl, inputs__maintenancePolicy={**window, "maintenanceExclusions": [excl]})
    (added,) = compare([cl], [held], "prod").changes
    assert added.op == "update"
    assert added.flags == [
        "maintenance exclusion training-runs added "
        "(NO_MINOR_OR_NODE_UPGRADES, 2026-12-01T00:00:00Z to end of support)"
    ]
    (removed,) = compare([held], [cl], "prod").changes
    (flag,) = removed.flags
    assert flag.startswith("maintenance exclusion training-runs removed")
    assert "may upgrade and drain nodes again" in flag
    minor = copy.deepcopy(excl)
    minor["exclusionOptions"]["scope"] = "NO_MINOR_UPGRADES"
    narrowed = _edit(cl, inputs__maintenancePolicy={**window, "maintenanceExclusions": [minor]})
    (changed,) = compare([held], [narrowed], "prod").changes
    (flag,) = changed.flags
    assert "NO_MINOR_OR_NODE_UPGRADES" in flag and "-> NO_MINOR_UPGRADES" in flag
    assert "drain nodes again" in flag


def test_a_firewall_moves_network_in_place_and_is_replaced_for_its_direction() -> None:
    """terraform-provider-google's Firewall: ``network`` has no ForceNew (the update PATCHes
    it), ``direction`` and ``name`` have; a Network's ``networkProfile`` is set at creation only."""
    fw = {
        "type": "gcp:compute/firewall:Firewall",
        "name": "fw",
        "urn": "urn:fw",
        "parent": None,
        "inputs": {"name": "allow-internal", "network": "vpc-a", "direction": "INGRESS"},
        "options": {**_pool()["options"], "delete_before_replace": False},
    }
    (moved,) = compare([fw], [_edit(fw, inputs__network="vpc-b")], "scale").changes
    assert moved.op == "update"
    (turned,) = compare([fw], [_edit(fw, inputs__direction="EGRESS")], "scale").changes
    assert turned.op == "replace" and turned.reasons == ["direction (direction: ForceNew)"]
    net = {**fw, "type": "gcp:compute/network:Network", "name": "rdma", "inputs": {"name": "r"}}
    profiled = _edit(net, inputs__networkProfile="projects/p/global/networkProfiles/x-vpc-roce")
    (change,) = compare([net], [profiled], "scale").changes
    assert change.op == "replace"


def test_a_field_added_or_removed_shows_as_absent_not_null(tmp_path) -> None:
    """A field only one side has (a new argument rendered as null, a dropped label) reads
    ``(absent) => null`` / ``"x" => (absent)``: not ``null => null``."""
    from io import StringIO

    from rich.console import Console

    from raygke.diff.formats import render_text

    old = _pool(labels={"team": "ml"})
    new = _pool(resourceLabels=None)  # no labels
    plan = compare([old], [new], "prod")
    (c,) = plan.changes
    fields = {f.path: (f.old, f.new, f.added, f.removed) for f in c.fields}
    assert fields == {
        "nodeConfig.labels.team": ("ml", None, False, True),
        "nodeConfig.resourceLabels": (None, None, True, False),
    }
    buf = StringIO()
    render_text(plan, Console(file=buf, width=300, no_color=True), full=True)
    text = buf.getvalue()
    assert "nodeConfig.resourceLabels: (absent) => null" in text
    assert 'nodeConfig.labels.team: "ml" => (absent)' in text
    md = render_markdown(plan)
    assert "+     nodeConfig.resourceLabels: null" in md
    assert "-     nodeConfig.resourceLabels" not in md
    assert '-     nodeConfig.labels.team: "ml"' in md and "+     nodeConfig.labels.team" not in md
    assert json.loads(render_json(plan))["changes"][0]["fields"]
