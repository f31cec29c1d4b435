import sys

from ldpviz.cli.commands import main

sys.exit(main())
