"""What `redact_pii` looks for: detectors, each a name, a label and a way to find spans.

A built-in detector is a regular expression, with a check of each candidate where the
format has one (Luhn for card numbers, ISO 7064 mod 97 for IBANs, the `ipaddress` module
for IP addresses). Card numbers and IBANs are written in groups and often sit next to more
digits or words (``4111 1111 1111 1111 12/27``), so their detectors try every candidate
that starts and ends at a group boundary, not only the longest match (see `_Grouped`). A
custom detector is a regular expression or a function returning ``(start, end)`` spans.
`find` runs every detector and keeps non-overlapping spans: spans that overlap become one,
under the detector of the earliest (then the longest, then the one listed first); a loose
detector's span (a phone number's) gives way to any other detector's span it overlaps.
"""

from __future__ import annotations

import ipaddress
import re
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = [
    "BUILTIN",
    "BUILTIN_NAMES",
    "Builtin",
    "Detector",
    "Finder",
    "Span",
    "find",
    "luhn_ok",
    "iban_ok",
]

Builtin: TypeAlias = Literal[
    "email", "phone", "credit_card", "iban", "ipv4", "ipv6", "mac", "url", "secret"
]
"""The names of the built-in detectors."""

BUILTIN_NAMES: tuple[Builtin, ...] = typing.get_args(Builtin)
"""Every built-in detector's name."""

Finder: TypeAlias = Callable[[str], Iterable[tuple[int, int]]]
"""A custom detector in code: the ``(start, end)`` spans of what it finds in a text."""


@dataclass(frozen=True, slots=True)
class Span:
    """One value found: where it is and which detector found it."""

    start: int
    end: int
    detector: Detector


@dataclass(frozen=True, slots=True)
class Detector:
    """One kind of value to find: its name, its label (``EMAIL``) and how to find it."""

    name: str
    label: str
    find: Finder
    loose: bool = False
    """Whether its spans give way to any other detector's span they overlap: a phone
    number's shape is found inside card numbers and IBANs, and a placeholder to restore
    must never carry a value found around it."""


_PLAIN = bytes.maketrans(b"0123456789", bytes(range(10)))
"""Each digit to its value."""
_DOUBLED = bytes.maketrans(b"0123456789", bytes([0, 2, 4, 6, 8, 1, 3, 5, 7, 9]))
"""Each digit to the digit sum of its double, as Luhn adds every second digit."""


def luhn_ok(digits: str) -> bool:
    """Whether a string of digits passes the Luhn check (card numbers).

    Example:
        >>> luhn_ok("4111111111111111"), luhn_ok("4111111111111112")
        (True, False)
    """
    values = digits.encode()
    total = sum(values[-1::-2].translate(_PLAIN)) + sum(values[-2::-2].translate(_DOUBLED))
    return total % 10 == 0


def iban_ok(compact: str) -> bool:
    """Whether an IBAN without spaces passes its ISO 7064 mod-97 check.

    Example:
        >>> iban_ok("GB82WEST12345698765432"), iban_ok("GB83WEST12345698765432")
        (True, False)
    """
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _regex(
    pattern: str, check: Callable[[str], bool] | None = None, hints: tuple[str, ...] = ()
) -> Finder:
    """A finder by regular expression; ``hints``: a match holds one of them (a quick reject)."""
    compiled = re.compile(pattern)

    def finder(text: str) -> Iterator[tuple[int, int]]:
        if hints and not any(h in text for h in hints):
            return
        for match in compiled.finditer(text):
            if check is None or check(match.group()):
                yield match.span()

    return finder


_GROUP_SIZE = 4
"""The fewest characters of a group inside a card number or an IBAN (the last may be fewer)."""


class _Grouped:
    """A finder for a number written in groups, with a space or a dash between them.

    Its pattern matches a run of groups, which may hold more than the number: the digits of
    an expiry date after a card number, a currency after an IBAN, a reference before it.
    So when the whole run fails the check, every candidate that starts and ends at a group
    boundary and holds ``sizes`` characters (separators aside) is tried, in the usual
    groupings: every group but the last holds at least four characters (``4111 1111 …``,
    ``3782 822463 10005``, ``GB82 WEST … 32``), and a run followed by a ``glued`` character
    cannot end there. For each start the longest candidate that passes ``check`` is taken,
    and candidates that overlap are merged, so no character of a number that checks out is
    left out.
    """

    __slots__ = ("_check", "_glued", "_high", "_low", "_run")

    _GROUP = re.compile(r"[^ -]+")

    def __init__(
        self, run: str, glued: str, sizes: tuple[int, int], check: Callable[[str], bool]
    ) -> None:
        self._run = re.compile(run)
        self._glued = re.compile(glued)
        self._low, self._high = sizes
        self._check = check

    def __call__(self, text: str) -> Iterator[tuple[int, int]]:
        """The spans of the numbers in ``text`` that pass the check."""
        for match in self._run.finditer(text):
            start, end = match.span()
            closed = self._glued.match(text, end) is None
            value = _compact(match.group())
            if closed and self._low <= len(value) <= self._high and self._check(value):
                yield start, end
            else:
                yield from self._within(text, start, end, value, closed=closed)

    def _within(
        self, text: str, start: int, end: int, value: str, *, closed: bool
    ) -> Iterator[tuple[int, int]]:
        """The merged spans of the longest valid candidate per group in ``text[start:end]``.

        ``value`` is that text without separators.
        """
        groups = [m.span() for m in self._GROUP.finditer(text, start, end)]
        at = [0]  # where each group starts in ``value``, and where the last one ends
        for a, b in groups:
            at.append(at[-1] + b - a)
        last = len(groups) if closed else len(groups) - 1
        held: tuple[int, int] | None = None
        for first in range(last):
            if at[first + 1] - at[first] < _GROUP_SIZE:
                continue  # a short group only ends a number, and is too short to be one
            final = self._longest(value, at, first, last)
            if final is None:
                continue
            begin, stop = groups[first][0], groups[final][1]
            if held is not None and begin < held[1]:
                held = (held[0], max(held[1], stop))
                continue
            if held is not None:
                yield held
            held = (begin, stop)
        if held is not None:
            yield held

    def _longest(self, value: str, at: list[int], first: int, last: int) -> int | None:
        """The last group of the longest candidate from group ``first`` that checks out."""
        base = at[first]
        finals: list[int] = []
        for index in range(first, last):
            size = at[index + 1] - base
            if size > self._high:
                break
            if size >= self._low:
                finals.append(index)
            if at[index + 1] - at[index] < _GROUP_SIZE:
                break  # a short group only ends a number
        for final in reversed(finals):
            if self._check(value[base : at[final + 1]]):
                return final
        return None


def _compact(grouped: str) -> str:
    """A grouped number without its separators."""
    return grouped.replace(" ", "").replace("-", "")


_IBAN_START = re.compile(r"[A-Z]{2}\d{2}")


def _iban(compact: str) -> bool:
    return _IBAN_START.match(compact) is not None and iban_ok(compact)


def _phone(candidate: str) -> bool:
    digits = sum(c.isdigit() for c in candidate)
    is_date = re.fullmatch(
        r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4}", candidate
    )
    return 7 <= digits <= 15 and is_date is None


def _ip(candidate: str) -> bool:
    try:
        ipaddress.ip_address(candidate)
    except ValueError:
        return False
    return True


_EMAIL = (
    r"(?<![\w.+%-])[A-Za-z0-9][\w.+%-]{0,63}@"
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.)+[A-Za-z]{2,63}(?![\w-])"
)
_PHONE = (
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,5}"
    r"(?![\w-]|\.\d)"
)
_CARD = r"(?<![\w-])\d(?:[ -]?\d){12,}"
_IBAN = r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}[A-Z0-9]*(?:[ -][A-Z0-9]+)*"
_IPV4 = r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)"
_IPV6 = (
    r"(?<![\w:.])(?=[0-9A-Fa-f:]*[0-9A-Fa-f])(?:[0-9A-Fa-f]{0,4}:){2,7}"
    r"(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?![\w:])"
)
_MAC = (
    r"(?<![\w:-])(?:[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(?:\1[0-9A-Fa-f]{2}){4}"
    r"|[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4})(?![\w:-])"
)
_URL = r"\b(?:https?|ftp|wss?)://[^\s<>\"'`]+(?<![.,;:!?)\]}])|\bwww\.[A-Za-z0-9-]+\.[^\s<>\"'`]+(?<![.,;:!?)\]}])"
_SECRET = "|".join(
    [
        # PEM private keys; a block with no END line yet runs to the end of the text, so a
        # key cut short (or still streaming) is still caught.
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|[\s\S]*)",
        r"\bsk-ant-[A-Za-z0-9_-]{16,}",  # Anthropic
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",  # OpenAI
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key id
        r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
        r"\bgithub_pat_[A-Za-z0-9_]{22,}",  # GitHub fine-grained tokens
        r"\bAIza[0-9A-Za-z_-]{35}",  # Google API keys
        r"\bxox[abposre]-[A-Za-z0-9-]{10,}",  # Slack
        r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
        # JWTs: caught from the header and its dot on, so a long token is held back early.
        r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*)?",
    ]
)

_SECRET_HINTS = (
    "-----BEGIN",
    "sk-",
    "AKIA",
    "ASIA",
    "gh",
    "github_pat_",
    "AIza",
    "xox",
    "k_live_",
    "k_test_",
    "eyJ",
)
"""Every secret's pattern holds one of these."""

BUILTIN: dict[str, Detector] = {
    "secret": Detector("secret", "SECRET", _regex(_SECRET, hints=_SECRET_HINTS)),
    "url": Detector("url", "URL", _regex(_URL, hints=("://", "www."))),
    "email": Detector("email", "EMAIL", _regex(_EMAIL, hints=("@",))),
    "iban": Detector("iban", "IBAN", _Grouped(_IBAN, r"[A-Za-z0-9]", (15, 34), _iban)),
    "credit_card": Detector(
        "credit_card", "CREDIT_CARD", _Grouped(_CARD, r"[\w-]", (13, 19), luhn_ok)
    ),
    "mac": Detector("mac", "MAC", _regex(_MAC, hints=(":", "-", "."))),
    "ipv6": Detector("ipv6", "IPV6", _regex(_IPV6, _ip, hints=(":",))),
    "ipv4": Detector("ipv4", "IPV4", _regex(_IPV4, _ip, hints=(".",))),
    "phone": Detector("phone", "PHONE", _regex(_PHONE, _phone), loose=True),
}
"""The built-in detectors by name, in order of precedence: when two find spans of one
length at one place, the one listed first wins (and ``phone``, loose, gives way to all)."""


_Found: TypeAlias = tuple[int, int, int, Detector]
"""A span found: its start, minus its end, its detector's rank, its detector."""


def find(text: str, detectors: Sequence[Detector]) -> list[Span]:
    """The non-overlapping spans ``detectors`` find in ``text``, in order.

    Spans that overlap become one, which takes the detector of the earliest (then the
    longest, then the one listed first), so no character a detector found is left out. Then
    a loose detector's spans fill the gaps: one that overlaps a span already kept is dropped.

    Example:
        >>> [(s.start, s.end, s.detector.name) for s in find("mail a@b.io", [BUILTIN["email"]])]
        [(5, 11, 'email')]
        >>> text = "IBAN GB82 WEST 1234 5698 7654 32"
        >>> [s.detector.name for s in find(text, [BUILTIN["iban"], BUILTIN["phone"]])]
        ['iban']
    """
    found: list[_Found] = []
    loose: list[_Found] = []
    for rank, detector in enumerate(detectors):
        into = loose if detector.loose else found
        for start, end in detector.find(text):
            if end > start:
                into.append((start, -end, rank, detector))
    spans = _merged(found) if found else []
    return _fill(spans, loose) if loose else spans


def _merged(found: list[_Found]) -> list[Span]:
    """The spans of ``found`` in order, those that overlap merged into the earliest."""
    found.sort(key=lambda f: (f[0], f[1], f[2]))
    spans: list[Span] = []
    reached = 0
    for start, minus_end, _, detector in found:
        end = -minus_end
        if start >= reached:
            spans.append(Span(start, end, detector))
            reached = end
        elif end > reached:
            spans[-1] = Span(spans[-1].start, end, spans[-1].detector)
            reached = end
    return spans


def _fill(spans: list[Span], loose: list[_Found]) -> list[Span]:
    """``spans`` and the spans of ``loose`` that overlap neither them nor each other, in order."""
    loose.sort(key=lambda f: (f[0], f[1], f[2]))
    added: list[Span] = []
    reached = 0
    ahead = 0  # the first of ``spans`` that may still overlap
    for start, minus_end, _, detector in loose:
        end = -minus_end
        if start < reached:
            continue
        while ahead < len(spans) and spans[ahead].end <= start:
            ahead += 1
        if ahead < len(spans) and spans[ahead].start < end:
            continue
        added.append(Span(start, end, detector))
        reached = end
    if not spans:
        return added
    return sorted([*spans, *added], key=lambda s: s.start)
