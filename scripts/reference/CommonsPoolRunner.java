// Replay wardpool conformance steps against Apache Commons Pool 2's
// GenericObjectPool.
//
// Build and run (no build tool; Debian: libcommons-pool2-java):
//
//   javac -d DIR -cp /usr/share/java/commons-pool2.jar CommonsPoolRunner.java
//   java -cp DIR:/usr/share/java/commons-pool2.jar CommonsPoolRunner [--all] STEPS > RECORDING
//
// Reads a step file (format in conformance/README.md) and writes a recording
// of what GenericObjectPool decided at every step. By default only the traces
// whose `compare` line names `commons-pool` are run; with --all every trace
// it can express is run (no lifetime age).
//
// The pool is configured to wardpool's policy: maxTotal is the trace's size,
// a hard ceiling that fails a borrow at once (blockWhenExhausted false);
// maxIdle is the trace's idle ceiling (-1, none, when the trace has none),
// so a returnObject with that many idle already destroys the returned object;
// LIFO reuse; minIdle 0; no tests on create, borrow, return or while idle; no
// evictor thread. A broken resource is invalidateObject. An idle age is
// minEvictableIdleTime, applied by evict() at evict steps only, with the
// pool's own DefaultEvictionPolicy testing every idle object
// (numTestsPerEvictionRun -1). The one piece replaced is the clock an idle
// duration is read from: DefaultPooledObject reads the system clock, so the
// factory wraps each resource in a PooledObject that notes the trace's
// virtual time when the pool deallocates it (returnObject) and answers its
// idle duration from that.
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Properties;

import org.apache.commons.pool2.BasePooledObjectFactory;
import org.apache.commons.pool2.PooledObject;
import org.apache.commons.pool2.impl.DefaultPooledObject;
import org.apache.commons.pool2.impl.GenericObjectPool;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;

public final class CommonsPoolRunner {
    static final String NAME = "commons-pool";

    static final class StepError extends Exception {
        private static final long serialVersionUID = 1L;

        StepError(String msg) {
            super(msg);
        }
    }

    static final class Step {
        final String verb;
        final int seat; // 0 for evict
        final long at;

        Step(String verb, int seat, long at) {
            this.verb = verb;
            this.seat = seat;
            this.at = at;
        }

        @Override
        public String toString() {
            return seat == 0 ? verb + " at " + at : verb + " " + seat + " at " + at;
        }
    }

    static final class Trace {
        String name;
        int size = -1;
        int idle; // the idle ceiling; 0 is none
        String age; // "none", "life" or "idle"
        long ageMS;
        List<String> compare = new ArrayList<>();
        List<Step> steps = new ArrayList<>();
    }

    static List<Trace> parse(String file) throws IOException, StepError {
        List<Trace> traces = new ArrayList<>();
        Trace cur = null;
        long now = 0;
        List<String> lines = Files.readAllLines(Paths.get(file), StandardCharsets.UTF_8);
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            int hash = line.indexOf('#');
            if (hash >= 0) {
                line = line.substring(0, hash);
            }
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String[] w = line.split("\\s+");
            String where = file + ":" + (i + 1);
            String verb = w[0];
            if (verb.equals("trace")) {
                if (cur != null || w.length != 2) {
                    throw new StepError(where + ": trace inside a trace or without a name");
                }
                cur = new Trace();
                cur.name = w[1];
                now = 0;
                continue;
            }
            if (cur == null) {
                throw new StepError(where + ": " + verb + " outside a trace");
            }
            try {
                switch (verb) {
                    case "end":
                        if (cur.size < 1 || cur.age == null) {
                            throw new StepError(where + ": trace without size or age");
                        }
                        traces.add(cur);
                        cur = null;
                        break;
                    case "size":
                        cur.size = Integer.parseInt(w[1]);
                        break;
                    case "idle":
                        cur.idle = Integer.parseInt(w[1]);
                        break;
                    case "age":
                        cur.age = w[1];
                        cur.ageMS = w[1].equals("none") ? 0 : Long.parseLong(w[2]);
                        break;
                    case "compare":
                        for (int k = 1; k < w.length; k++) {
                            cur.compare.add(w[k]);
                        }
                        break;
                    case "take":
                    case "give":
                    case "drop":
                    case "evict": {
                        int k = 1;
                        int seat = 0;
                        if (!verb.equals("evict")) {
                            seat = Integer.parseInt(w[k++]);
                        }
                        long at = now;
                        if (k < w.length) {
                            if (w.length - k != 2 || !w[k].equals("at")) {
                                throw new StepError(where + ": expected 'at MS'");
                            }
                            at = Long.parseLong(w[k + 1]);
                        }
                        if (at < now) {
                            throw new StepError(where + ": time goes backwards");
                        }
                        now = at;
                        cur.steps.add(new Step(verb, seat, at));
                        break;
                    }
                    default:
                        throw new StepError(where + ": unknown directive " + verb);
                }
            } catch (NumberFormatException | ArrayIndexOutOfBoundsException e) {
                throw new StepError(where + ": malformed " + verb);
            }
        }
        if (cur != null) {
            throw new StepError(file + ": last trace has no end");
        }
        return traces;
    }

    // expressible reports why GenericObjectPool cannot run a trace, or null.
    static String expressible(Trace t) {
        switch (t.age) {
            case "none":
            case "idle":
                return null;
            case "life":
                // It has no lifetime setting: its evictor and
                // DefaultEvictionPolicy know idle time only.
                return "GenericObjectPool has no lifetime age";
            default:
                return "GenericObjectPool has no " + t.age + " age";
        }
    }

    // The trace's virtual clock, in milliseconds.
    static long clock;

    // A resource: a distinct object (the pool tracks loans by identity),
    // named by its creation index.
    static final class Res {
        final int index;

        Res(int index) {
            this.index = index;
        }
    }

    // VirtualPooledObject is the pool's own DefaultPooledObject, but its idle
    // duration is read on the trace's clock: since the pool last deallocated
    // it (returnObject), or since it was made, as DefaultPooledObject counts.
    static final class VirtualPooledObject extends DefaultPooledObject<Res> {
        private long returned;

        VirtualPooledObject(Res r) {
            super(r);
            returned = clock;
        }

        @Override
        public synchronized boolean deallocate() {
            boolean ok = super.deallocate();
            if (ok) {
                returned = clock;
            }
            return ok;
        }

        @Override
        public Duration getIdleDuration() {
            return Duration.ofMillis(Math.max(0, clock - returned));
        }
    }

    static final class Factory extends BasePooledObjectFactory<Res> {
        int made;
        final List<Integer> closed = new ArrayList<>();

        @Override
        public Res create() {
            return new Res(++made);
        }

        @Override
        public PooledObject<Res> wrap(Res r) {
            return new VirtualPooledObject(r);
        }

        @Override
        public void destroyObject(PooledObject<Res> p) {
            closed.add(p.getObject().index);
        }
    }

    static List<String> run(Trace t) throws Exception {
        clock = 0;
        Factory f = new Factory();
        GenericObjectPoolConfig<Res> c = new GenericObjectPoolConfig<>();
        c.setMaxTotal(t.size);
        c.setMaxIdle(t.idle > 0 ? t.idle : -1); // its 0 would keep none
        c.setMinIdle(0);
        c.setLifo(true);
        c.setBlockWhenExhausted(false);
        c.setTestOnCreate(false);
        c.setTestOnBorrow(false);
        c.setTestOnReturn(false);
        c.setTestWhileIdle(false);
        c.setTimeBetweenEvictionRuns(Duration.ofMillis(-1)); // no evictor thread
        c.setNumTestsPerEvictionRun(-1); // every idle object, each run
        c.setMinEvictableIdleTime(t.age.equals("idle") ? Duration.ofMillis(t.ageMS) : Duration.ofMillis(-1));
        c.setSoftMinEvictableIdleTime(Duration.ofMillis(-1));
        c.setJmxEnabled(false);
        List<String> out = new ArrayList<>();
        Map<Integer, Res> seats = new HashMap<>();
        try (GenericObjectPool<Res> pool = new GenericObjectPool<>(f, c)) {
            for (Step s : t.steps) {
                clock = s.at;
                int before = f.closed.size();
                String got = null;
                String where = t.name + ": " + s;
                switch (s.verb) {
                    case "take":
                        if (seats.containsKey(s.seat)) {
                            throw new StepError(where + ": seat already holds one");
                        }
                        try {
                            Res r = pool.borrowObject();
                            seats.put(s.seat, r);
                            got = "got " + r.index;
                        } catch (NoSuchElementException e) {
                            if (!"Pool exhausted".equals(e.getMessage())) {
                                throw e;
                            }
                            got = "refused";
                        }
                        break;
                    case "give":
                    case "drop": {
                        Res r = seats.remove(s.seat);
                        if (r == null) {
                            throw new StepError(where + ": seat holds nothing");
                        }
                        if (s.verb.equals("give")) {
                            pool.returnObject(r);
                        } else {
                            pool.invalidateObject(r);
                        }
                        break;
                    }
                    default:
                        pool.evict();
                }
                int idle = pool.getNumIdle();
                int live = idle + pool.getNumActive();
                if (live != f.made - f.closed.size()) {
                    throw new StepError(where + ": the pool counts " + live + " live, the factory made "
                            + f.made + " and destroyed " + f.closed.size());
                }
                StringBuilder b = new StringBuilder(s.toString()).append(" =>");
                if (f.closed.size() > before) {
                    List<Integer> now = new ArrayList<>(f.closed.subList(before, f.closed.size()));
                    now.sort(null);
                    b.append(" closed ");
                    for (int k = 0; k < now.size(); k++) {
                        if (k > 0) {
                            b.append(',');
                        }
                        b.append(now.get(k));
                    }
                }
                if (got != null) {
                    b.append(' ').append(got);
                }
                b.append(" idle ").append(idle).append(" live ").append(live);
                out.add(b.toString());
            }
        }
        return out;
    }

    // version reads the version of the Commons Pool jar on the class path
    // from the Maven properties packed into it.
    static String version() throws IOException {
        String name = "/META-INF/maven/org.apache.commons/commons-pool2/pom.properties";
        try (InputStream in = GenericObjectPool.class.getResourceAsStream(name)) {
            if (in == null) {
                return "unknown";
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        }
    }

    public static void main(String[] argv) throws Exception {
        boolean every = false;
        List<String> args = new ArrayList<>();
        boolean bad = false;
        for (String a : argv) {
            if (a.equals("--all")) {
                every = true;
            } else if (a.startsWith("-")) {
                bad = true;
            } else {
                args.add(a);
            }
        }
        if (bad || args.size() != 1) {
            System.err.println("usage: java CommonsPoolRunner [--all] STEPS > RECORDING");
            System.exit(2);
        }
        String ran = "ran " + NAME + " " + version() + " on java " + System.getProperty("java.version");
        List<String> lines = new ArrayList<>();
        try {
            for (Trace t : parse(args.get(0))) {
                if (!every && !t.compare.contains(NAME)) {
                    continue;
                }
                String why = expressible(t);
                if (why != null) {
                    if (every) {
                        continue;
                    }
                    throw new StepError(t.name + ": " + why);
                }
                lines.add("trace " + t.name);
                lines.add(ran);
                lines.add("size " + t.size);
                if (t.idle > 0) {
                    lines.add("idle " + t.idle);
                }
                lines.add(t.age.equals("none") ? "age none" : "age " + t.age + " " + t.ageMS);
                lines.addAll(run(t));
                lines.add("end");
            }
        } catch (StepError e) {
            System.err.println("commons_pool_runner: " + e.getMessage());
            System.exit(1);
        }
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (String l : lines) {
            out.print(l);
            out.print('\n');
        }
        out.flush();
    }
}
