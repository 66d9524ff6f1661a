"""Opening a manifest: the URL registry above the backends (`urls`), and the handle that gets one
to Spark's workers (`handle`)."""
