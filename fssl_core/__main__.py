import signal
import sys

# A SIGINT while the libraries import (torch takes seconds, more on a loaded machine) can land inside a library
# that catches every exception and goes on: the flag keeps it, so the command stops with 130 once the imports
# are done instead of running to its end. Otherwise the handler is Python's own: it raises KeyboardInterrupt.
interrupted = False


def _on_sigint(signum, frame):
    global interrupted
    interrupted = True
    raise KeyboardInterrupt


signal.signal(signal.SIGINT, _on_sigint)
try:
    from .cli import main
    if interrupted:
        raise KeyboardInterrupt
    status = main()
except KeyboardInterrupt:      # before a command took charge of it (torch still importing): nothing written yet
    print("\n[fssl] interrupted before the command started; nothing was written", file=sys.stderr)
    sys.exit(130)
sys.exit(status)
