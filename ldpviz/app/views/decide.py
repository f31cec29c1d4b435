"""Decide: from "I have this file" to a signed decision, in five steps on one page (issue 27).

The page is :func:`ldpviz.app.decide_page.page`: one function per step over one typed state, importable and
tested without AppTest (issue 40).
"""

from ldpviz.app.decide_page import page

page()
