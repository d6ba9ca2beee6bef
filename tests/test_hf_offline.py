"""The Hugging Face catalogue models (cases/models/zoo_hf.py) are built offline: the hub is told so,
and a factory that opens a connection anyway fails loudly instead of downloading."""

from __future__ import annotations

import os
import socket
import urllib.request

import pytest

from cases.models import zoo_hf


def test_the_hub_is_offline_once_the_factories_are_imported():
    assert os.environ.get("HF_HUB_OFFLINE") == "1"


def test_a_connection_inside_a_factory_raises_and_is_not_swallowed():
    with zoo_hf.no_network():
        with pytest.raises(zoo_hf.NetworkAccess, match="tried to reach the network"):
            socket.create_connection(("huggingface.co", 443), timeout=1)
        with pytest.raises(zoo_hf.NetworkAccess):  # not an OSError: urllib does not turn it into a URLError
            urllib.request.urlopen("https://huggingface.co", timeout=1)
    assert socket.create_connection is not None and socket.socket.connect.__name__ == "connect"


def test_every_factory_runs_under_the_guard():
    @zoo_hf._offline
    def reaches_out(tf):
        socket.getaddrinfo("huggingface.co", 443)

    with pytest.raises(zoo_hf.NetworkAccess):
        reaches_out()
    factories = [
        name
        for name in ("llama", "gpt2", "bert", "t5_encoder", "t5", "clip_vision", "whisper_encoder")
        if getattr(zoo_hf, name).__qualname__.startswith("_offline")
    ]
    assert len(factories) == 7
