"""Helpers for the platform tests, one style for all: the repository's stacks (:func:`stack`), the
CRD folder, and the real Pulumi program run under mocks on an in-memory config (:func:`render`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from components.config.stack import StackConfig
from components.raycrs.crd import crds_available, missing_crds_message
from components.stack.loader import load_stack_file, validate
from raygke.mocks import SynthMocks
from raygke.synth import config_entries, run_program

ROOT = Path(__file__).resolve().parent.parent
STACKS = ("dev", "prod")
WORKING_DIR = "gs://bucket/workloads/0123456789abcdef.zip"


def stack(name: str) -> StackConfig:
    return load_stack_file(ROOT / f"Pulumi.{name}.yaml")


needs_crds = pytest.mark.skipif(not crds_available(), reason=missing_crds_message())

from components.kernel.release import RELEASE  # noqa: E402

BASE: dict[str, Any] = {
    "defaults": RELEASE,  # a new stack: this release's defaults (components/config/epochs.py)
    "project": "ray-gke-test",
    "region": "us-east5",
    "zones": ["us-east5-b"],
    "labels": {"env": "test"},
    "cluster": {"name": "ray-test", "deletion_protection": False},
    "node_pools": [
        {"name": "cpu", "machine_type": "n2-standard-8", "max_nodes": 2},
        {
            "name": "v6e",
            "tpu": {"generation": "v6e", "topology": "4x4"},
            "max_slices": 2,
            "zones": ["us-east5-b"],
        },
        {
            "name": "v5e",
            "tpu": {"generation": "v5e", "topology": "2x2"},
            "max_slices": 3,
            "zones": ["us-east5-b"],
        },
        {
            "name": "l4",
            "gpu": {"type": "nvidia-l4", "count": 1},
            "max_nodes": 2,
            "provisioning": "spot",
            "labels": {"team": "vision"},
        },
    ],
    "nap": {"resource_limits": {"cpu": 4096, "memory": 8192, "tpu-v6e-slice": 64}},
    "secrets": [{"name": "wandb-api-key", "readers": ["ray-train"]}],
}


def config(**overrides: Any) -> dict[str, Any]:
    """A copy of :data:`BASE` with top-level keys replaced."""
    data = copy.deepcopy(BASE)
    data.update(overrides)
    return data


def render(
    data: dict[str, Any], stack: str = "test", *, crd_specs: str = "digest"
) -> tuple[list[dict], dict]:
    """(resource records, outputs) of the program for a config mapping (validated first, so an
    invalid test config fails with its problem lines).

    ``crd_specs``: as :func:`raygke.synth.run_program`; by default ``"digest"``, each KubeRay
    CRD's ``spec`` as its digest (group, names, version names, sha256), every other record as in
    a full render at a tenth of its cost (the ~6 MB of CRD schemas are most of a helm-mode
    render's time). A test that reads a CRD's schema asks for ``"full"``."""
    validate(data)
    return run_program(
        config_entries(data, {"project": data["project"]}), stack, crd_specs=crd_specs
    )


def of_type(records: list[dict], typ: str) -> list[dict]:
    """Records of one resource type."""
    return [r for r in records if r["type"] == typ]


def by_name(records: list[dict], typ: str) -> dict[str, dict]:
    """Inputs of the records of one type keyed by their ``name`` input (GCP/GKE name)."""
    return {r["inputs"].get("name", r["name"]): r["inputs"] for r in of_type(records, typ)}


class _InputsOnlyMocks(SynthMocks):
    """Mocks that return a resource's inputs and nothing it computes, as a first ``pulumi
    preview`` knows it: every output the program did not give as an input is unknown."""

    def new_resource(self, args: Any) -> tuple[str, dict]:
        return f"{args.name}-id", dict(args.inputs)


def preview_outputs(
    data: dict[str, Any], stack: str = "test", *, crd_specs: str = "digest"
) -> dict[str, tuple[bool, Any]]:
    """Stack output name -> (known, value) of the program run in preview mode
    (``set_mocks(..., preview=True)``) with mocks that compute nothing (see
    :class:`_InputsOnlyMocks`); ``crd_specs`` as for :func:`render`."""
    import runpy

    import pulumi
    from pulumi.runtime import settings as psettings
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    from components.kernel.base import PROJECT_NAMESPACE
    from components.kuberay.render import crd_specs as crd_mode
    from raygke.synth import PROGRAM

    validate(data)
    pulumi.runtime.set_all_config(config_entries(data, {"project": data["project"]}))
    psettings.ROOT.set(None)
    psettings.SETTINGS.rpc_manager.clear()
    psettings.SETTINGS.outputs.clear()
    pulumi.runtime.set_mocks(
        _InputsOnlyMocks(data["project"]), project=PROJECT_NAMESPACE, stack=stack, preview=True
    )
    root = psettings.get_root_resource()
    try:
        with crd_mode(crd_specs):
            _sync_await(run_pulumi_func(lambda: runpy.run_path(str(PROGRAM), run_name="__main__")))

        async def _resolve() -> dict[str, tuple[bool, Any]]:
            out: dict[str, tuple[bool, Any]] = {}
            for key in sorted(root.outputs):
                o = pulumi.Output.from_input(root.outputs[key])
                out[key] = (await o.is_known(), await o.future())
            return out

        return _sync_await(_resolve())
    finally:
        pulumi.runtime.set_mocks(
            _InputsOnlyMocks(data["project"]), project=PROJECT_NAMESPACE, stack=stack, preview=False
        )


def json_lines(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file (a trainer's ``step_log`` or ``weights_log``)."""
    import json

    return [json.loads(line) for line in path.read_text().splitlines()]


def steps_by_attempt(step_log: Path) -> list[list[int]]:
    """The steps a trainer's ``step_log`` records (lines with ``step`` and ``attempt``), one list
    per attempt (Ray Train's restarts), in the order the attempts first appear."""
    entries = json_lines(step_log)
    attempts = list(dict.fromkeys(e["attempt"] for e in entries))
    return [[e["step"] for e in entries if e["attempt"] == a] for a in attempts]


def check_records(records: list[dict[str, Any]]) -> list[Any]:
    """Every rule of the policy pack (:data:`components.security.policy.RULES`) over synth
    records, one Problem printed ``<rule>: ...`` per violation (``raygke synth`` runs the GCP ones,
    the pack all of them at ``pulumi preview``)."""
    from components.security.policy import RULES, resources_from_records, run_rules

    return [v.as_problem() for v in run_rules(resources_from_records(records), RULES)]
