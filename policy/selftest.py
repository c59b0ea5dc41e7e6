"""Load the policy pack in its own virtualenv and run every policy through the real
``pulumi_policy`` SDK over a synth render (``raygke synth --out DIR``: ``DIR/resources.json``)::

    policy/venv/bin/python policy/selftest.py DIR/resources.json [--expect RULE ...]

Props reach the policies wrapped in the SDK's own unknown-checking proxies, as at
``pulumi preview``. Prints one line per violation; exit 0 when the violated rules are exactly the
``--expect`` ones (none by default), 1 otherwise. ``.ci/run`` runs it (``make policy-check``) so CI
proves the pack loads and passes the shipped stacks.
"""

from __future__ import annotations

import argparse
import json
import runpy
import sys
from pathlib import Path

from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy
from pulumi_policy.policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.proxy import unknown_checking_proxy

HERE = Path(__file__).resolve().parent


def _opts() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("resources", type=Path, help="resources.json of a synth render")
    ap.add_argument("--expect", action="append", default=[], help="a rule expected to fail")
    args = ap.parse_args(argv)
    pack = runpy.run_path(str(HERE / "__main__.py"), run_name="ray_gke_policy_pack")
    policies = pack["policies"]()
    records = [
        r
        for r in json.loads(args.resources.read_text())
        if not r["type"].startswith(("pulumi:", "ray-gke:"))
    ]
    violated: set[str] = set()

    def reporter(policy: str, name: str):
        def report(message: str, urn: str | None = None) -> None:
            violated.add(policy)
            print(f"policy {policy}: {name}: {message}")

        return report

    for policy in policies:
        if isinstance(policy, ResourceValidationPolicy):
            for r in records:
                a = ResourceValidationArgs(
                    r["type"],
                    unknown_checking_proxy(r["inputs"]),
                    f"urn:{r['name']}",
                    r["name"],
                    _opts(),
                    None,
                )
                policy.validate(a, reporter(policy.name, r["name"]))
        elif isinstance(policy, StackValidationPolicy):
            resources = [
                PolicyResource(
                    r["type"],
                    unknown_checking_proxy(r["inputs"]),
                    f"urn:{r['name']}",
                    r["name"],
                    _opts(),
                    None,
                    None,
                    [],
                    {},
                )
                for r in records
            ]
            policy.validate(StackValidationArgs(resources), reporter(policy.name, "stack"))
    print(f"{len(policies)} policies, {len(records)} resources, violated: {sorted(violated)}")
    return 0 if violated == set(args.expect) else 1


if __name__ == "__main__":
    sys.exit(main())
