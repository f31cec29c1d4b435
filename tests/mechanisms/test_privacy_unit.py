"""Every guarantee names its privacy unit (issue 15.17) and what it does not cover (15.1, 15.18)."""

from ldpviz import experiment, mechanisms
from ldpviz.geo.domain import Grid, Region
from ldpviz.mechanisms.base import UNIT_PERSON, UNIT_ROW, Mechanism


def test_every_registered_mechanism_names_its_unit():
    """Default unit is a row (event-level): the text says a person with m rows gets m x epsilon."""
    grid = Grid(Region(0.0, 0.0, 10_000.0), 8)
    for name in mechanisms.available():
        mech = mechanisms.create(name, grid, 1.0)
        assert isinstance(mech.privacy_unit, str) and mech.privacy_unit
        text = mech.stated_guarantee()
        assert text.startswith(mech.guarantee())
        if mech.privacy_model != "none" and mech.privacy_unit == UNIT_ROW:
            assert "per row (event-level)" in text and "m x epsilon" in text, name


def test_other_units_are_named():
    class PerPerson(Mechanism):
        name, label, family, privacy_model, reference = "pp", "pp", "test", "LDP", "none"
        privacy_unit = UNIT_PERSON

    text = PerPerson(Grid(Region(0.0, 0.0, 1000.0), 2), 1.0).stated_guarantee()
    assert text == ("epsilon-LDP with epsilon = 1, per one person: everything one person contributes is protected "
                    "together")


def test_result_names_unit_count_and_region():
    """A run's guarantee names the unit; the exact user count and the region's choice are listed as not covered."""
    result = experiment.run(experiment.Scenario(dataset="uniform", mechanism="grr", epsilon=1.0, grid_side=8,
                                                n_users=1000))
    assert "per row (event-level)" in result.guarantee
    assert any("n = 1,000" in item and "not private" in item for item in result.coverage)
    assert any("without reading users' data" in item for item in result.coverage)
    fitted = Region.fit([0.0, 0.01], [0.0, 0.01])
    ds = experiment.datasets.load("uniform")
    result = experiment.run(experiment.Scenario(dataset="uniform", mechanism="grr", epsilon=1.0, grid_side=8,
                                                region=fitted, n_users=500), ds)
    assert any(item.startswith("Not covered by epsilon: the region was fit to the users' exact points")
               for item in result.coverage)
    assert result.summary()["coverage"] == result.coverage


def test_rows_outside_the_region_are_named_in_the_coverage():
    result = experiment.run(experiment.Scenario(dataset="uniform", mechanism="grr", epsilon=1.0, grid_side=8,
                                                region="Centre"))
    assert result.n_outside > 0
    assert any(f"{result.n_outside:,} rows outside the region" in item for item in result.coverage)
