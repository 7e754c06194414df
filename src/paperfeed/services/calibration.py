"""Which embedding backend an instance uses when the setting says ``auto``: measured once, then kept.

Resolution order: an explicit ``PAPERFEED_EMBEDDING_BACKEND`` (the caller does not ask us then); a stored
calibration made for this model on this CPU; the backend whose vectors are already stored (an instance
that embedded before calibration existed is never re-embedded behind its back); for a data folder with no
vectors yet, the machine's calibration (``machine``: made by another data folder on this machine for this
model, CPU and thread count -- the timings are the machine's, not the data folder's, issue #39), copied
into the data folder's record; otherwise calibrate now and store the result (in both). Only ``paperfeed
index --calibrate`` may replace a choice that has vectors.

A caller that must not wait (``paperfeed run``'s indexer on a machine's very first start: the user waits
for the first vectors) may *defer* that last step: it embeds at once with the reference (torch float32:
no ONNX export to build first, about a minute on a new machine, and no other backend loaded), and
measures once its backlog is done (:meth:`BackendChooser.calibrate` within the reference's vector space,
which ONNX float32 shares). Nothing is re-embedded whichever wins, since only backends of that space may
win then.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from paperfeed.domain.calibration import (
    AGREEMENT_FLOOR,
    BackendTiming,
    Calibration,
    CalibrationRecords,
    CpuMeasured,
    choose_backend,
)
from paperfeed.domain.errors import EmbedderUnavailable
from paperfeed.domain.search import Embedder

__all__ = ["CANDIDATES", "DEFERRED", "BackendChooser", "Resolution"]

CANDIDATES = ("torch", "onnx", "onnx-int8")  # the reference (torch float32) first
PROBE_TEXTS = 48  # three batches of 16: enough for steady CPU figures, a few seconds per backend
PROBE_BATCH = 16
UNMEASURED_PREFERENCE = ("onnx", "onnx-int8", "torch")  # without timings: the usual order, fastest first
DEFERRED = "not measured yet: measured once the backlog is done"


@dataclass(frozen=True, slots=True)
class Resolution:
    backend: str
    reason: str  # "calibration record", "stored vectors", "calibrated now...", DEFERRED, "provisional"
    calibration: Calibration | None

    @property
    def final(self) -> bool:
        """False for a guess made without timings or vectors: a later calibration may pick another."""
        return self.reason != "provisional"


class BackendChooser:
    """Times the candidate backends and keeps the fastest that agrees with the reference."""

    def __init__(
        self,
        *,
        open_backend: Callable[[str], Embedder],
        records: CalibrationRecords,
        probe_texts: Callable[[int], tuple[list[str], str]],
        stored_models: Callable[[], dict[str, int]],
        model: str,
        cpu: str,
        threads: int,
        candidates: Sequence[str] = CANDIDATES,
        floor: float = AGREEMENT_FLOOR,
        probes: int = PROBE_TEXTS,
        clock: Callable[[], float] = time.perf_counter,
        cpu_clock: Callable[[], float] = time.process_time,
        machine: CalibrationRecords | None = None,
    ) -> None:
        """``records``: the data folder's calibration; ``machine``: the one every data folder of this
        machine shares (None: none is kept)."""
        self._open = open_backend
        self._records = records
        self._machine = machine
        self._probe_texts = probe_texts
        self._stored_models = stored_models
        self._model = model
        self._cpu = cpu
        self._threads = threads
        self._candidates = tuple(candidates)
        self._floor = floor
        self._probes = probes
        self._clock = clock
        self._cpu_clock = cpu_clock

    def recorded(self) -> Calibration | None:
        """The stored calibration if it was made for this model on this CPU, under this floor."""
        found = self._records.load()
        applies = found is not None and found.applies_to(self._model, self._cpu, self._floor)
        return found if applies else None

    def resolve(self, *, calibrate: bool = True, defer: bool = False, queries: bool = False) -> Resolution:
        """:meth:`_resolve`; for a process that embeds only queries (``queries``: a web process) ONNX
        float32 where the choice is torch float32 and the calibration showed ONNX's vectors to be the
        same: the choice is measured on batches of papers, while a query is one short text, and torch
        holds ~550 MB in the process against ONNX's ~170 MB (issue #39 item 6)."""
        found = self._resolve(calibrate=calibrate, defer=defer)
        timings = found.calibration.timings if found.calibration is not None else ()
        reference = next((t for t in timings if t.backend == found.backend), None)
        light = next((t for t in timings if t.backend == "onnx" and t.agrees(self._floor)), None)
        if queries and reference is not None and light is not None and light.model_id == reference.model_id:
            return Resolution(
                "onnx", f"{found.reason}; ONNX for queries (the same vectors)", found.calibration
            )
        return found

    def _resolve(self, *, calibrate: bool, defer: bool) -> Resolution:
        """The backend to use now. ``calibrate=False`` (a web process: a request must not wait a minute
        for timings) never measures: without a record it takes the stored vectors' space, and without
        those a provisional choice the caller should not keep. ``defer`` (with ``calibrate``): where it
        would measure now, it takes the reference unmeasured instead (:data:`DEFERRED`, a choice to keep
        for the run); the caller measures later, within the space of what it embedded."""
        found = self.recorded()
        if found is not None and found.backend in self._candidates:
            return Resolution(found.backend, "calibration record", found)
        spaces = {b: self._open(b).model_id for b in self._candidates}
        stored = {m: n for m, n in self._stored_models().items() if m in spaces.values() and n > 0}
        if stored:  # keep the space of the vectors already stored; choose only within it
            space = max(stored, key=lambda m: stored[m])
            if not calibrate:
                same = [b for b in UNMEASURED_PREFERENCE if spaces.get(b) == space]
                return Resolution(same[0], "stored vectors", None)
            calibration = self.calibrate(within=space)
            return Resolution(
                calibration.backend, "calibrated now, within the stored vectors' space", calibration
            )
        shared = self._machine.load() if self._machine is not None else None
        if (
            shared is not None
            and shared.applies_to(self._model, self._cpu, self._floor)
            and shared.threads == self._threads
            and shared.backend in self._candidates
        ):  # no vectors here yet: this machine's measurement holds for this data folder too
            self._records.save(shared)
            return Resolution(shared.backend, "this machine's calibration", shared)
        if not calibrate:
            return Resolution(UNMEASURED_PREFERENCE[0], "provisional", None)
        if defer:  # the reference: its vectors are the ones every choice must agree with
            return Resolution(self._candidates[0], DEFERRED, None)
        calibration = self.calibrate()
        return Resolution(calibration.backend, "calibrated now", calibration)

    def _time(self, embedder: Embedder, texts: list[str]) -> tuple[np.ndarray, float, float]:
        embedder.embed(texts[:2])  # loads the model (and builds the ONNX export once): not timed
        # the CPU of the process that embeds: this one, or the child an idle-released embedder runs in
        cpu_clock = embedder.cpu_seconds if isinstance(embedder, CpuMeasured) else self._cpu_clock
        wall, cpu = self._clock(), cpu_clock()
        parts = [embedder.embed(texts[i : i + PROBE_BATCH]) for i in range(0, len(texts), PROBE_BATCH)]
        return np.vstack(parts), self._clock() - wall, cpu_clock() - cpu

    def calibrate(self, within: str | None = None) -> Calibration:
        """Measure every candidate on the probe texts, store the choice and return it.

        ``within``: choose only among backends whose vectors live in this ``model_id`` (the reference is
        measured anyway, for the agreement figures); the fastest of them even if it does not agree,
        since its vectors are the ones stored."""
        texts, source = self._probe_texts(self._probes)
        if not texts:
            raise ValueError("calibration needs at least one probe text")
        timings: list[BackendTiming] = []
        reference: np.ndarray | None = None
        for backend in self._candidates:
            embedder = self._open(backend)
            try:
                vectors, wall, cpu = self._time(embedder, texts)
            except EmbedderUnavailable:
                if reference is None:
                    raise  # the reference decides agreement: without it nothing can be chosen
                continue  # e.g. onnxruntime not installed: the others can still be compared
            if reference is None:
                reference = vectors  # the first candidate is the reference
            cosines = (vectors * reference).sum(axis=1)
            timings.append(
                BackendTiming(
                    backend,
                    embedder.model_id,
                    len(texts),
                    cpu,
                    wall,
                    float(cosines.min()),
                    float(cosines.mean()),
                )
            )
        if within is None:
            best = choose_backend(timings, self._floor)
        else:
            allowed = [t for t in timings if t.model_id == within]
            best = (
                choose_backend(allowed, self._floor)
                if any(t.agrees(self._floor) for t in allowed)
                else (max(allowed, key=lambda t: t.per_cpu_second))
            )
        calibration = Calibration(
            backend=best.backend,
            model_id=best.model_id,
            model=self._model,
            cpu=self._cpu,
            threads=self._threads,
            reference=self._candidates[0],
            floor=self._floor,
            probe_source=source,
            measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
            timings=tuple(timings),
        )
        self._records.save(calibration)
        # the machine's too, unless the data folder's vectors bound the choice to another than the free one
        free = within is None or choose_backend(timings, self._floor).backend == best.backend
        if free and self._machine is not None:
            with contextlib.suppress(OSError):  # a read-only shared cache: this data folder keeps its own
                self._machine.save(calibration)
        return calibration
