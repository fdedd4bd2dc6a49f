/*
 * Kafka's own Java client as a test oracle, driven by JSON lines (run through test/support/java.ts).
 *
 *   produce --bootstrap HOST:PORT [--topic T] [--compression none|gzip|snappy|lz4|zstd] [--prop k=v]...
 *     reads one record per stdin line and sends it with KafkaProducer, then flushes:
 *     {"topic"?, "partition"?, "compression"?, "timestampMs"?, "key"? | "keyBase64"?, "value"? | "valueBase64"?,
 *      "headers"?: [{"key", "value"? | "valueBase64"?}]}   (a missing or null key/value/header value is null)
 *     A line's "compression" picks a producer of its own (one per codec), so one run writes every codec.
 *     Prints {"sent": n} on stdout once every record is acknowledged.
 *
 *   produce-accounts --bootstrap HOST:PORT --topic T --records N --accounts K [--size BYTES] [--seed S]
 *                    [--rate-per-sec R] [--prop k=v]...
 *     sends N records of about BYTES (default 512) of JSON {"account","amount","pad"}, key = the account
 *     (one of K, drawn uniformly with seed S; amount a whole number 1..1000), paced at R records/s when
 *     given (the timestamp is the send time), and prints {"sent": n, "totals": {account: [total, count]}}
 *     once every record is acknowledged: the per-account sums a sink must end with.
 *
 *   consume --bootstrap HOST:PORT --assign TOPIC:PARTITION:FROM:UNTIL... [--isolation read_committed|read_uncommitted]
 *     reads [FROM, UNTIL) of each partition with KafkaConsumer (assign + seek, no group) and prints one line per record:
 *     {"topic", "partition", "offset", "timestampMs", "timestampType", "keyBase64", "valueBase64",
 *      "headers": [{"key", "valueBase64"}]}   (null stays null)
 *
 *   group-commit --bootstrap HOST:PORT --group G --topic T --commit PARTITION:OFFSET... [--timeout-ms MS]
 *     joins consumer group G (subscribe to T, auto.offset.reset=earliest, no auto commit), consumes each listed
 *     partition until its position reaches OFFSET, pauses the partitions not listed, then commits exactly the listed
 *     offsets with commitSync as a member of the group, and prints {"committed": n}.
 */
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class RecordTool {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    if (args.length == 0) throw new IllegalArgumentException("usage: RecordTool produce|consume --bootstrap HOST:PORT ...");
    Map<String, List<String>> opts = options(args);
    String bootstrap = one(opts, "bootstrap", null);
    if (bootstrap == null) throw new IllegalArgumentException("--bootstrap is required");
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    switch (args[0]) {
      case "produce" -> produce(opts, bootstrap, out);
      case "produce-accounts" -> produceAccounts(opts, bootstrap, out);
      case "consume" -> consume(opts, bootstrap, out);
      case "group-commit" -> groupCommit(opts, bootstrap, out);
      default -> throw new IllegalArgumentException("unknown command " + args[0] + ": produce, consume or group-commit");
    }
    out.flush();
  }

  private static Map<String, List<String>> options(String[] args) {
    Map<String, List<String>> opts = new HashMap<>();
    for (int i = 1; i < args.length; i += 2) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) throw new IllegalArgumentException("expected --name value at " + args[i]);
      opts.computeIfAbsent(args[i].substring(2), k -> new ArrayList<>()).add(args[i + 1]);
    }
    return opts;
  }

  private static String one(Map<String, List<String>> opts, String name, String fallback) {
    List<String> v = opts.get(name);
    return v == null ? fallback : v.get(v.size() - 1);
  }

  private static void produce(Map<String, List<String>> opts, String bootstrap, PrintStream out) throws Exception {
    Properties base = new Properties();
    base.put("bootstrap.servers", bootstrap);
    base.put("key.serializer", ByteArraySerializer.class.getName());
    base.put("value.serializer", ByteArraySerializer.class.getName());
    base.put("acks", "all");
    base.put("linger.ms", "50");
    for (String kv : opts.getOrDefault("prop", List.of())) {
      int eq = kv.indexOf('=');
      if (eq < 1) throw new IllegalArgumentException("--prop expects key=value, not " + kv);
      base.put(kv.substring(0, eq), kv.substring(eq + 1));
    }
    String defaultTopic = one(opts, "topic", null);
    String defaultCompression = one(opts, "compression", "none");
    Map<String, KafkaProducer<byte[], byte[]>> producers = new HashMap<>();
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    try {
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (line.isBlank()) continue;
        JsonNode r = JSON.readTree(line);
        String topic = r.hasNonNull("topic") ? r.get("topic").asText() : defaultTopic;
        if (topic == null) throw new IllegalArgumentException("no topic: give --topic or a \"topic\" field");
        String compression = r.hasNonNull("compression") ? r.get("compression").asText() : defaultCompression;
        KafkaProducer<byte[], byte[]> producer = producers.computeIfAbsent(compression, c -> {
          Properties p = new Properties();
          p.putAll(base);
          p.put("compression.type", c);
          return new KafkaProducer<>(p);
        });
        List<Header> headers = new ArrayList<>();
        for (JsonNode h : r.path("headers")) headers.add(new RecordHeader(h.get("key").asText(), bytes(h, "value")));
        Integer partition = r.hasNonNull("partition") ? r.get("partition").asInt() : null;
        Long timestamp = r.hasNonNull("timestampMs") ? r.get("timestampMs").asLong() : null;
        sent.add(producer.send(new ProducerRecord<>(topic, partition, timestamp, bytes(r, "key"), bytes(r, "value"), headers)));
      }
      for (KafkaProducer<byte[], byte[]> p : producers.values()) p.flush();
      for (Future<RecordMetadata> f : sent) f.get();
    } finally {
      for (KafkaProducer<byte[], byte[]> p : producers.values()) p.close();
    }
    out.println("{\"sent\":" + sent.size() + "}");
  }

  private static void produceAccounts(Map<String, List<String>> opts, String bootstrap, PrintStream out) throws Exception {
    String topic = one(opts, "topic", null);
    if (topic == null) throw new IllegalArgumentException("--topic is required");
    long records = Long.parseLong(one(opts, "records", "0"));
    int accounts = Integer.parseInt(one(opts, "accounts", "0"));
    if (records < 1 || accounts < 1) throw new IllegalArgumentException("--records and --accounts must be at least 1");
    int size = Integer.parseInt(one(opts, "size", "512"));
    double ratePerSec = Double.parseDouble(one(opts, "rate-per-sec", "0"));
    java.util.Random random = new java.util.Random(Long.parseLong(one(opts, "seed", "1")));
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.serializer", ByteArraySerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());
    p.put("acks", "all");
    p.put("linger.ms", ratePerSec > 0 ? "5" : "20");
    p.put("batch.size", "524288");
    p.put("compression.type", "none");
    for (String kv : opts.getOrDefault("prop", List.of())) {
      int eq = kv.indexOf('=');
      if (eq < 1) throw new IllegalArgumentException("--prop expects key=value, not " + kv);
      p.put(kv.substring(0, eq), kv.substring(eq + 1));
    }
    String[] names = new String[accounts];
    for (int a = 0; a < accounts; a++) names[a] = String.format("acct-%06d", a);
    long[] totals = new long[accounts];
    long[] counts = new long[accounts];
    java.util.concurrent.atomic.AtomicReference<Exception> failure = new java.util.concurrent.atomic.AtomicReference<>();
    long startNs = System.nanoTime();
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      for (long i = 0; i < records && failure.get() == null; i++) {
        if (ratePerSec > 0 && i % 50 == 0) pace(startNs, i, ratePerSec);
        int a = random.nextInt(accounts);
        int amount = 1 + random.nextInt(1000);
        totals[a] += amount;
        counts[a] += 1;
        String account = names[a];
        StringBuilder v = new StringBuilder(size).append("{\"account\":\"").append(account).append("\",\"amount\":").append(amount).append(",\"pad\":\"");
        while (v.length() < size - 2) v.append('x');
        byte[] value = v.append("\"}").toString().getBytes(StandardCharsets.UTF_8);
        producer.send(new ProducerRecord<>(topic, account.getBytes(StandardCharsets.UTF_8), value), (md, e) -> {
          if (e != null) failure.compareAndSet(null, e);
        });
      }
      producer.flush();
    }
    if (failure.get() != null) throw failure.get();
    out.print("{\"sent\":" + records + ",\"totals\":{");
    boolean first = true;
    for (int a = 0; a < accounts; a++) {
      if (counts[a] == 0) continue;
      out.print((first ? "" : ",") + "\"" + names[a] + "\":[" + totals[a] + "," + counts[a] + "]");
      first = false;
    }
    out.println("}}");
  }

  /** Sleeps until record `i` is due at `ratePerSec` records/s from `startNs`. */
  private static void pace(long startNs, long i, double ratePerSec) throws InterruptedException {
    long dueNs = startNs + (long) (i * 1e9 / ratePerSec);
    long aheadMs = (dueNs - System.nanoTime()) / 1_000_000;
    if (aheadMs > 0) Thread.sleep(aheadMs);
  }

  /** `name` as UTF-8 text, or `nameBase64` as bytes; null when both are missing or null. */
  private static byte[] bytes(JsonNode node, String name) {
    if (node.hasNonNull(name + "Base64")) return Base64.getDecoder().decode(node.get(name + "Base64").asText());
    if (node.hasNonNull(name)) return node.get(name).asText().getBytes(StandardCharsets.UTF_8);
    return null;
  }

  private static String base64(byte[] b) {
    return b == null ? null : Base64.getEncoder().encodeToString(b);
  }

  private static void consume(Map<String, List<String>> opts, String bootstrap, PrintStream out) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    p.put("enable.auto.commit", "false");
    p.put("isolation.level", one(opts, "isolation", "read_uncommitted"));
    Map<TopicPartition, long[]> ranges = new HashMap<>();
    for (String spec : opts.getOrDefault("assign", List.of())) {
      String[] parts = spec.split(":");
      if (parts.length != 4) throw new IllegalArgumentException("--assign expects TOPIC:PARTITION:FROM:UNTIL, not " + spec);
      ranges.put(new TopicPartition(parts[0], Integer.parseInt(parts[1])), new long[] {Long.parseLong(parts[2]), Long.parseLong(parts[3])});
    }
    if (ranges.isEmpty()) throw new IllegalArgumentException("--assign is required");
    long deadline = System.currentTimeMillis() + Long.parseLong(one(opts, "timeout-ms", "30000"));
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
      consumer.assign(ranges.keySet());
      ranges.forEach((tp, r) -> consumer.seek(tp, r[0]));
      while (!ranges.isEmpty()) {
        if (System.currentTimeMillis() > deadline) throw new IllegalStateException("timed out; unfinished: " + ranges.keySet());
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
          long[] range = ranges.get(new TopicPartition(r.topic(), r.partition()));
          if (range == null || r.offset() < range[0] || r.offset() >= range[1]) continue;
          out.println(JSON.writeValueAsString(toJson(r)));
        }
        ranges.entrySet().removeIf(e -> consumer.position(e.getKey()) >= e.getValue()[1]);
      }
    }
  }

  private static void groupCommit(Map<String, List<String>> opts, String bootstrap, PrintStream out) throws Exception {
    String group = one(opts, "group", null);
    String topic = one(opts, "topic", null);
    if (group == null || topic == null) throw new IllegalArgumentException("--group and --topic are required");
    Map<TopicPartition, OffsetAndMetadata> targets = new HashMap<>();
    for (String spec : opts.getOrDefault("commit", List.of())) {
      String[] parts = spec.split(":");
      if (parts.length != 2) throw new IllegalArgumentException("--commit expects PARTITION:OFFSET, not " + spec);
      targets.put(new TopicPartition(topic, Integer.parseInt(parts[0])), new OffsetAndMetadata(Long.parseLong(parts[1])));
    }
    if (targets.isEmpty()) throw new IllegalArgumentException("--commit is required");
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("group.id", group);
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    p.put("enable.auto.commit", "false");
    p.put("auto.offset.reset", "earliest");
    long deadline = System.currentTimeMillis() + Long.parseLong(one(opts, "timeout-ms", "60000"));
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
      consumer.subscribe(List.of(topic));
      Set<TopicPartition> reached = new HashSet<>();
      while (reached.size() < targets.size()) {
        if (System.currentTimeMillis() > deadline) throw new IllegalStateException("timed out; reached only " + reached);
        consumer.poll(Duration.ofMillis(200));
        for (TopicPartition tp : consumer.assignment()) {
          OffsetAndMetadata target = targets.get(tp);
          if (target == null || consumer.position(tp) >= target.offset()) {
            consumer.pause(Set.of(tp));
            if (target != null) reached.add(tp);
          }
        }
      }
      // A poll hands over whole batches, so positions may be past the targets: commit exactly the targets.
      consumer.commitSync(targets);
    }
    out.println("{\"committed\":" + targets.size() + "}");
  }

  private static ObjectNode toJson(ConsumerRecord<byte[], byte[]> r) {
    ObjectNode o = JSON.createObjectNode();
    o.put("topic", r.topic());
    o.put("partition", r.partition());
    o.put("offset", r.offset());
    o.put("timestampMs", r.timestamp());
    o.put("timestampType", r.timestampType().name);
    o.put("keyBase64", base64(r.key()));
    o.put("valueBase64", base64(r.value()));
    ArrayNode headers = o.putArray("headers");
    for (Header h : r.headers()) headers.addObject().put("key", h.key()).put("valueBase64", base64(h.value()));
    return o;
  }
}
