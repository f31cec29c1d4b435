"""Every mechanism's reference reads as a citation (authors, title, venue), never as a repository file name."""

from ldpviz.evidence import citations
from ldpviz import mechanisms


def test_every_reference_is_readable():
    for row in mechanisms.describe():
        text = citations.readable(row["reference"])
        assert ".md" not in text, (row["name"], text)


def test_each_paper_file_exists_and_is_cited_by_some_mechanism():
    refs = " ".join(r["reference"] for r in mechanisms.describe())
    for filename, citation in citations.PAPERS.items():
        assert filename in refs, filename
        assert "," in citation and any(ch.isdigit() for ch in citation)
