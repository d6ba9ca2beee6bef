"""Lint given a case factory's path: the catalogue's classes import MindSpore. The registry's other
tests need no framework: tests/registry/."""

from __future__ import annotations

from parity.registry import lint


def test_lint_takes_case_factory_paths_and_classes():
    assert [i.entry_id for i in lint("mindspore.nn:GELU", {})] == ["gelu-approximate-default"]
    assert lint("cases.models.conv_relu:MSConvReLU", {"pad_mode": "pad"}) == []  # a user model: nothing known
