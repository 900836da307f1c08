"""The tests' fixtures (the shared helpers are rsep.testing.snippets) and Hypothesis's CI profile."""

from __future__ import annotations

import os

import mqtt_broker
import pytest
from hypothesis import settings

from rsep import Event
from rsep.testing.snippets import EX, ev

# CI (CI=true) runs the property tests on a fixed sequence of examples, so a green main
# stays green; runs elsewhere draw new examples each time and keep searching for bugs.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")



@pytest.fixture
def figure1() -> list[Event]:
    """The stream of RSEP-QL (000) Figure 1 / Example 1: (G1,2) ... (G5,10)."""
    s = EX + "S"
    return [
        ev(s, 2, ":a1 :p :b1 .", EX + "G1"),
        ev(s, 4, ":a2 :p :b2 .", EX + "G2"),
        ev(s, 6, ":b1 :q :c1 . :b2 :q :c2 .", EX + "G3"),
        ev(s, 8, ":a3 :p :b3 . :b2 :q :c2 .", EX + "G4"),
        ev(s, 10, ":b1 :q :c1 .", EX + "G5"),
    ]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A real MQTT broker (mosquitto) on a free port: its port."""
    yield from mqtt_broker.broker(tmp_path_factory)


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for the whole run (local[2], one shuffle partition): starting
    Spark costs seconds, so every Spark test shares it."""
    from rsep.spark.session import get_session

    session = get_session("local[2]", app="rsep-tests", shuffle_partitions=1)
    yield session
    session.stop()
