"""The assembly, the floor standing on every concept: the cross-field rules table (:mod:`.rules`),
the loader (:mod:`.loader`), the rendered-stack checks (:mod:`.checks`, :mod:`.name_checks`), the
outputs (:mod:`.outputs`), the Pulumi root component and config reader (:mod:`.component`). The
floors below it are drawn in docs/development.md and held by tests/test_imports.py. The package
imports nothing: import from the module (``from components.stack.loader import load_stack_file``).
"""
