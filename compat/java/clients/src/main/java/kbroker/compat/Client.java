package kbroker.compat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;

/**
 * Apache Kafka's Java client as a kbroker compat client, driven by
 * compat/java_matrix_test.go. It speaks the command protocol of the other
 * script clients (compat/matrix_proc_test.go) with two additions: consume
 * takes the group protocol ("classic" or "consumer", KIP-848) as its 7th
 * argument, and admin exercises the whole Admin client (Admin.java).
 *
 * <p>Run with a command ({@code version}, {@code admin}, {@code create},
 * {@code produce}, {@code consume}, {@code transact}, {@code hang}) it does that one thing,
 * reading records from stdin and printing results to stdout. Run as
 * {@code serve} it keeps one JVM for a whole test: each stdin line is a
 * request {@code {"args":[...],"stdin":"..."}} and each reply one stdout line
 * {@code {"out":"...","error":"..."}} (error null on success). The JVM
 * starts slowly on two cores; one per test keeps the matrix fast.
 */
public final class Client {
    static final ObjectMapper JSON = new ObjectMapper();
    /** Bounds every blocking client call. */
    static final Duration TIMEOUT = Duration.ofSeconds(60);

    private Client() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("serve")) {
            serve();
            return;
        }
        String stdin = new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
        PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
        try {
            run(args, stdin, out);
        } finally {
            out.flush();
        }
        // Kafka's clients leave no non-daemon threads after close, but a
        // failed close must not keep the process alive.
        System.exit(0);
    }

    /** serve answers requests, one per stdin line, until stdin closes. */
    static void serve() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintWriter reply = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode req = JSON.readTree(line);
            List<String> args = new ArrayList<>();
            req.get("args").forEach(a -> args.add(a.asText()));
            StringWriter buf = new StringWriter();
            PrintWriter out = new PrintWriter(buf);
            ObjectNode resp = JSON.createObjectNode();
            try {
                run(args.toArray(new String[0]), req.path("stdin").asText(""), out);
                resp.putNull("error");
            } catch (Throwable e) {
                StringWriter trace = new StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                resp.put("error", trace.toString());
            }
            out.flush();
            resp.put("out", buf.toString());
            reply.println(JSON.writeValueAsString(resp));
        }
        System.exit(0);
    }

    /** run executes one command, printing its results to out. */
    static void run(String[] args, String stdin, PrintWriter out) throws Exception {
        if (args.length == 0) {
            throw new IllegalArgumentException("usage: Client serve | version | admin | create | produce | consume | transact ...");
        }
        String[] a = Arrays.copyOfRange(args, 1, args.length);
        switch (args[0]) {
            case "version":
                out.println(kafkaVersion());
                break;
            case "admin":
                need(a, 2);
                Admin.exercise(a[0], a[1]);
                break;
            case "create":
                need(a, 3);
                Admin.create(a[0], a[1], Integer.parseInt(a[2]), a.length > 3 ? Short.parseShort(a[3]) : (short) 1);
                break;
            case "produce":
                need(a, 4);
                Produce.produce(a[0], a[1], a[2], a[3].equals("1"), jsonLines(stdin), out);
                break;
            case "consume":
                need(a, 5);
                Consume.consume(a[0], a[1], a[2], a[3], Integer.parseInt(a[4]),
                        a.length > 5 ? a[5] : "", a.length > 6 ? a[6] : "classic", out);
                break;
            case "hang":
                need(a, 4);
                Produce.hang(a[0], a[1], a[2], Integer.parseInt(a[3]), out);
                break;
            case "transact":
                need(a, 5);
                Produce.transact(a[0], a[1], a[2], a[3], a[4], jsonLines(stdin), out);
                break;
            default:
                throw new IllegalArgumentException("unknown command " + args[0]);
        }
    }

    static void need(String[] a, int n) {
        if (a.length < n) {
            throw new IllegalArgumentException("want at least " + n + " arguments, got " + Arrays.toString(a));
        }
    }

    /**
     * kafkaVersion is the version of the kafka-clients jar on the classpath,
     * from the resource it carries (AppInfoParser moved to an internal
     * package in 4.x).
     */
    static String kafkaVersion() throws Exception {
        Properties p = new Properties();
        try (var in = Client.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            check(in != null, "kafka/kafka-version.properties on the classpath");
            p.load(in);
        }
        return p.getProperty("version", "unknown");
    }

    /**
     * extra is the client properties every producer, consumer and admin
     * client of this JVM also gets (SASL settings, for one): the file the
     * system property kbroker.client.properties names, if any.
     */
    static Properties extra() throws Exception {
        Properties p = new Properties();
        String path = System.getProperty("kbroker.client.properties");
        if (path != null && !path.isEmpty()) {
            try (var in = new java.io.FileInputStream(path)) {
                p.load(in);
            }
        }
        return p;
    }

    /** jsonLines parses one JSON object per non-blank line. */
    static List<JsonNode> jsonLines(String s) throws Exception {
        List<JsonNode> out = new ArrayList<>();
        BufferedReader r = new BufferedReader(new StringReader(s));
        String line;
        while ((line = r.readLine()) != null) {
            if (!line.isBlank()) {
                out.add(JSON.readTree(line));
            }
        }
        return out;
    }

    /** rec is one record as the Go side reads it: {"k","v","h","p","o"}. */
    static String rec(String key, String value, List<String[]> headers, int partition, long offset) throws Exception {
        ObjectNode n = JSON.createObjectNode();
        n.put("k", key);
        if (value != null) {
            n.put("v", value);
        }
        if (headers != null) {
            ArrayNode h = n.putArray("h");
            for (String[] kv : headers) {
                h.addArray().add(kv[0]).add(kv[1]);
            }
        }
        n.put("p", partition);
        n.put("o", offset);
        return JSON.writeValueAsString(n);
    }

    /** fail throws an error that names the check which failed. */
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("check failed: " + what);
        }
    }
}
