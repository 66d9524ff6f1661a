"""Atomic field lengths: before an atomic line is written, each field longer than the reference's
database column limit is cut to it, counted as Java counts a string's length: in UTF-16 code units,
so a character outside the Basic Multilingual Plane (an emoji) counts two. A cut between the two
halves of such a character keeps the first half, which the reference's UTF-8 writer writes as `?`.
Fields without a limit are left whole. Only the atomic line is cut: dedup and the entities see the
fields as received.
"""

from __future__ import annotations

import numpy as np

MAX_LENGTHS: dict[str, int] = {
    "app_id": 255,
    "platform": 255,
    "event": 128,
    "event_id": 36,
    "name_tracker": 128,
    "v_tracker": 100,
    "v_collector": 100,
    "v_etl": 100,
    "user_id": 255,
    "user_ipaddress": 45,
    "user_fingerprint": 50,
    "domain_userid": 36,
    "network_userid": 38,
    "geo_country": 2,
    "geo_region": 2,
    "geo_city": 75,
    "geo_zipcode": 15,
    "geo_region_name": 100,
    "ip_isp": 100,
    "ip_organization": 100,
    "ip_domain": 100,
    "ip_netspeed": 100,
    "page_title": 2000,
    "page_urlscheme": 16,
    "page_urlhost": 255,
    "page_urlpath": 3000,
    "page_urlquery": 6000,
    "page_urlfragment": 3000,
    "refr_urlscheme": 16,
    "refr_urlhost": 255,
    "refr_urlpath": 6000,
    "refr_urlquery": 6000,
    "refr_urlfragment": 3000,
    "refr_medium": 25,
    "refr_source": 50,
    "refr_term": 255,
    "mkt_medium": 255,
    "mkt_source": 255,
    "mkt_term": 255,
    "mkt_content": 500,
    "mkt_campaign": 255,
    "se_category": 1000,
    "se_action": 1000,
    "se_label": 1000,
    "se_property": 1000,
    "tr_orderid": 255,
    "tr_affiliation": 255,
    "tr_city": 255,
    "tr_state": 255,
    "tr_country": 255,
    "ti_orderid": 255,
    "ti_sku": 255,
    "ti_name": 255,
    "ti_category": 255,
    "useragent": 1000,
    "br_name": 50,
    "br_family": 50,
    "br_version": 50,
    "br_type": 50,
    "br_renderengine": 50,
    "br_lang": 255,
    "br_colordepth": 12,
    "os_name": 50,
    "os_family": 50,
    "os_manufacturer": 50,
    "os_timezone": 50,
    "dvce_type": 50,
    "doc_charset": 128,
    "tr_currency": 3,
    "ti_currency": 3,
    "base_currency": 3,
    "geo_timezone": 64,
    "mkt_clickid": 128,
    "mkt_network": 64,
    "etl_tags": 500,
    "refr_domain_userid": 36,
    "domain_sessionid": 36,
    "event_vendor": 1000,
    "event_name": 1000,
    "event_format": 128,
    "event_version": 128,
    "event_fingerprint": 128,
}
"""The most characters each atomic field may hold, by field name (the reference's column limits)."""


SPLIT_MARK = b"?"
"""What stands for the half character a cut leaves (Java's UTF-8 encoder's replacement)."""

_UNITS = np.zeros(256, np.int64)
_UNITS[:0x80] = 1  # ASCII
_UNITS[0xC0:0xF0] = 1  # the lead byte of 2 and 3 byte sequences: one UTF-16 unit
_UNITS[0xF0:] = 2  # the lead byte of a 4 byte sequence: a surrogate pair
"""The UTF-16 code units of the character each UTF-8 byte starts (0 for a continuation byte)."""


def cut(utf8: np.ndarray, bounds: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Where Java's `text.substring(0, limit)` cuts each text `utf8[bounds[i]:bounds[i + 1]]`
    (valid UTF-8 bytes): how many of its bytes are kept, and whether the cut falls inside a
    surrogate pair (the kept bytes are then followed by `SPLIT_MARK`)."""
    weights = _UNITS[utf8] if len(utf8) else np.zeros(1, np.int64)
    units = np.cumsum(weights)  # the units up to each byte's character, included
    starts, ends = bounds[:-1], bounds[1:]
    before = np.append(0, units)[starts]  # the units of the texts before each
    at = np.minimum(np.searchsorted(units, before + limit, side="right"), ends)  # the first character cut off
    past = np.minimum(at, len(weights) - 1)
    split = (at < ends) & (weights[past] == 2) & (units[past] - before == limit + 1)
    return at - starts, split
