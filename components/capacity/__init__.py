"""Capacity: Kueue queues in front of the Ray objects and GKE's Dynamic Workload Scheduler, one
concept folder (design.md "Capacity"). Its block is :mod:`components.config.capacity`, its flavor
builder :mod:`components.plan.flavors` (the plan floor: the plan carries every pool's flavor);
here :mod:`.render` (Kueue's objects and Helm values), :mod:`.rules` (on the stack model),
:mod:`.checks` (on the rendered objects: webhook rules, the carried CRDs, quota), :mod:`.preview`
(``raygke queue``) and :mod:`.component`, the only file here that imports ``pulumi``.
"""
