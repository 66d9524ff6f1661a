import sys

from events_manifest._cli import main

sys.exit(main())
