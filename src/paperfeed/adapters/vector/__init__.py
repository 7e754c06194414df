"""Vector index adapters: exact (NumPy) and HNSW (faiss) search over paper embeddings, filter-aware."""

from paperfeed.adapters.vector.factory import KINDS, open_deployment_index, open_vector_index
from paperfeed.adapters.vector.index import ExactVectorIndex, HnswVectorIndex, StoredVectorIndex

__all__ = [
    "KINDS",
    "ExactVectorIndex",
    "HnswVectorIndex",
    "StoredVectorIndex",
    "open_deployment_index",
    "open_vector_index",
]
