"""Upgrading ray-gke never breaks a shipped stack (docs/upgrading.md, issue 46): every stack file
the project ever shipped checks with today's product (warnings allowed), and the stacks of the
releases in :data:`tests.upgrade.shipped.RELEASES`, unchanged, plan no replacement or deletion
of a node pool, bucket, KMS key or key ring, secret, registry, network or the cluster.

``make test`` runs a sample (:data:`SAMPLE`); ``make test-upgrade`` (``RAYGKE_UPGRADE_ALL=1``)
runs every file and every release render.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.upgrade import shipped

pytestmark = pytest.mark.slow

ALL = os.environ.get("RAYGKE_UPGRADE_ALL") == "1"

SAMPLE_STACKS = (("812cc9f", "prod"), ("812cc9f", "dev"), ("1c2afd9", "scale"))
SAMPLE_RENDERS = (("812cc9f", "prod"), ("812cc9f", "dev"), ("1c2afd9", "prod"))


def _oldest(stack: str) -> str:
    """The first shipped version of ``stack`` (its last commit in ``git log`` order)."""
    return next(
        name
        for name, commits in reversed(list(shipped.frozen_stacks().items()))
        if name.rsplit("-", 1)[0] == stack and "working tree" not in commits
    )


def _stack_params() -> list[str]:
    if ALL:
        return sorted(shipped.frozen_stacks())
    sample = {shipped.release_stack(c, s).name for c, s in SAMPLE_STACKS}
    return sorted(sample | {_oldest("prod"), _oldest("dev")})


def _render_params() -> list[tuple[str, str]]:
    return shipped.frozen_renders() if ALL else list(SAMPLE_RENDERS)


# What an upgrade may never replace or delete (docs/upgrading.md, contract (b)).
PROTECTED = {
    "gcp:container/cluster:Cluster",
    "gcp:container/nodePool:NodePool",
    "gcp:storage/bucket:Bucket",
    "gcp:kms/keyRing:KeyRing",
    "gcp:kms/cryptoKey:CryptoKey",
    "gcp:secretmanager/secret:Secret",
    "gcp:artifactregistry/repository:Repository",
    "gcp:compute/network:Network",
    "gcp:compute/subnetwork:Subnetwork",
}


def test_every_shipped_stack_file_is_frozen() -> None:
    """The frozen copies are every version the history holds (refresh: ``python -m
    tests.upgrade.shipped --freeze``); in a clone without that history, the copies and the
    release renders are complete on their own."""
    frozen = shipped.frozen_stacks()
    assert {p.name for p in shipped.STACKS.glob("*.yaml")} == set(frozen)
    for commit in shipped.RELEASES:
        assert shipped.release_stack(commit, "prod").is_file()
        assert (shipped.RENDERS / f"prod@{commit}.json.gz").is_file()
    if shipped.history_available():
        versions = shipped.shipped_versions()
        missing = sorted(set(versions) - set(frozen))
        assert not missing, (
            f"shipped stack files not frozen: {missing}; run python -m tests.upgrade.shipped "
            "--freeze"
        )
        # by content: a copy frozen before its commit is named by the working tree
        assert sorted(set(frozen) - set(versions)) == [], "frozen copies nothing shipped"


@pytest.mark.parametrize("name", _stack_params())
def test_shipped_stack_file_checks_with_todays_product(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from raygke.cli import main

    rc = main(["check", "--config", str(shipped.STACKS / name)])
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    assert "ok " in out.out


@pytest.mark.parametrize(("commit", "stack"), _render_params())
def test_a_release_stack_upgrades_without_replacing_what_holds_state(
    commit: str, stack: str
) -> None:
    """The release's own render (its code, its stack file) against today's render of the same
    file: what ``raygke diff --base <commit>`` plans with that file committed on HEAD."""
    from raygke.diff.compare import compare
    from raygke.synth import program_config, run_program

    path = shipped.release_stack(commit, stack)
    head, _ = run_program(program_config(path), stack, crd_specs="digest")
    head = json.loads(json.dumps(head))  # as resources.json holds it
    base = shipped.release_render(commit, stack)
    plan = compare(base, head, stack, commit, "today")
    strategy = {
        r["urn"]: ((r["inputs"].get("spec") or {}).get("upgradeStrategy") or {}).get("type")
        for r in base
    }
    broken = [
        f"{c.op} {c.type} {c.name} ({', '.join(c.reasons)})"
        for c in plan.changes
        if c.type in PROTECTED and c.op in ("replace", "delete")
    ]
    assert not broken, broken
    # running RayClusters and RayServices keep serving: a new image or archive reaches them the
    # way the stack asked for it (a RayService's new cluster or in-place Serve redeploy; a
    # RayCluster's pods recreated only under its own upgradeStrategy Recreate), never deleted,
    # scaled down or blocked for room (RayJobs re-run: a new image and workloads archive are a
    # new job; docs/upgrading.md)
    allowed = {"RayService": {"upgrade-new-cluster", "upgrade-incremental", "rolling-restart"}}
    stopped = []
    for c in plan.changes:
        for d in c.disruption:
            kind = d["target"].split(" ", 1)[0]
            ok = allowed.get(kind, set())
            if kind == "RayCluster" and strategy.get(c.urn) == "Recreate":
                ok = {"recreated"}
            if kind in ("RayCluster", "RayService") and d["effect"] not in ok:
                stopped.append(f"{d['target']}: {d['effect']}")
        stopped += [f"{c.name}: {f}" for f in c.flags if "room" in f]
    assert not stopped, stopped
