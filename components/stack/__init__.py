"""The assembly: the floor that stands on every concept. The cross-field rules table
(:mod:`.rules`), the loader (:mod:`.loader`), the rendered-stack checks (:mod:`.checks`,
:mod:`.name_checks`), the outputs (:mod:`.outputs`) and the Pulumi program's root component and
config reader (:mod:`.component`).

The floors below it: :mod:`components.config` (``StackConfig`` and the concept models it
composes), :mod:`components.plan` (the stack resolved once: context, resolve, plan, the record
builders, the derived names), the concept folders (renders, rules, checks, components),
:mod:`components.kernel`, :mod:`components.catalog`, :mod:`contract`; the layer table is
tests/test_imports.py, drawn in docs/development.md.

The package imports nothing: callers import from the module that holds a name
(``from components.stack.loader import load_stack_file``).
"""
