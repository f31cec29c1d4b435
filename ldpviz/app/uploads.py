"""Uploaded datasets: named by a content fingerprint, held in this server's memory (never on disk).

An upload is renamed ``upload:<fingerprint>:<file name>`` so that the link (``ds=``)
names exactly that content. Besides the session (``st.session_state["uploads"]``)
it is kept in a small in-memory store of this server process, bounded in count,
bytes and age, so a reload or a link opened on this server finds it again; after the
server restarts, or once it has aged out, the link says to upload the file again.

What one session holds (points and trips files together) is bounded in bytes
(:func:`session_budget_bytes`): beyond it the least recently used upload is
released, never the one just loaded, and the page that would use it names it
(:func:`released`) instead of dropping it silently (issue 39).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
import time
from collections import OrderedDict
from typing import Any, Mapping

import numpy as np
import streamlit as st

from ldpviz.data import datasets, trajectories
from ldpviz.errors import LdpvizInputError, RegionTooLargeError
from ldpviz.geo.domain import bounds_text
from ldpviz.geo.region_suggestion import SUGGESTED_DATA_USE, box_size_km, suggest_bbox
from ldpviz.mechanisms.fo.private_region import upload_frame

PREFIX = "upload:"
MAX_HELD = 8
MAX_AGE_S = 24 * 3600
#: Megabytes of uploaded data one session holds (its points and trips files together, as held in memory);
#: the least recently used upload beyond it is released. The environment variable LDPVIZ_SESSION_UPLOAD_MB
#: overrides it.
SESSION_UPLOAD_MB = 200.0
#: Megabytes the server's shared store keeps for reloads and links (every session's uploads together); the
#: environment variable LDPVIZ_SERVER_UPLOAD_MB overrides it.
SERVER_UPLOAD_MB = 800.0
#: Session keys: the uploads' use order (least recent first) and the released ones (name -> file name).
ORDER, RELEASED = "upload_order", "released_uploads"


def _megabytes(variable: str, default: float) -> int:
    """Bytes from the environment variable ``variable`` (megabytes, >= 0), else ``default`` megabytes."""
    try:
        mb = float(os.environ.get(variable, default))
    except ValueError:
        mb = default
    return int(max(mb, 0.0) * 2**20) if np.isfinite(mb) else int(default * 2**20)


def session_budget_bytes() -> int:
    """Bytes of uploads one session holds (:data:`SESSION_UPLOAD_MB`, or LDPVIZ_SESSION_UPLOAD_MB)."""
    return _megabytes("LDPVIZ_SESSION_UPLOAD_MB", SESSION_UPLOAD_MB)


def server_budget_bytes() -> int:
    """Bytes of uploads the server's shared store holds (:data:`SERVER_UPLOAD_MB`, or LDPVIZ_SERVER_UPLOAD_MB)."""
    return _megabytes("LDPVIZ_SERVER_UPLOAD_MB", SERVER_UPLOAD_MB)


def held_bytes(data: Any) -> int:
    """The memory an upload's arrays hold: their bytes, and for text columns (object arrays) the strings too,
    estimated from up to 64 evenly spaced values (a shared string is counted once per row: an upper bound)."""
    total = 0
    for f in dataclasses.fields(data):
        value = getattr(data, f.name, None)
        if isinstance(value, np.ndarray):
            total += value.nbytes
            if value.dtype == object and value.size:
                sample = value[::max(1, value.size // 64)][:64]
                total += int(value.size * float(np.mean([sys.getsizeof(v) for v in sample])))
    return total


class _Store:
    """A small LRU of datasets (points or trips) by name, with an age limit (shared by every session of this
    server)."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, data: datasets.Dataset) -> None:
        """Hold ``data``; the oldest beyond :data:`MAX_HELD` files or :func:`server_budget_bytes` are dropped
        (never ``data`` itself)."""
        with self._lock:
            self._items[data.name] = (time.monotonic(), data)
            self._items.move_to_end(data.name)
            budget, total = server_budget_bytes(), sum(held_bytes(d) for _, d in self._items.values())
            while len(self._items) > 1 and (len(self._items) > MAX_HELD or total > budget):
                total -= held_bytes(self._items.popitem(last=False)[1][1])

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
    hold(data)
    return data


def hold(data: Any) -> None:
    """Hold an upload (points or trips) in this session as the one in use now: the least recently used others
    beyond :func:`session_budget_bytes` are released and remembered by name (:func:`released`)."""
    ss = st.session_state
    shelf = "trip_uploads" if isinstance(data, trajectories.Trajectories) else "uploads"
    ss.setdefault(shelf, {})[data.name] = data
    ss.setdefault(RELEASED, {}).pop(data.name, None)
    touch(data.name)
    held = {**ss.get("uploads", {}), **ss.get("trip_uploads", {})}
    order = ss[ORDER] = [n for n in ss[ORDER] if n in held]
    order[:0] = [n for n in held if n not in order]     # held without a use recorded: the oldest
    sizes = {n: held_bytes(d) for n, d in held.items()}
    total, budget = sum(sizes.values()), session_budget_bytes()
    for name in list(order):
        if total <= budget:
            break
        if name == data.name:
            continue
        for key in ("uploads", "trip_uploads"):
            gone = ss.get(key, {}).pop(name, None)
            if gone is not None:
                ss[RELEASED][name] = gone.label
        order.remove(name)
        total -= sizes[name]


def touch(name: str) -> None:
    """Record that this session used the upload ``name`` now (the most recently used is released last)."""
    order = st.session_state.setdefault(ORDER, [])
    if name in order:
        order.remove(name)
    order.append(name)


def released() -> dict[str, str]:
    """This session's uploads released to keep the server's memory bounded: name -> file name."""
    return dict(st.session_state.get(RELEASED, {}))


def show_released(container: Any) -> None:
    """Name, beside an uploader, this session's files released to keep the server's memory bounded (none: nothing)."""
    names = sorted(set(released().values()))
    if names:
        files = ", ".join(f"'{n}'" for n in names)
        container.caption(f"Your earlier file{'s' if len(names) > 1 else ''} {files} "
                          f"{'were' if len(names) > 1 else 'was'} released to keep the server's memory bounded (a "
                          f"session holds {session_budget_text()} of uploads, the most recently used first); upload "
                          f"{'one' if len(names) > 1 else 'it'} again to use it.")


def session_budget_text() -> str:
    """'200 MB': the session's upload budget as the page names it."""
    return f"{session_budget_bytes() / 2**20:,.3g} MB"


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
SUGGESTED_USE = ("the box ldpviz suggested from where most of the file's rows are (the densest box, {size}, "
                 "in whole degrees, or finer cells for rows that span a few degrees or less): it depends on the rows "
                 "and is not covered by epsilon")


def frame(points: datasets.ReadPoints, bounds: tuple[float, float, float, float] | None, rule: str,
          epsilon0: float, suggested: tuple[float, float, float, float] | None = None,
          side_km: float = 0.0) -> datasets.Dataset:
    """The dataset of ``points``: the rows inside ``bounds`` (as ``ldpviz run --csv --bbox`` keeps), or framed by
    ``rule``; raises :class:`ldpviz.data.datasets.NeedsBounds` when the rule frames nothing. Bounds equal to the
    ``suggested`` box are labelled as read from the rows. Held like any upload."""
    use = SUGGESTED_USE.format(size=box_phrase(suggested)) if bounds is not None and suggested is not None and tuple(
        bounds) == tuple(suggested) else ""
    return keep(datasets.frame_points(points, bbox=bounds, frame=upload_frame(rule, epsilon0), bbox_data_use=use))


def suggestion(points: datasets.ReadPoints, side_km: float) -> tuple[tuple[float, float, float, float], int]:
    """(the densest continent-sized box, rows inside it) for a file no default region frames: the same box the
    command line's refusal prints (:func:`ldpviz.geo.region_suggestion.suggest_bbox`); ``side_km`` only names its
    scale on the page."""
    box = suggest_bbox(points.lon, points.lat)
    return box.bbox, box.rows_inside


def bbox_text(box: tuple[float, float, float, float]) -> str:
    """'W, S, E, N' as a bounds field reads it, exactly (six decimals at most: a suggested box's edges are multiples
    of 1/64 degree, and the typed-back box must equal it to keep its provenance)."""
    return bounds_text(box).replace(",", ", ")


def box_phrase(box: tuple[float, float, float, float]) -> str:
    """'about 5,060 km wide and 2,670 km tall': the box's own size (never a fixed scale), 3 significant digits."""
    width, height = box_size_km(box)
    return f"about {float(f'{width:.3g}'):,g} km wide and {float(f'{height:.3g}'):,g} km tall"


def bounds_step(container: Any, *, filename: str, why: str, box: tuple[float, float, float, float] | None,
                inside: int, total: int, key: str, on_accept: Any, field: str, needed: int = 0,
                unit: str = "rows") -> None:
    """Ask for the box a file needs as the next step (not an error): what to do, the suggested box with its rows,
    a button that accepts it, and the reason in the tool's own words folded away (issue 27: six of ten error
    boxes a newcomer met were this). ``field`` names the bounds field to type into; ``on_accept`` gets the box's
    text. ``needed``: the file is too small for the private map tiles, which need more than ``needed - 1``
    ``unit`` in one tile (issue 36: said before any search, as ``ldpviz od`` does)."""
    text = bbox_text(box) if box is not None else ""
    if needed:
        why_short = (f"The private map tiles that choose a region without bounds need at least {needed:,} {unit} in "
                     f"one tile to tell it apart from noise; this file has {total:,} {unit} in all")
    else:
        why_short = "ldpviz could not pick a region from the rows by itself"
    lines = [f"**Next step: choose the area of {filename} to study.** {why_short}, so the map needs a box (west, "
             f"south, east, north in degrees) typed in '{field}'."]
    if box is not None:
        lines.append(f"Suggested: `{text}`, {box_phrase(box)}, holds **{inside:,} of {total:,} {unit}** "
                     f"({100 * inside / max(total, 1):.0f}%). It is read from where most of your {unit} are; accept "
                     "it, or type your own box.")
    container.info("\n\n".join(lines), icon=":material/crop_free:")
    if box is not None:
        container.button("Use the suggested bounds", key=key, type="primary", on_click=on_accept, args=(text,))
    with container.expander("Why ldpviz asks"):
        st.caption(why)


def clear_bounds_for_a_new_file(file: Any, seen_key: str, bounds: str) -> str | None:
    """The bounds typed for the previous file, when ``file`` is another one (the caller clears them); else None.

    Bounds typed before the first file stay (they were meant for it). Issue 27: the field kept the last file's box
    and the new file then read "none of the rows has a usable coordinate"."""
    ss = st.session_state
    fid = getattr(file, "file_id", getattr(file, "name", None)) if file is not None else None
    seen = ss.get(seen_key)
    if fid is None or fid == seen:
        return None
    ss[seen_key] = fid
    return bounds if seen is not None and str(bounds or "").strip() else None


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


def held_trips(name: str) -> trajectories.Trajectories | None:
    """An uploaded trips file this session or this server still holds (a reload or a link finds it again)."""
    held = trip_uploads().get(name)
    if held is None:
        kept = _store().get(name)
        if isinstance(kept, trajectories.Trajectories):
            hold(kept)
            held = kept
    return held


def trip_label(name: str) -> str | None:
    """'Your trips: file.csv' for an uploaded trips file, else None."""
    held = trip_uploads().get(name)
    if held is None:
        return None
    if sum(t.label == held.label for t in trip_uploads().values()) > 1:    # one file framed twice: tell them apart
        return f"Your trips: {held.label} · {held.n_trips:,} trips, {held.default_region.name}"
    return f"Your trips: {held.label}"


def trip_uploader(container: Any, page: str) -> str | None:
    """A file uploader for the user's own trips, kept across pages like the points upload.

    Read by :func:`ldpviz.data.trajectories.load_trajectory_file`, the loader and checks of ``ldpviz od --file``;
    returns the name of a file just loaded (the page selects it), else None. The outcome is shown by
    :func:`show_trip_message`.
    """
    ss = st.session_state
    bounds_key = f"w:trip_bounds:{page}"
    file = container.file_uploader("Your trips (CSV or Parquet: person, trip, seq, lon, lat)",
                                   type=TRIP_FILE_TYPES, key=f"w:trip_upload:{page}",
                                   help="One row per point. Within each trip the points are put in order by the "
                                        "seq column (seq, sequence or step), else by a time column (ISO dates "
                                        "or seconds), else kept in file order; rows with no order value are "
                                        "dropped and counted, repeated values counted, and the message names the "
                                        "columns used. Read with the same checks as `ldpviz od --file`; kept in "
                                        "this server's memory only, for this session and the Flows and People "
                                        "pages.")
    show_released(container)
    cleared = clear_bounds_for_a_new_file(file, f"trip_file_seen:{page}", ss.get(bounds_key, ""))
    if cleared:
        ss[bounds_key] = ""
    container.text_input("Bounds for your trips (W,S,E,N, optional)", key=bounds_key,
                         placeholder="e.g. -93.33,44.89,-93.19,45.05",
                         help="Only the rows inside this box are kept (counted), and the box is the region, exactly "
                              "as `ldpviz od --file F --bbox W,S,E,N`: ldpviz reads no users' data to use it (the "
                              "box suggested from your rows is labelled as read from them). Empty: the Data page's "
                              "rule for uploads (private map tiles paid with ε0 once per person by default).")
    if file is None:
        message = ss.get("trip_message")
        if message and message[0] == "bounds" and message[1].get("page") == page:
            ss.pop("trip_message")      # the file waiting for its box was removed
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
        sug = exc.suggestion
        ss["trip_suggested_bbox"] = sug.bbox if sug is not None else None    # its provenance, if typed back
        ss["trip_message"] = ("bounds", {"filename": file.name, "why": str(exc), "page": page,
                                         "box": sug.bbox if sug is not None else None,
                                         "inside": getattr(sug, "rows_inside", 0),
                                         "total": getattr(sug, "rows_total", 0), "needed": getattr(exc, "needed", 0)})
        return None
    except LdpvizInputError as exc:
        ss["trip_message"] = ("error", f"**The trips file could not be used:** {exc}")
        return None
    trips = fingerprinted(trips)
    _store().put(trips)
    hold(trips)
    region = trips.default_region
    ss["trip_message"] = ("success", trips.name, (f"The bounds typed for the previous file ({cleared}) were cleared "
                                                  "for this one. " if cleared else "")
                                     + f"Loaded **{trips.label}**: {trips.n_people:,} "
                                     f"{'person' if trips.n_people == 1 else 'people'}, {trips.n_trips:,} "
                                     f"{'trip' if trips.n_trips == 1 else 'trips'}, {trips.n_points:,} points. "
                                     f"{trips.report.summary()} Region '{region.name}': "
                                     f"{region.data_use or TYPED_TRIP_BOX}.")
    return trips.name


def show_trip_message(container: Any, selected: str | None = None) -> None:
    """The last trips upload's outcome: the bounds step, an error, or 'Loaded' -- the latter only while that file is
    the ``selected`` data (issue 27: the banner stayed over the bundled storms)."""
    ss = st.session_state
    kind, *rest = ss.get("trip_message", (None, None))
    if kind == "bounds":
        m = rest[0]
        bounds_step(container, filename=m["filename"], why=m["why"], box=m["box"], inside=m["inside"],
                    total=m["total"], key=f"fix:trip_bounds:{m['page']}", field="Bounds for your trips",
                    on_accept=lambda text: st.session_state.update({f"w:trip_bounds:{m['page']}": text}),
                    needed=m.get("needed", 0), unit="people")
    elif kind == "error":
        container.error(rest[0], icon=":material/error:")
    elif kind == "success" and (selected is None or selected == rest[0]):
        container.success(rest[1], icon=":material/check_circle:")
