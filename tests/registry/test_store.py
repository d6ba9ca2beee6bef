"""Resolving an entry's API path to the object it names (``parity.registry.store``)."""

from __future__ import annotations

import sys


def test_an_api_whose_package_fails_to_import_resolves_to_none(tmp_path, monkeypatch):
    """transformers raises RuntimeError on import where torchvision's CPU build cannot load: the
    diagnosis must go on without the llm entries rather than lose every likely cause."""
    from parity.registry import store

    (tmp_path / "brokenpkg").mkdir()
    (tmp_path / "brokenpkg" / "__init__.py").write_text("")
    (tmp_path / "brokenpkg" / "layers.py").write_text(
        "raise RuntimeError('operator torchvision::nms does not exist')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import brokenpkg  # noqa: F401  (resolve_api only looks into packages already imported)

    assert store.resolve_api("brokenpkg.layers.Attention") is None
    monkeypatch.delitem(sys.modules, "brokenpkg")
