"""Location LDP with the staircase randomized response (l-srr-staircase-randomized-response.md):
SRR over quadkey-tile domains, OLH-H, PLDP, the GRR/HR tile baselines, SRR's effective resolution and
the range-draw helper of its aggregate path.
"""
