/*
 * AWS's Glue Schema Registry serializer (GlueSchemaRegistryKafkaSerializer) as a test producer, driven
 * by JSON lines (run through test/support/glue-serde.ts):
 *
 *   GlueSerdeTool --endpoint URL --region R --registry NAME
 *     reads one value per stdin line and serializes it as a Kafka producer configured with the Glue
 *     serializer would, registering its schema in the registry on first use (auto-registration):
 *     {"format": "AVRO"|"JSON"|"PROTOBUF", "schemaName", "schema", "value": <JSON>, "message"?: <Protobuf
 *      message full name>, "compression"?: "NONE"|"ZLIB"}
 *     AVRO values are Avro's JSON encoding of the record; JSON values are the document; PROTOBUF values
 *     are a JSON object of the message's fields (scalars, enums by name, nested messages).
 *     Prints one line per value: {"base64": <the serialized bytes>}.
 */
import com.amazonaws.services.schemaregistry.deserializers.protobuf.ProtobufSchemaParser;
import com.amazonaws.services.schemaregistry.serializers.GlueSchemaRegistryKafkaSerializer;
import com.amazonaws.services.schemaregistry.serializers.json.JsonDataWithSchema;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Descriptors;
import com.google.protobuf.DynamicMessage;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.io.DecoderFactory;

public final class GlueSerdeTool {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) opts.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    Map<String, GlueSchemaRegistryKafkaSerializer> serializers = new HashMap<>();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (line.isBlank()) continue;
      JsonNode spec = JSON.readTree(line);
      String format = spec.get("format").asText();
      String schemaName = spec.get("schemaName").asText();
      String compression = spec.has("compression") ? spec.get("compression").asText() : "NONE";
      GlueSchemaRegistryKafkaSerializer serializer = serializers.computeIfAbsent(
          format + "/" + schemaName + "/" + compression, k -> serializer(opts, format, schemaName, compression));
      byte[] bytes = serializer.serialize("topic", data(format, spec));
      out.println("{\"base64\":\"" + Base64.getEncoder().encodeToString(bytes) + "\"}");
    }
    out.flush();
  }

  private static GlueSchemaRegistryKafkaSerializer serializer(Map<String, String> opts, String format, String schemaName, String compression) {
    Map<String, Object> config = new HashMap<>();
    config.put("endpoint", opts.get("endpoint"));
    config.put("region", opts.get("region"));
    config.put("registry.name", opts.get("registry"));
    config.put("schemaName", schemaName);
    config.put("dataFormat", format);
    config.put("compression", compression);
    config.put("schemaAutoRegistrationEnabled", true);
    config.put("compatibility", "NONE");
    GlueSchemaRegistryKafkaSerializer serializer = new GlueSchemaRegistryKafkaSerializer();
    serializer.configure(config, false);
    return serializer;
  }

  private static Object data(String format, JsonNode spec) throws Exception {
    String schema = spec.get("schema").asText();
    JsonNode value = spec.get("value");
    switch (format) {
      case "AVRO": {
        Schema avro = new Schema.Parser().parse(schema);
        return new GenericDatumReader<Object>(avro).read(null, DecoderFactory.get().jsonDecoder(avro, JSON.writeValueAsString(value)));
      }
      case "JSON":
        return JsonDataWithSchema.builder(schema, JSON.writeValueAsString(value)).build();
      case "PROTOBUF": {
        Descriptors.FileDescriptor file = ProtobufSchemaParser.parse(schema, spec.get("schemaName").asText() + ".proto");
        Descriptors.Descriptor type = null;
        for (Descriptors.Descriptor d : allMessages(file)) if (d.getFullName().equals(spec.get("message").asText())) type = d;
        if (type == null) throw new IllegalArgumentException("no message " + spec.get("message").asText() + " in the schema");
        return message(type, value);
      }
      default:
        throw new IllegalArgumentException("unknown format " + format);
    }
  }

  private static java.util.List<Descriptors.Descriptor> allMessages(Descriptors.FileDescriptor file) {
    java.util.List<Descriptors.Descriptor> all = new java.util.ArrayList<>();
    java.util.ArrayDeque<Descriptors.Descriptor> queue = new java.util.ArrayDeque<>(file.getMessageTypes());
    while (!queue.isEmpty()) {
      Descriptors.Descriptor d = queue.remove();
      all.add(d);
      queue.addAll(d.getNestedTypes());
    }
    return all;
  }

  /** A DynamicMessage of `type` from a JSON object of its fields (scalars, enums by name, nested messages). */
  private static DynamicMessage message(Descriptors.Descriptor type, JsonNode value) {
    DynamicMessage.Builder builder = DynamicMessage.newBuilder(type);
    for (Iterator<Map.Entry<String, JsonNode>> it = value.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      Descriptors.FieldDescriptor field = type.findFieldByName(e.getKey());
      if (field == null) throw new IllegalArgumentException("no field " + e.getKey() + " in " + type.getFullName());
      JsonNode v = e.getValue();
      Object converted;
      switch (field.getJavaType()) {
        case STRING: converted = v.asText(); break;
        case INT: converted = v.asInt(); break;
        case LONG: converted = v.asLong(); break;
        case BOOLEAN: converted = v.asBoolean(); break;
        case DOUBLE: converted = v.asDouble(); break;
        case FLOAT: converted = (float) v.asDouble(); break;
        case ENUM: converted = field.getEnumType().findValueByName(v.asText()); break;
        case MESSAGE: converted = message(field.getMessageType(), v); break;
        default: throw new IllegalArgumentException("field type " + field.getJavaType() + " is not supported here");
      }
      builder.setField(field, converted);
    }
    return builder.build();
  }
}
