"""Server-rendered HTML pages (being written)."""

from fastapi import APIRouter

router = APIRouter(include_in_schema=False)
