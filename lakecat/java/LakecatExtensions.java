/*
 * lakecat's Spark SQL extension: two functions, lakecat_from_json(text, schema as JSON, corrupt-record column) and
 * lakecat_json_object_keys(text).
 *
 * lakecat_from_json is Spark's own from_json in PERMISSIVE mode (the same JacksonParser, JSONOptions and FailureSafeParser, built
 * the way Spark's JsonToStructsEvaluator builds them) with one difference: Jackson reads the record's UTF-8 bytes
 * directly. Spark's from_json wraps every record in an InputStreamReader, whose decoder allocates an 8 KB buffer
 * per record; its jobs spend about a fifth of their executor time there. A record whose first bytes would make
 * Jackson guess another encoding (a zero byte among the first four, a byte order mark) takes Spark's own path, so
 * every record parses to exactly what from_json gives for it. lakecat_json_object_keys is Spark's json_object_keys
 * (JsonExpressionUtils.jsonObjectKeys) over the same parser.
 *
 * lakecat compiles this file with the JDK's javac against the pyspark wheel's jars on first use (lakecat/jvm.py).
 */
package lakecat.spark;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.Arrays;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.json.SharedFactory;
import org.apache.spark.sql.catalyst.expressions.objects.Invoke;
import org.apache.spark.sql.catalyst.json.CreateJacksonParser;
import org.apache.spark.sql.catalyst.json.JSONOptions;
import org.apache.spark.sql.catalyst.json.JacksonParser;
import org.apache.spark.sql.catalyst.util.FailureSafeParser;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.PermissiveMode$;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.AbstractDataType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.ObjectType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Function1;
import scala.Function2;
import scala.Tuple3;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.BoxedUnit;

public final class LakecatExtensions implements Function1<SparkSessionExtensions, BoxedUnit> {
  public static final String FROM_JSON = "lakecat_from_json";
  public static final String OBJECT_KEYS = "lakecat_json_object_keys";

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    Function1<Seq<Expression>, Expression> fromJson = LakecatExtensions::fromJson;
    extensions.injectFunction(new Tuple3<>(FunctionIdentifier.apply(FROM_JSON),
        new ExpressionInfo(JsonEvaluator.class.getName(), FROM_JSON), fromJson));
    Function1<Seq<Expression>, Expression> objectKeys = LakecatExtensions::objectKeys;
    extensions.injectFunction(new Tuple3<>(FunctionIdentifier.apply(OBJECT_KEYS),
        new ExpressionInfo(ObjectKeys.class.getName(), OBJECT_KEYS), objectKeys));
    return BoxedUnit.UNIT;
  }

  /** lakecat_json_object_keys(text STRING): the top-level keys of a JSON object, null for anything else. */
  static Expression objectKeys(Seq<Expression> args) {
    if (args.size() != 1) {
      throw new IllegalArgumentException(OBJECT_KEYS + " takes 1 argument: text");
    }
    return invokeEvaluate(new ObjectKeys(), DataTypes.createArrayType(DataTypes.StringType), args.apply(0));
  }

  /** evaluator.evaluate(text) as an expression with generated code: null for a null text, deterministic. */
  private static Expression invokeEvaluate(Serializable evaluator, DataType type, Expression text) {
    Seq<AbstractDataType> noInputTypes = CollectionConverters.asScala(Arrays.<AbstractDataType>asList()).toSeq();
    return new Invoke(Literal.create(evaluator, new ObjectType(evaluator.getClass())), "evaluate", type,
        CollectionConverters.asScala(Arrays.asList(text)).toSeq(), noInputTypes, true, true, true);
  }

  /** Spark's JsonExpressionUtils.jsonObjectKeys, reading the record's bytes (JsonEvaluator.createParser). */
  public static final class ObjectKeys implements Serializable {
    private static final long serialVersionUID = 1L;

    public GenericArrayData evaluate(UTF8String json) {
      if (json == null) {
        return null;
      }
      try (JsonParser parser = JsonEvaluator.createParser(SharedFactory.jsonFactory(), json)) {
        if (parser.nextToken() == null || parser.currentToken() != JsonToken.START_OBJECT) {
          return null;
        }
        java.util.List<UTF8String> keys = new java.util.ArrayList<>();
        while (parser.nextValue() != null && parser.currentName() != null) {
          keys.add(UTF8String.fromString(parser.currentName()));
          parser.skipChildren();
        }
        return new GenericArrayData(keys.toArray());
      } catch (java.io.IOException e) {
        return null;
      }
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof ObjectKeys;
    }

    @Override
    public int hashCode() {
      return ObjectKeys.class.hashCode();
    }
  }

  /** lakecat_from_json(text STRING, schema: StructType.json() STRING literal, corrupt-record column STRING literal). */
  static Expression fromJson(Seq<Expression> args) {
    if (args.size() != 3) {
      throw new IllegalArgumentException(FROM_JSON + " takes 3 arguments: text, the schema as JSON, the corrupt-record column");
    }
    Expression text = args.apply(0);
    String json = literalString(args.apply(1));
    String corrupt = literalString(args.apply(2));
    StructType schema = (StructType) DataType.fromJson(json).asNullable();
    StructField corruptField = schema.fields()[schema.fieldIndex(corrupt)];
    if (!corruptField.dataType().equals(DataTypes.StringType)) {
      throw new IllegalArgumentException("the corrupt-record column " + corrupt + " must be a STRING");
    }
    return invokeEvaluate(new JsonEvaluator(schema, corrupt, SQLConf.get().sessionLocalTimeZone()), schema, text);
  }

  /** A constant string argument (a literal; over Spark Connect, a string type with the session's collation). */
  private static String literalString(Expression e) {
    Object value = e.foldable() && e.dataType() instanceof StringType ? e.eval(null) : null;
    if (value == null) {
      throw new IllegalArgumentException(FROM_JSON + ": the schema and the corrupt-record column must be string literals");
    }
    return value.toString();
  }

  /** Spark's JsonToStructsEvaluator for a struct schema in PERMISSIVE mode, reading each record's bytes directly. */
  public static final class JsonEvaluator implements Serializable {
    private static final long serialVersionUID = 1L;
    private final StructType schema;
    private final String corrupt;
    private final String timeZoneId;
    private transient FailureSafeParser<UTF8String> parser;

    JsonEvaluator(StructType schema, String corrupt, String timeZoneId) {
      this.schema = schema;
      this.corrupt = corrupt;
      this.timeZoneId = timeZoneId;
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof JsonEvaluator && ((JsonEvaluator) other).schema.equals(schema)
          && ((JsonEvaluator) other).corrupt.equals(corrupt) && ((JsonEvaluator) other).timeZoneId.equals(timeZoneId);
    }

    @Override
    public int hashCode() {
      return java.util.Objects.hash(schema, corrupt, timeZoneId);
    }

    public InternalRow evaluate(UTF8String json) {
      if (json == null) {
        return null;
      }
      if (parser == null) {
        parser = newParser();
      }
      Iterator<InternalRow> rows = parser.parse(json);
      return rows.hasNext() ? rows.next() : null;
    }

    private FailureSafeParser<UTF8String> newParser() {
      java.util.Map<String, String> given = new java.util.HashMap<>();
      given.put("mode", "PERMISSIVE");
      given.put("columnNameOfCorruptRecord", corrupt);
      Map<String, String> options = scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(given));
      JSONOptions parsed = new JSONOptions(options, timeZoneId, corrupt);
      StructField[] kept = Arrays.stream(schema.fields()).filter(f -> !f.name().equals(corrupt)).toArray(StructField[]::new);
      JacksonParser raw = new JacksonParser(new StructType(kept), parsed, false, JacksonParser.$lessinit$greater$default$4());
      Function2<JsonFactory, UTF8String, JsonParser> create = (factory, record) -> {
        try {
          return createParser(factory, record);
        } catch (java.io.IOException e) {
          throw JsonEvaluator.<RuntimeException>rethrow(e);  // as Spark's own (Scala) createParser lets it through
        }
      };
      Function1<UTF8String, UTF8String> identity = s -> s;
      Function1<UTF8String, scala.collection.Iterable<InternalRow>> parse = input -> raw.parse(input, create, identity);
      return new FailureSafeParser<>(parse, PermissiveMode$.MODULE$, schema, corrupt);
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> E rethrow(Throwable e) throws E {
      throw (E) e;
    }

    /** Jackson over the record's bytes, unless its first bytes would make Jackson detect an encoding other than
     * UTF-8 (ByteSourceJsonBootstrapper: a byte order mark, or a zero byte among the first four). */
    static JsonParser createParser(JsonFactory factory, UTF8String record) throws java.io.IOException {
      ByteBuffer bb = record.getByteBuffer();
      if (!bb.hasArray()) {
        return CreateJacksonParser.utf8String(factory, record);
      }
      byte[] bytes = bb.array();
      int offset = bb.arrayOffset() + bb.position();
      int length = bb.remaining();
      if (length == 0) {
        return CreateJacksonParser.utf8String(factory, record);
      }
      int first = bytes[offset] & 0xFF;
      if (first == 0xEF || first == 0xFE || first == 0xFF) {
        return CreateJacksonParser.utf8String(factory, record);
      }
      for (int i = 0; i < Math.min(4, length); i++) {
        if (bytes[offset + i] == 0) {
          return CreateJacksonParser.utf8String(factory, record);
        }
      }
      return factory.createParser(bytes, offset, length);
    }
  }
}
