"""JUnit XML for CI dashboards: one test case per vector, one for the machine."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

from sessionspec.wire.divergence import Divergence


def write(path: Path, vector_ids: Iterable[str], divergences: list[Divergence], machine_examples: int,
          testee: str) -> None:
    failed = {d.id: d for d in divergences if d.source == "vector"}
    machine = [d for d in divergences if d.source == "machine"]
    ids = list(vector_ids)
    suite = ET.Element("testsuite", name=f"sessionspec-conformance[{testee}]", tests=str(len(ids) + 1),
                       failures=str(len(failed) + bool(machine)))
    for vector_id in ids:
        case = ET.SubElement(suite, "testcase", classname="vectors", name=vector_id)
        if vector_id in failed:
            _failure(case, failed[vector_id])
    case = ET.SubElement(suite, "testcase", classname="machine", name=f"stateful ({machine_examples} examples)")
    for divergence in machine:
        _failure(case, divergence)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def _failure(case: ET.Element, divergence: Divergence) -> None:
    element = ET.SubElement(case, "failure", message="; ".join(divergence.why)[:500], type=str(divergence.kind))
    element.text = f"rule {divergence.rule}\nexpected {divergence.expected}\nactual {divergence.actual}"
