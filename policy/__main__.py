"""The ray-gke policy pack: the secure-default rules of :mod:`components.security.policy`, enforced
(mandatory) at ``pulumi preview`` / ``pulumi up``::

    make policy-venv                              # once: policy/venv with pulumi-policy
    pulumi preview --stack prod --policy-pack policy

The rule functions are the ones ``raygke check`` runs offline over the synth render; this file only
wraps them: each resource rule as a ``ResourceValidationPolicy``, each stack-wide rule as a
``StackValidationPolicy``, with the same names. Props reach the rules through
:func:`components.security.policy.normalise` (the SDK's unknown-value proxies unwrapped; a value
unknown at preview counts as set).

Sources: the Python policy SDK (``pulumi_policy``: ``PolicyPack``, ``ResourceValidationPolicy``,
``StackValidationPolicy``, ``EnforcementLevel.MANDATORY``),
https://www.pulumi.com/docs/iac/using-pulumi/crossguard/ and the policy pack project file
https://www.pulumi.com/docs/discovery-governance/reference/policy-project-file/.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pulumi_policy import (
    EnforcementLevel,
    PolicyPack,
    ResourceValidationPolicy,
    StackValidationPolicy,
)

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from components.security.policy import RULES, Resource, Rule, normalise  # noqa: E402

PACK_NAME = "ray-gke-secure-defaults"


def _resource_policy(rule: Rule) -> ResourceValidationPolicy:
    def validate(args, report_violation) -> None:
        r = Resource(args.resource_type, args.name, normalise(args.resource_type, args.props))
        for problem in rule.check(r):
            report_violation(problem.message)

    return ResourceValidationPolicy(name=rule.name, description=rule.description, validate=validate)


def _stack_policy(rule: Rule) -> StackValidationPolicy:
    def validate(args, report_violation) -> None:
        resources = [
            Resource(p.resource_type, p.name, normalise(p.resource_type, p.props))
            for p in args.resources
        ]
        for violation in rule.check(resources):
            report_violation(violation.message)

    return StackValidationPolicy(name=rule.name, description=rule.description, validate=validate)


def policies() -> list[ResourceValidationPolicy | StackValidationPolicy]:
    """One policy per rule of :data:`components.security.policy.RULES`, in its order."""
    return [_resource_policy(r) if r.kind == "resource" else _stack_policy(r) for r in RULES]


if __name__ == "__main__":
    PolicyPack(name=PACK_NAME, enforcement_level=EnforcementLevel.MANDATORY, policies=policies())
