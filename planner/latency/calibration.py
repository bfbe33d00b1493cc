"""A user's calibration as an efficiency profile: the constants a scenario carries (planner.core.scenario keeps them
as a plain mapping, below the latency package), validated against EfficiencyProfile where a step time needs them."""

from __future__ import annotations

from pydantic import ValidationError

from planner.core.errors import from_validation_error
from planner.core.scenario import Calibration
from planner.latency.efficiency import EfficiencyProfile


def fitted_profile(cal: Calibration) -> EfficiencyProfile:
    """The calibration's constants as a profile; bad constants raise InputError naming `calibration.profile.FIELD`."""
    try:
        return EfficiencyProfile(**cal.profile)
    except ValidationError as err:
        raise from_validation_error(err, prefix="calibration.profile.") from None
