"""Axis arithmetic: the `expr` axes, constraints and tensor shapes of a definition.

Expressions come from problem files we do not control, so they are evaluated by walking a
parsed tree that admits only integer arithmetic over known names, never with `eval`.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Mapping

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


class ExpressionError(ValueError):
    """An axis expression or constraint that cannot be evaluated."""


def names_in(expression: str) -> set[str]:
    """Axis names an expression refers to."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {expression!r}: {exc.msg}") from None
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def evaluate(expression: str, env: Mapping[str, int | float]) -> int | float | bool:
    """Value of an arithmetic (or comparison/boolean, for constraints) expression."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {expression!r}: {exc.msg}") from None
    return _eval(tree.body, env, expression)


def _eval(node: ast.AST, env: Mapping[str, int | float], text: str):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ExpressionError(f"{text!r} refers to unknown axis {node.id!r}")
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left, env, text), _eval(node.right, env, text)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ExpressionError(f"{text!r}: exponent {right} is too large")
        try:
            return _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ExpressionError(f"{text!r} divides by zero") from None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _eval(node.operand, env, text)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left = _eval(node.left, env, text)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, env, text)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        values = [_eval(v, env, text) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    raise ExpressionError(f"{text!r}: {type(node).__name__} is not allowed in an axis expression")


def as_integer(value: int | float | bool, what: str) -> int:
    """An expression result that must be a whole number (5.0 is accepted, 5.5 is not)."""
    if isinstance(value, bool):
        raise ExpressionError(f"{what} gives a truth value, not an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ExpressionError(f"{what} gives {value}, not an integer")
        return int(value)
    return int(value)
