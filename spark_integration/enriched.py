"""Reading and validating enriched events (SPEC §4) with Spark's own functions.

Validation that needs no JSON parsing happens here, in the JVM; the JSON columns are checked by
`sdj` in the same pass that extracts their entities.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

FIELD_NAMES = (
    "app_id",
    "platform",
    "etl_tstamp",
    "collector_tstamp",
    "dvce_created_tstamp",
    "event",
    "event_id",
    "txn_id",
    "name_tracker",
    "v_tracker",
    "v_collector",
    "v_etl",
    "user_id",
    "user_ipaddress",
    "user_fingerprint",
    "domain_userid",
    "domain_sessionidx",
    "network_userid",
    "geo_country",
    "geo_region",
    "geo_city",
    "geo_zipcode",
    "geo_latitude",
    "geo_longitude",
    "geo_region_name",
    "ip_isp",
    "ip_organization",
    "ip_domain",
    "ip_netspeed",
    "page_url",
    "page_title",
    "page_referrer",
    "page_urlscheme",
    "page_urlhost",
    "page_urlport",
    "page_urlpath",
    "page_urlquery",
    "page_urlfragment",
    "refr_urlscheme",
    "refr_urlhost",
    "refr_urlport",
    "refr_urlpath",
    "refr_urlquery",
    "refr_urlfragment",
    "refr_medium",
    "refr_source",
    "refr_term",
    "mkt_medium",
    "mkt_source",
    "mkt_term",
    "mkt_content",
    "mkt_campaign",
    "contexts",
    "se_category",
    "se_action",
    "se_label",
    "se_property",
    "se_value",
    "unstruct_event",
    "tr_orderid",
    "tr_affiliation",
    "tr_total",
    "tr_tax",
    "tr_shipping",
    "tr_city",
    "tr_state",
    "tr_country",
    "ti_orderid",
    "ti_sku",
    "ti_name",
    "ti_category",
    "ti_price",
    "ti_quantity",
    "pp_xoffset_min",
    "pp_xoffset_max",
    "pp_yoffset_min",
    "pp_yoffset_max",
    "useragent",
    "br_name",
    "br_family",
    "br_version",
    "br_type",
    "br_renderengine",
    "br_lang",
    "br_features_pdf",
    "br_features_flash",
    "br_features_java",
    "br_features_director",
    "br_features_quicktime",
    "br_features_realplayer",
    "br_features_windowsmedia",
    "br_features_gears",
    "br_features_silverlight",
    "br_cookies",
    "br_colordepth",
    "br_viewwidth",
    "br_viewheight",
    "os_name",
    "os_family",
    "os_manufacturer",
    "os_timezone",
    "dvce_type",
    "dvce_ismobile",
    "dvce_screenwidth",
    "dvce_screenheight",
    "doc_charset",
    "doc_width",
    "doc_height",
    "tr_currency",
    "tr_total_base",
    "tr_tax_base",
    "tr_shipping_base",
    "ti_currency",
    "ti_price_base",
    "base_currency",
    "geo_timezone",
    "mkt_clickid",
    "mkt_network",
    "etl_tags",
    "dvce_sent_tstamp",
    "refr_domain_userid",
    "refr_device_tstamp",
    "derived_contexts",
    "domain_sessionid",
    "derived_tstamp",
    "event_vendor",
    "event_name",
    "event_format",
    "event_version",
    "event_fingerprint",
    "true_tstamp",
)
"""The 131 fields of an enriched event, in order (SPEC §4)."""
FIELDS = len(FIELD_NAMES)
MIN_FIELDS = 108
ETL_TSTAMP, COLLECTOR_TSTAMP, EVENT_ID = 2, 3, 6
CONTEXTS, UNSTRUCT_EVENT, DERIVED_CONTEXTS = 52, 58, 122
EVENT_FINGERPRINT = 129
JSON_FIELDS = (CONTEXTS, UNSTRUCT_EVENT, DERIVED_CONTEXTS)

UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
TSTAMP_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$"
SHOWN = 80
INVALID_UTF8 = "Line is not valid UTF-8 (its invalid bytes are shown here as U+FFFD)"


def load_enriched(spark: SparkSession, path: str | list[str]) -> DataFrame:
    """Enriched TSV lines (a folder, file or glob; gzip too) with their position in the input.

    Columns: `line`, `file`, `position` (byte offset of the split, then the row within it): the
    order of (file, position) is the order of lines in the files whatever the partitioning.
    """
    return (
        spark.read.option("lineSep", "\n")
        .text(path)
        .select(
            F.col("value").alias("line"),
            F.input_file_name().alias("file"),
            F.struct(F.input_file_block_start().alias("block"), F.monotonically_increasing_id().alias("row")).alias(
                "position"
            ),
        )
    )


def padded(split: Column) -> Column:
    """Split fields padded to 131 (older lines have fewer), or null for a line of the wrong shape."""
    count = F.size(split)
    padding = F.concat(split, F.array_repeat(F.lit(""), F.lit(FIELDS) - count))
    return F.when(count == FIELDS, split).when(count.between(MIN_FIELDS, FIELDS), padding)


def split_line(line: str = "line") -> Column:
    return F.split(line, "\t", -1)


def field(index: int) -> Column:
    """Field `index` (0-based) of the padded `fields` array."""
    return F.col("fields")[index]


def _show(column: Column) -> Column:
    return F.when(F.length(column) > SHOWN, F.concat(F.substring(column, 1, SHOWN), F.lit("..."))).otherwise(column)


def epoch_micros(column: Column) -> Column:
    """UTC `yyyy-MM-dd HH:mm:ss[.SSSSSS]` text as epoch microseconds (null when it does not parse).

    The pattern fixes the shape; the cast (Spark's fast path, no formatter) checks the calendar.
    """
    parsed = F.concat(column, F.lit("Z")).try_cast("timestamp")
    return F.when(column.rlike(TSTAMP_PATTERN), F.unix_micros(parsed))


def parse(lines: DataFrame) -> DataFrame:
    """Split, pad and check each line; adds `fields`, key columns and `errors` (empty when valid)."""
    split = lines.withColumn("split", split_line())  # one split; Spark keeps it shared
    count = F.col("field_count")
    parsed = split.withColumn("field_count", F.size("split")).withColumn("fields", padded(F.col("split"))).drop("split")
    parsed = parsed.select(
        "*",
        field(EVENT_ID).alias("event_id"),
        field(EVENT_FINGERPRINT).alias("fingerprint"),
        field(COLLECTOR_TSTAMP).alias("collector_tstamp"),
        epoch_micros(field(ETL_TSTAMP)).alias("etl_us"),
        epoch_micros(field(COLLECTOR_TSTAMP)).alias("collector_us"),
    )

    def message(failed: Column, text: Column) -> Column:
        return F.when(failed, text)

    valid_shape = F.col("fields").isNotNull()
    errors = F.array_compact(
        F.array(
            message(~F.is_valid_utf8("line"), F.lit(INVALID_UTF8)),
            message(
                count < MIN_FIELDS,
                F.format_string(
                    "Line does not match Snowplow enriched event (expected 108+ fields; found %d)", F.col("field_count")
                ),
            ),
            message(
                count > FIELDS,
                F.format_string(
                    "Line does not match Snowplow enriched event (expected at most 131 fields; found %d)",
                    F.col("field_count"),
                ),
            ),
            message(
                valid_shape & ~F.col("event_id").rlike(UUID_PATTERN),
                F.format_string("Field [event_id]: [%s] is not a valid UUID", _show(F.col("event_id"))),
            ),
            message(
                valid_shape & F.col("collector_us").isNull(),
                F.format_string(
                    "Field [collector_tstamp]: [%s] is not a timestamp of the form yyyy-MM-dd HH:mm:ss.SSS",
                    _show(field(COLLECTOR_TSTAMP)),
                ),
            ),
            message(
                valid_shape & F.col("etl_us").isNull(),
                F.format_string(
                    "Field [etl_tstamp]: [%s] is not a timestamp of the form yyyy-MM-dd HH:mm:ss.SSS",
                    _show(field(ETL_TSTAMP)),
                ),
            ),
        )
    )
    return parsed.withColumn("errors", errors).drop("field_count")


def head(line: str = "line") -> Column:
    """The first 7 fields of a line (fewer on a shorter line), without splitting the rest."""
    return F.split(F.substring_index(line, "\t", EVENT_ID + 1), "\t")


def event_key(line: str = "line") -> Column:
    """A 64-bit hash of field 6 (the event id) on any line of the right shape; null on a line of
    fewer fields. Longs group and join faster than ids; two ids of one hash only cost a shuffle."""
    return key_of(F.get(head(line), EVENT_ID))


def key_of(event_id: Column) -> Column:
    return F.when(event_id.isNotNull(), F.xxhash64(event_id))


def batch_keys(lines: DataFrame) -> DataFrame:
    """Each line's `key` (see `event_key`) and `etl_us`, at a fraction of `parse`'s cost: `etl_us`
    where the line's event_id is a UUID and its two timestamps parse (a corrupted line cannot move
    the batch etl time), else null."""
    first = lines.select(head().alias("head"))

    def field_of_head(index: int) -> Column:  # null past the line's end
        return F.get(F.col("head"), index)

    event_id = field_of_head(EVENT_ID)
    well_formed = event_id.rlike(UUID_PATTERN) & epoch_micros(field_of_head(COLLECTOR_TSTAMP)).isNotNull()
    return first.select(
        key_of(event_id).alias("key"), F.when(well_formed, epoch_micros(field_of_head(ETL_TSTAMP))).alias("etl_us")
    )


def mark_shared(lines: DataFrame, shared_keys: DataFrame) -> DataFrame:
    """Adds `shared`: whether the line's key (see `event_key`) is one of `shared_keys` (column
    `key`, each once)."""
    flagged = shared_keys.select("key", F.lit(True).alias("shared"))
    joined = lines.withColumn("key", event_key()).join(flagged, "key", "left")
    return joined.withColumn("shared", F.coalesce("shared", F.lit(False))).drop("key")


JSON_COLUMNS = ("contexts", "unstruct_event", "derived_contexts")


def json_and_atomic_parts(events: DataFrame) -> DataFrame:
    """`events` (see `parse`) with the three JSON fields as columns `contexts`, `unstruct_event`,
    `derived_contexts`, and `fields` replaced by `atomic_before` and `atomic_after`: the
    atomic-events line's fields before and after `event_id`, JSON fields removed, tab-joined.
    With the event id between them, 6 + 1 + 121 = 128 fields (SPEC §5). Narrower rows (no
    131-field array) travel cheaper through the rest of the job."""
    before = F.slice("fields", 1, EVENT_ID)
    after = F.concat(
        F.slice("fields", EVENT_ID + 2, CONTEXTS - EVENT_ID - 1),
        F.slice("fields", CONTEXTS + 2, UNSTRUCT_EVENT - CONTEXTS - 1),
        F.slice("fields", UNSTRUCT_EVENT + 2, DERIVED_CONTEXTS - UNSTRUCT_EVENT - 1),
        F.slice("fields", DERIVED_CONTEXTS + 2, FIELDS - DERIVED_CONTEXTS - 1),
    )
    return events.select(
        *(c for c in events.columns if c != "fields"),
        *(field(i).alias(name) for i, name in zip(JSON_FIELDS, JSON_COLUMNS, strict=True)),
        F.concat_ws("\t", before).alias("atomic_before"),
        F.concat_ws("\t", after).alias("atomic_after"),
    )


def atomic_line(event_id: Column) -> Column:
    """The atomic-events line of a row of `json_and_atomic_parts`, with this event id."""
    return F.concat_ws("\t", F.col("atomic_before"), event_id, F.col("atomic_after"))
