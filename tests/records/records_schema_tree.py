"""Reduce a JSON Schema to what it accepts, so two schemas can be compared path by path.

References are inlined and annotations (titles, descriptions, defaults) dropped: what remains
is the validation keywords at each property path.
"""

from __future__ import annotations

from typing import Any

ANNOTATIONS = {"title", "description", "default", "$defs", "$comment", "$id", "$schema", "examples"}


def normalize(schema: Any, root: dict[str, Any] | None = None) -> Any:
    """Inline ``$ref``s, drop annotations, sort ``required``; give dict keys a string type."""
    root = schema if root is None else root
    if isinstance(schema, list):
        return [normalize(item, root) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return normalize(merged, root)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ANNOTATIONS:
            continue
        if key == "required":
            out[key] = sorted(value)
        elif key == "properties":
            out[key] = {name: normalize(sub, root) for name, sub in value.items()}
        elif key == "propertyNames":
            out[key] = {"type": "string", **normalize(value, root)}
        else:
            out[key] = normalize(value, root)
    return out


def property_paths(schema: dict[str, Any], path: str = "") -> set[str]:
    """Every place a value can sit: ``spec.inputs[].tensor.shape[]``, ``spec.axes.*`` ..."""
    paths = {path} if path else set()
    for name, sub in schema.get("properties", {}).items():
        paths |= property_paths(sub, f"{path}.{name}" if path else name)
    if isinstance(schema.get("additionalProperties"), dict):
        paths |= property_paths(schema["additionalProperties"], f"{path}.*")
    if isinstance(schema.get("items"), dict):
        paths |= property_paths(schema["items"], f"{path}[]")
    for index, sub in enumerate(schema.get("prefixItems", [])):
        paths |= property_paths(sub, f"{path}[{index}]")
    for sub in schema.get("anyOf", []):
        paths |= property_paths(sub, path) - {path} | ({path} if path else set())
    return paths


def differences(published: Any, ours: Any, path: str = "") -> list[str]:
    """Human-readable list of keyword differences between two normalized schemas."""
    if isinstance(published, dict) and isinstance(ours, dict):
        found = []
        for key in sorted(set(published) | set(ours)):
            where = f"{path}/{key}"
            if key not in ours:
                found.append(f"{where}: only published has {published[key]!r}")
            elif key not in published:
                found.append(f"{where}: only ours has {ours[key]!r}")
            else:
                found += differences(published[key], ours[key], where)
        return found
    if isinstance(published, list) and isinstance(ours, list) and len(published) == len(ours):
        return [d for i, (a, b) in enumerate(zip(published, ours)) for d in differences(a, b, f"{path}/{i}")]
    return [] if published == ours else [f"{path}: published {published!r} != ours {ours!r}"]
