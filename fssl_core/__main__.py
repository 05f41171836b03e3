import sys

try:
    from .cli import main
    status = main()
except KeyboardInterrupt:      # before a command took charge of it (torch still importing): nothing written yet
    print("\n[fssl] interrupted before the command started; nothing was written", file=sys.stderr)
    sys.exit(130)
sys.exit(status)
