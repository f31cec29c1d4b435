import sys

try:
    from ldpviz.cli.commands import main
except KeyboardInterrupt:                  # Ctrl+C while the command line loads: no traceback
    print("ldpviz: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
