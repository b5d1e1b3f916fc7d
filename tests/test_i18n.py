"""The catalogs: every language of a domain says the same things, and the language is chosen once."""

from __future__ import annotations

import re
import string

import pytest

from supportbot import i18n

_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


@pytest.mark.parametrize("domain", i18n.domains())
def test_every_language_has_the_same_keys_and_fields(domain: str) -> None:
    """A key missing in one language would raise on that screen; a field missing would drop a
    value (a ticket id, an amount) from it."""
    texts = {lang: i18n.catalog(domain, lang) for lang in i18n.LANGUAGES}
    reference = texts[i18n.DEFAULT]
    for lang, catalog in texts.items():
        assert set(catalog) == set(reference), f"{domain}.{lang}.json keys differ from {i18n.DEFAULT}"
        for key, text in catalog.items():
            assert _fields(text) == _fields(reference[key]), f"{domain}.{lang}.json {key!r} fields differ"


@pytest.mark.parametrize("domain", i18n.domains())
def test_english_catalogs_hold_no_chinese(domain: str) -> None:
    leaks = {k: v for k, v in i18n.catalog(domain, "en").items() if _CJK.search(v)}
    assert not leaks


def test_there_are_catalogs() -> None:
    assert "common" in i18n.domains()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "zh"),
        ({"SUPPORTBOT_LANG": "en"}, "en"),
        ({"SUPPORTBOT_LANG": "EN", "LANG": "zh_CN.UTF-8"}, "en"),
        ({"SUPPORTBOT_LANG": "fr"}, "zh"),
        ({"LANG": "en_US.UTF-8"}, "en"),
        ({"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh"),
        ({"LANG": "C.UTF-8"}, "zh"),
        ({"LANG": "de_DE.UTF-8"}, "zh"),
    ],
)
def test_the_language_comes_from_the_setting_then_the_locale(env: dict[str, str], expected: str) -> None:
    assert i18n.language(env) == expected


def test_a_translator_fills_fields_in_its_language() -> None:
    assert i18n.translator("common", "en")("status.resolved") == "answered"
    assert i18n.translator("common", "zh").language == "zh"
    with pytest.raises(KeyError):
        i18n.translator("common", "en")("no.such.key")


# What code reads back from a model's answer, or the model must copy as written: categories, JSON
# field names, an article id, the forms of an amount and a date.
_CONTRACT = re.compile(r"[A-Za-z_][\w/-]*|\d+[-.]\d+(?:[-.]\d+)*", re.ASCII)


@pytest.mark.parametrize("key", sorted(i18n.catalog("system", "zh")))
def test_a_model_s_instructions_name_the_same_contract_in_every_language(key: str) -> None:
    """A system prompt is worded per language, but the triage categories, the JSON fields and the
    forms a model must follow are the code's, so every language names them alike."""
    named = set(_CONTRACT.findall(i18n.catalog("system", "zh")[key]))
    for lang in i18n.LANGUAGES:
        text = i18n.catalog("system", lang)[key]
        assert [word for word in sorted(named) if word not in text] == [], f"system.{lang}.json {key!r}"
