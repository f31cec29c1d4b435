"""Grid decompositions (grid-decompositions-ug-privag-aag.md): UG, PrivAG and AAG.
"""
