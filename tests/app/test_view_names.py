"""The pages' files have importable names (issue 40: ``ldpviz.app.views.trade_offs``, not ``2_Trade-offs.py``),
and the router still gives every page the title and url path it had under the old file names, so the sidebar,
deep links and Streamlit's page identity (its script hash, derived from the url path) stay as they were."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ldpviz.app import router

#: Title and url path of each page as Streamlit read them when the files were numbered ("0_Explore.py" was the
#: default page: served at the root, its url path inferred from the file name).
BEFORE = [("Decide", "Decide"), ("Explore", "Explore"), ("Compare", "Compare"), ("Trade-offs", "Trade-offs"),
          ("Mechanisms", "Mechanisms"), ("Data", "Data"), ("Privacy audit", "Privacy_audit"), ("Flows", "Flows"),
          ("People", "People")]


def test_every_page_keeps_its_title_url_path_and_place():
    assert [(title, url or router.DEFAULT_URL_PATH) for _, title, url in router.PAGES] == BEFORE
    assert [title for _, title, url in router.PAGES if url is None] == ["Explore"]      # the root page


def test_every_view_file_is_there_and_importable_by_name():
    files = sorted(p.name for p in router.VIEWS.glob("*.py"))
    assert files == sorted(file for file, _, _ in router.PAGES)
    for file in files:
        stem = Path(file).stem
        assert stem.isidentifier(), file
        assert importlib.util.find_spec(f"ldpviz.app.views.{stem}") is not None, file
