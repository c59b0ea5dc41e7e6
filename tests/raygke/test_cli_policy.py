"""`raygke check` runs the policy pack's rules (components/security/policy.py) over the program's
render and reports them under the pack's rule names."""

from __future__ import annotations

import contextlib
import io

import raygke.synth
from raygke.cli import main


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = main(list(args))
    return rc, out.getvalue()


def test_check_passes_the_policy_rules_on_dev():
    rc, out = run("check", "--stack", "dev")
    assert rc == 0, out


def test_check_reports_a_violated_policy_rule_by_its_name(monkeypatch):
    real = raygke.synth.run_program

    def weakened(config, stack):
        records, outputs = real(config, stack)
        for r in records:
            if r["type"] == "gcp:storage/bucket:Bucket":
                r["inputs"].pop("encryption", None)
            if r["type"] == "gcp:container/nodePool:NodePool":
                r["inputs"]["nodeConfig"]["shieldedInstanceConfig"]["enableSecureBoot"] = False
        return records, outputs

    monkeypatch.setattr(raygke.synth, "run_program", weakened)
    rc, out = run("check", "--stack", "dev")
    assert rc == 1, out
    assert "- bucket-cmek: Bucket storage-datasets: bucket has no customer-managed key" in out
    assert "- secure-boot: NodePool pool-system-pool: node pool has no secure boot" in out
    assert run("check", "--stack", "dev", "--no-policy")[0] == 0
