"""The four papers behind ldpviz, cited as a reader expects (authors, title, venue), not by file name.

Mechanism ``reference`` strings name the paper's file in ``shared/papers`` (precise for developers);
:func:`readable` replaces each file name by its citation for people.
"""

from __future__ import annotations

#: File in shared/papers -> citation.
PAPERS: dict[str, str] = {
    "dam-disk-area-mechanism.md": (
        "L. Du, P. Cheng, L. Zheng, X. Lian, L. Chen, W. Xi, W. Ni, \"Numerical Estimation of Spatial "
        "Distributions under Differential Privacy\", arXiv:2412.06541, 2024"),
    "grid-decompositions-ug-privag-aag.md": (
        "B. K. Balioglu, A. Khodaie, A. Taweel, M. E. Gursoy, \"Grid-Based Decompositions for Spatial Data under "
        "Local Differential Privacy\", arXiv:2407.21624, 2024"),
    "l-srr-staircase-randomized-response.md": (
        "H. Wang, H. Hong, L. Xiong, Z. Qin, Y. Hong, \"L-SRR: Local Differential Privacy for Location-Based "
        "Services with Staircase Randomized Response\", ACM CCS 2022"),
    "dp-heatmaps-sparse-emd.md": (
        "B. Ghazi, J. He, K. Kohlhoff, R. Kumar, P. Manurangsi, V. Navalpakkam, N. Valliappan, \"Differentially "
        "Private Heatmaps\", AAAI 2023"),
}


def readable(reference: str) -> str:
    """``reference`` with every paper file name replaced by its citation."""
    for filename, citation in PAPERS.items():
        reference = reference.replace(filename, citation)
    return reference
