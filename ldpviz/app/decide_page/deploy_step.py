"""Decide, step 6 · Deploy: the collection bundle of the signed mechanism (collection.json, the phone clients, a
README) and the same bundle on the command line."""

from __future__ import annotations

import streamlit as st

from ldpviz.app import state
from ldpviz.app.decide_page.types import DecideState
from ldpviz.decide import decision_flow as flow, decision_report
from ldpviz.decide.decision_report import deploy_command
from ldpviz.deploy import bundle
from ldpviz.errors import LdpvizInputError, clause
from ldpviz.mechanisms.base import Mechanism


@st.cache_data(max_entries=16, show_spinner="Writing the collection bundle ...")
def collection_zip(mechanism: str, epsilon: float, side: int, _region, region_key: str, ledger_cfg: tuple,
                   expected: int, people: int | None, _mech: Mechanism) -> bytes:
    """The deploy bundle (ldpviz.deploy.bundle) of the chosen mechanism at its answer, with the flow's ledger.
    ``_mech`` is that mechanism (built once, in step 4); the name, ε and grid side before it key the cache."""
    return bundle.bundle_zip(_mech, _region, flow.ledger_for(_mech, _region, dict(ledger_cfg), people),
                             expected_users=expected)


def deploy(state_: DecideState) -> None:
    """Draw step 6: the bundle's download and its command, or why there is no phone bundle."""
    cfg, src, need, answers, signed = state_.cfg, state_.source, state_.need, state_.answers, state_.signed
    chosen, pick, region, side = signed.chosen, signed.pick, src.region, need.side
    st.header("6 · Deploy")
    st.caption("What your engineers build the collection from: collection.json (the mechanism, ε, the region with "
               "its projection, the grid and domain, the ledger above and a digest of all of it), client.js and "
               "client.py (what each phone runs on one true location: exact sampling, the platform's cryptographic "
               "random source), a README and the command that estimates the map from the reports that come back "
               "(docs/deploy.md).")
    ledger_cfg = tuple((k, cfg.get(k)) for k in ("decide_reports", "decide_unit", "decide_every", "decide_trips"))
    try:
        zipped = collection_zip(chosen, float(pick["epsilon"]), int(side), region, repr(region), ledger_cfg,
                                int(answers.n_users or src.inside), src.people, signed.mechanism)
        st.download_button("Download the collection bundle (ZIP)", zipped, f"ldpviz-collection-{chosen}.zip",
                           "application/zip", on_click="ignore", key="decide:deploy")
        command = deploy_command(flow.scenario(src.name, region, chosen, int(side), answers.n_users,
                                               int(cfg["seed"])).with_(epsilon=float(pick["epsilon"])), region,
                                 {src.choice: region} if src.choice != state.REGION_BBOX and src.trips is None
                                 else None, src.data)
        if command:
            st.markdown("**The same bundle on the command line:**")
            st.code(command, language="bash")
    except LdpvizInputError as exc:
        refused = decision_report.deploy_refusal(region)     # the reason `ldpviz deploy` gives, in its words
        st.info(f"No phone bundle for {chosen}: {refused or clause(exc)}.", icon=":material/info:")
