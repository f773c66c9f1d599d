'use strict'
// kafkajs as a kbroker compat client, driven by compat/matrix_proc_test.go
// (the commands are described there). Codecs: gzip is built in, snappy
// comes from kafkajs-snappy, lz4 from lz4js (pure JavaScript, LZ4 frames as
// Kafka uses them) through kafkajs's codec interface; zstd would need the
// native @kafkajs/zstd and is not tested.
const { Kafka, CompressionTypes, CompressionCodecs, Partitioners, logLevel } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const lz4js = require('lz4js')
const readline = require('readline')

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  async compress (encoder) { return Buffer.from(lz4js.compress(encoder.buffer)) },
  async decompress (buffer) { return Buffer.from(lz4js.decompress(buffer)) }
})

const TIMEOUT_MS = 60000
const RETENTION_MS = '3600000'
const codecs = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4
}

function fail (msg) {
  const err = new Error('kafkajs: ' + msg)
  err.fatal = true
  throw err
}

function client (addr) {
  return new Kafka({
    clientId: 'kbroker-compat',
    brokers: [addr],
    logLevel: logLevel.WARN,
    connectionTimeout: 10000,
    requestTimeout: TIMEOUT_MS,
    retry: { retries: 5 }
  })
}

async function admin (addr, topic) {
  const adm = client(addr).admin()
  await adm.connect()
  try {
    const created = await adm.createTopics({
      waitForLeaders: true,
      timeout: TIMEOUT_MS,
      topics: [{ topic, numPartitions: 2, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: RETENTION_MS }] }]
    })
    if (!created) fail('createTopics: topic already existed')
    const topics = await adm.listTopics()
    if (!topics.includes(topic)) fail('listTopics lacks ' + topic)
    const md = await adm.fetchTopicMetadata({ topics: [topic] })
    if (md.topics[0].partitions.length !== 2) fail('fetchTopicMetadata: ' + JSON.stringify(md))
    const cfg = await adm.describeConfigs({ includeSynonyms: false, resources: [{ type: 2 /* TOPIC */, name: topic }] })
    const entry = cfg.resources[0].configEntries.find(e => e.configName === 'retention.ms')
    if (!entry || entry.configValue !== RETENTION_MS) fail('describeConfigs retention.ms: ' + JSON.stringify(entry))
    await adm.listGroups()
    await adm.fetchTopicOffsets(topic)
    await adm.deleteTopics({ topics: [topic], timeout: TIMEOUT_MS })
    if ((await adm.listTopics()).includes(topic)) fail('listTopics still has ' + topic + ' after deleteTopics')
  } finally {
    await adm.disconnect()
  }
}

async function create (addr, topic, partitions) {
  const adm = client(addr).admin()
  await adm.connect()
  try {
    await adm.createTopics({ waitForLeaders: true, timeout: TIMEOUT_MS, topics: [{ topic, numPartitions: Number(partitions), replicationFactor: 1 }] })
  } finally {
    await adm.disconnect()
  }
}

async function readStdin () {
  const recs = []
  const rl = readline.createInterface({ input: process.stdin })
  for await (const line of rl) {
    if (line.trim() !== '') recs.push(JSON.parse(line))
  }
  return recs
}

async function produce (addr, topic, codec, idempotent) {
  if (!(codec in codecs)) fail('unsupported codec ' + codec)
  const recs = await readStdin()
  const producer = client(addr).producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: idempotent === '1', maxInFlightRequests: idempotent === '1' ? 1 : undefined })
  await producer.connect()
  try {
    const messages = recs.map(r => ({
      key: r.k,
      value: r.v,
      headers: Object.fromEntries(r.h.map(([k, v]) => [k, v]))
    }))
    const res = await producer.send({ topic, acks: -1, timeout: TIMEOUT_MS, compression: codecs[codec], messages })
    // kafkajs reports one base offset per partition; messages for one
    // partition keep their order, so offsets follow from it.
    const base = {}
    for (const r of res) base[r.partition] = BigInt(r.baseOffset)
    // The default partitioner (murmur2 of the key, as Java's) placed each
    // message; the same function says where.
    const partitioner = Partitioners.DefaultPartitioner()
    const partitionMetadata = await describePartitions(addr, topic)
    for (const r of recs) {
      const p = partitioner({ topic, partitionMetadata, message: { key: r.k } })
      const o = base[p]
      base[p] = o + 1n
      console.log(JSON.stringify({ k: r.k, p, o: Number(o) }))
    }
  } finally {
    await producer.disconnect()
  }
}

async function describePartitions (addr, topic) {
  const adm = client(addr).admin()
  await adm.connect()
  try {
    const md = await adm.fetchTopicMetadata({ topics: [topic] })
    return md.topics[0].partitions
  } finally {
    await adm.disconnect()
  }
}

async function consume (addr, topic, group, instance, n) {
  if (instance) fail('kafkajs has no group.instance.id')
  n = Number(n)
  const consumer = client(addr).consumer({ groupId: group, maxWaitTimeInMs: 200, sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let got = 0
  let resolveDone
  const done = new Promise(resolve => { resolveDone = resolve })
  const timer = setTimeout(() => resolveDone(new Error(`consumed ${got} of ${n} records before the deadline`)), TIMEOUT_MS)
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ topic: t, partition, message }) => {
      got++
      const h = Object.entries(message.headers || {}).map(([k, v]) => [k, v.toString()])
      console.log(JSON.stringify({ p: partition, o: Number(message.offset), k: message.key.toString(), v: message.value.toString(), h }))
      await consumer.commitOffsets([{ topic: t, partition, offset: (BigInt(message.offset) + 1n).toString() }])
      if (got >= n) resolveDone(null)
    }
  })
  const err = await done
  clearTimeout(timer)
  await consumer.disconnect()
  if (err) throw err
}

async function main () {
  const [cmd, ...args] = process.argv.slice(2)
  switch (cmd) {
    case 'version': console.log(require('kafkajs/package.json').version); break
    case 'admin': await admin(...args); break
    case 'create': await create(...args); break
    case 'produce': await produce(...args); break
    case 'consume': await consume(...args); break
    default: fail('unknown command ' + cmd)
  }
}

main().then(() => process.exit(0), err => {
  console.error(err.fatal ? err.message : err.stack || err)
  process.exit(1)
})
