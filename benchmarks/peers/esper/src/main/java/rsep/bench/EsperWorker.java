package rsep.bench;

import com.espertech.esper.common.client.EPCompiled;
import com.espertech.esper.common.client.EventBean;
import com.espertech.esper.common.client.configuration.Configuration;
import com.espertech.esper.compiler.client.CompilerArguments;
import com.espertech.esper.compiler.client.EPCompilerProvider;
import com.espertech.esper.runtime.client.EPDeployment;
import com.espertech.esper.runtime.client.EPEventService;
import com.espertech.esper.runtime.client.EPRuntime;
import com.espertech.esper.runtime.client.EPRuntimeProvider;
import com.espertech.esper.runtime.client.EPStatement;
import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * rsep bench's Esper worker: one EPL statement over the CSV form of a workload (the
 * relational flattening CORE and Flink read), events sent as object arrays in file order.
 *
 * <p>Usage: {@code java -cp 'esper-worker.jar:lib/*' rsep.bench.EsperWorker SPEC.json}. The spec
 * (written by rsep/bench/runner.py) gives {@code csv}, {@code event_type}, {@code columns} ([name,
 * "long" | "string" | "double"]), {@code epl} (a module: the statement listened to is named
 * {@code bench}, or the whole text is that one statement), {@code times} (the properties of its
 * output that hold a match's event times, in order: a number, or an array of events' times for
 * a Kleene variable), {@code matches}, {@code result}, and optionally {@code preload}: background
 * data as [{event_type, csv, columns}], sent before the stream (start-up, not timed). Start-up is
 * the JVM, compiling and deploying the module and the preload; the steady state is reading the
 * CSV, Esper's evaluation and writing the matches. Esper's clock is external and set to each event's time (1 unit = 1 ms) before the
 * event is sent, so that {@code timer:within} counts stream time, not wall-clock time.
 */
public final class EsperWorker {
    private EsperWorker() {
    }

    public static void main(String[] argv) throws Exception {
        JsonObject spec = JsonParser.parseString(Files.readString(Path.of(argv[0]))).getAsJsonObject();
        Source stream = new Source(spec);
        int timeCol = Arrays.asList(stream.names).indexOf("t");
        if (timeCol < 0) {
            throw new IllegalArgumentException("no column t: Esper's external clock follows it");
        }
        List<Source> preload = new ArrayList<>();
        if (spec.has("preload")) {
            for (JsonElement e : spec.getAsJsonArray("preload")) {
                preload.add(new Source(e.getAsJsonObject()));
            }
        }
        JsonArray times = spec.getAsJsonArray("times");
        String[] props = new String[times.size()];
        for (int i = 0; i < props.length; i++) {
            props[i] = times.get(i).getAsString();
        }

        Configuration config = new Configuration();
        config.getCommon().addEventType(stream.type, stream.names, stream.types);
        for (Source p : preload) {
            config.getCommon().addEventType(p.type, p.names, p.types);
        }
        // the clock is the stream's: no timer thread, advanceTime before each event
        config.getRuntime().getThreading().setInternalTimerEnabled(false);
        String epl = spec.get("epl").getAsString();
        if (!epl.contains("@name('bench')")) {
            epl = "@name('bench') " + epl;
        }
        EPCompiled compiled = EPCompilerProvider.getCompiler().compile(epl, new CompilerArguments(config));
        EPRuntime runtime = EPRuntimeProvider.getRuntime("rsep-bench", config);
        EPDeployment dep = runtime.getDeploymentService().deploy(compiled);
        EPStatement stmt = runtime.getDeploymentService().getStatement(dep.getDeploymentId(), "bench");
        EPEventService events = runtime.getEventService();
        events.advanceTime(0);
        for (Source p : preload) {
            try (BufferedReader in = p.open()) {
                Object[] row;
                while ((row = p.next(in)) != null) {
                    events.sendEventObjectArray(row, p.type);
                }
            }
        }

        BufferedWriter out = Files.newBufferedWriter(Path.of(spec.get("matches").getAsString()),
                StandardCharsets.UTF_8);
        // the listener runs in the sending thread (no inbound threading), inside sendEvent:
        // a match's latency is from reading its last event's line to here
        long[] readAt = new long[1];
        List<Double> latencies = new ArrayList<>();
        long[] matches = new long[1];
        StringBuilder line = new StringBuilder();
        // Esper catches what a listener throws and logs it (to no logger here): kept, and
        // rethrown after the stream, so that a broken output is a failed run, not 0 matches
        RuntimeException[] failed = new RuntimeException[1];
        stmt.addListener((newData, oldData, s, rt) -> {
            if (newData == null || failed[0] != null) {
                return;
            }
            double ms = (System.nanoTime() - readAt[0]) / 1e6;
            try {
                for (EventBean b : newData) {
                    line.setLength(0);
                    line.append("{\"events\": [");
                    int k = 0;
                    for (String prop : props) {
                        k = appendTimes(line, b.get(prop), k);
                    }
                    line.append("]}\n");
                    out.write(line.toString());
                    latencies.add(ms);
                    matches[0]++;
                }
            } catch (IOException e) {
                failed[0] = new IllegalStateException(e);
            } catch (RuntimeException e) {
                failed[0] = e;
            }
        });

        double ready = System.currentTimeMillis() / 1000.0;
        long t0 = System.nanoTime();
        long n = 0;
        try (BufferedReader in = stream.open()) {
            long now = 0;
            while (true) {
                readAt[0] = System.nanoTime();
                Object[] ev = stream.next(in);
                if (ev == null) {
                    break;
                }
                long t = (Long) ev[timeCol];
                if (t != now) {
                    events.advanceTime(t);
                    now = t;
                }
                events.sendEventObjectArray(ev, stream.type);
                n++;
            }
        }
        out.close();
        if (failed[0] != null) {
            throw failed[0];
        }
        double runS = (System.nanoTime() - t0) / 1e9;
        double steadyEnd = System.currentTimeMillis() / 1000.0;

        Map<String, Object> res = new LinkedHashMap<>();
        res.put("ready", ready);
        res.put("run_s", runS);
        res.put("events", n);
        res.put("steady_end", steadyEnd);
        res.put("latency_ms", percentiles(latencies));
        res.put("self_peak_rss_kb", peakRssKb());
        res.put("stages", new LinkedHashMap<>());
        res.put("note", "Esper " + com.espertech.esper.runtime.client.util.RuntimeVersion.RUNTIME_VERSION
                + "; latency: from reading a match's last event to Esper's listener; "
                + matches[0] + " matches");
        res.put("finished", System.currentTimeMillis() / 1000.0);
        Gson gson = new GsonBuilder().serializeNulls().create();
        Files.writeString(Path.of(spec.get("result").getAsString()), gson.toJson(res));
        runtime.destroy();
    }

    /** A match's event times: a number, or the events of a Kleene variable (an array). */
    private static int appendTimes(StringBuilder line, Object v, int k) {
        if (v == null) {
            return k; // a variable that matched no event
        }
        if (v instanceof Number num) {
            if (k > 0) {
                line.append(", ");
            }
            line.append(num.longValue());
            return k + 1;
        }
        if (v instanceof EventBean e) {
            return appendTimes(line, e.get("t"), k);
        }
        if (v instanceof Object[] arr) {
            for (Object o : arr) {
                k = appendTimes(line, o, k);
            }
            return k;
        }
        if (v instanceof Iterable<?> it) {
            for (Object o : it) {
                k = appendTimes(line, o, k);
            }
            return k;
        }
        throw new IllegalStateException("not an event time: " + v.getClass());
    }

    /** A CSV file of the generators and its object-array event type. */
    private static final class Source {
        final String type;
        final String path;
        final String[] names;
        final Object[] types;
        final char[] kinds;
        int[] idx;

        Source(JsonObject spec) {
            type = spec.get("event_type").getAsString();
            path = spec.get("csv").getAsString();
            JsonArray cols = spec.getAsJsonArray("columns");
            names = new String[cols.size()];
            types = new Object[cols.size()];
            kinds = new char[cols.size()];
            for (int i = 0; i < cols.size(); i++) {
                JsonArray c = cols.get(i).getAsJsonArray();
                names[i] = c.get(0).getAsString();
                String k = c.get(1).getAsString();
                kinds[i] = k.charAt(0);
                types[i] = switch (k) {
                    case "long" -> Long.class;
                    case "double" -> Double.class;
                    case "string" -> String.class;
                    default -> throw new IllegalArgumentException("column type " + k);
                };
            }
        }

        BufferedReader open() throws IOException {
            BufferedReader in = Files.newBufferedReader(Path.of(path), StandardCharsets.UTF_8);
            String header = in.readLine();
            List<String> head = Arrays.asList(header.split(",", -1));
            idx = new int[names.length];
            for (int i = 0; i < names.length; i++) {
                idx[i] = head.indexOf(names[i]);
                if (idx[i] < 0) {
                    throw new IllegalArgumentException("column " + names[i] + " not in " + header);
                }
            }
            return in;
        }

        /** The next row as an event, null at the end. */
        Object[] next(BufferedReader in) throws IOException {
            String row = in.readLine();
            if (row == null) {
                return null;
            }
            // the generators' CSV has no quoted fields (no commas in values): a plain split
            String[] f = row.split(",", -1);
            Object[] ev = new Object[names.length];
            for (int i = 0; i < names.length; i++) {
                String v = f[idx[i]];
                ev[i] = switch (kinds[i]) {
                    case 'l' -> Long.parseLong(v);
                    case 'd' -> Double.parseDouble(v);
                    default -> v;
                };
            }
            return ev;
        }
    }

    private static Map<String, Object> percentiles(List<Double> ms) {
        if (ms.isEmpty()) {
            return null;
        }
        double[] s = ms.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("p50", s[(int) Math.min(s.length - 1, Math.round(0.50 * (s.length - 1)))]);
        q.put("p99", s[(int) Math.min(s.length - 1, Math.round(0.99 * (s.length - 1)))]);
        q.put("max", s[s.length - 1]);
        q.put("n", s.length);
        return q;
    }

    /** This process's peak resident set (VmHWM), as the Python workers report theirs. */
    private static long peakRssKb() {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (l.startsWith("VmHWM:")) {
                    return Long.parseLong(l.split("\\s+")[1]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // no /proc (not Linux): the harness's own sampling of the process tree remains
        }
        return 0;
    }
}
