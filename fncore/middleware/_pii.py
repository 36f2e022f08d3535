"""What `redact_pii` looks for: detectors, each a name, a label and a way to find spans.

A built-in detector is a regular expression, with a check of each candidate where the
format has one (Luhn for card numbers, ISO 7064 mod 97 for IBANs, the `ipaddress` module
for IP addresses). A custom detector is a regular expression or a function returning
``(start, end)`` spans. `find` runs every detector and keeps non-overlapping spans: the
earliest first, then the longest, then the detector listed first.
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


def luhn_ok(digits: str) -> bool:
    """Whether a string of digits passes the Luhn check (card numbers).

    Example:
        >>> luhn_ok("4111111111111111"), luhn_ok("4111111111111112")
        (True, False)
    """
    total = 0
    for index, char in enumerate(reversed(digits)):
        n = ord(char) - 48
        if index % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
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


def _card(candidate: str) -> bool:
    digits = re.sub(r"[ -]", "", candidate)
    return 13 <= len(digits) <= 19 and luhn_ok(digits)


def _iban(candidate: str) -> bool:
    compact = candidate.replace(" ", "")
    return 15 <= len(compact) <= 34 and iban_ok(compact)


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
_CARD = r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])"
_IBAN = r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])"
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
    "iban": Detector("iban", "IBAN", _regex(_IBAN, _iban)),
    "credit_card": Detector("credit_card", "CREDIT_CARD", _regex(_CARD, _card)),
    "mac": Detector("mac", "MAC", _regex(_MAC, hints=(":", "-", "."))),
    "ipv6": Detector("ipv6", "IPV6", _regex(_IPV6, _ip, hints=(":",))),
    "ipv4": Detector("ipv4", "IPV4", _regex(_IPV4, _ip, hints=(".",))),
    "phone": Detector("phone", "PHONE", _regex(_PHONE, _phone)),
}
"""The built-in detectors by name, in order of precedence: when two find spans of one
length at one place, the one listed first wins."""


def find(text: str, detectors: Sequence[Detector]) -> list[Span]:
    """The non-overlapping spans ``detectors`` find in ``text``, in order.

    Earlier spans win, then longer ones, then the detector listed first.

    Example:
        >>> [(s.start, s.end, s.detector.name) for s in find("mail a@b.io", [BUILTIN["email"]])]
        [(5, 11, 'email')]
    """
    found: list[tuple[int, int, int, Detector]] = []
    for rank, detector in enumerate(detectors):
        for start, end in detector.find(text):
            if end > start:
                found.append((start, -end, rank, detector))
    if not found:
        return []
    found.sort(key=lambda f: (f[0], f[1], f[2]))
    spans: list[Span] = []
    reached = 0
    for start, minus_end, _, detector in found:
        if start >= reached:
            spans.append(Span(start, -minus_end, detector))
            reached = -minus_end
    return spans
