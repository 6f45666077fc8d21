"""A command's standard output when its reader leaves (`... | head`), and the last-resort watch
over a teardown that Fast DDS can hang: shared by the commands (``python -m rbd_ros``) and the
nodes."""
import faulthandler
import os
import sys


def reader_left(stream=None) -> None:
    """The reader of ``stream`` (stdout by default) went away: what it read is whole. The
    stream's descriptor now points at /dev/null, so that later writes and the flush at exit do
    not raise again (Python's documented recipe for SIGPIPE)."""
    stream = sys.stdout if stream is None else stream
    os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def watch_teardown(limit_s: float) -> None:
    """Flush stdout (the output whole before anything may end the process), then arm
    faulthandler's watchdog: ``limit_s`` later it prints every thread's stack and ends the
    process with status 1, unless ``faulthandler.cancel_dump_traceback_later()`` came first.
    It needs no GIL: Fast DDS's participant deletion can spin for ever holding it while a
    discovery callback is in flight (eProsima/Fast-DDS#6513), and then no Python code runs."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        reader_left()
    except (OSError, ValueError):   # a closed stdout: nothing to keep
        pass
    faulthandler.dump_traceback_later(limit_s, exit=True)
