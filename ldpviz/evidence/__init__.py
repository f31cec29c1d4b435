"""Evidence behind the claims: the black-box privacy audit, ``ldpviz reproduce`` (bench scripts into docs/),
generated claim summaries and the papers' citations.
"""
