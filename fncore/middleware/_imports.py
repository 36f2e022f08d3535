"""Functions named in configuration: ``package.module:function``."""

from __future__ import annotations

import importlib


def import_function(spec: str, what: str) -> object:
    """The function ``spec`` (``package.module:function``) names; ``what`` it is for errors.

    Raises:
        ValueError: when ``spec`` is not of that form, does not import (whatever the module
            raises), or is not callable.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        msg = f"{what} {spec!r} must be written 'package.module:function'"
        raise ValueError(msg)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # a module that fails to import, whatever it raises
        msg = f"{what} {spec!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        raise ValueError(msg) from None
    found = getattr(module, attribute, None)
    if not callable(found):
        msg = f"{what} {spec!r}: {attribute!r} is not a function of {module_name!r}"
        raise ValueError(msg)
    return found
