"""GKE custom ComputeClasses (issue 21 item 3): the ``compute_classes`` stack key
(:mod:`components.config.computeclass`), its cross-field rules (:mod:`.rules`), the
``cloud.google.com/v1`` objects (built by :mod:`components.plan.computeclasses`, carried by the plan as
:attr:`components.plan.plan.Plan.compute_class_manifests`, handed out by :mod:`.render`) and
their check against the carried schema (:mod:`.checks`). Pure: nothing here imports Pulumi;
:class:`components.raycrs.component.RayResources` applies the objects.

The package imports nothing itself; :mod:`components.stack` imports :mod:`.rules`.
"""
