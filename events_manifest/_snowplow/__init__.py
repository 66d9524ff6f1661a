"""The Snowplow engine of the shred job; the public names are in `events_manifest.snowplow`."""
