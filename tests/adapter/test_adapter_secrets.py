"""`fncore.adapter` secrets: API keys as `SecretStr`, and credentials in URLs."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from fncore.adapter import redact_url, resolve_api_key, secret_value, url_secrets


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:pw@host/v1", "http://[redacted]@host/v1"),
        ("https://sk-token-only@host:8443/v1", "https://[redacted]@host:8443/v1"),
        ("https://host/v1?key=AIza-123", "https://host/v1?key=[redacted]"),
        ("https://host/v1?api_key=sk-1&region=eu", "https://host/v1?api_key=[redacted]&region=eu"),
        ("https://host/v1?access_token=t&x=1", "https://host/v1?access_token=[redacted]&x=1"),
        ("https://blob.example/c?sv=2024&sig=abc%2Bdef", "https://blob.example/c?sv=2024&sig=[redacted]"),
        ("https://s3.example/o?X-Amz-Signature=ff&X-Amz-Credential=AK", "https://s3.example/o?X-Amz-Signature=[redacted]&X-Amz-Credential=[redacted]"),
        ("https://host/cb#access_token=t-9&state=s", "https://host/cb#access_token=[redacted]&state=s"),
        ("https://host/v1?client_secret=c&PASSWORD=p", "https://host/v1?client_secret=[redacted]&PASSWORD=[redacted]"),
        ("https://api.openai.com/v1", "https://api.openai.com/v1"),
        ("https://host/v1?key=", "https://host/v1?key="),
        ("http://[::1/v1", "[redacted]"),
    ],
    ids=[
        "user and password", "token as user", "key", "api_key", "access_token", "sas sig",
        "aws signature", "fragment token", "secret and password", "nothing to hide",
        "empty value", "unparsable",
    ],
)  # fmt: skip
def test_redact_url(url: str, shown: str) -> None:
    """User info and secret-looking query or fragment values are replaced; the rest stays."""
    assert redact_url(url) == shown


def test_url_secrets_lists_what_redact_url_hides() -> None:
    """The password and secret values come out as written and unquoted, for message redaction."""
    secrets = url_secrets("https://bot:p%40ss@host/v1?api_key=a%2Bb&token=c+d&region=eu")
    assert set(secrets) == {"bot:p%40ss", "p%40ss", "p@ss", "a%2Bb", "a+b", "c+d", "c d"}
    assert "eu" not in secrets
    assert "bot" not in secrets  # a user name is not a secret when a password follows it
    assert url_secrets("https://api.example/v1") == ()
    assert "tok-1" in url_secrets("https://h/?api_key=tok-1/")  # the SDK's slash after the query


def test_secret_value_unwraps_only_when_asked() -> None:
    """A SecretStr shows nothing in repr or str; `secret_value` gives the text for the SDK."""
    key = SecretStr("sk-live-123456")
    assert "sk-live" not in repr(key)
    assert "sk-live" not in str(key)
    assert secret_value(key) == "sk-live-123456"
    assert secret_value("sk-plain") == "sk-plain"
    assert secret_value(None) is None
    assert secret_value(SecretStr("")) is None
    assert secret_value("") is None


def test_resolve_api_key_falls_back_to_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The given key wins; then the environment variable; then None."""
    monkeypatch.setenv("ACME_API_KEY", "sk-env")
    assert resolve_api_key(SecretStr("sk-given"), "ACME_API_KEY") == "sk-given"
    assert resolve_api_key(None, "ACME_API_KEY") == "sk-env"
    assert resolve_api_key(SecretStr(""), "ACME_API_KEY") == "sk-env"
    monkeypatch.delenv("ACME_API_KEY")
    assert resolve_api_key(None, "ACME_API_KEY") is None
