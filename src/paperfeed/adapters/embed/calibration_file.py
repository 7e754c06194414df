"""The calibration record: a small JSON file in the data folder (``embedding-calibration.json``).

Written to a temporary file and renamed into place, so a reader never sees half a record; a record that
cannot be read counts as no record (the next first use measures again) rather than as an error.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from dataclasses import asdict
from pathlib import Path

import orjson

from paperfeed.domain.calibration import BackendTiming, Calibration

__all__ = ["CALIBRATION_FILE", "CalibrationFile"]

CALIBRATION_FILE = "embedding-calibration.json"


class CalibrationFile:
    """:class:`~paperfeed.domain.calibration.CalibrationRecords` as one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> Calibration | None:
        try:
            data = orjson.loads(self.path.read_bytes())
            timings = tuple(BackendTiming(**t) for t in data.pop("timings"))
            return Calibration(**data, timings=timings)
        except (OSError, orjson.JSONDecodeError, TypeError, KeyError, AttributeError):
            return None

    def save(self, calibration: Calibration) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:8]}")
        try:
            tmp.write_bytes(orjson.dumps(asdict(calibration), option=orjson.OPT_INDENT_2))
            os.replace(tmp, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
