"""The shred job with every entity validated against its schema (`--iglu-config`, a local
embedded repository) against the same job without, alternately in one Spark session.

    python benchmarks/shred_iglu.py --events 300000 --rounds 3

The repository holds schemas of the generator's entity types, of the shape Iglu Central gives
them (types, lengths, required fields). Every generated entity is valid (the generator's bad
lines are bad either way): the figures are the cost of validating, not of bad rows. Prints each
run's wall and CPU seconds, then the medians.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import shred_ab  # noqa: E402

STRING = {"type": "string", "maxLength": 4096}
SCHEMAS: dict[str, dict[str, Any]] = {
    "com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0": {
        "properties": {"id": {"type": "string", "format": "uuid"}},
        "required": ["id"],
    },
    "com.acme/product/jsonschema/1-0-2": {
        "properties": {
            "sku": {"type": "string", "maxLength": 32},
            "price": {"type": "number", "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 64}},
        },
        "required": ["sku", "price"],
    },
    "com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1": {
        "properties": {"targetUrl": {"type": "string", "minLength": 1}, "elementId": STRING},
        "required": ["targetUrl"],
    },
    "com.acme/add_to_cart/jsonschema/1-0-0": {
        "properties": {
            "sku": {"type": "string", "maxLength": 32},
            "unitPrice": {"type": "number", "minimum": 0},
            "quantity": {"type": "integer", "minimum": 1},
            "currency": {"type": "string", "minLength": 3, "maxLength": 3},
        },
        "required": ["sku", "quantity"],
    },
    "com.snowplowanalytics.snowplow/ua_parser_context/jsonschema/1-0-0": {
        "properties": {"useragentFamily": STRING, "useragentMajor": {"type": ["string", "null"]}, "osFamily": STRING},
        "required": ["useragentFamily", "osFamily"],
    },
}


def repository(folder: Path) -> dict[str, Any]:
    """Write the schemas as an embedded repository; the resolver configuration that names it."""
    for path, body in SCHEMAS.items():
        vendor, name, form, version = path.split("/")
        schema = {"self": {"vendor": vendor, "name": name, "format": form, "version": version}, "type": "object"}
        target = folder / "schemas" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({**schema, **body, "additionalProperties": False}))
    connection = {"embedded": {"path": str(folder)}}
    return {
        "schema": "iglu:com.snowplowanalytics.iglu/resolver-config/jsonschema/1-0-3",
        "data": {"cacheSize": 500, "repositories": [{"name": "local", "priority": 0, "connection": connection}]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    def runner(spark: Any, work: Path) -> tuple[Any, list[str]]:
        from events_manifest.iglu import ResolverConfig
        from spark_integration import shred

        iglu = ResolverConfig.parse(repository(work / "iglu"))
        runs = 0
        bad_rows: set[int] = set()

        def run(name: str) -> None:
            nonlocal runs
            runs += 1
            out, bad = work / f"out-{runs}", work / f"bad-{runs}"
            summary = shred(spark, str(work / "in"), str(out), str(bad), manifest=f"sqlite:///{out}.db",
                            iglu_config=iglu if name == "validated" else None)  # fmt: skip
            bad_rows.add(summary.bad_rows)
            assert len(bad_rows) == 1, "every generated entity is valid: the same bad rows either way"
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(bad, ignore_errors=True)

        return run, ["unvalidated", "validated"]

    shred_ab.measure("shred-iglu-", args.events, args.rounds, "job", runner)


if __name__ == "__main__":
    main()
