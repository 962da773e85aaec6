"""What a run prints: the Printer (lines on stdout and in the report's log,
a progress line at the bottom on a terminal) and the short form of
options in an iteration's line (only those that differ from stress's
defaults)."""

import sys
import threading

from .params import NOT_SHOWN, parse_size, same_value


class Printer:
    """Lines on stdout (and the report's log), with a progress line at the
    bottom when stdout is a terminal."""

    def __init__(self, log_path=None, tty=None):
        self.lock = threading.Lock()
        self.tty = sys.stdout.isatty() if tty is None else tty
        self.progress = ""
        self.log_f = open(log_path, "a") if log_path else None

    def line(self, s):
        with self.lock:
            if self.tty and self.progress:
                sys.stdout.write("\r\x1b[K")
            sys.stdout.write(s + "\n")
            if self.tty and self.progress:
                sys.stdout.write(self.progress)
            sys.stdout.flush()
            if self.log_f:
                self.log_f.write(s + "\n")
                self.log_f.flush()

    def set_progress(self, s):
        if not self.tty:
            return
        with self.lock:
            self.progress = s
            sys.stdout.write("\r\x1b[K" + s)
            sys.stdout.flush()

    def clear_progress(self):
        if not self.tty:
            return
        with self.lock:
            if self.progress:
                sys.stdout.write("\r\x1b[K")
                sys.stdout.flush()
            self.progress = ""

    def close(self):
        if self.log_f:
            self.log_f.close()


def fmt_value(v):
    s = parse_size(v)
    if isinstance(v, str) and s is not None and not v.isdigit():
        return v
    if isinstance(v, int) and v >= 65536 and v % 1024 == 0:
        for unit, m in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
            if v % m == 0:
                return "%d%s" % (v // m, unit)
    return str(v)


def differs(params, defaults):
    out = []
    for k in sorted(params):
        if k in NOT_SHOWN:
            continue
        if k in defaults and defaults[k] is not None and same_value(params[k], defaults[k]):
            continue
        out.append("%s=%s" % (k, fmt_value(params[k])))
    return out
