"""Shared test set-up: tables render at the off-terminal default width unless a test asks for
another (adcli honours COLUMNS, which a developer's shell may export)."""

import pytest


@pytest.fixture(autouse=True)
def _default_width(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
