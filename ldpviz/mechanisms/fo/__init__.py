"""Frequency oracles on grid cells (GRR, OLH, OUE, HR, and the no-privacy reference) with the Hadamard
transform helpers.
"""
