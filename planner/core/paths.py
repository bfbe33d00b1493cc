"""Where the bundled data lives: the one place that resolves a data path.

`data/` at the repository root holds the catalogues (gpus.yaml, precisions.yaml, models/), the fitted constants
(efficiency.yaml, vllm_memory.yaml), the traces the app offers (traces/) and the published measurements it validates
against (measurements/), each folder with a README giving sources and licences. Nothing outside the repository is
read at run or test time. In a checkout (and an editable install) that is `data/` beside `planner/`; an installed
wheel carries the same folder as `planner/_data` (setup.py maps it there), which is used when present.

Environment overrides, for users with their own folders:
    SERVINGPLAN_DATA_DIR      the whole data folder
    SERVINGPLAN_TRACES_DIR    traces only (named traces are looked up there)
    SERVINGPLAN_MEASUREMENTS  the published-points CSV `validate` uses by default
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # planner/
_INSTALLED_DATA = _PACKAGE / "_data"  # the copy an installed wheel carries
_REPO_DATA = _PACKAGE.parent / "data"  # the repository's data/ (checkout, editable install)


def data_dir() -> Path:
    """The data folder: $SERVINGPLAN_DATA_DIR, else the installed copy, else `data/` at the repository root."""
    override = os.environ.get("SERVINGPLAN_DATA_DIR")
    if override:
        return Path(override).expanduser()
    return _INSTALLED_DATA if _INSTALLED_DATA.is_dir() else _REPO_DATA


def data_path(*parts: str) -> Path:
    """A file or folder inside the data folder."""
    return data_dir().joinpath(*parts)


def traces_dir() -> Path:
    override = os.environ.get("SERVINGPLAN_TRACES_DIR")
    return Path(override).expanduser() if override else data_path("traces")


def measurements_dir() -> Path:
    return data_path("measurements")


def published_points_csv() -> Path:
    override = os.environ.get("SERVINGPLAN_MEASUREMENTS")
    return Path(override).expanduser() if override else measurements_dir() / "published_points.csv"
