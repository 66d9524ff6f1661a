"""Iglu's schema keys and resolver; the public names are in `events_manifest.iglu`."""
