'use strict'
// kafkajs against kbroker's ACL authorizer, driven by compat/acl_proc_test.go
// in the pattern of compat/py/confluent_kafka_acl.py. Each command runs one
// thing the principal may not do (over SASL SCRAM-SHA-256) and prints the
// name of the Kafka error kafkajs reported (e.g. TOPIC_AUTHORIZATION_FAILED)
// on stdout; it exits 1 if kafkajs reported no error within the timeout, so
// that a broker that allows too much fails. kafkajs 2.2.4 hides the error
// of a denied FindCoordinator (it prints its own KafkaJSGroupCoordinatorNotFound
// then); the test's "group" and "transact" cases therefore grant DESCRIBE on
// the group or transactional id and are denied at JoinGroup / InitProducerId.
//
//   kafkajs_acl.js ADDR USER PASSWORD produce TOPIC
//   kafkajs_acl.js ADDR USER PASSWORD consume TOPIC GROUP
//   kafkajs_acl.js ADDR USER PASSWORD transact TOPIC TRANSACTIONAL_ID
const { Kafka, logLevel } = require('kafkajs')

const TIMEOUT_MS = 30000

function client (addr, username, password) {
  return new Kafka({
    clientId: 'kbroker-compat-acl',
    brokers: [addr],
    sasl: { mechanism: 'scram-sha-256', username, password },
    logLevel: logLevel.NOTHING,
    connectionTimeout: 10000,
    requestTimeout: TIMEOUT_MS,
    retry: { retries: 2, maxRetryTime: 1000 }
  })
}

// kafkaError is the Kafka error name (KafkaJSProtocolError's type) in err or
// in the errors it wraps (retriers keep the last one as originalError), or
// kafkajs's own error name and message if there is none.
function kafkaError (err) {
  for (let e = err; e; e = e.originalError || e.cause) {
    if (e.type) return e.type
  }
  return `${err.name}: ${err.message}`
}

async function produce (kafka, topic) {
  const producer = kafka.producer({ retry: { retries: 0 } })
  await producer.connect()
  try {
    await producer.send({ topic, acks: -1, timeout: TIMEOUT_MS, messages: [{ value: 'denied' }] })
  } catch (e) {
    return kafkaError(e)
  } finally {
    await producer.disconnect()
  }
  return null
}

// consume subscribes in GROUP and runs until kafkajs reports an error, by
// throwing from subscribe or run or through the consumer's CRASH event.
async function consume (kafka, topic, group) {
  const consumer = kafka.consumer({ groupId: group, retry: { retries: 0 } })
  let report
  const reported = new Promise(resolve => { report = resolve })
  consumer.on(consumer.events.CRASH, ({ payload }) => report(kafkaError(payload.error)))
  const timer = setTimeout(() => report(null), TIMEOUT_MS)
  try {
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({
      eachMessage: async () => {
        console.error('kafkajs: consumed a record it may not read')
        process.exit(2)
      }
    })
  } catch (e) {
    report(kafkaError(e))
  }
  const err = await reported
  clearTimeout(timer)
  await consumer.disconnect()
  return err
}

async function transact (kafka, topic, txnId) {
  const producer = kafka.producer({ transactionalId: txnId, idempotent: true, maxInFlightRequests: 1 })
  try {
    // connect runs InitProducerId for the transactional id.
    await producer.connect()
    const txn = await producer.transaction()
    await txn.send({ topic, acks: -1, timeout: TIMEOUT_MS, messages: [{ value: 'denied' }] })
    await txn.commit()
  } catch (e) {
    return kafkaError(e)
  } finally {
    await producer.disconnect()
  }
  return null
}

async function main () {
  const [addr, user, password, cmd, ...rest] = process.argv.slice(2)
  const kafka = client(addr, user, password)
  let err
  switch (cmd) {
    case 'produce': err = await produce(kafka, rest[0]); break
    case 'consume': err = await consume(kafka, rest[0], rest[1]); break
    case 'transact': err = await transact(kafka, rest[0], rest[1]); break
    default:
      console.error('kafkajs: unknown command ' + cmd)
      process.exit(2)
  }
  if (err === null) {
    console.error(`kafkajs: ${cmd} reported no error`)
    process.exit(1)
  }
  console.log(err)
}

main().then(() => process.exit(0), err => {
  console.error(err.stack || err)
  process.exit(1)
})
