"""Texts to time the embedding backends on when the instance has no papers yet.

Written for paperfeed and dedicated to the public domain (CC0): abstract-like paragraphs of the lengths
real abstracts have (a title alone up to ~250 tokens), so a calibration on an empty instance ranks the
backends as one on real papers would. Not taken from any dataset (SciFact is for evaluation only).
"""

from __future__ import annotations

__all__ = ["PROBE_TEXTS"]

_PARTS = (
    "Measuring the speed of light with a rotating mirror.",
    "A survey of methods for counting bird populations from acoustic recordings.",
    "We study how the thickness of river ice changes over a winter and relate it to air temperature, "
    "snow cover and the speed of the current measured at twelve stations.",
    "Sparse attention for long documents. We replace full attention with a pattern that lets each token "
    "attend to a fixed window and a few global tokens, which keeps memory linear in the length of the "
    "input while matching the accuracy of dense attention on question answering and summarisation.",
    "Soil bacteria and drought. Plants grown in soil from fields that had suffered repeated droughts kept "
    "more water in their leaves than plants grown in sterilised soil. Sequencing showed that the dry "
    "soils held more bacteria able to form spores, and adding a mixture of three such strains to sterile "
    "soil reproduced most of the effect. The benefit disappeared when the plants were well watered.",
    "A simple model of traffic jams. Cars on a ring road follow the car ahead with a short reaction "
    "delay. Above a critical density, small changes in speed grow into waves that travel backwards "
    "against the traffic, even when no driver makes a mistake. We derive the critical density, compare "
    "it with measurements from a circular test track with twenty-two cars, and show that adaptive "
    "cruise control on one car in five is enough to damp the waves.",
    "Graph neural networks for predicting the properties of molecules have improved quickly, but most "
    "benchmarks reuse the same small sets of compounds. We collect a new set of forty thousand molecules "
    "with measured solubility from laboratory notebooks, split it by scaffold so that test molecules "
    "share no ring system with training ones, and evaluate twelve published models. Accuracy drops by a "
    "third compared with random splits, and a plain fingerprint with gradient boosting is within the "
    "error bars of the best network. We release the data, the splits and the code, and argue that "
    "scaffold splits should be the default when models are meant to guide the synthesis of new "
    "compounds rather than to interpolate between known ones.",
    "Ocean heat content. Floats that drift at depth and surface every ten days have measured temperature "
    "in the upper two kilometres of the ocean since the early two thousands. Combining these profiles "
    "with older ship measurements, we estimate how much heat the ocean has gained per decade, how the "
    "gain is shared between basins, and how uncertain the estimate is where floats are sparse, such as "
    "under sea ice and in marginal seas. The warming is largest in the Southern Ocean between thirty "
    "and sixty degrees south, where strong westerly winds mix surface water downwards. We discuss what "
    "the remaining gaps in coverage mean for closing the planetary energy budget and which regions a "
    "small number of additional floats would constrain best.",
)

PROBE_TEXTS: tuple[str, ...] = _PARTS * 6  # 48 texts: three timed batches of 16
