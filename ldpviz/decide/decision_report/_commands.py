"""The commands in a report: the command line and Python that reproduce a setting, and the deploy command."""

from __future__ import annotations

from typing import Any

from ldpviz import experiment, mechanisms
from ldpviz.data import datasets
from ldpviz.geo.domain import Region, bounds_text
from ldpviz.mechanisms.fo.private_region import PRIVATE_TILES, PUBLIC_TILES
from ldpviz.shell import command_line
from ldpviz.decide.decision_report._html import _e


def is_upload(dataset: datasets.Dataset | None, name: str) -> bool:
    """Whether the scenario's data is a user's file (``upload:...``), not a bundled data set."""
    return name.startswith("upload:") or (dataset is not None and dataset.report is not None)


def data_arguments(scenario: experiment.Scenario, dataset: datasets.Dataset | None = None) -> list[str]:
    """The ``ldpviz`` options that load the scenario's data and frame its region as the scenario did.

    A bundled data set is ``--dataset NAME``; a user's file is ``--csv FILE`` (its name as uploaded, with the
    columns read) and its framing: ``--bbox=W,S,E,N`` for a typed or accepted box, else the region rule and its
    epsilon0 (``--dataset upload:...`` names a file only this session held: the command line cannot load it).
    """
    region = scenario.region
    if is_upload(dataset, scenario.dataset):
        filename = dataset.label if dataset is not None else scenario.dataset.split(":")[-1]
        args = ["--csv", filename]
        if dataset is not None and dataset.report is not None:
            args += ["--lat-column", dataset.report.lat_column, "--lon-column", dataset.report.lon_column]
        if isinstance(region, Region) and region.bounds is not None:
            return args + bbox_arguments(region)
        if isinstance(region, Region) and region.epsilon_spent > 0:
            return args + ["--region-rule", PRIVATE_TILES, "--region-epsilon", f"{region.epsilon_spent:g}"]
        return args + ["--region-rule", PUBLIC_TILES]
    args = ["--dataset", scenario.dataset]
    if isinstance(region, str):
        return args + ["--region", region]
    if isinstance(region, Region) and region.bounds is not None:
        return args + bbox_arguments(region)
    return args


def bbox_arguments(region: Region) -> list[str]:
    """``--bbox=W,S,E,N``, with ``--bbox-from suggestion`` when the box was the one ldpviz suggested from the rows
    (:func:`ldpviz.geo.region_choice.origin`): the command then states the provenance the page stated."""
    from ldpviz.geo import region_choice
    from ldpviz.geo.region_suggestion import FROM_SUGGESTION
    args = [f"--bbox={bounds_text(region.bounds)}"]
    if region_choice.origin(region) == region_choice.ORIGIN_SUGGESTION:
        args += ["--bbox-from", FROM_SUGGESTION]
    return args


#: The name prefix of points taken from trips, one per person (:func:`ldpviz.decide.decision_flow.trips_points`).
TRIPS_PREFIX = experiment.ONE_POINT_PER_PERSON_PREFIX


def is_trips(name: str) -> bool:
    """Whether a scenario's data are one point per person taken from trips (Decide's step 1 with trips)."""
    return str(name).startswith(TRIPS_PREFIX)


def _trips_reproduction(scenario: experiment.Scenario, dataset: datasets.Dataset | None) -> tuple[str, str]:
    """``ldpviz report`` reads points, so trips reproduce through the API: the trips read with the same loader,
    one point per person with the same seed, the same scenario."""
    source = scenario.dataset[len(TRIPS_PREFIX):]
    from ldpviz.data import trajectories
    region = scenario.region
    if source in trajectories.names():
        load = f"trips = trajectories.load({source!r})"
    else:
        filename = dataset.label if dataset is not None else source.split(":")[-1]
        load = ("from ldpviz.mechanisms.fo.private_region import upload_frame\n"
                f"trips = trajectories.load_trajectory_file({filename!r}{python_framing(region)})   # your file")
    py = (f"from ldpviz import Scenario, run\nfrom ldpviz.data import trajectories\n"
          f"from ldpviz.decide import decision_flow\nfrom ldpviz.geo.domain import Region\n{load}\n"
          f"points = decision_flow.trips_points(trips, seed={scenario.seed})   # one point per person\n"
          f"result = run(Scenario(dataset=points.name, mechanism={scenario.mechanism!r}, "
          f"epsilon={scenario.epsilon!r}, grid_side={scenario.grid_side}, region={region!r}, "
          f"params={dict(scenario.params)!r}, n_users={scenario.n_users!r}, seed={scenario.seed}, "
          f"trials={scenario.trials}), points)\nprint(result.summary())")
    return "(ldpviz report reads points; these trips are reproduced with the Python below)", py


def _reproduction(scenario: experiment.Scenario, r_m: float,
                  dataset: datasets.Dataset | None = None) -> tuple[str, str]:
    if is_trips(scenario.dataset):
        return _trips_reproduction(scenario, dataset)
    args = ["ldpviz", "report", *data_arguments(scenario, dataset), "--mechanism", scenario.mechanism,
            "--epsilon", f"{scenario.epsilon:g}", "--grid", str(scenario.grid_side), "--seed", str(scenario.seed),
            "--trials", str(scenario.trials), "--r", f"{r_m:g}"]
    if scenario.n_users is not None:
        args += ["--users", str(scenario.n_users)]
    for key, value in scenario.params:
        args += ["--param", f"{key}={value}"]
    args += ["--out", "report.html"]
    if is_upload(dataset, scenario.dataset):
        filename = dataset.label if dataset is not None else scenario.dataset.split(":")[-1]
        load = ("from ldpviz.data import datasets\n"
                "from ldpviz.mechanisms.fo.private_region import upload_frame\n"
                f"data = datasets.load_file({filename!r}" + python_framing(scenario.region) + ")   # your file\n")
        py = (f"from ldpviz import Scenario, run\n{load}"
              f"result = run(Scenario(dataset=data.name, mechanism={scenario.mechanism!r}, "
              f"epsilon={scenario.epsilon!r}, grid_side={scenario.grid_side}, region=data.default_region, "
              f"params={dict(scenario.params)!r}, n_users={scenario.n_users!r}, seed={scenario.seed}, "
              f"trials={scenario.trials}), data)\nprint(result.summary())")
        return command_line(args), py
    py = (f"from ldpviz import Scenario, run\n"
          f"result = run(Scenario(dataset={scenario.dataset!r}, mechanism={scenario.mechanism!r}, "
          f"epsilon={scenario.epsilon!r}, grid_side={scenario.grid_side}, region={scenario.region!r}, "
          f"params={dict(scenario.params)!r}, n_users={scenario.n_users!r}, seed={scenario.seed}, "
          f"trials={scenario.trials}))\nprint(result.summary())")
    return command_line(args), py


def deploy_refusal(region: Any) -> str:
    """'' when a collection may be sent over ``region``; else why ``ldpviz deploy`` refuses it: a region read from
    the users' data without paying for it (the suggested box, public tiles) would make every phone's plan depend on
    that data (:func:`ldpviz.deploy.spec.check_deployable`)."""
    from ldpviz.geo import region_choice
    if not isinstance(region, Region) or region_choice.origin(region) not in (region_choice.ORIGIN_SUGGESTION,
                                                                             region_choice.ORIGIN_DATA):
        return ""
    return (f"the region was {region.data_use}; a collection sent to every phone must not depend on the users' "
            "data, so ldpviz deploy refuses it. Decide the bounds yourself (type them, e.g. the same box once you "
            "have checked it against public knowledge of the area), use a preset, or let the paid private map "
            "tiles choose the region (charged in the ledger)")


def deploy_command(scenario: experiment.Scenario, region: Any, presets: dict | None = None,
                   dataset: datasets.Dataset | None = None) -> str | None:
    """The ``ldpviz deploy`` command of the decided collection (issue 29), or None when there is none to print: a
    region read from the data unpaid (:func:`deploy_refusal` says why), or trips whose region only their file can
    frame. A user's file gets the same data options as every printed command (``--csv FILE --bbox=W,S,E,N``, or its
    paid private tiles), a bundled data set its preset or box."""
    if deploy_refusal(region):
        return None
    args = ["ldpviz", "deploy", "--mechanism", scenario.mechanism, "--epsilon", f"{scenario.epsilon:g}",
            "--grid", str(scenario.grid_side)]
    preset = scenario.region if isinstance(scenario.region, str) else next(
        (name for name, r in (presets or {}).items() if r == region), None)
    if is_trips(scenario.dataset):          # no --dataset names trips taken one point per person: the box only
        if getattr(region, "bounds", None) is None:
            return None
        args += bbox_arguments(region)
    elif is_upload(dataset, scenario.dataset):
        args += data_arguments(scenario.with_(region=region), dataset)
    elif preset is not None:
        args += ["--dataset", scenario.dataset, "--region", preset]
    elif getattr(region, "bounds", None) is not None:
        args += bbox_arguments(region)
    else:
        return None
    for key, value in scenario.params:
        args += ["--param", f"{key}={value}"]
    return command_line([*args, "--out", "bundle/"])


def _deploy_section(scenario: experiment.Scenario, region: Any, presets: dict,
                    dataset: datasets.Dataset | None = None) -> str:
    mech = mechanisms.get(scenario.mechanism)
    command = deploy_command(scenario, region, presets, dataset)
    if mech.privacy_model == mechanisms.CENTRAL_DP:
        what = ("This is central DP: phones send their true cell to a trusted curator, who adds the noise once. The "
                "bundle holds the curator's side only (collection.json and a README); there is no phone client.")
    elif not mech.has_client:
        what = ("This mechanism has no single phone report (several rounds, or a domain built from the users' data), "
                "so it cannot be deployed as one collection; the command says why.")
    else:
        what = ("The bundle holds collection.json (the mechanism, epsilon, the ledger of what each person pays, the "
                "region, grid and domain, digested), client.js and client.py (one true location in, one report out, "
                "exactly this channel), an example page and a README for the engineers; 'ldpviz estimate' reads the "
                "reports back (docs/deploy.md).")
    refusal = deploy_refusal(region)
    cmd = (f"<pre>{_e(command)}</pre>" if command else
           f"<p class=\"note\">No deploy command: {_e(refusal)}.</p>" if refusal else
           "<p class=\"note\">This region was not typed or chosen from a preset; give its bounds with --bbox.</p>")
    return f"<p>{_e(what)}</p>{cmd}"


def python_framing(region: Any) -> str:
    """The load_file arguments that frame a file as ``region`` was framed (its box, or the region rule)."""
    if isinstance(region, Region) and region.bounds is not None:
        return f", bbox={region.bounds!r}" + (f", bbox_data_use={region.data_use!r}" if region.data_use else "")
    if isinstance(region, Region) and region.epsilon_spent > 0:
        return f", frame=upload_frame({PRIVATE_TILES!r}, {region.epsilon_spent!r})"
    return f", frame=upload_frame({PUBLIC_TILES!r})"
