"""What `redact_pii` looks for: detectors, each a name, a label and a way to find spans.

A built-in detector is a regular expression, with a check of each candidate where the
format has one (Luhn for card numbers, ISO 7064 mod 97 for IBANs, the `ipaddress` module
for IP addresses). Card numbers and IBANs are written in groups and often sit next to more
digits or words (``4111 1111 1111 1111 12/27``), so their detectors try every candidate
that starts and ends at a group boundary, not only the longest match (see `_Grouped`). A
custom detector is a regular expression or a function returning ``(start, end)`` spans.
A built-in detector also has a quick test (``needs``) of what any value it finds must hold
(an ``@``, two digits in a row, 13 digits, a hex pair and a colon...), read from the text's
`Clues`: most texts fail most of them, and a detector whose test fails is not run, which
finds exactly what running it would (nothing).

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
    "Clues",
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
    needs: Callable[[Clues], bool] | None = None
    """What a text must hold for ``find`` to find anything in it (``None``: no test). It
    must be true of every text ``find`` finds something in: it only saves running it."""


def _classes(pairs: dict[bytes, bytes], rest: bytes) -> bytes:
    """A `bytes.translate` table: each byte of a key to its value, every other to ``rest``."""
    table = bytearray(rest * 256)
    for chars, to in pairs.items():
        for char in chars:
            table[char] = to[0]
    return bytes(table)


_UPPER = bytes(range(ord("A"), ord("Z") + 1))
_HEX = b"0123456789ABCDEFabcdef"
_DIGIT_CLASSES = _classes(
    {b"0123456789": b"0", bytes(range(128, 256)): b"0", _UPPER: b"A", b".": b"."}, b" "
)
"""Digits to ``0``, capitals to ``A``, ``.`` kept, the rest to a space; the bytes of a
character beyond ASCII to ``0`` too, as ``\\d`` matches the digits of every script."""
_HEX_CLASSES = _classes({_HEX: b"h", b":": b":", b"-": b"-", b".": b"."}, b" ")
"""Hexadecimal digits (ASCII only, as the patterns spell them) to ``h``; ``:``, ``-`` and
``.`` kept; the rest to a space."""


class Clues:
    r"""A text, and what it holds in brief, worked out once for every detector's ``needs``.

    ``digits`` is the text with each digit as ``0``, each capital as ``A``, each ``.``
    kept and anything else a space, byte by byte of its UTF-8 form (so a character beyond
    ASCII is a run of ``0``: ``\d`` matches the digits of every script); ``hexes`` has
    each hexadecimal digit as ``h``, and ``:``, ``-`` and ``.`` kept. Each is made by one
    `bytes.translate` when first asked for, and searched as a `str` (faster than bytes).
    """

    __slots__ = ("_digits", "_hexes", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._digits: str | None = None
        self._hexes: str | None = None

    @property
    def digits(self) -> str:
        """The text by digit, capital and ``.``."""
        if self._digits is None:
            self._digits = self._by(_DIGIT_CLASSES)
        return self._digits

    @property
    def hexes(self) -> str:
        """The text by hexadecimal digit and separator."""
        if self._hexes is None:
            self._hexes = self._by(_HEX_CLASSES)
        return self._hexes

    def _by(self, classes: bytes) -> str:
        return self.text.encode("utf-8", "surrogatepass").translate(classes).decode("ascii")


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


def _regex(pattern: str, check: Callable[[str], bool] | None = None) -> Finder:
    """A finder by regular expression: the matches that ``check`` (if any) passes."""
    compiled = re.compile(pattern)

    def finder(text: str) -> Iterator[tuple[int, int]]:
        for match in compiled.finditer(text):
            if check is None or check(match.group()):
                yield match.span()

    return finder


def _anchored(pattern: str, anchor: str, reach: int) -> Finder:
    """A finder by regular expression whose every match holds ``anchor`` once, near its start.

    ``anchor`` is at most ``reach`` characters after the start (an email address and its
    ``@``). It finds what ``finditer`` finds, without trying every place of the text: no match
    starts more than ``reach`` characters before the next ``anchor``, so each search
    starts there (or where the last match ended, if later). A search sees the text before
    where it starts, so the pattern's lookbehinds hold as they would.
    """
    compiled = re.compile(pattern)

    def finder(text: str) -> Iterator[tuple[int, int]]:
        at = 0
        while True:
            found = text.find(anchor, at)
            if found < 0:
                return
            match = compiled.search(text, max(at, found - reach))
            if match is None:
                return
            yield match.span()
            at = match.end()

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
    "github_pat_",
    "AIza",
    "xox",
    "k_live_",
    "k_test_",
    "eyJ",
)
"""Every secret's pattern holds one of these, or both ``gh`` and ``_`` (GitHub's ``ghp_``)."""


def _secret(clues: Clues) -> bool:
    text = clues.text
    for hint in _SECRET_HINTS:
        if hint in text:
            return True
    return "gh" in text and "_" in text


def _url(clues: Clues) -> bool:
    return "://" in clues.text or "www." in clues.text


def _email(clues: Clues) -> bool:
    return "@" in clues.text


def _iban_needs(clues: Clues) -> bool:
    return "AA00" in clues.digits  # two capitals, two digits


def _card_needs(clues: Clues) -> bool:
    digits = clues.digits
    return "0" in digits and digits.count("0") >= 13


def _mac(clues: Clues) -> bool:
    text = clues.text
    if ":" not in text and "-" not in text and "." not in text:
        return False
    hexes = clues.hexes
    return "hh:hh" in hexes or "hh-hh" in hexes or "hhhh.hhhh" in hexes


_IPV6_PAIRS = ("::", ":h:", ":hh:", ":hhh:", ":hhhh:")
"""Two colons with at most four hexadecimal digits between: every IPv6 address holds one."""


def _ipv6(clues: Clues) -> bool:
    if ":" not in clues.text:
        return False
    hexes = clues.hexes
    return any(pair in hexes for pair in _IPV6_PAIRS)


def _ipv4(clues: Clues) -> bool:
    digits = clues.digits
    return "0" in digits and "0.0" in digits


def _phone_needs(clues: Clues) -> bool:
    digits = clues.digits
    return "00" in digits and digits.count("0") >= 7


BUILTIN: dict[str, Detector] = {
    "secret": Detector("secret", "SECRET", _regex(_SECRET), needs=_secret),
    "url": Detector("url", "URL", _regex(_URL), needs=_url),
    "email": Detector("email", "EMAIL", _anchored(_EMAIL, "@", 64), needs=_email),
    "iban": Detector(
        "iban", "IBAN", _Grouped(_IBAN, r"[A-Za-z0-9]", (15, 34), _iban), needs=_iban_needs
    ),
    "credit_card": Detector(
        "credit_card",
        "CREDIT_CARD",
        _Grouped(_CARD, r"[\w-]", (13, 19), luhn_ok),
        needs=_card_needs,
    ),
    "mac": Detector("mac", "MAC", _regex(_MAC), needs=_mac),
    "ipv6": Detector("ipv6", "IPV6", _regex(_IPV6, _ip), needs=_ipv6),
    "ipv4": Detector("ipv4", "IPV4", _regex(_IPV4, _ip), needs=_ipv4),
    "phone": Detector("phone", "PHONE", _regex(_PHONE, _phone), loose=True, needs=_phone_needs),
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
    clues: Clues | None = None
    for rank, detector in enumerate(detectors):
        needs = detector.needs
        if needs is not None:
            if clues is None:
                clues = Clues(text)
            if not needs(clues):
                continue
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
