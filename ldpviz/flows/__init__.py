"""Origin-destination flows and navigation with LDP location updates (L-SRR paper Sec. 4).
"""
