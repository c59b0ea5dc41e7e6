"""The DNS-based control-plane endpoint: on by default, used by the kubeconfig and the Kubernetes
provider; ``raygke check`` refuses a stack no deployer could reach (real program, mocks)."""

from __future__ import annotations

import json

import pytest

import components.kuberay.component as kuberay_resource
from components.kuberay.render import kubeconfig
from components.network.access import is_documentation_range, reachability_problems
from components.stack.loader import validate
from raygke.cli import main
from tests.helpers import ROOT, config, of_type, render

CLUSTER = "gcp:container/cluster:Cluster"


def _render_recording_kubeconfig(monkeypatch, data):
    calls: list[tuple] = []
    real = kuberay_resource.kubeconfig

    def spy(name, endpoint, ca):
        calls.append((name, endpoint, ca))
        return real(name, endpoint, ca)

    monkeypatch.setattr(kuberay_resource, "kubeconfig", spy)
    records, outputs = render(data)
    return records, outputs, calls


def test_dns_endpoint_on_by_default_and_used_by_kubeconfig(monkeypatch):
    records, outputs, calls = _render_recording_kubeconfig(monkeypatch, config())
    (c,) = of_type(records, CLUSTER)
    assert c["inputs"]["controlPlaneEndpointsConfig"] == {
        "dnsEndpointConfig": {"allowExternalTraffic": True}
    }
    # authorized networks still govern the IP endpoint
    assert c["inputs"]["masterAuthorizedNetworksConfig"]["gcpPublicCidrsAccessEnabled"] is False
    dns = outputs["cluster_dns_endpoint"]
    assert dns.endswith(".us-east5-b.gke.goog")
    # the kubeconfig (provider and output) points at the DNS name, without CA data
    assert calls == [("ray-test", dns, None)]


def test_dns_endpoint_off_uses_ip_endpoint_and_ca(monkeypatch):
    data = config(
        cluster={"name": "ray-test", "deletion_protection": False, "dns_endpoint": False},
        network={"master_authorized_networks": [{"name": "office", "cidr": "198.18.0.0/24"}]},
    )
    records, outputs, calls = _render_recording_kubeconfig(monkeypatch, data)
    (c,) = of_type(records, CLUSTER)
    assert c["inputs"]["controlPlaneEndpointsConfig"]["dnsEndpointConfig"] == {
        "allowExternalTraffic": False
    }
    assert "cluster_dns_endpoint" not in outputs
    ((_name, endpoint, ca),) = calls
    assert endpoint == outputs["cluster_endpoint"] and ca  # the IP endpoint with its CA


def test_kubeconfig_builder_without_ca_for_dns():
    kc = json.loads(kubeconfig("c", "gke-abc.us-east5.gke.goog", None))
    assert kc["clusters"][0]["cluster"] == {"server": "https://gke-abc.us-east5.gke.goog"}
    assert kc["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"


@pytest.mark.parametrize(
    ("dns", "nets", "refused"),
    [
        (True, [], False),
        (False, [], True),
        (False, [{"name": "doc", "cidr": "203.0.113.0/24"}], True),
        (False, [{"name": "doc6", "cidr": "2001:db8::/48"}], True),
        (
            False,
            [{"name": "doc", "cidr": "203.0.113.0/24"}, {"name": "ci", "cidr": "198.18.0.0/24"}],
            False,
        ),
        (False, [{"name": "vpn", "cidr": "10.8.0.0/16"}], False),
    ],
)
def test_reachability(dns, nets, refused):
    cfg = validate(
        config(
            cluster={"name": "ray-test", "deletion_protection": False, "dns_endpoint": dns},
            network={"master_authorized_networks": nets},
        )
    )
    problems = reachability_problems(
        cfg.cluster.dns_endpoint, cfg.network.master_authorized_networks
    )
    assert bool(problems) == refused
    if refused:
        (line,) = problems
        assert "cluster.dns_endpoint: false" in line
        assert "set cluster.dns_endpoint: true" in line  # the fix
        assert "master_authorized_networks" in line


def test_documentation_ranges():
    assert is_documentation_range("203.0.113.7/32")
    assert is_documentation_range("192.0.2.0/24")
    assert not is_documentation_range("203.0.112.0/23")  # wider than the range
    assert not is_documentation_range("8.8.8.0/24")


def test_check_refuses_unreachable_stack(tmp_path, capsys, monkeypatch):
    text = (ROOT / "Pulumi.prod.yaml").read_text()
    text = text.replace(
        "    deletion_protection: true\n",
        "    deletion_protection: true\n    dns_endpoint: false\n",
    )
    assert "dns_endpoint: false" in text
    f = tmp_path / "Pulumi.prod.yaml"
    f.write_text(text)
    assert main(["check", "--config", str(f), "--no-render"]) == 1
    err = capsys.readouterr().err
    assert "corp-vpn 203.0.113.0/24" in err and "set cluster.dns_endpoint: true" in err
