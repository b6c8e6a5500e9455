"""Events are data: frozen records that compare by value, print readably and round-trip through
plain JSON, and the accountant gives the same answer for an event and its round-tripped copy."""

from __future__ import annotations

import json
import math

import pytest

import rdpcalc
from rdpcalc import event_from_dict


def _events():
    rqm = rdpcalc.make_mechanism("rqm", c="3/2", delta="3/2", m=4, q="21/50")
    return [
        rdpcalc.MechanismEvent(rqm, n=3, clients=30, dim=2, observer="release"),
        rdpcalc.MechanismEvent(rdpcalc.make_mechanism("pbm", c=1, theta="1/4", trials=4), n=2),
        rdpcalc.GaussianEvent(2.0, sensitivity=1.5, sample_rate=0.1),
        rdpcalc.LaplaceEvent(3.0),
        rdpcalc.PairEvent([0.5, 0.25, 0.25], [0.25, 0.25, 0.5], name="three outputs"),
    ]


@pytest.mark.parametrize("event", _events(), ids=lambda event: event.KIND)
def test_an_event_round_trips_through_json(event):
    data = json.loads(json.dumps(event.to_dict()))
    copy = event_from_dict(data)
    assert copy == event and hash(copy) == hash(event) and copy is not event
    assert data["event"] == event.KIND and "_cache" not in data


@pytest.mark.parametrize("event", _events(), ids=lambda event: event.KIND)
def test_an_event_is_frozen_and_prints_its_fields(event):
    with pytest.raises(AttributeError):
        event.dim = 5
    text = repr(event)
    assert text.startswith(type(event).__name__ + "(") and "_cache" not in text


def test_a_round_tripped_event_gives_the_same_epsilon():
    gaussian = rdpcalc.GaussianEvent(1.5, sample_rate=0.2)
    copy = event_from_dict(json.loads(json.dumps(gaussian.to_dict())))
    first = rdpcalc.Accountant("rdp").compose(gaussian, count=50).get_epsilon(1e-6)
    second = rdpcalc.Accountant("rdp").compose(copy, count=50).get_epsilon(1e-6)
    assert first == second and math.isfinite(first)


def test_a_mechanism_event_keeps_its_mechanism_exactly():
    event = _events()[0]
    parameters = event.to_dict()["mechanism"]["parameters"]
    assert parameters["q"] == "21/50" and parameters["c"] == "3/2"  # exact, not 0.42 rounded to binary
    assert event_from_dict(event.to_dict()).mechanism == event.mechanism


def test_equal_events_differ_from_other_events():
    first, second = _events()[2], rdpcalc.GaussianEvent(2.0, sensitivity=1.5, sample_rate=0.2)
    assert first != second and first == rdpcalc.GaussianEvent(2, sensitivity=1.5, sample_rate=0.1)


@pytest.mark.parametrize("data, parameter", [({"event": "poisson"}, "event"), ({}, "event"),
                                             ({"event": "mechanism", "mechanism": "rqm"}, "mechanism"),
                                             ({"event": "gaussian", "sigma": -1}, "sigma")])
def test_bad_data_names_the_field(data, parameter):
    with pytest.raises(rdpcalc.ParameterError) as error:
        event_from_dict(data)
    assert error.value.parameter == parameter
