"""confluent-kafka for Python (PyPI's, installed into compat/py/.deps by
scripts/test.sh) with its SchemaRegistryClient and its Avro and
JSON Schema serializers against kbroker's built-in Schema Registry, driven
by compat/schema_registry_python_test.go.

    confluent_kafka_schema_registry.py BROKER REGISTRY_URL TOPIC_PREFIX

For Avro (fastavro), Protobuf (a message class built at run time from a
descriptor: the serializer registers it as a base64 FileDescriptorProto)
and JSON Schema (jsonschema) it serializes two values
(the serializer registers the schema under <topic>-value), produces them,
consumes and deserializes them; then it asks the registry a compatibility
check that must fail, registers an incompatible schema (refused), and
deletes a subject. It prints one JSON line; any failure exits non-zero.
"""
import json
import sys

import confluent_kafka
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from confluent_kafka.serialization import MessageField, SerializationContext

AVRO = json.dumps({
    "type": "record", "name": "Order", "namespace": "kb",
    "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"},
               {"name": "note", "type": ["null", "string"], "default": None}],
})
JSON_SCHEMA = json.dumps({
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
    "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}}, "required": ["id", "qty"],
})


def order_class():
    """kb.Order {string id = 1; int32 qty = 2;} without protoc."""
    fdp = descriptor_pb2.FileDescriptorProto(name="kb_order.proto", package="kb", syntax="proto3")
    msg = fdp.message_type.add(name="Order")
    F = descriptor_pb2.FieldDescriptorProto
    msg.field.add(name="id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    msg.field.add(name="qty", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    desc = pool.FindMessageTypeByName("kb.Order")
    if hasattr(message_factory, "GetMessageClass"):  # protobuf 4.21+
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def serializers(kind, registry):
    # confluent-kafka 1.7 takes (schema, client, ...); 1.8+ (client, schema, ...).
    to_dict = lambda obj, ctx: obj
    from_dict = lambda d, ctx: d
    if kind == "protobuf":
        order = order_class()
        to_msg = lambda d: json_format.ParseDict(d, order())
        # 1.8.2+ insists on use.deprecated.format; 1.7 does not know it.
        try:
            ser = ProtobufSerializer(order, registry, {"use.deprecated.format": False})
            de = ProtobufDeserializer(order, {"use.deprecated.format": False})
        except (TypeError, ValueError):
            ser, de = ProtobufSerializer(order, registry), ProtobufDeserializer(order)
        return (lambda d, ctx: ser(to_msg(d), ctx)), (lambda b, ctx: json_format.MessageToDict(de(b, ctx)))
    if kind == "avro":
        try:
            return AvroSerializer(registry, AVRO, to_dict), AvroDeserializer(registry, AVRO, from_dict)
        except TypeError:
            return AvroSerializer(AVRO, registry, to_dict), AvroDeserializer(AVRO, registry, from_dict)
    try:
        return JSONSerializer(JSON_SCHEMA, registry, to_dict), JSONDeserializer(JSON_SCHEMA, from_dict)
    except TypeError:
        return JSONSerializer(registry, JSON_SCHEMA, to_dict), JSONDeserializer(JSON_SCHEMA, from_dict)


def main():
    broker, url, prefix = sys.argv[1:4]
    registry = SchemaRegistryClient({"url": url})
    admin = AdminClient({"bootstrap.servers": broker})
    values = {
        "avro": [{"id": "a1", "qty": 2, "note": None}, {"id": "a2", "qty": 5, "note": "rush"}],
        "json": [{"id": "j1", "qty": 1}, {"id": "j2", "qty": 9}],
        "protobuf": [{"id": "p1", "qty": 3}, {"id": "p2", "qty": 7}],
    }
    version = getattr(confluent_kafka, "__version__", None) or confluent_kafka.version()[0]
    out = {"version": version, "ids": {}, "decoded": {}}
    for kind, vals in values.items():
        topic = "%s-%s" % (prefix, kind)
        for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            f.result(timeout=30)
        ser, de = serializers(kind, registry)
        producer = Producer({"bootstrap.servers": broker})
        for v in vals:
            producer.produce(topic, value=ser(v, SerializationContext(topic, MessageField.VALUE)))
        if producer.flush(30) != 0:
            raise SystemExit("%s: records left unsent" % topic)
        out["ids"][kind] = registry.get_latest_version(topic + "-value").schema_id
        consumer = Consumer({"bootstrap.servers": broker, "group.id": topic + "-reader",
                             "auto.offset.reset": "earliest"})
        consumer.subscribe([topic])
        got = []
        for _ in range(600):
            if len(got) == len(vals):
                break
            msg = consumer.poll(0.1)
            if msg is None:
                continue
            if msg.error():
                raise SystemExit("%s: %s" % (topic, msg.error()))
            got.append(de(msg.value(), SerializationContext(topic, MessageField.VALUE)))
        consumer.close()
        if len(got) != len(vals):
            raise SystemExit("%s: %d of %d records" % (topic, len(got), len(vals)))
        out["decoded"][kind] = got

    # BACKWARD (the default) refuses a new required field without a default.
    incompatible = json.loads(AVRO)
    incompatible["fields"].append({"name": "customer", "type": "string"})
    schema = Schema(json.dumps(incompatible), "AVRO")
    out["compatible"] = registry.test_compatibility(prefix + "-avro-value", schema)
    try:
        registry.register_schema(prefix + "-avro-value", schema)
        out["refused"] = None
    except SchemaRegistryError as e:
        out["refused"] = {"status": e.http_status_code, "code": e.error_code}
    out["deleted"] = registry.delete_subject(prefix + "-json-value")
    out["subjects"] = registry.get_subjects()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
