#!/usr/bin/env python3
"""Replay wardpool conformance steps against SQLAlchemy's QueuePool.

Usage: sqlalchemy_runner.py [--all] STEPS > RECORDING

Reads a step file (format in conformance/README.md) and writes a recording
of what QueuePool decided at every step. By default only the traces whose
`compare` line names `sqlalchemy` are run; with --all every trace that
QueuePool can express is run (no idle age, no idle ceiling, no evict step).

QueuePool is configured to wardpool's default policy: a hard ceiling
(max_overflow=0) that refuses at once (timeout=0), last-in-first-out reuse,
and the lifetime age as pool_recycle. Its clock is replaced by the trace's
virtual clock, counted in milliseconds so that ages compare exactly.
"""

import sys

import sqlalchemy
import sqlalchemy.exc
import sqlalchemy.pool
import sqlalchemy.pool.base

NAME = "sqlalchemy"


class StepError(Exception):
    pass


def parse(path):
    """Return the traces of a step file as a list of dicts."""
    traces = []
    cur = None
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            words = line.split()
            where = "%s:%d" % (path, lineno)
            verb = words[0]
            if verb == "trace":
                if cur is not None or len(words) != 2:
                    raise StepError(where + ": trace inside a trace or without a name")
                cur = {"name": words[1], "size": None, "idle": 0, "age": None,
                       "compare": [], "steps": [], "now": 0}
                continue
            if cur is None:
                raise StepError(where + ": %r outside a trace" % verb)
            if verb == "end":
                if cur["size"] is None or cur["age"] is None:
                    raise StepError(where + ": trace without size or age")
                del cur["now"]
                traces.append(cur)
                cur = None
            elif verb == "size":
                cur["size"] = int(words[1])
            elif verb == "idle":
                cur["idle"] = int(words[1])
            elif verb == "age":
                if words[1] == "none":
                    cur["age"] = ("none", 0)
                else:
                    cur["age"] = (words[1], int(words[2]))
            elif verb == "compare":
                cur["compare"] = words[1:]
            elif verb in ("take", "give", "drop", "evict"):
                seat = None
                rest = words[1:]
                if verb != "evict":
                    seat = int(rest[0])
                    rest = rest[1:]
                at = cur["now"]
                if rest:
                    if len(rest) != 2 or rest[0] != "at":
                        raise StepError(where + ": expected 'at MS'")
                    at = int(rest[1])
                if at < cur["now"]:
                    raise StepError(where + ": time goes backwards")
                cur["now"] = at
                cur["steps"].append((verb, seat, at))
            else:
                raise StepError(where + ": unknown directive %r" % verb)
    if cur is not None:
        raise StepError(path + ": last trace has no end")
    return traces


def expressible(trace):
    """Report why QueuePool cannot run a trace, or None when it can."""
    kind = trace["age"][0]
    if trace["idle"] > 0:
        # pool_size is the ceiling on live connections here (max_overflow
        # 0), so nothing is left to hold a lower ceiling on idle ones.
        return "QueuePool is run with no idle ceiling"
    if kind not in ("none", "life"):
        return "QueuePool has no %s age" % kind
    if any(verb == "evict" for verb, _, _ in trace["steps"]):
        return "QueuePool has no evictor"
    return None


class Clock:
    """The virtual clock QueuePool reads instead of the time module."""

    def __init__(self):
        self.ms = 0

    def time(self):
        return self.ms


class Conn:
    """A DBAPI connection that only knows its creation index."""

    def __init__(self, index, closed):
        self.index = index
        self._closed = closed
        self._open = True

    def close(self):
        if self._open:
            self._open = False
            self._closed.append(self.index)

    def rollback(self):
        pass

    def commit(self):
        pass


def step_text(verb, seat, at):
    if seat is None:
        return "%s at %d" % (verb, at)
    return "%s %d at %d" % (verb, seat, at)


def run(trace, clock):
    """Run one trace and return its recording lines after the header."""
    made = []
    closed = []

    def creator():
        conn = Conn(len(made) + 1, closed)
        made.append(conn)
        return conn

    kind, ms = trace["age"]
    clock.ms = 0
    pool = sqlalchemy.pool.QueuePool(
        creator,
        pool_size=trace["size"],
        max_overflow=0,
        timeout=0,
        use_lifo=True,
        recycle=ms if kind == "life" else -1,
        reset_on_return=None,
    )
    seats = {}  # every lent fairy stays referenced, or it checks itself in
    out = []
    for verb, seat, at in trace["steps"]:
        clock.ms = at
        before = len(closed)
        got = None
        where = "%s: %s" % (trace["name"], step_text(verb, seat, at))
        if verb == "take":
            if seat in seats:
                raise StepError(where + ": seat already holds one")
            try:
                fairy = pool.connect()
            except sqlalchemy.exc.TimeoutError:
                got = "refused"
            else:
                seats[seat] = fairy
                got = "got %d" % fairy.dbapi_connection.index
        elif verb in ("give", "drop"):
            fairy = seats.pop(seat, None)
            if fairy is None:
                raise StepError(where + ": seat holds nothing")
            if verb == "give":
                fairy.close()
            else:
                fairy.invalidate()
        else:
            raise StepError(where + ": not expressible")
        live = len(made) - len(closed)
        idle = live - pool.checkedout()
        parts = []
        if len(closed) > before:
            parts.append("closed " + ",".join(str(i) for i in sorted(closed[before:])))
        if got is not None:
            parts.append(got)
        parts.append("idle %d live %d" % (idle, live))
        out.append("%s => %s" % (step_text(verb, seat, at), " ".join(parts)))
    return out


def main(argv):
    every = False
    args = []
    for a in argv[1:]:
        if a == "--all":
            every = True
        elif a.startswith("-"):
            sys.stderr.write(__doc__)
            return 2
        else:
            args.append(a)
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2
    clock = Clock()
    sqlalchemy.pool.base.time = clock
    ran = "ran %s %s on python %d.%d.%d" % (
        NAME, sqlalchemy.__version__, *sys.version_info[:3])
    try:
        traces = parse(args[0])
        lines = []
        for trace in traces:
            if not every and NAME not in trace["compare"]:
                continue
            why = expressible(trace)
            if why is not None:
                if every:
                    continue
                raise StepError("%s: %s" % (trace["name"], why))
            kind, ms = trace["age"]
            lines.append("trace " + trace["name"])
            lines.append(ran)
            lines.append("size %d" % trace["size"])
            lines.append("age none" if kind == "none" else "age %s %d" % (kind, ms))
            lines.extend(run(trace, clock))
            lines.append("end")
    except StepError as e:
        sys.stderr.write("sqlalchemy_runner: %s\n" % e)
        return 1
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
