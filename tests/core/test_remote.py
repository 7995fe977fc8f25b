"""Issue 24, case 4: an API key echoed in a server's error body is redacted before the body is
clipped, and so is any run of its first characters that a clipped message may end in."""

from __future__ import annotations

from types import SimpleNamespace

from ragsift.remote import MIN_SECRET_PREFIX, clip, error_detail, redact, redact_secrets

KEY = "sk-live-0123456789abcdefghijklmnopqrstuvwxyz"


def _prefixes(text: str) -> list[str]:
    return [KEY[:n] for n in range(MIN_SECRET_PREFIX, len(KEY) + 1) if KEY[:n] in text]


def test_a_key_cut_by_the_500_character_clip_is_not_shown():
    body = {"error": {"message": "x" * 480 + f" Bearer {KEY} rejected"}}
    detail = error_detail(SimpleNamespace(body=body), lambda text: redact_secrets(text, [KEY]))
    assert len(detail) <= 500 and detail.endswith("Bearer *** rejected")
    assert _prefixes(detail) == []


def test_prefixes_of_the_key_are_redacted(monkeypatch):
    monkeypatch.setenv("RAGSIFT_REMOTE_TEST_KEY", KEY)
    clipped = clip(f"a reply that echoes Bearer {KEY} in full", 40)  # ends inside the key
    assert KEY[:MIN_SECRET_PREFIX] in clipped
    shown = redact(clipped, "RAGSIFT_REMOTE_TEST_KEY")
    assert _prefixes(shown) == [] and "Bearer ***" in shown
    # the whole key, twice, and text around it are kept apart
    assert redact_secrets(f"{KEY}/{KEY[:12]}.", [KEY]) == "***/***."
    assert redact_secrets("sk-li is too short to be part of a key", [KEY]) == "sk-li is too short to be part of a key"
    assert redact_secrets("a short key: abc", ["abc"]) == "a short key: ***"
