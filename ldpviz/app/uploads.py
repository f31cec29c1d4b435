"""Uploaded datasets: named by a content fingerprint, held in this server's memory (never on disk).

An upload is renamed ``upload:<fingerprint>:<file name>`` so that the link (``ds=``)
names exactly that content. Besides the session (``st.session_state["uploads"]``)
it is kept in a small in-memory store of this server process, bounded in count
and age, so a reload or a link opened on this server finds it again; after the
server restarts, or once it has aged out, the link says to upload the file again.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import OrderedDict
from typing import Mapping

import streamlit as st

from ldpviz.data import datasets

PREFIX = "upload:"
MAX_HELD = 8
MAX_AGE_S = 24 * 3600


class _Store:
    """A small LRU of datasets by name, with an age limit (shared by every session of this server)."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, tuple[float, datasets.Dataset]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, data: datasets.Dataset) -> None:
        with self._lock:
            self._items[data.name] = (time.monotonic(), data)
            self._items.move_to_end(data.name)
            while len(self._items) > MAX_HELD:
                self._items.popitem(last=False)

    def get(self, name: str) -> datasets.Dataset | None:
        with self._lock:
            item = self._items.get(name)
            if item is None:
                return None
            if time.monotonic() - item[0] > MAX_AGE_S:
                del self._items[name]
                return None
            self._items.move_to_end(name)
            return item[1]


@st.cache_resource(show_spinner=False)
def _store() -> _Store:
    return _Store()


def fingerprinted(data: datasets.Dataset) -> datasets.Dataset:
    """The upload renamed ``upload:<first 16 hex digits of its content hash>:<file name>``."""
    if data.name.startswith(PREFIX) and data.name.count(":") >= 2:
        return data
    named = dataclasses.replace(data, name=f"{PREFIX}{data.key[:16]}:{data.label}")
    return named


def keep(data: datasets.Dataset) -> datasets.Dataset:
    """Fingerprint an upload, hold it on the server and in the session; returns the held dataset."""
    data = fingerprinted(data)
    _store().put(data)
    st.session_state.setdefault("uploads", {})[data.name] = data
    return data


def get(name: str) -> datasets.Dataset | None:
    return _store().get(name)


def names_in(query: Mapping[str, str]) -> list[str]:
    """The upload a link names (``ds=upload:...``), if any."""
    ds = str(query.get("ds") or "")
    return [ds] if ds.startswith(PREFIX) else []
