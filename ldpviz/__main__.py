import sys

from ldpviz.cli import main

sys.exit(main())
