"""Every rule is written in spec/, registered, cited in reference/ and broken in tests/ — and nothing else is.

Generic on purpose: chapters and rule families are added by several hands, so the test reads the
spec and the code, never a list of its own.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import tokenize
from functools import cache
from pathlib import Path

import sessionspec
from sessionspec.errors import Kind
from sessionspec.rules import RULES

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec"
REFERENCE = ROOT / "reference"
TESTS = ROOT / "tests"

RULE_ID = r"SESSION-[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*\.[0-9]+"
ID_IN_TEXT = re.compile(rf"(?<![A-Z0-9-])({RULE_ID})(?![0-9])")
BOLD = re.compile(r"\*\*(SESSION-[^*]*)\*\*")
RULE_LINE = re.compile(rf"^- \*\*({RULE_ID})\*\* \S")


def import_every_module() -> list[str]:
    """Import the whole package, so every module's `define` calls have run. An import error fails the test."""

    def fail(name: str) -> None:
        raise ImportError(f"cannot import package {name}")

    names = [info.name for info in pkgutil.walk_packages(sessionspec.__path__, "sessionspec.", onerror=fail)]
    for name in names:
        if name.rsplit(".", 1)[-1] == "__main__":
            continue  # an entry point, not a module: importing it would run the program
        importlib.import_module(name)
    return names


@cache
def spec_rule_lines() -> dict[str, list[str]]:
    """Rule ID -> the `file:line` places where a rule line defines it."""
    found: dict[str, list[str]] = {}
    for path in sorted(SPEC.glob("*.md")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = RULE_LINE.match(line)
            if match:
                found.setdefault(match.group(1), []).append(f"{path.name}:{number}")
    return found


@cache
def spec_bold_ids() -> dict[str, str]:
    """Every `**SESSION-...**` in spec/, with where it first appears."""
    found: dict[str, str] = {}
    for path in sorted(SPEC.glob("*.md")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for text in BOLD.findall(line):
                found.setdefault(text, f"{path.name}:{number}")
    return found


def _callee(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


@cache
def reference_citations() -> frozenset[str]:
    """IDs cited by the code: in any string literal (messages, docstrings, check calls) other than the
    ID argument of `define` itself, or through a constant bound to `define(...)` that the code uses."""
    cited: set[str] = set()
    for path in sorted(REFERENCE.rglob("*.py")):
        # Per module: two modules may bind the same constant name to different rules.
        bound: dict[str, str] = {}
        used: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        definitions: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _callee(node.func) == "define" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    definitions.add(id(first))
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call) \
                    and _callee(node.value.func) == "define" and node.value.args \
                    and isinstance(node.value.args[0], ast.Constant) and isinstance(node.value.args[0].value, str):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        bound[target.id] = node.value.args[0].value
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                used.add(node.id)
            if isinstance(node, ast.Attribute):
                used.add(node.attr)
            if isinstance(node, ast.alias):
                used.add(node.asname or node.name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in definitions:
                cited.update(ID_IN_TEXT.findall(node.value))
        # A comment at the enforcement point cites its rule, as in STYLE.md's `process_*` examples.
        with path.open("rb") as source:
            for token in tokenize.tokenize(source.readline):
                if token.type == tokenize.COMMENT:
                    cited.update(ID_IN_TEXT.findall(token.string))
        cited.update(rule for name, rule in bound.items() if name in used)
    return frozenset(cited)


@cache
def cited_in_tests() -> frozenset[str]:
    cited: set[str] = set()
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        cited.update(ID_IN_TEXT.findall(path.read_text(encoding="utf-8")))
    return frozenset(cited)


def test_every_module_of_the_package_imports() -> None:
    names = import_every_module()
    assert "sessionspec.model" in names and "sessionspec.rules" in names


def test_every_bold_spec_id_is_a_well_formed_rule_line() -> None:
    malformed = {text: where for text, where in spec_bold_ids().items() if not re.fullmatch(RULE_ID, text)}
    assert not malformed, f"malformed rule IDs in spec/: {malformed}"
    undefined = {text: where for text, where in spec_bold_ids().items() if text not in spec_rule_lines()}
    assert not undefined, f"bold IDs with no `- **ID** text` rule line: {undefined}"
    twice = {rule: places for rule, places in spec_rule_lines().items() if len(places) > 1}
    assert not twice, f"rules defined by more than one line: {twice}"


def test_every_spec_rule_is_registered() -> None:
    import_every_module()
    missing = {rule: places[0] for rule, places in spec_rule_lines().items() if rule not in RULES}
    assert not missing, f"spec rules not registered through sessionspec.rules.define: {missing}"


def test_every_registered_rule_is_in_the_spec() -> None:
    import_every_module()
    missing = sorted(set(RULES) - set(spec_rule_lines()))
    assert not missing, f"registered rules with no rule line in spec/: {missing}"
    assert all(isinstance(rule.kind, Kind) for rule in RULES.values())


def test_every_spec_rule_is_cited_in_reference() -> None:
    missing = sorted(set(spec_rule_lines()) - reference_citations())
    assert not missing, f"spec rules never cited in reference/ (outside their define call): {missing}"


def test_every_id_the_code_names_is_registered() -> None:
    import_every_module()
    unknown = sorted(reference_citations() - set(RULES))
    assert not unknown, f"reference/ names rule IDs that are not registered (and so not in spec/): {unknown}"


def test_every_spec_rule_is_broken_in_tests() -> None:
    missing = sorted(set(spec_rule_lines()) - cited_in_tests())
    assert not missing, f"spec rules no test names: {missing}"


LEVEL_TAG = re.compile(r" \*Level: (required|recommended)(?:, (required|recommended) on append)?\* — (.+)\.$")


@cache
def spec_rule_text() -> dict[str, str]:
    """Rule ID -> its whole rule line in spec/."""
    found: dict[str, str] = {}
    for path in sorted(SPEC.glob("*.md")):
        for line in path.read_text(encoding="utf-8").splitlines():
            match = RULE_LINE.match(line)
            if match:
                found[match.group(1)] = line
    return found


def test_every_rule_has_a_level_and_a_ground_in_the_registry_and_the_same_in_the_prose() -> None:
    """Issue 22: each rule says whether the seeds state it (cited) or this spec decided it (why), in code and prose."""
    import_every_module()
    wrong = []
    for rule_id, rule in sorted(RULES.items()):
        ground = rule.ground
        cited = ground.why.startswith(("seed ", "the upstream", "self-refusal", "RFC ", "the protocol"))
        decided = ground.why.startswith("decision")
        if not (cited if ground.level.value == "required" else decided):
            wrong.append(f"{rule_id}: a {ground.level.value} rule's ground must "
                         f"{'cite a seed or the upstream' if ground.level.value == 'required' else 'name the decision'}")
        match = LEVEL_TAG.search(spec_rule_text().get(rule_id, ""))
        if match is None:
            wrong.append(f"{rule_id}: its rule line has no '*Level: ...* — ground.' at its end")
            continue
        on_append = ground.on_append.value if ground.on_append is not None else None
        if (match.group(1), match.group(2), match.group(3)) != (ground.level.value, on_append, ground.why):
            wrong.append(f"{rule_id}: the prose says {match.group(1)}/{match.group(2)}, the registry "
                         f"{ground.level.value}/{on_append}, or their grounds differ")
    assert not wrong, "\n".join(wrong)


def test_a_recommended_rule_and_a_rule_recommended_on_append_are_each_enforced_by_some_level() -> None:
    """The levels mean something: there are rules of both, and a rule's level for an op is well defined."""
    import_every_module()
    levels = {rule.ground.at(op).value for rule in RULES.values() for op in ("append", "create", "fold")}
    assert levels == {"required", "recommended"}
    assert RULES["SESSION-MESSAGE-SHAPE.2"].ground.at("append").value == "recommended"
    assert RULES["SESSION-MESSAGE-SHAPE.2"].ground.at("create").value == "required"
    assert RULES["SESSION-MESSAGE-SHAPE.9"].ground.at("append").value == "required"
