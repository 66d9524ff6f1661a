"""Realistic enriched events for demos, tests and benchmarks, with duplicates on purpose.

Each batch mixes page views, unstructured events and struct events with contexts and derived
contexts; natural duplicates with a long-tail count of copies, synthetic duplicates (same id,
other payload), legacy lines with fewer fields, events without fingerprint, a few malformed
lines, and re-deliveries of the previous batch (cross-batch duplicates). Its command is
`python -m events_manifest.testing.generate`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path

import attrs

from events_manifest._snowplow.fields import FIELDS

CONTEXTS = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-1"
UNSTRUCT = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
TSTAMP = "%Y-%m-%d %H:%M:%S.%f"
BROWSERS = [
    ("Chrome", "131", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/131.0 Safari/537.36"),
    ("Firefox", "133", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"),
    ("Safari", "18", "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 Version/18.1 Safari/605.1.15"),
]
CITIES = [("GB", "ENG", "London", "EC1A", 51.5074, -0.1278), ("FR", "IDF", "Paris", "75001", 48.8566, 2.3522)]
PAGES = ["/", "/products/{n}", "/basket", "/search?q=shoes", "/blog/{n}"]


def tstamp(moment: datetime) -> str:
    return moment.strftime(TSTAMP)[:-3]


def sdj(schema: str, data: object) -> dict[str, object]:
    return {"schema": schema, "data": data}


def compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@attrs.frozen
class BatchSpec:
    """How much of each kind of line a batch holds, as shares of its events."""

    events: int = 1000
    natural_share: float = 0.02
    synthetic_share: float = 0.01
    legacy_share: float = 0.01
    missing_fingerprint_share: float = 0.01
    bad_share: float = 0.005
    redelivered_share: float = 0.02
    bot_copies: int = 120
    """One event id sent this many times (a bot), so the distribution reaches >100."""


class Generator:
    """Deterministic for a seed: the same arguments always give the same lines."""

    def __init__(self, seed: int = 1) -> None:
        self.random = random.Random(seed)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.random.getrandbits(128), version=4))

    def event(self, etl: datetime) -> list[str]:
        """One valid enriched event of 131 fields, its fingerprint set."""
        r = self.random
        f = [""] * FIELDS
        collector = etl - timedelta(seconds=r.uniform(1, 3600))
        kind = r.choices(["page_view", "unstruct", "struct", "page_ping"], [55, 25, 12, 8])[0]
        country, region, city, zipcode, lat, lon = r.choice(CITIES)
        family, major, agent = r.choice(BROWSERS)
        path = r.choice(PAGES).format(n=r.randint(1, 500))
        f[0:12] = [
            "shop",
            "web",
            tstamp(etl + timedelta(milliseconds=r.randint(0, 60000))),
            tstamp(collector),
            tstamp(collector - timedelta(milliseconds=r.randint(5, 5000))),
            kind,
            self.uuid(),
            "",
            "sp",
            "js-3.24.2",
            "ssc-3.2.0-kinesis",
            "enrich-kinesis-5.1.0",
        ]
        f[13] = f"203.0.113.{r.randint(1, 254)}"
        f[15], f[16], f[17] = self.uuid(), str(r.randint(1, 40)), self.uuid()
        f[18:25] = [country, region, city, zipcode, f"{lat:.4f}", f"{lon:.4f}", city]
        f[29:38] = [
            f"https://shop.example.com{path}",
            "Example shop",
            "https://www.search.example/",
            "https",
            "shop.example.com",
            "443",
            path.split("?")[0],
            path.partition("?")[2],
            "",
        ]
        page = sdj("iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0", {"id": self.uuid()})
        contexts = [page]
        if r.random() < 0.4:
            contexts.append(
                sdj(
                    "iglu:com.acme/product/jsonschema/1-0-2",
                    {"sku": f"SKU-{r.randint(1, 999):03d}", "price": 12.50, "tags": ["new", "été"]},
                )
            )
        f[52] = compact(sdj(CONTEXTS, contexts)).replace('"price":12.5,', '"price":12.50,')  # kept byte for byte
        vendor, name, version = "com.snowplowanalytics.snowplow", kind, "1-0-0"
        if kind == "unstruct":
            if r.random() < 0.5:
                inner = sdj(
                    "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1",
                    {"targetUrl": "https://shop.example.com/sale", "elementId": "banner"},
                )
                name, version = "link_click", "1-0-1"
            else:
                inner = sdj(
                    "iglu:com.acme/add_to_cart/jsonschema/1-0-0",
                    {"sku": "SKU-042", "unitPrice": 19.90, "quantity": r.randint(1, 3), "currency": "GBP"},
                )
                vendor, name = "com.acme", "add_to_cart"
            f[58] = compact(sdj(UNSTRUCT, inner))
        elif kind == "struct":
            f[53:58] = ["shop", "add-to-wishlist", f"SKU-{r.randint(1, 999):03d}", "", "1"]
        f[77:84] = [agent, family, family, major, "Browser", "WEBKIT", "en-GB"]
        f[84:94] = [r.choice("01") for _ in range(10)]
        f[94:107] = [
            "24",
            "1280",
            "720",
            "Windows",
            "Windows",
            "Microsoft Corporation",
            "Europe/London",
            "Computer",
            "0",
            "1920",
            "1080",
            "UTF-8",
            "1280",
        ]
        f[107] = "3000"
        f[114], f[115] = "GBP", "Europe/London"
        f[119] = f[4]
        f[122] = compact(
            sdj(
                CONTEXTS,
                [
                    sdj(
                        "iglu:com.snowplowanalytics.snowplow/ua_parser_context/jsonschema/1-0-0",
                        {"useragentFamily": family, "useragentMajor": major, "osFamily": "Windows"},
                    )
                ],
            )
        )
        f[123] = self.uuid()
        f[124] = f[3]
        f[125:129] = [vendor, name, "jsonschema", version]
        f[129] = self.fingerprint(f)
        return f

    @staticmethod
    def fingerprint(fields: list[str]) -> str:
        """A hash of the payload: every field but those set after the tracker sent it."""
        payload = "\t".join(v for i, v in enumerate(fields) if i not in (2, 3, 6, 11, 13, 129))
        return hashlib.md5(payload.encode()).hexdigest().upper()

    def batch(self, etl: datetime, spec: BatchSpec, previous: Sequence[list[str]] = ()) -> list[list[str]]:
        """The field lists of one batch (malformed lines come from `malformed`), shuffled."""
        r = self.random
        originals = [self.event(etl) for _ in range(spec.events)]
        events = list(originals)
        for original in r.sample(originals, int(spec.events * spec.natural_share)):
            copies = min(int(r.paretovariate(1.3)), 60)
            for _ in range(copies):
                copy = list(original)
                copy[2] = tstamp(datetime.strptime(original[2], TSTAMP) + timedelta(seconds=r.randint(0, 30)))
                events.append(copy)
        for original in r.sample(originals, int(spec.events * spec.synthetic_share)):
            twin = self.event(etl)
            twin[6] = original[6]
            events.append(twin)
        if spec.bot_copies:
            bot = r.choice(originals)
            for n in range(spec.bot_copies):
                again = list(bot)
                if n % 3 == 0:  # a broken tracker: same id, other payload
                    again[29] = f"https://shop.example.com/?bot={n}"
                    again[129] = self.fingerprint(again)
                events.append(again)
        for event in r.sample(originals, int(spec.events * spec.missing_fingerprint_share)):
            event[129] = ""
        for old in r.sample(list(previous), min(len(previous), int(spec.events * spec.redelivered_share))):
            again = list(old)
            again[2] = tstamp(etl + timedelta(seconds=r.randint(0, 60)))
            events.append(again)
        r.shuffle(events)
        return events

    def malformed(self, etl: datetime, count: int) -> list[str]:
        """Lines that must become bad rows, one kind after another."""
        lines = []
        for n in range(count):
            f = self.event(etl)
            kind = n % 6
            if kind == 0:
                lines.append("\t".join(f[:40]))
                continue
            if kind == 1:
                f[6] = "not-a-uuid"
            elif kind == 2:
                f[3] = "26/01/2017 00:01:25"
            elif kind == 3:
                f[52] = '{"schema":"' + CONTEXTS + '","data":[{"schema":'
            elif kind == 4:
                f[58] = compact(sdj(UNSTRUCT, {"no": "schema"}))
            else:
                f[2], f[122] = "yesterday", "[]"
            lines.append("\t".join(f))
        return lines


def to_lines(
    generator: Generator, etl: datetime, spec: BatchSpec, previous: Sequence[list[str]]
) -> tuple[list[str], list[list[str]]]:
    """The text lines of a batch (legacy lines cut short, malformed ones mixed in) and its events."""
    events = generator.batch(etl, spec, previous)
    lines = []
    for fields in events:
        if generator.random.random() < spec.legacy_share:
            lines.append("\t".join(fields[: generator.random.randint(108, 121)]))
        else:
            lines.append("\t".join(fields))
    for line in generator.malformed(etl, max(1, int(spec.events * spec.bad_share))):
        lines.insert(generator.random.randrange(len(lines) + 1), line)
    return lines, events


def write_batches(folder: Path, *, batches: int, spec: BatchSpec, seed: int, first_etl: datetime) -> list[Path]:
    """`folder/batch-N/part-00000.tsv.gz` for each batch; each batch re-delivers some of the last."""
    generator = Generator(seed)
    previous: list[list[str]] = []
    paths = []
    for n in range(1, batches + 1):
        lines, previous = to_lines(generator, first_etl + timedelta(hours=n - 1), spec, previous)
        path = folder / f"batch-{n}" / "part-00000.tsv.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8", newline="\n") as out:
            out.writelines(line + "\n" for line in lines)
        paths.append(path.parent)
    return paths


def sample_batches() -> list[Path]:
    """The bundled sample batches, `batch-1` and `batch-2` (1,000 events each, duplicates included,
    the second re-delivering events of the first)."""
    root = Path(str(resources.files("events_manifest._snowplow") / "sample"))
    return sorted(p for p in root.iterdir() if p.name.startswith("batch-"))
