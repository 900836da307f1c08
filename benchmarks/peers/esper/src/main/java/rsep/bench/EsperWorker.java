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
 * (written by rsep/bench/peers.py) gives {@code csv}, {@code columns} ([name, "long" | "string" |
 * "double"]), {@code epl}, {@code length} (the statement selects t1..tN, the times of a match's
 * events), {@code matches} and {@code result}. Start-up is the JVM plus compiling and deploying
 * the statement; the steady state is reading the CSV, Esper's evaluation and writing the
 * matches. Esper's clock is external and set to each event's time (1 unit = 1 ms) before the
 * event is sent, so that {@code timer:within} counts stream time, not wall-clock time.
 */
public final class EsperWorker {
    private EsperWorker() {
    }

    public static void main(String[] argv) throws Exception {
        JsonObject spec = JsonParser.parseString(Files.readString(Path.of(argv[0]))).getAsJsonObject();
        JsonArray cols = spec.getAsJsonArray("columns");
        String[] names = new String[cols.size()];
        Object[] types = new Object[cols.size()];
        char[] kinds = new char[cols.size()];
        int timeCol = -1;
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
            if (names[i].equals("t")) {
                timeCol = i;
            }
        }
        if (timeCol < 0) {
            throw new IllegalArgumentException("no column t: Esper's external clock follows it");
        }
        String type = spec.get("event_type").getAsString();
        int length = spec.get("length").getAsInt();

        Configuration config = new Configuration();
        config.getCommon().addEventType(type, names, types);
        // the clock is the stream's: no timer thread, advanceTime before each event
        config.getRuntime().getThreading().setInternalTimerEnabled(false);
        EPCompiled compiled = EPCompilerProvider.getCompiler().compile(
                "@name('bench') " + spec.get("epl").getAsString(), new CompilerArguments(config));
        EPRuntime runtime = EPRuntimeProvider.getRuntime("rsep-bench", config);
        EPDeployment dep = runtime.getDeploymentService().deploy(compiled);
        EPStatement stmt = runtime.getDeploymentService().getStatement(dep.getDeploymentId(), "bench");
        EPEventService events = runtime.getEventService();
        events.advanceTime(0);

        BufferedWriter out = Files.newBufferedWriter(Path.of(spec.get("matches").getAsString()),
                StandardCharsets.UTF_8);
        String[] props = new String[length];
        for (int i = 0; i < length; i++) {
            props[i] = "t" + (i + 1);
        }
        // the listener runs in the sending thread (no inbound threading), inside sendEvent:
        // a match's latency is from reading its last event's line to here
        long[] readAt = new long[1];
        List<Double> latencies = new ArrayList<>();
        long[] matches = new long[1];
        StringBuilder line = new StringBuilder();
        stmt.addListener((newData, oldData, s, rt) -> {
            if (newData == null) {
                return;
            }
            double ms = (System.nanoTime() - readAt[0]) / 1e6;
            for (EventBean b : newData) {
                line.setLength(0);
                line.append("{\"events\": [");
                for (int i = 0; i < length; i++) {
                    if (i > 0) {
                        line.append(", ");
                    }
                    line.append(((Number) b.get(props[i])).longValue());
                }
                line.append("]}\n");
                try {
                    out.write(line.toString());
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
                latencies.add(ms);
                matches[0]++;
            }
        });

        double ready = System.currentTimeMillis() / 1000.0;
        long t0 = System.nanoTime();
        long n = 0;
        try (BufferedReader in = Files.newBufferedReader(Path.of(spec.get("csv").getAsString()),
                StandardCharsets.UTF_8)) {
            String header = in.readLine();
            String[] head = header.split(",", -1);
            int[] idx = new int[names.length];
            for (int i = 0; i < names.length; i++) {
                idx[i] = Arrays.asList(head).indexOf(names[i]);
                if (idx[i] < 0) {
                    throw new IllegalArgumentException("column " + names[i] + " not in " + header);
                }
            }
            String row;
            long now = 0;
            while ((row = in.readLine()) != null) {
                readAt[0] = System.nanoTime();
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
                long t = (Long) ev[timeCol];
                if (t != now) {
                    events.advanceTime(t);
                    now = t;
                }
                events.sendEventObjectArray(ev, type);
                n++;
            }
        }
        out.close();
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
