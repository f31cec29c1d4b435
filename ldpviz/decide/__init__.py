"""What a privacy officer decides with: every guarantee on one scale, the attacker, budgets over repeated
collections, trade-offs and goal seek, plain-words explanations and the HTML decision report.
"""
