"""The plan floor: the stack resolved once. The context (:mod:`.context`), the one resolver
(:mod:`.resolve`), the plan and its records (:mod:`.plan`), the record builders (the GKE node pool
specs :mod:`.nodepools`, the Kueue ResourceFlavors :mod:`.flavors`, the ComputeClasses
:mod:`.computeclasses`) and the derived names (:mod:`.naming`, :mod:`.gcsft_names`).

Stands on :mod:`components.config` and below only; every concept's renders, rules and checks
read it (the layer table of tests/test_imports.py). The package imports nothing itself.
"""
