#!/usr/bin/env node
// Replay wardpool conformance steps against node-generic-pool.
//
// Usage: node generic_pool_runner.js [--all] STEPS > RECORDING
//
// Reads a step file (format in conformance/README.md) and writes a recording
// of what generic-pool decided at every step. By default only the traces
// whose `compare` line names `generic-pool` are run; with --all every trace
// generic-pool can express is run (a lifetime age only without evict steps,
// no idle ceiling).
//
// The pool is configured to wardpool's default policy: a hard ceiling that
// refuses at once (maxWaitingClients 0) and last-in-first-out reuse (fifo
// false). An idle age is idleTimeoutMillis, applied only by evict steps (no
// eviction timer). A lifetime age is testOnBorrow with a factory.validate
// that fails a resource older than the age (strictly: exactly the age is not
// past it); generic-pool validates only at a borrow, destroys a resource that
// fails and dispenses again: the next idle one, or a new one when none is
// idle. Date.now is replaced by the trace's virtual clock.
"use strict";

const fs = require("fs");
const path = require("path");
const genericPool = require("generic-pool");

const NAME = "generic-pool";
const VERSION = require("generic-pool/package.json").version;

class StepError extends Error {}

function parse(file) {
  const traces = [];
  let cur = null;
  const lines = fs.readFileSync(file, "utf8").split("\n");
  lines.forEach((raw, i) => {
    const line = raw.split("#", 1)[0].trim();
    if (line === "") return;
    const words = line.split(/\s+/);
    const where = `${file}:${i + 1}`;
    const verb = words[0];
    if (verb === "trace") {
      if (cur !== null || words.length !== 2) {
        throw new StepError(`${where}: trace inside a trace or without a name`);
      }
      cur = { name: words[1], size: null, idle: 0, age: null, compare: [], steps: [], now: 0 };
      return;
    }
    if (cur === null) throw new StepError(`${where}: ${verb} outside a trace`);
    switch (verb) {
      case "end":
        if (cur.size === null || cur.age === null) {
          throw new StepError(`${where}: trace without size or age`);
        }
        delete cur.now;
        traces.push(cur);
        cur = null;
        break;
      case "size":
        cur.size = parseInt(words[1], 10);
        break;
      case "idle":
        cur.idle = parseInt(words[1], 10);
        break;
      case "age":
        cur.age = words[1] === "none" ? ["none", 0] : [words[1], parseInt(words[2], 10)];
        break;
      case "compare":
        cur.compare = words.slice(1);
        break;
      case "take":
      case "give":
      case "drop":
      case "evict": {
        let rest = words.slice(1);
        let seat = null;
        if (verb !== "evict") {
          seat = parseInt(rest[0], 10);
          rest = rest.slice(1);
        }
        let at = cur.now;
        if (rest.length > 0) {
          if (rest.length !== 2 || rest[0] !== "at") {
            throw new StepError(`${where}: expected 'at MS'`);
          }
          at = parseInt(rest[1], 10);
        }
        if (at < cur.now) throw new StepError(`${where}: time goes backwards`);
        cur.now = at;
        cur.steps.push([verb, seat, at]);
        break;
      }
      default:
        throw new StepError(`${where}: unknown directive ${verb}`);
    }
  });
  if (cur !== null) throw new StepError(`${file}: last trace has no end`);
  return traces;
}

// expressible reports why generic-pool cannot run a trace, or null.
function expressible(trace) {
  const kind = trace.age[0];
  // generic-pool has no ceiling on idle resources, only max (live) and min.
  if (trace.idle > 0) return "generic-pool has no idle ceiling";
  if (kind !== "none" && kind !== "idle" && kind !== "life") {
    return `generic-pool has no ${kind} age`;
  }
  // Its evictor knows only idle time: an evict in a lifetime trace would
  // retire nothing there.
  if (kind === "life" && trace.steps.some(([verb]) => verb === "evict")) {
    return "generic-pool evicts by idle time only, not by lifetime";
  }
  return null;
}

function stepText(verb, seat, at) {
  return seat === null ? `${verb} at ${at}` : `${verb} ${seat} at ${at}`;
}

// settle lets every promise the pool started run to completion.
function settle() {
  return new Promise(resolve => setImmediate(resolve));
}

async function run(trace, clock) {
  let made = 0;
  let closed = [];
  const [kind, ms] = trace.age;
  const factory = {
    // Distinct objects: generic-pool tracks loans by identity. create runs
    // synchronously inside acquire(), so born is the moment of the take.
    create: async () => ({ index: ++made, born: Date.now() }),
    destroy: async res => {
      closed.push(res.index);
    },
    // Called only at a borrow (testOnBorrow), and only for a lifetime age.
    validate: async res => Date.now() - res.born <= ms,
  };
  clock.ms = 0;
  const pool = genericPool.createPool(factory, {
    max: trace.size,
    min: 0,
    fifo: false,
    maxWaitingClients: 0,
    // 0 would mean "use the default" (30 s): no age is an age never reached.
    idleTimeoutMillis: kind === "idle" ? ms : Number.POSITIVE_INFINITY,
    evictionRunIntervalMillis: 0,
    numTestsPerEvictionRun: Math.max(trace.size, 1),
    testOnBorrow: kind === "life",
  });
  const seats = new Map();
  const out = [];
  for (const [verb, seat, at] of trace.steps) {
    clock.ms = at;
    const before = closed.length;
    let got = null;
    const where = `${trace.name}: ${stepText(verb, seat, at)}`;
    if (verb === "take") {
      if (seats.has(seat)) throw new StepError(`${where}: seat already holds one`);
      try {
        const res = await pool.acquire();
        seats.set(seat, res);
        got = `got ${res.index}`;
      } catch (e) {
        if (!/max waitingClients count exceeded/.test(e.message)) throw e;
        got = "refused";
      }
    } else if (verb === "give" || verb === "drop") {
      const res = seats.get(seat);
      if (res === undefined) throw new StepError(`${where}: seat holds nothing`);
      seats.delete(seat);
      if (verb === "give") await pool.release(res);
      else await pool.destroy(res);
    } else {
      // One _evict run may skip an entry after removing one, so sweep until
      // a run removes nothing.
      for (;;) {
        const n = closed.length;
        pool._evict();
        if (closed.length === n) break;
      }
    }
    await settle();
    const parts = [];
    if (closed.length > before) {
      parts.push("closed " + closed.slice(before).sort((a, b) => a - b).join(","));
    }
    if (got !== null) parts.push(got);
    parts.push(`idle ${pool.available} live ${pool.size}`);
    out.push(`${stepText(verb, seat, at)} => ${parts.join(" ")}`);
  }
  await pool.clear();
  return out;
}

async function main(argv) {
  let every = false;
  const args = [];
  for (const a of argv) {
    if (a === "--all") every = true;
    else if (a.startsWith("-")) args.length = 99;
    else args.push(a);
  }
  if (args.length !== 1) {
    process.stderr.write(`usage: node ${path.basename(__filename)} [--all] STEPS > RECORDING\n`);
    return 2;
  }
  const clock = { ms: 0 };
  const realNow = Date.now;
  Date.now = () => clock.ms;
  const ran = `ran ${NAME} ${VERSION} on node ${process.version}`;
  const lines = [];
  try {
    for (const trace of parse(args[0])) {
      if (!every && !trace.compare.includes(NAME)) continue;
      const why = expressible(trace);
      if (why !== null) {
        if (every) continue;
        throw new StepError(`${trace.name}: ${why}`);
      }
      const [kind, ms] = trace.age;
      lines.push(`trace ${trace.name}`, ran, `size ${trace.size}`);
      lines.push(kind === "none" ? "age none" : `age ${kind} ${ms}`);
      lines.push(...(await run(trace, clock)));
      lines.push("end");
    }
  } catch (e) {
    if (!(e instanceof StepError)) throw e;
    process.stderr.write(`generic_pool_runner: ${e.message}\n`);
    return 1;
  } finally {
    Date.now = realNow;
  }
  process.stdout.write(lines.map(l => l + "\n").join(""));
  return 0;
}

main(process.argv.slice(2)).then(code => {
  process.exitCode = code;
});
