"""Every setting has one default, in ``settings_model.py``: nothing a setting feeds keeps one of its own.

Issue #30 found production search running k=60 while ``HybridSettings`` said k=5 "tuned": the service
dataclass kept its own defaults, the benches used those, and the settings' differed. This test reads the
source of every module of the package, finds each call of one of our classes or functions that is given
a value read from the settings (``settings.x``, ``s.x``, ``self.settings.x``, directly, inside an
expression, or through a local variable assigned from one), and fails when the parameter receiving it has
a default: that default is the second one. Wherever bootstrap's wiring moves, the rule follows it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import paperfeed
from paperfeed.settings import Settings
from paperfeed.settings_model import SettingsModel

PACKAGE = Path(paperfeed.__file__).parent
SETTING_FIELDS = frozenset(SettingsModel.model_fields)
SETTINGS_NAMES = frozenset({"s", "settings"})  # how the code names a settings object (also ``x.settings``)
SKIPPED = frozenset({"paperfeed.settings_model", "paperfeed.settings"})  # the one place defaults live
# Parameters given something computed from a setting that is not the setting's value, so their default
# is no copy of one: (callee, parameter) -> why. Each must still be seen, so the list cannot go stale.
DERIVED = {
    ("Supervisor", "env"): "the children's extra environment, which carries the database URL when set",
    ("BodyLimit", "message"): "the 413 message, which quotes PAPERFEED_UPLOAD_MAX_BYTES",
    ("_answer", "report"): "an upload's import report (the upload was read under the size setting)",
    ("OutgoingMail", "headers"): "a group digest's headers: its unsubscribe link is on the base URL",
}


@dataclass(frozen=True, slots=True)
class Fed:
    """One parameter given a setting's value: where, which callee, which parameter, from which settings."""

    where: str
    callee: str
    parameter: str
    default: object
    settings: tuple[str, ...]

    def __str__(self) -> str:
        names = ", ".join("the settings" if n == WHOLE else f"PAPERFEED_{n.upper()}" for n in self.settings)
        own = f"has a default of its own ({self.default!r})"
        return f"{self.where}: {self.callee}({self.parameter}=...) {own}, fed by {names}"


def _is_settings(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in SETTINGS_NAMES
    return isinstance(node, ast.Attribute) and node.attr == "settings"


WHOLE = "*"  # a call handed the settings object itself: its result may carry any setting


def _settings_read(
    expr: ast.AST, tainted: dict[str, frozenset[str]], takes_settings: Callable[[ast.Call], bool]
) -> frozenset[str]:
    """The settings fields ``expr`` reads: directly, through a local variable assigned from them, or
    through a call of a function that takes the whole ``SettingsModel`` (``search_settings(s)``)."""
    found: set[str] = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Attribute) and node.attr in SETTING_FIELDS and _is_settings(node.value):
            found.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in tainted:
            found |= tainted[node.id]
        elif isinstance(node, ast.Call) and takes_settings(node):
            found.add(WHOLE)
    return frozenset(found)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class _Resolver:
    """Turns a call's callee expression into the object it names, where it is one of ours."""

    def __init__(self, module: str, tree: ast.Module, is_package: bool) -> None:
        self.module = importlib.import_module(module)
        package = module if is_package else module.rpartition(".")[0]
        self.names: dict[str, tuple[str, str | None]] = {}  # local name -> (module, attribute or None)
        for node in ast.walk(tree):  # function-local imports count: bootstrap imports lazily
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                for alias in node.names:
                    self.names[alias.asname or alias.name] = (base, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = (alias.name, None)

    def _named(self, name: str) -> object | None:
        if name in self.names:
            module, attribute = self.names[name]
            try:
                found = importlib.import_module(module)
                return getattr(found, attribute) if attribute else found
            except (ImportError, AttributeError):
                try:  # ``from package import module``
                    return importlib.import_module(f"{module}.{attribute}")
                except ImportError:
                    return None
        return getattr(self.module, name, None)

    def takes_settings(self, call: ast.Call, cls: str | None) -> bool:
        """Whether ``call`` hands the whole settings object to a callable of ours that is typed to take it."""
        given = [*call.args, *(k.value for k in call.keywords)]
        if not any(_is_settings(a) for a in given):
            return False
        target = self.resolve(call.func, cls)
        return target is not None and _annotated_settings(target)

    def resolve(self, func: ast.expr, cls: str | None) -> object | None:
        if isinstance(func, ast.Name):
            return self._named(func.id)
        if isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name) and func.value.id == "self" and cls is not None:
                owner = getattr(self.module, cls, None)
                return inspect.getattr_static(owner, func.attr, None) if owner is not None else None
            owner = self.resolve(func.value, cls)
            return getattr(owner, func.attr, None) if owner is not None else None
        return None


def _annotated_settings(target: object) -> bool:
    """Whether ``target`` has a parameter annotated as the settings (``SettingsModel``, ``Settings``)."""
    try:
        parameters = inspect.signature(target).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return any(
        (isinstance(p.annotation, str) and p.annotation.split(" |")[0] in ("SettingsModel", "Settings"))
        or p.annotation in (SettingsModel, Settings)
        for p in parameters
    )


def _ours(target: object, packages: tuple[str, ...]) -> bool:
    return (getattr(target, "__module__", None) or "").startswith(packages)


def _calls(
    tree: ast.Module, resolver: _Resolver
) -> Iterator[tuple[ast.Call, str | None, dict[str, frozenset[str]]]]:
    """Every call, with its enclosing class name and the function's settings-tainted local names."""

    def visit(
        node: ast.AST, cls: str | None, tainted: dict[str, frozenset[str]]
    ) -> Iterator[tuple[ast.Call, str | None, dict[str, frozenset[str]]]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from visit(child, child.name, {})
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                local: dict[str, frozenset[str]] = {}

                def takes(call: ast.Call, cls: str | None = cls) -> bool:
                    return resolver.takes_settings(call, cls)

                for _ in range(3):  # a few rounds: ``a = s.x; b = f(a)`` taints both
                    for sub in ast.walk(child):
                        if isinstance(sub, ast.Assign | ast.AnnAssign) and sub.value is not None:
                            read = _settings_read(sub.value, local, takes)
                            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                            for target in targets:
                                if read and isinstance(target, ast.Name):
                                    local[target.id] = local.get(target.id, frozenset()) | read
                yield from visit(child, cls, local)
            else:
                if isinstance(child, ast.Call):
                    yield child, cls, tainted
                yield from visit(child, cls, tainted)

    yield from visit(tree, None, {})


def fed_parameters(
    source: str, module: str, *, is_package: bool = False, packages: tuple[str, ...] = ("paperfeed.",)
) -> Iterator[tuple[Fed, bool]]:
    """Each parameter of a callable of ``packages`` that ``module``'s ``source`` gives a setting's value,
    and whether it has a default of its own (True: a second default)."""
    tree = ast.parse(source)
    resolver = _Resolver(module, tree, is_package)
    for call, cls, tainted in _calls(tree, resolver):
        arguments: list[tuple[int | None, str | None, ast.expr]] = [
            (i, None, a) for i, a in enumerate(call.args)
        ]
        arguments += [(None, k.arg, k.value) for k in call.keywords if k.arg is not None]

        def takes(inner: ast.Call, cls: str | None = cls) -> bool:
            return resolver.takes_settings(inner, cls)

        fed = [(i, k, _settings_read(a, tainted, takes)) for i, k, a in arguments]
        fed = [(i, k, read) for i, k, read in fed if read]
        if not fed:
            continue
        target = resolver.resolve(call.func, cls)
        if target is None or not _ours(target, packages) or not callable(target):
            continue  # the standard library's and other packages' defaults are not ours to keep
        try:
            signature = inspect.signature(target)
        except (TypeError, ValueError):  # an exception class (its message is not a default) or a builtin
            continue
        positional = [
            p for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        unbound = inspect.isfunction(target) and isinstance(call.func, ast.Attribute)
        if unbound and positional and positional[0].name in ("self", "cls"):  # ``self.method(...)``
            positional = positional[1:]
        name = getattr(target, "__qualname__", repr(target))
        for i, keyword, read in fed:
            parameter = positional[i] if i is not None and i < len(positional) else None
            if keyword is not None:
                parameter = signature.parameters.get(keyword)
            if parameter is None:
                continue  # *args / **kwargs: nothing to default
            fed_here = Fed(
                f"{module}:{call.lineno}", name, parameter.name, parameter.default, tuple(sorted(read))
            )
            yield fed_here, parameter.default is not inspect.Parameter.empty


def _modules() -> list[Path]:
    return sorted(
        p for p in PACKAGE.rglob("*.py") if _module_name(p) not in SKIPPED and "migrations" not in p.parts
    )


def test_no_setting_has_a_second_default() -> None:
    seen: list[Fed] = []
    twice: list[Fed] = []
    for path in _modules():
        source = path.read_text(encoding="utf-8")
        for fed, has_default in fed_parameters(
            source, _module_name(path), is_package=path.name == "__init__.py"
        ):
            seen.append(fed)
            if has_default and (fed.callee, fed.parameter) not in DERIVED:
                twice.append(fed)
    # the scan must see the wiring, or it proves nothing: these are fed by settings today
    callees = {f.callee for f in seen}
    wired = {
        "HybridSettings",
        "SimilarSettings",
        "HybridSearch",
        "EmbedderConfig",
        "TopicSettings",
        "PoliteClient",
    }
    assert wired <= callees, wired - callees
    assert set(DERIVED) <= {(f.callee, f.parameter) for f in seen}, "an exemption no longer applies"
    assert not twice, "second defaults:\n" + "\n".join(map(str, twice))


_DRIFT = """
from tests.test_settings_defaults_once import Knobs, Search, knobs_of

def build(settings):
    s = settings
    k = s.search_rrf_k
    return Knobs(rrf_k=k, keyword_weight=s.search_keyword_weight * 1), Knobs(settings.search_dense_weight)

class App:
    settings: object

    def search(self):
        return Search(tuning=knobs_of(self.settings), size=20)
"""


@dataclass(frozen=True, slots=True)
class Knobs:
    """A configuration type as ``HybridSettings`` was before issue #30: its own defaults."""

    dense_weight: float = 1.0
    rrf_k: float = 5.0
    keyword_weight: float = 1.2


def knobs_of(s: SettingsModel) -> Knobs:
    """A mapping from the settings, as bootstrap's ``search_settings``."""
    return Knobs(s.search_dense_weight, s.search_rrf_k, s.search_keyword_weight)


@dataclass(frozen=True, slots=True)
class Search:
    """A service as ``HybridSearch`` was before issue #30: a default configuration of its own."""

    size: int
    tuning: Knobs = Knobs()


def test_the_scan_finds_a_dataclass_default_beside_a_setting() -> None:
    """Today's drift, in miniature: a local variable, an expression, a positional argument and a mapping
    of the whole settings each feed a field that has its own default; each is reported, and a parameter
    given no setting is not."""
    found = {
        (f.callee, f.parameter, f.settings)
        for f, twice in fed_parameters(_DRIFT, __name__, packages=("tests.",))
        if twice
    }
    assert found == {
        ("Knobs", "rrf_k", ("search_rrf_k",)),
        ("Knobs", "keyword_weight", ("search_keyword_weight",)),
        ("Knobs", "dense_weight", ("search_dense_weight",)),
        ("Search", "tuning", (WHOLE,)),
    }
