"""An administrator imports a file of papers from the browser: ``/admin/import`` (page and upload).

The form (a drop zone with a file-picker fallback, also on the first-run page) posts one file as
``multipart/form-data``. The body is never held in memory nor parsed by the framework: it is streamed
through a multipart parser into a private temporary folder under ``<data_dir>/uploads``, counting bytes,
and refused with a 413 as soon as it passes ``PAPERFEED_UPLOAD_MAX_BYTES`` (or at once when its
``Content-Length`` says so). Only a file that arrived whole is imported, so a cut-off or oversized upload
writes nothing. Who may upload is settled before the body is read (administrators only; anyone else
gets 403, an anonymous browser the sign-in page); the CSRF token comes in the ``X-CSRF-Token`` header or
as the form's first field and is checked before the import starts.

The import itself is ``paperfeed import``'s (:class:`~paperfeed.services.paper_upload.PaperUploads`):
valid records are stored batch by batch with the keyword index, every bad one is reported with its line
and reason, and the answer is 422 when any record was rejected (the CLI's exit status 1). A browser gets
the page with the report; a client asking for JSON gets the report as JSON.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.concurrency import run_in_threadpool

from paperfeed.domain.paper_upload import UnsupportedUpload, UploadReport, upload_name
from paperfeed.domain.wording import count

from . import rendering
from .deps import AppDep, app_of
from .rendering import NO_STORE
from .security import CSRF_FIELD, CSRF_HEADER, Admin, check_csrf_token, csrf_exempt, refuse_cross_site

__all__ = ["UPLOAD_FIELD", "router", "too_large", "upload_limits"]

router = APIRouter(include_in_schema=False)
UPLOAD_FIELD = "file"
_FIELD_BYTES = 4096  # the CSRF token and any other small field
_OVERHEAD = 64 * 1024  # multipart boundaries, part headers and small fields on top of the file itself
_SHOWN_REJECTS = 200


class UploadProblem(Exception):
    """The upload cannot be taken: ``status`` and a message for the person who sent it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _megabytes(size: int) -> str:
    return f"{size / 2**20:,.0f} MB" if size >= 2**20 else f"{count(size, 'byte')}"


def upload_limits(request: Request) -> dict[str, Any]:
    """What the upload forms show (the size limit, the field names)."""
    limit = app_of(request).settings.upload_max_bytes
    return {"max_bytes": limit, "max_label": _megabytes(limit), "field": UPLOAD_FIELD}


@dataclass
class _Received:
    """What the streamed body held: the file (in ``folder``) and the small fields."""

    folder: Path
    limit: int
    name: str | None = None
    path: Path | None = None
    size: int = 0
    fields: dict[str, bytearray] = field(default_factory=dict)
    files: int = 0
    _out: IO[bytes] | None = None
    _part: str | None = None  # the current part: "file", a field name, or "" (ignored)
    _header: bytearray = field(default_factory=bytearray)
    _value: bytearray = field(default_factory=bytearray)
    _headers: dict[bytes, bytes] = field(default_factory=dict)

    # -- python-multipart callbacks --------------------------------------------------------------------

    def on_part_begin(self) -> None:
        self._headers = {}
        self._part = None

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._header += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def on_header_end(self) -> None:
        self._headers[bytes(self._header).lower()] = bytes(self._value)
        self._header.clear()
        self._value.clear()

    def on_headers_finished(self) -> None:
        _, params = parse_options_header(self._headers.get(b"content-disposition", b""))
        name = params.get(b"name", b"").decode("utf-8", "replace")
        if b"filename" in params:
            if name != UPLOAD_FIELD:
                self._part = ""
                return
            self.files += 1
            if self.files > 1:
                raise UploadProblem(400, "Upload one file at a time.")
            self.name = upload_name(params[b"filename"].decode("utf-8", "replace"))
            self.path = self.folder / self.name
            self._out = self.path.open("wb")
            self._part = UPLOAD_FIELD
        else:
            self._part = name
            self.fields.setdefault(name, bytearray())

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self._part == UPLOAD_FIELD:
            assert self._out is not None
            self.size += end - start
            if self.size > self.limit:
                raise UploadProblem(413, too_large(self.limit))
            self._out.write(data[start:end])
        elif self._part:
            value = self.fields[self._part]
            if len(value) + end - start > _FIELD_BYTES:
                raise UploadProblem(400, f"The form field {self._part[:40]!r} is too long.")
            value += data[start:end]

    def on_part_end(self) -> None:
        self.close()

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None

    def field_text(self, name: str) -> str:
        return bytes(self.fields.get(name, b"")).decode("utf-8", "replace").strip()


def too_large(limit: int) -> str:
    """Why an upload over ``limit`` bytes was refused (also said by the body-size limit in front of it)."""
    return (
        f"The file is larger than the {_megabytes(limit)} an upload may be (PAPERFEED_UPLOAD_MAX_BYTES); "
        "nothing was imported. Import big files on the server with `paperfeed import FILE`."
    )


async def _receive(request: Request, folder: Path, limit: int) -> _Received:
    """Stream the multipart body into ``folder``; :class:`UploadProblem` for anything but one whole file."""
    kind, params = parse_options_header(request.headers.get("content-type", ""))
    if kind != b"multipart/form-data":
        raise UploadProblem(
            415, "Send the file as multipart/form-data, in a form field named “file” (the page's form does)."
        )
    boundary = params.get(b"boundary")
    if not boundary:
        raise UploadProblem(400, "The upload has no multipart boundary.")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit + _OVERHEAD:
        raise UploadProblem(413, too_large(limit))
    received = _Received(folder, limit)
    callbacks: Any = {
        "on_part_begin": received.on_part_begin,
        "on_part_data": received.on_part_data,
        "on_part_end": received.on_part_end,
        "on_header_field": received.on_header_field,
        "on_header_value": received.on_header_value,
        "on_header_end": received.on_header_end,
        "on_headers_finished": received.on_headers_finished,
    }
    parser = MultipartParser(boundary, callbacks)
    total = 0
    try:
        async for chunk in request.stream():
            total += len(chunk)
            if total > limit + _OVERHEAD:
                raise UploadProblem(413, too_large(limit))
            parser.write(chunk)
        parser.finalize()
    except MultipartParseError as exc:
        raise UploadProblem(400, f"The upload is not a well-formed multipart form ({exc}).") from None
    finally:
        received.close()
    return received


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def _report_json(report: UploadReport) -> dict[str, Any]:
    return {
        "file": report.name,
        "format": report.kind,
        "gzip": report.gzipped,
        "added": report.added,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "rejected": report.rejected,
        "rejects": [{"where": r.where, "field": r.field, "reason": r.reason} for r in report.rejects],
    }


def _answer(
    request: Request, status: int, *, report: UploadReport | None = None, error: str | None = None
) -> Response:
    if _wants_json(request):
        body = _report_json(report) if report is not None else {"error": error, "status": status}
        return JSONResponse(body, status_code=status, headers={"Cache-Control": NO_STORE})
    return rendering.page(
        request,
        "upload/import.html",
        "Import papers",
        nav="admin",
        status=status,
        cache=NO_STORE,
        report=report,
        error=error,
        shown_rejects=_SHOWN_REJECTS,
        upload=upload_limits(request),
    )


@router.get("/admin/import", response_class=HTMLResponse)
def import_page(request: Request, admin: Admin) -> Response:
    """The drop zone and file picker, with what each format looks like."""
    return _answer(request, 200)


@router.post("/admin/import", response_model=None)
async def import_upload(request: Request, admin: Admin, app: AppDep) -> Response:
    """Stream one file to a temporary folder, check the CSRF token, import it, report (see the module doc)."""
    exempt = csrf_exempt(request)
    if not exempt:
        refuse_cross_site(request)
        header = request.headers.get(CSRF_HEADER, "")
        if header:
            check_csrf_token(request, header)
    limit = app.settings.upload_max_bytes
    spool = app.settings.data_dir / "uploads"
    spool.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="upload-", dir=spool))
    try:
        try:
            received = await _receive(request, folder, limit)
            if not exempt and not request.headers.get(CSRF_HEADER):
                check_csrf_token(request, received.field_text(CSRF_FIELD))
            if received.path is None or received.name is None:
                raise UploadProblem(400, "The upload holds no file: choose or drop a JSONL or BibTeX file.")
            if received.size == 0:
                raise UploadProblem(400, f"{received.name} is empty: nothing was imported.")
            report = await run_in_threadpool(
                app.sources.paper_uploads.import_file, received.path, received.name
            )
        except UploadProblem as problem:
            return _answer(request, problem.status, error=problem.message)
        except UnsupportedUpload as exc:
            return _answer(request, 415, error=f"{exc} Nothing was imported.")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return _answer(request, 422 if report.rejected else 200, report=report)
