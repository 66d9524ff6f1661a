import sys

from events_manifest.cli import main

sys.exit(main())
