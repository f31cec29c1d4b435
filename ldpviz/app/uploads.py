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
from typing import Any, Mapping

import streamlit as st

from ldpviz.data import datasets, trajectories
from ldpviz.errors import LdpvizInputError, RegionTooLargeError
from ldpviz.geo.region_suggestion import SUGGESTED_DATA_USE, suggest_bbox
from ldpviz.mechanisms.fo.private_region import upload_frame

PREFIX = "upload:"
MAX_HELD = 8
MAX_AGE_S = 24 * 3600


class _Store:
    """A small LRU of datasets (points or trips) by name, with an age limit (shared by every session of this
    server)."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, tuple[float, Any]] = OrderedDict()
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
    """A points upload this server holds (trips files held beside them are not points)."""
    held = _store().get(name)
    return held if isinstance(held, datasets.Dataset) else None


def names_in(query: Mapping[str, str]) -> list[str]:
    """The upload a link names (``ds=upload:...``), if any."""
    ds = str(query.get("ds") or "")
    return [ds] if ds.startswith(PREFIX) else []


# ---- points read once, framed by the bounds or the rule the Data page shows (issue 20.6, 21.1-2)
def held_points() -> datasets.ReadPoints | None:
    """The rows of the last file read on the Data page (kept so new bounds apply without reading it again)."""
    held = st.session_state.get("upload_points")
    return held[1] if held else None


def read_points(read_key: tuple, file: object, **kwargs: object) -> datasets.ReadPoints:
    """The file's usable rows (:func:`ldpviz.data.datasets.read_points`), read once per ``read_key``."""
    held = st.session_state.get("upload_points")
    if held and held[0] == read_key:
        return held[1]
    points = datasets.read_points(file, **kwargs)
    st.session_state["upload_points"] = (read_key, points)
    return points


#: How a region reads when its bounds are the box the page suggested from the rows.
SUGGESTED_USE = ("the box the Data page suggested from where most of the file's rows are (the densest box about "
                 "{side:,.0f} km across, rounded out to 0.1 degree): it depends on the rows and is not covered by "
                 "epsilon")


def frame(points: datasets.ReadPoints, bounds: tuple[float, float, float, float] | None, rule: str,
          epsilon0: float, suggested: tuple[float, float, float, float] | None = None,
          side_km: float = 0.0) -> datasets.Dataset:
    """The dataset of ``points``: the rows inside ``bounds`` (as ``ldpviz run --csv --bbox`` keeps), or framed by
    ``rule``; raises :class:`ldpviz.data.datasets.NeedsBounds` when the rule frames nothing. Bounds equal to the
    ``suggested`` box are labelled as read from the rows. Held like any upload."""
    use = SUGGESTED_USE.format(side=side_km) if bounds is not None and suggested is not None and tuple(
        bounds) == tuple(suggested) else ""
    return keep(datasets.frame_points(points, bbox=bounds, frame=upload_frame(rule, epsilon0), bbox_data_use=use))


def suggestion(points: datasets.ReadPoints, side_km: float) -> tuple[tuple[float, float, float, float], int]:
    """(the densest continent-sized box, rows inside it) for a file no default region frames: the same box the
    command line's refusal prints (:func:`ldpviz.geo.region_suggestion.suggest_bbox`); ``side_km`` only names its
    scale on the page."""
    box = suggest_bbox(points.lon, points.lat)
    return box.bbox, box.rows_inside


def _typed_bounds(text: str) -> tuple[float, float, float, float] | None:
    """W,S,E,N typed in a bounds field (None when empty); a bad entry is a clear LdpvizInputError."""
    text = str(text or "").strip()
    if not text:
        return None
    try:
        west, south, east, north = (float(v) for v in text.replace(";", ",").split(","))
    except ValueError:
        raise LdpvizInputError(f"bounds need four numbers W,S,E,N in degrees, got {text!r}") from None
    return west, south, east, north


# ---- trips (person, trip, seq, lon, lat): Flows and People, the loader and checks of `ldpviz od --file`
#: Largest trips file accepted (the same bound as the points upload).
MAX_TRIP_BYTES = 1024 * 2**20
TRIP_FILE_TYPES = ["csv", "txt", "tsv", "gz", "parquet", "pq"]


#: How a trips region reads when its bounds were typed (ldpviz cannot know where a typed box came from).
TYPED_TRIP_BOX = ("the box you typed: ldpviz read no users' data to use it; if it was read from the data, that is "
                  "not covered by ε")


def trip_uploads() -> dict[str, trajectories.Trajectories]:
    """This session's uploaded trip files by name (``upload:<fingerprint>:<file name>``)."""
    return st.session_state.setdefault("trip_uploads", {})


def trip_label(name: str) -> str | None:
    """'Your trips: file.csv' for an uploaded trips file, else None."""
    held = trip_uploads().get(name)
    return f"Your trips: {held.label}" if held is not None else None


def trip_uploader(container: Any, page: str) -> str | None:
    """A file uploader for the user's own trips, kept across pages like the points upload.

    Read by :func:`ldpviz.data.trajectories.load_trajectory_file`, the loader and checks of ``ldpviz od --file``;
    returns the name of a file just loaded (the page selects it), else None. The outcome is shown by
    :func:`show_trip_message`.
    """
    ss = st.session_state
    file = container.file_uploader("Your trips (CSV or Parquet: person, trip, seq, lon, lat)",
                                   type=TRIP_FILE_TYPES, key=f"w:trip_upload:{page}",
                                   help="One row per point. Within each trip the points are put in order by the "
                                        "seq column (seq, sequence, step, ...), else by a time column (ISO dates "
                                        "or seconds), else kept in file order; rows with no order value are "
                                        "dropped and counted, repeated values counted, and the message names the "
                                        "columns used. Read with the same checks as `ldpviz od --file`; kept in "
                                        "this server's memory only, for this session and the Flows and People "
                                        "pages.")
    container.text_input("Bounds for your trips (W,S,E,N, optional)", key=f"w:trip_bounds:{page}",
                         placeholder="e.g. -93.33,44.89,-93.19,45.05",
                         help="Only the rows inside this box are kept (counted), and the box is the region, exactly "
                              "as `ldpviz od --file F --bbox W,S,E,N`: ldpviz reads no users' data to use it (the "
                              "box suggested from your rows is labelled as read from them). Empty: the Data page's "
                              "rule for uploads (private map tiles paid with ε0 per row by default).")
    if file is None:
        return None
    attempt = (page, getattr(file, "file_id", file.name), ss.get(f"w:trip_bounds:{page}", ""))
    if ss.get("trip_attempt") == attempt:
        return None
    ss["trip_attempt"] = attempt
    cfg = st.session_state.get("cfg", {})     # the Data page's rule for uploads without bounds
    try:
        bbox = _typed_bounds(ss.get(f"w:trip_bounds:{page}", ""))
        suggested = ss.get("trip_suggested_bbox")     # the box this page suggested from the rows, if any
        use = SUGGESTED_DATA_USE if bbox is not None and suggested is not None and tuple(bbox) == tuple(
            suggested) else ""
        trips = trajectories.load_trajectory_file(
            file, filename=file.name, max_bytes=MAX_TRIP_BYTES, bbox=bbox, bbox_data_use=use,
            frame=upload_frame(cfg.get("upload_rule", "private-tiles"), float(cfg.get("upload_epsilon0", 0.5))))
    except RegionTooLargeError as exc:
        box = f" Suggested bounds: `{exc.suggestion.as_text()}`." if exc.suggestion is not None else ""
        ss["trip_suggested_bbox"] = exc.suggestion.bbox if exc.suggestion is not None else None
        ss["trip_message"] = ("error", f"**The trips file needs bounds:** {exc} Type W,S,E,N in 'Bounds for your "
                                       f"trips' above and upload again.{box}")
        ss["trip_attempt"] = None
        return None
    except LdpvizInputError as exc:
        ss["trip_message"] = ("error", f"**The trips file could not be used:** {exc}")
        return None
    trips = fingerprinted(trips)
    _store().put(trips)
    trip_uploads()[trips.name] = trips
    region = trips.default_region
    ss["trip_message"] = ("success", f"Loaded **{trips.label}**: {trips.n_people:,} "
                                     f"{'person' if trips.n_people == 1 else 'people'}, {trips.n_trips:,} "
                                     f"{'trip' if trips.n_trips == 1 else 'trips'}, {trips.n_points:,} points. "
                                     f"{trips.report.summary()} Region '{region.name}': "
                                     f"{region.data_use or TYPED_TRIP_BOX}.")
    return trips.name


def show_trip_message(container: Any) -> None:
    kind, message = st.session_state.get("trip_message", (None, None))
    if kind:
        {"error": container.error, "success": container.success}[kind](
            message, icon=":material/error:" if kind == "error" else ":material/check_circle:")
