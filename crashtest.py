#!/usr/bin/env python3
"""crashtest.py -- nightly crash tests of the engine through build/stress.

The entry point: everything lives in the package crashtest/ next to it
(crashtest/README.md says what lives where).  Modes: blackbox, whitebox,
simple, repro RUN_DIR, mutants; ./crashtest.py --help."""

import sys

import crashtest

if __name__ == "__main__":
    sys.exit(crashtest.main())
