"""JSON Schema validators for Iglu entities, per entity, side by side in one run.

    pip install fastjsonschema   # the one candidate the project does not install
    python benchmarks/validators.py --entities 100000

The schema and entities are of the shape the shred job validates most (an object of a few typed,
bounded properties and a short array). Each candidate parses the entity's JSON text, as the job
must, then validates it; `json.loads` alone is the floor. Prints CPU microseconds per entity.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sku": {"type": "string", "maxLength": 32},
        "price": {"type": "number", "minimum": 0},
        "currency": {"type": "string", "minLength": 3, "maxLength": 3},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}}},
        },
    },
    "required": ["sku", "price"],
    "additionalProperties": False,
}


def candidates() -> dict[str, Callable[[Any], object]]:
    found: dict[str, Callable[[Any], object]] = {"json.loads only (the floor)": lambda data: data}
    try:
        import jsonschema

        validator = jsonschema.Draft4Validator(SCHEMA)
        found["jsonschema"] = lambda data: list(validator.iter_errors(data))
    except ImportError:
        pass
    try:
        import fastjsonschema

        compiled = fastjsonschema.compile({**SCHEMA, "$schema": "http://json-schema.org/draft-04/schema#"})
        found["fastjsonschema (first error only)"] = compiled
    except ImportError:
        print("fastjsonschema is not installed: pip install fastjsonschema to include it")
    try:
        import jsonschema_rs

        rs = jsonschema_rs.Draft4Validator(SCHEMA)
        found["jsonschema-rs"] = lambda data: list(rs.iter_errors(data))
    except ImportError:
        pass
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts = [
        json.dumps({"sku": f"SKU-{n:03d}", "price": n * 0.5, "currency": "GBP", "items": [{"sku": "a", "qty": 2}]})
        for n in range(args.entities)
    ]
    timings: dict[str, list[float]] = {}
    for _ in range(args.rounds):  # alternating rounds: the machine's noise falls on every candidate alike
        for name, validate in candidates().items():
            started = time.process_time()
            for text in texts:
                validate(json.loads(text))
            timings.setdefault(name, []).append((time.process_time() - started) / len(texts) * 1e6)
    for name, values in timings.items():
        print(f"{name:<36} {sorted(values)[len(values) // 2]:8.1f} us per entity")


if __name__ == "__main__":
    main()
