"""The benchmark scripts: run each as ``python bench/<name>.py``; none is imported by fncore.

This file is for mypy: it reads the folder as the package ``bench``, so that ``builtins.py``
is ``bench.builtins`` and does not shadow the standard library's ``builtins``. Run as a
script, a benchmark imports its sibling ``_measure`` from its own folder, which is then on
``sys.path``; under type checking it imports ``bench._measure``.
"""
