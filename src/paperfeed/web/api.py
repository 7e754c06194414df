"""JSON API under /api, shaped like Hugging Face's papers API (being written)."""

from fastapi import APIRouter

router = APIRouter(prefix="/api", tags=["api"])
