"""arXiv subject names (as Dublin Core ``dc:subject`` gives them) mapped back to category codes.

arXiv's ``oai_dc`` format names a paper's categories in words ("Computer Science - Machine Learning")
instead of codes (``cs.LG``), listing the primary category first. The table below covers the whole
arXiv taxonomy, current and legacy names. What cannot be mapped, by design:

* ``dc:subject`` values that are classification codes, not arXiv categories: MSC (``40-01, 65B10``),
  ACM (``I.2.6``), PACS. They are skipped; oai_dc has no field for them in :class:`Paper`.
* A subject name arXiv introduces after this table was written. Such a paper keeps the categories that
  did map; when the *first* (primary) subject is the unknown one, the archive is taken from the
  subject's own prefix ("Computer Science - New Thing" -> ``cs``) or else from the record's
  ``setSpec`` (``physics:cond-mat`` -> ``cond-mat``; the first set, and sets are listed
  alphabetically, so with several sets this is a best guess at the archive).

Aliases stay distinct, as arXiv lists them: "Mathematical Physics" is ``math-ph`` and
"Mathematics - Mathematical Physics" is ``math.MP``; "Statistics - Statistics Theory" is ``stat.TH``
and "Mathematics - Statistics Theory" is ``math.ST``; likewise ``cs.SY``/``eess.SY``, ``cs.IT``/
``math.IT``, ``cs.NA``/``math.NA``, ``q-fin.EC``/``econ.GN``.
"""

from __future__ import annotations

__all__ = ["SUBJECT_CODES", "archive_of_set_spec", "archive_of_subject", "subject_category"]

_ARCHIVE_NAMES: dict[str, str] = {
    "Astrophysics": "astro-ph",
    "Condensed Matter": "cond-mat",
    "Computer Science": "cs",
    "Economics": "econ",
    "Electrical Engineering and Systems Science": "eess",
    "Mathematics": "math",
    "Nonlinear Sciences": "nlin",
    "Physics": "physics",
    "Quantitative Biology": "q-bio",
    "Quantitative Finance": "q-fin",
    "Statistics": "stat",
}

# Categories named "<archive name> - <category name>", by archive code.
_BY_ARCHIVE: dict[str, dict[str, str]] = {
    "astro-ph": {
        "Cosmology and Nongalactic Astrophysics": "CO",
        "Earth and Planetary Astrophysics": "EP",
        "Astrophysics of Galaxies": "GA",
        "High Energy Astrophysical Phenomena": "HE",
        "Instrumentation and Methods for Astrophysics": "IM",
        "Solar and Stellar Astrophysics": "SR",
    },
    "cond-mat": {
        "Disordered Systems and Neural Networks": "dis-nn",
        "Mesoscale and Nanoscale Physics": "mes-hall",
        "Materials Science": "mtrl-sci",
        "Other Condensed Matter": "other",
        "Quantum Gases": "quant-gas",
        "Soft Condensed Matter": "soft",
        "Statistical Mechanics": "stat-mech",
        "Strongly Correlated Electrons": "str-el",
        "Superconductivity": "supr-con",
    },
    "cs": {
        "Artificial Intelligence": "AI",
        "Hardware Architecture": "AR",
        "Computational Complexity": "CC",
        "Computational Engineering, Finance, and Science": "CE",
        "Computational Geometry": "CG",
        "Computation and Language": "CL",
        "Cryptography and Security": "CR",
        "Computer Vision and Pattern Recognition": "CV",
        "Computers and Society": "CY",
        "Databases": "DB",
        "Distributed, Parallel, and Cluster Computing": "DC",
        "Digital Libraries": "DL",
        "Discrete Mathematics": "DM",
        "Data Structures and Algorithms": "DS",
        "Emerging Technologies": "ET",
        "Formal Languages and Automata Theory": "FL",
        "General Literature": "GL",
        "Graphics": "GR",
        "Computer Science and Game Theory": "GT",
        "Human-Computer Interaction": "HC",
        "Information Retrieval": "IR",
        "Information Theory": "IT",
        "Machine Learning": "LG",
        "Learning": "LG",  # cs.LG's name before 2019
        "Logic in Computer Science": "LO",
        "Multiagent Systems": "MA",
        "Multimedia": "MM",
        "Mathematical Software": "MS",
        "Numerical Analysis": "NA",
        "Neural and Evolutionary Computing": "NE",
        "Networking and Internet Architecture": "NI",
        "Other Computer Science": "OH",
        "Operating Systems": "OS",
        "Performance": "PF",
        "Programming Languages": "PL",
        "Robotics": "RO",
        "Symbolic Computation": "SC",
        "Sound": "SD",
        "Software Engineering": "SE",
        "Social and Information Networks": "SI",
        "Systems and Control": "SY",
    },
    "econ": {"Econometrics": "EM", "General Economics": "GN", "Theoretical Economics": "TH"},
    "eess": {
        "Audio and Speech Processing": "AS",
        "Image and Video Processing": "IV",
        "Signal Processing": "SP",
        "Systems and Control": "SY",
    },
    "math": {
        "Commutative Algebra": "AC",
        "Algebraic Geometry": "AG",
        "Analysis of PDEs": "AP",
        "Algebraic Topology": "AT",
        "Classical Analysis and ODEs": "CA",
        "Combinatorics": "CO",
        "Category Theory": "CT",
        "Complex Variables": "CV",
        "Differential Geometry": "DG",
        "Dynamical Systems": "DS",
        "Functional Analysis": "FA",
        "General Mathematics": "GM",
        "General Topology": "GN",
        "Group Theory": "GR",
        "Geometric Topology": "GT",
        "History and Overview": "HO",
        "Information Theory": "IT",
        "K-Theory and Homology": "KT",
        "Logic": "LO",
        "Metric Geometry": "MG",
        "Mathematical Physics": "MP",
        "Numerical Analysis": "NA",
        "Number Theory": "NT",
        "Operator Algebras": "OA",
        "Optimization and Control": "OC",
        "Probability": "PR",
        "Quantum Algebra": "QA",
        "Rings and Algebras": "RA",
        "Representation Theory": "RT",
        "Symplectic Geometry": "SG",
        "Spectral Theory": "SP",
        "Statistics Theory": "ST",
    },
    "nlin": {
        "Adaptation and Self-Organizing Systems": "AO",
        "Chaotic Dynamics": "CD",
        "Cellular Automata and Lattice Gases": "CG",
        "Pattern Formation and Solitons": "PS",
        "Exactly Solvable and Integrable Systems": "SI",
    },
    "physics": {
        "Accelerator Physics": "acc-ph",
        "Atmospheric and Oceanic Physics": "ao-ph",
        "Applied Physics": "app-ph",
        "Atomic and Molecular Clusters": "atm-clus",
        "Atomic Physics": "atom-ph",
        "Biological Physics": "bio-ph",
        "Chemical Physics": "chem-ph",
        "Classical Physics": "class-ph",
        "Computational Physics": "comp-ph",
        "Data Analysis, Statistics and Probability": "data-an",
        "Physics Education": "ed-ph",
        "Fluid Dynamics": "flu-dyn",
        "General Physics": "gen-ph",
        "Geophysics": "geo-ph",
        "History and Philosophy of Physics": "hist-ph",
        "Instrumentation and Detectors": "ins-det",
        "Medical Physics": "med-ph",
        "Optics": "optics",
        "Plasma Physics": "plasm-ph",
        "Popular Physics": "pop-ph",
        "Physics and Society": "soc-ph",
        "Space Physics": "space-ph",
    },
    "q-bio": {
        "Biomolecules": "BM",
        "Cell Behavior": "CB",
        "Genomics": "GN",
        "Molecular Networks": "MN",
        "Neurons and Cognition": "NC",
        "Other Quantitative Biology": "OT",
        "Populations and Evolution": "PE",
        "Quantitative Methods": "QM",
        "Subcellular Processes": "SC",
        "Tissues and Organs": "TO",
    },
    "q-fin": {
        "Computational Finance": "CP",
        "Economics": "EC",
        "General Finance": "GN",
        "Mathematical Finance": "MF",
        "Portfolio Management": "PM",
        "Pricing of Securities": "PR",
        "Risk Management": "RM",
        "Statistical Finance": "ST",
        "Trading and Market Microstructure": "TR",
    },
    "stat": {
        "Applications": "AP",
        "Computation": "CO",
        "Methodology": "ME",
        "Machine Learning": "ML",
        "Other Statistics": "OT",
        "Statistics Theory": "TH",
    },
}

# Archives that are a category in their own right, named without a " - " part.
_STANDALONE: dict[str, str] = {
    "General Relativity and Quantum Cosmology": "gr-qc",
    "High Energy Physics - Experiment": "hep-ex",
    "High Energy Physics - Lattice": "hep-lat",
    "High Energy Physics - Phenomenology": "hep-ph",
    "High Energy Physics - Theory": "hep-th",
    "Mathematical Physics": "math-ph",
    "Nuclear Experiment": "nucl-ex",
    "Nuclear Theory": "nucl-th",
    "Quantum Physics": "quant-ph",
    # Legacy bare archives used as categories by old papers.
    "Astrophysics": "astro-ph",
    "Condensed Matter": "cond-mat",
    "Quantitative Biology": "q-bio",
    "Nonlinear Sciences": "nlin",
}


def _build() -> dict[str, str]:
    table = {name.casefold(): code for name, code in _STANDALONE.items()}
    for archive_name, archive in _ARCHIVE_NAMES.items():
        for name, suffix in _BY_ARCHIVE.get(archive, {}).items():
            table[f"{archive_name} - {name}".casefold()] = f"{archive}.{suffix}"
    return table


SUBJECT_CODES: dict[str, str] = _build()
"""Case-folded subject name -> arXiv category code."""


def _key(name: str) -> str:
    return " ".join(name.split()).casefold()


def subject_category(name: str) -> str | None:
    """The category code for an oai_dc subject name, or ``None`` (MSC/ACM codes, unknown names)."""
    return SUBJECT_CODES.get(_key(name))


def archive_of_subject(name: str) -> str | None:
    """The archive code a subject name's prefix names ("Physics - Foo" -> ``physics``), if any."""
    prefix = name.split(" - ", 1)[0].strip()
    return _ARCHIVE_NAMES.get(prefix)


def archive_of_set_spec(spec: str) -> str | None:
    """The archive an OAI ``setSpec`` stands for: ``physics:cond-mat`` -> ``cond-mat``, ``cs`` -> ``cs``."""
    last = spec.strip().rsplit(":", 1)[-1]
    return last or None
