r"""Text from outside (models, tools, stores) made safe to print on a terminal.

A model's answer, a tool's result or a stored message may hold terminal control sequences
(``ESC [2J`` clears the screen, ``ESC ]0;...BEL`` retitles the window, a lone ``CR``
overwrites the line). Everything the CLI prints of such text goes through `safe`, which
writes each C0 and C1 control character, and ``DEL``, as a visible escape (``\x1b``,
``\r``), so it shows instead of acting. Line breaks and tabs are kept where the output has
room for several lines (an answer, a message's text); a trace line stays one line.
"""

from __future__ import annotations

_CONTROLS = [*range(0x20), 0x7F, *range(0x80, 0xA0)]
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}
_ESCAPES = {c: _NAMED.get(c, f"\\x{c:02x}") for c in _CONTROLS}

_ONE_LINE = str.maketrans(_ESCAPES)
_LINES = str.maketrans({c: e for c, e in _ESCAPES.items() if c not in (0x09, 0x0A)})


def safe(text: str, *, lines: bool = False) -> str:
    r"""``text`` with its control characters written as escapes, to print on a terminal.

    Args:
        text: Text from a model, a tool or a store.
        lines: Keep line breaks (a ``CRLF`` becomes one) and tabs; by default they are
            escaped too, so the text stays on one line.

    Returns:
        The text, safe to print: it holds no control character but (with ``lines``) line
        feeds and tabs. Already safe text comes back unchanged.

    Example:
        >>> safe("ok\x1b[2J\tdone\n")
        'ok\\x1b[2J\\tdone\\n'
        >>> print(safe("two\r\nlines\x07", lines=True))
        two
        lines\x07
    """
    if lines:
        return text.replace("\r\n", "\n").translate(_LINES)
    return text.translate(_ONE_LINE)
