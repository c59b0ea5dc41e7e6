"""The program enables the GCP APIs it needs and every GCP resource waits for the APIs its type
calls (real program, mocks; dependencies read from the engine requests)."""

from __future__ import annotations

import runpy
from typing import Any

import pulumi
import pytest
from pulumi.runtime import mocks as pmocks
from pulumi.runtime import settings as psettings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components.apis.render import GCS_FT_APIS, REQUIRED_APIS, SERVICE_TYPE, apis_for_type
from components.kernel.base import PROJECT_NAMESPACE
from components.stack.loader import validate
from raygke.mocks import SynthMocks
from raygke.synth import PROGRAM, config_entries
from tests.helpers import config


class _DepsMonitor(pmocks.MockMonitor):
    def __init__(self, mocks: SynthMocks) -> None:
        super().__init__(mocks)
        self.records: dict[str, dict[str, Any]] = {}

    def RegisterResource(self, request: Any) -> Any:
        resp = super().RegisterResource(request)
        self.records[resp.urn] = {
            "type": request.type,
            "name": request.name,
            "inputs": pulumi.runtime.rpc.deserialize_properties(request.object),
            "deps": set(request.dependencies),
        }
        return resp


@pytest.fixture(scope="module")
def records() -> dict[str, dict[str, Any]]:
    data = config()
    validate(data)
    mocks = SynthMocks(data["project"])
    monitor = _DepsMonitor(mocks)
    pulumi.runtime.set_all_config(config_entries(data, {"project": data["project"]}))
    psettings.ROOT.set(None)
    psettings.SETTINGS.rpc_manager.clear()
    psettings.SETTINGS.outputs.clear()
    pulumi.runtime.set_mocks(
        mocks, project=PROJECT_NAMESPACE, stack="test", preview=False, monitor=monitor
    )
    _sync_await(run_pulumi_func(lambda: runpy.run_path(str(PROGRAM), run_name="__main__")))
    return monitor.records


def test_every_required_api_is_enabled_and_left_on_at_destroy(records):
    services = [r["inputs"] for r in records.values() if r["type"] == SERVICE_TYPE]
    assert sorted(s["service"] for s in services) == sorted(REQUIRED_APIS)
    for s in services:
        assert s["disableOnDestroy"] is False
        assert s["project"] == "ray-gke-test"


def test_every_gcp_resource_depends_on_the_apis_it_calls(records):
    urn_of_api = {
        r["inputs"]["service"]: urn for urn, r in records.items() if r["type"] == SERVICE_TYPE
    }
    checked = set()
    for r in records.values():
        needs = apis_for_type(r["type"])
        if r["type"].startswith("gcp:") and r["type"] != SERVICE_TYPE:
            assert needs, f"{r['type']} has no API listed in components/apis/render.py"
        # an API only some stacks enable (GCS fault tolerance's) is waited for where enabled
        assert {a for a in needs if a not in urn_of_api} <= set(GCS_FT_APIS), r["type"]
        missing = {a for a in needs if a in urn_of_api and urn_of_api[a] not in r["deps"]}
        assert not missing, f"{r['type']} {r['name']} does not wait for {missing}"
        checked.add(r["type"])
    for typ in (
        "gcp:container/cluster:Cluster",
        "gcp:container/nodePool:NodePool",
        "gcp:kms/keyRing:KeyRing",
        "gcp:storage/bucket:Bucket",
        "gcp:serviceaccount/account:Account",
        "gcp:secretmanager/secret:Secret",
        "gcp:compute/network:Network",
    ):
        assert typ in checked


def test_api_table():
    assert apis_for_type(SERVICE_TYPE) == ()
    assert apis_for_type("kubernetes:core/v1:Namespace") == ()
    assert "container.googleapis.com" in apis_for_type("gcp:container/nodePool:NodePool")
    assert all(
        a in REQUIRED_APIS for t in ("gcp:kms/cryptoKey:CryptoKey",) for a in apis_for_type(t)
    )
