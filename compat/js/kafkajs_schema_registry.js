'use strict'
// kafkajs with @kafkajs/confluent-schema-registry against kbroker's built-in
// Schema Registry, driven by compat/schema_registry_js_test.go.
//
//   node kafkajs_schema_registry.js BROKER REGISTRY_URL TOPIC_PREFIX
//   node kafkajs_schema_registry.js BROKER REGISTRY_URL read TOPIC N
//
// For Avro, Protobuf and JSON Schema it registers a schema under
// <prefix>-<type>-value, serializes two values with the library's own
// encoders (avsc, protobufjs, ajv), produces them with kafkajs, consumes
// them back and decodes them, then checks that the registry refuses an
// incompatible Avro schema. It prints one JSON line: the schema ids, the
// decoded values and the refusal. "read" decodes the first N records of
// TOPIC (written by someone else) and prints them as a JSON array. Any
// failure exits non-zero.
const { Kafka, logLevel } = require('kafkajs')
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry')

const [broker, registryURL, prefix, readTopic, readN] = process.argv.slice(2)
if (!prefix || (prefix === 'read' && !readN)) {
  console.error('usage: kafkajs_schema_registry.js BROKER REGISTRY_URL TOPIC_PREFIX')
  process.exit(2)
}

const cases = {
  avro: {
    type: SchemaType.AVRO,
    schema: JSON.stringify({
      type: 'record',
      name: 'Order',
      namespace: 'kb',
      fields: [
        { name: 'id', type: 'string' },
        { name: 'qty', type: 'int' },
        { name: 'note', type: ['null', 'string'], default: null }
      ]
    }),
    values: [{ id: 'a1', qty: 2, note: null }, { id: 'a2', qty: 5, note: 'rush' }]
  },
  protobuf: {
    type: SchemaType.PROTOBUF,
    schema: 'syntax = "proto3";\npackage kb;\nmessage Order {\n  string id = 1;\n  int32 qty = 2;\n  repeated string tags = 3;\n}\n',
    values: [{ id: 'p1', qty: 3, tags: ['x'] }, { id: 'p2', qty: 7, tags: [] }]
  },
  json: {
    type: SchemaType.JSON,
    schema: JSON.stringify({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { id: { type: 'string' }, qty: { type: 'integer' } },
      required: ['id', 'qty']
    }),
    values: [{ id: 'j1', qty: 1 }, { id: 'j2', qty: 9 }]
  }
}

async function main () {
  if (prefix === 'read') {
    const kafka = new Kafka({ clientId: 'kbroker-compat-sr', brokers: [broker], logLevel: logLevel.WARN })
    console.log(JSON.stringify(await consume(kafka, readTopic, Number(readN), new SchemaRegistry({ host: registryURL }), 'read')))
    return
  }
  const registry = new SchemaRegistry({ host: registryURL })
  const kafka = new Kafka({ clientId: 'kbroker-compat-sr', brokers: [broker], logLevel: logLevel.WARN })
  const admin = kafka.admin()
  const producer = kafka.producer()
  await admin.connect()
  await producer.connect()
  const out = { ids: {}, decoded: {} }
  try {
    for (const [name, c] of Object.entries(cases)) {
      const topic = `${prefix}-${name}`
      await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true })
      const { id } = await registry.register({ type: c.type, schema: c.schema }, { subject: `${topic}-value` })
      // Registering the same schema again returns the same id.
      const again = await registry.register({ type: c.type, schema: c.schema }, { subject: `${topic}-value` })
      if (again.id !== id) throw new Error(`${name}: re-registration got id ${again.id}, want ${id}`)
      if ((await registry.getLatestSchemaId(`${topic}-value`)) !== id) throw new Error(`${name}: latest id is not ${id}`)
      out.ids[name] = id
      const messages = []
      for (const v of c.values) messages.push({ value: await registry.encode(id, v) })
      await producer.send({ topic, messages })
      out.decoded[name] = await consume(kafka, topic, c.values.length, registry)
    }
    // BACKWARD (the default) refuses a new required field without a default.
    const avro = JSON.parse(cases.avro.schema)
    avro.fields.push({ name: 'customer', type: 'string' })
    try {
      await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(avro) }, { subject: `${prefix}-avro-value` })
      out.incompatible = 'accepted'
    } catch (e) {
      out.incompatible = e.name + ': ' + e.message
    }
  } finally {
    await producer.disconnect()
    await admin.disconnect()
  }
  console.log(JSON.stringify(out))
}

async function consume (kafka, topic, n, registry, group = 'reader') {
  const consumer = kafka.consumer({ groupId: `${topic}-${group}` })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const values = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${topic}: ${values.length} of ${n} records in 60 s`)), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        values.push(await registry.decode(message.value))
        if (values.length === n) {
          clearTimeout(timer)
          resolve()
        }
      }
    }).catch(reject)
  })
  await consumer.disconnect()
  return values
}

main().catch(e => {
  console.error('kafkajs_schema_registry:', e && e.stack ? e.stack : e)
  process.exit(1)
})
