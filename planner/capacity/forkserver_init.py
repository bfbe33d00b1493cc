"""Imported first, and only, by the ranking's forkserver process (worker_pool.py passes it as its first preload):
the forkserver then ignores SIGINT while it imports planner for seconds, so Ctrl-C in a terminal (which reaches the
whole process group) stops the parent alone, with one line, instead of printing the forkserver's import traceback.
The workers it forks inherit the ignored SIGINT; the parent terminates them."""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
