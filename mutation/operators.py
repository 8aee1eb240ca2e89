"""The mutation operators of the lane: cosmic-ray's core set, trimmed, plus three it lacks.

cosmic-ray's core operators swap operators, constants, keywords and exception types, but never
delete anything; the bugs an incremental store really has are as often an omission (a state update
left out, a check dropped from a conjunction, a type dropped from an isinstance tuple). So the lane
adds operators of its own, registered as cosmic-ray provider `sessionspec`:

- `RemoveStatement`: an assignment, a bare call (`check(...)`, `self._log.append(event)`) or a
  `raise` inside a function body becomes `pass` (a fast form's `raise _Slow`, its hand-over to the
  reference, deleted);
- `DropOperand`: one operand of an `and`/`or` chain is dropped (`a and b and c` -> `a and c`);
- `DropElement`: one element of a tuple, list or set display is dropped (`(list, tuple)` -> `(list,)`);
- `ReturnNone`: a returned value becomes `None` (`return _float(value)` -> `return None`);
- `SwapMembership`: `in` becomes `not in` and back (cosmic-ray's comparison operators leave both alone).

An independent measurement (issue 25) with another generator's operators (a return made `None`, a
hand-over `raise` deleted, a boundary moved, `is` swapped for `is not`) found gaps this lane's sample
had never drawn: the last two are among cosmic-ray's comparison swaps, but one site's seven swaps
make a boundary move one draw in seven. `FAMILIES` names each operator's family, and `run.py
--stratify` draws the same number of mutants from every family, so no family is drowned by another.

Binary-operator replacement is trimmed to one natural sibling per operator (`+` -> `-`, `|` -> `&`):
cosmic-ray's full cross product (ten replacements per site) would fill a sample with arithmetic
nonsense that any test kills, and say nothing more about the oracle.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import cosmic_ray.plugins
import parso
from cosmic_ray.operators.operator import Example, Operator
from parso.python.tree import Keyword
from parso.python.tree import Operator as ParsoOperator

Position = tuple[tuple[int, int], tuple[int, int]]

BINARY_SIBLINGS = ("Add_Sub", "Sub_Add", "Mul_Div", "Div_Mul", "FloorDiv_Mul", "Mod_FloorDiv", "Pow_Mul",
                   "LShift_RShift", "RShift_LShift", "BitOr_BitAnd", "BitAnd_BitOr", "BitXor_BitOr")
"""The binary replacements kept: each operator to its closest sibling."""

CORE = (
    *(f"core/ReplaceBinaryOperator_{pair}" for pair in BINARY_SIBLINGS),
    "core/AddNot", "core/ReplaceTrueWithFalse", "core/ReplaceFalseWithTrue", "core/ReplaceAndWithOr",
    "core/ReplaceOrWithAnd", "core/ReplaceBreakWithContinue", "core/ReplaceContinueWithBreak",
    "core/ExceptionReplacer", "core/NumberReplacer", "core/RemoveDecorator", "core/ZeroIterationForLoop",
)
"""Core operators used besides every comparison and unary replacement (listed by prefix below)."""

CORE_PREFIXES = ("core/ReplaceComparisonOperator_", "core/ReplaceUnaryOperator_")
IDENTITY_SWAPS = ("core/ReplaceComparisonOperator_Eq_Is", "core/ReplaceComparisonOperator_NotEq_IsNot",
                  "core/ReplaceComparisonOperator_Is_Eq", "core/ReplaceComparisonOperator_IsNot_NotEq")
"""Left out: `==` <-> `is` on what this code compares (types, None, bools, small ints, constants) is
equivalent, and where it is not, the difference is CPython's object caching, not the code's logic."""


def _in_function(node: Any) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.type in ("funcdef", "lambdef"):
            return True
        if parent.type == "classdef":
            return False
        parent = parent.parent
    return False


class RemoveStatement(Operator):  # type: ignore[misc]
    """An assignment, a bare call or a raise inside a function body becomes `pass`."""

    TYPES = ("expr_stmt", "atom_expr", "raise_stmt", "del_stmt")

    def mutation_positions(self, node: Any) -> Iterator[Position]:
        if node.type in self.TYPES and node.parent is not None and node.parent.type == "simple_stmt" and _in_function(node):
            yield (node.start_pos, node.end_pos)

    def mutate(self, node: Any, index: int) -> Any:
        return Keyword("pass", node.start_pos, prefix=node.get_first_leaf().prefix)

    @classmethod
    def examples(cls) -> tuple[Example, ...]:
        return (Example("def f():\n    x = 1\n", "def f():\n    pass\n"),
                Example("def f():\n    check(a)\n", "def f():\n    pass\n"))


def _operands(node: Any) -> list[Any]:
    return list(node.children[::2])


class DropOperand(Operator):  # type: ignore[misc]
    """One operand of an `and` / `or` chain is dropped: a check left out of a conjunction."""

    def mutation_positions(self, node: Any) -> Iterator[Position]:
        if node.type in ("and_test", "or_test"):
            for operand in _operands(node):
                yield (operand.start_pos, operand.end_pos)

    def mutate(self, node: Any, index: int) -> Any:
        operands = _operands(node)
        keyword = node.children[1].value
        kept = [operand.get_code().strip() for position, operand in enumerate(operands) if position != index]
        prefix = node.get_first_leaf().prefix
        return parso.parse(prefix + f" {keyword} ".join(kept))

    @classmethod
    def examples(cls) -> tuple[Example, ...]:
        return (Example("x = a and b and c", "x = b and c"), Example("x = a or b", "x = a", occurrence=1),
                Example("x = a or b", "x = b"))


def _elements(node: Any) -> list[Any]:
    return [child for child in node.children if not (isinstance(child, ParsoOperator) and child.value == ",")]


class DropElement(Operator):  # type: ignore[misc]
    """One element of a tuple, list or set display is dropped: a type left out of an isinstance check."""

    def mutation_positions(self, node: Any) -> Iterator[Position]:
        if node.type not in ("testlist_comp", "dictorsetmaker") or node.parent is None or node.parent.type != "atom":
            return
        if any(child.type in ("comp_for", "sync_comp_for") or (isinstance(child, ParsoOperator) and child.value in (":", "**"))
               for child in node.children):
            return
        elements = _elements(node)
        if len(elements) >= 2:
            for element in elements:
                yield (element.start_pos, element.end_pos)

    def mutate(self, node: Any, index: int) -> Any:
        kept = [element.get_code().strip() for position, element in enumerate(_elements(node)) if position != index]
        tuple_of_one = len(kept) == 1 and node.parent.children[0].value == "("
        return parso.parse(node.get_first_leaf().prefix + ", ".join(kept) + ("," if tuple_of_one else ""))

    @classmethod
    def examples(cls) -> tuple[Example, ...]:
        return (Example("x = (a, b)", "x = (b,)"), Example("x = {a, b, c}", "x = {a, c}", occurrence=1),
                Example("x = [a, b]", "x = [a]", occurrence=1))


class ReturnNone(Operator):  # type: ignore[misc]
    """A returned value becomes `None`: a fast form that loses its result (a value logged as null, a plan dropped)."""

    def mutation_positions(self, node: Any) -> Iterator[Position]:
        if node.type != "return_stmt" or len(node.children) < 2:
            return
        value = node.children[1]
        if not (isinstance(value, Keyword) and value.value == "None"):
            yield (node.start_pos, node.end_pos)

    def mutate(self, node: Any, index: int) -> Any:
        return parso.parse(node.get_first_leaf().prefix + "return None")

    @classmethod
    def examples(cls) -> tuple[Example, ...]:
        return (Example("def f():\n    return x + 1\n", "def f():\n    return None\n"),
                Example("def f():\n    return None\n    return x\n", "def f():\n    return None\n    return None\n"))


def _membership(node: Any) -> bool:
    if node.type == "comp_op":
        return [child.value for child in node.children] == ["not", "in"]
    return isinstance(node, Keyword) and node.value == "in" and node.parent is not None and node.parent.type == "comparison"


class SwapMembership(Operator):  # type: ignore[misc]
    """`in` becomes `not in`, `not in` becomes `in` (a membership test turned the wrong way)."""

    def mutation_positions(self, node: Any) -> Iterator[Position]:
        if _membership(node):
            yield (node.start_pos, node.end_pos)

    def mutate(self, node: Any, index: int) -> Any:
        swapped = "in" if node.type == "comp_op" else "not in"
        return Keyword(swapped, node.start_pos, prefix=node.get_first_leaf().prefix)

    @classmethod
    def examples(cls) -> tuple[Example, ...]:
        return (Example("x = a in b", "x = a not in b"), Example("x = a not in b", "x = a in b"),
                Example("for a in b:\n    x = a in c\n", "for a in b:\n    x = a not in c\n"))


OWN = {cls.__name__: cls for cls in (RemoveStatement, DropOperand, DropElement, ReturnNone, SwapMembership)}


class Provider:
    """cosmic-ray operator provider `sessionspec`: the lane's own operators."""

    def __iter__(self) -> Iterator[str]:
        return iter(OWN)

    def __getitem__(self, name: str) -> type[Operator]:
        return OWN[name]


def register() -> None:
    """Make `sessionspec/NAME` resolvable by cosmic-ray in this process (the local distributor runs here)."""
    cosmic_ray.plugins.OPERATOR_PROVIDERS["sessionspec"] = Provider()


def operator_names() -> list[str]:
    """Every operator the lane applies, as cosmic-ray names them."""
    register()
    core = [name for name in cosmic_ray.plugins.operator_names()
            if (name in CORE or name.startswith(CORE_PREFIXES)) and name not in IDENTITY_SWAPS]
    return [*core, *(f"sessionspec/{name}" for name in OWN)]


BOUNDARY_MOVES = ("core/ReplaceComparisonOperator_Lt_LtE", "core/ReplaceComparisonOperator_LtE_Lt",
                  "core/ReplaceComparisonOperator_Gt_GtE", "core/ReplaceComparisonOperator_GtE_Gt")
IDENTITY_FLIPS = ("core/ReplaceComparisonOperator_Is_IsNot", "core/ReplaceComparisonOperator_IsNot_Is")


def family(name: str) -> str:
    """The operator's family, for a stratified sample: boundary, identity, comparison, return-none, membership,
    removal (a statement or a raise), omission (an operand or an element), or core (the rest of cosmic-ray's)."""
    if name in BOUNDARY_MOVES:
        return "boundary"
    if name in IDENTITY_FLIPS:
        return "identity"
    if name.startswith("core/ReplaceComparisonOperator_"):
        return "comparison"
    own = {"sessionspec/ReturnNone": "return-none", "sessionspec/SwapMembership": "membership",
           "sessionspec/RemoveStatement": "removal", "sessionspec/DropOperand": "omission",
           "sessionspec/DropElement": "omission"}
    return own.get(name, "core")


def operator(name: str) -> Operator:
    register()
    found: Operator = cosmic_ray.plugins.get_operator(name)()
    return found
