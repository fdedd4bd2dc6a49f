import { readFileSync } from 'node:fs';
import { startStack, stopStack } from '../../infra/local/stack';
import { parseStreamConfig } from '../../lib/config/schema';
import { createKafka, quietKafkaLog } from '../../lib/kafka/client';
import { createKafkajsMetadata } from '../../lib/kafka/metadata.kafkajs';

async function main() {
  const st = await startStack({ dir: '/tmp/failstack', ownerPid: process.pid, log: () => undefined, secured: true, env: { DYNAMODB_ENDPOINT: 'http://x' } });
  const s = st.secured!;
  const ca = readFileSync(s.tls.caCert, 'utf8');
  const other = readFileSync(s.tls.otherCaCert, 'utf8');
  process.env.PW = s.scramUsers[0]!.password; process.env.BAD = 'nope';
  process.env.KEY = readFileSync(s.tls.clientKey, 'utf8'); process.env.XKEY = readFileSync(s.tls.expiredClientKey, 'utf8');
  const user = s.scramUsers[0]!.name;
  const port = (a: string) => a.split(':')[1];
  const cases: Array<[string, Record<string, unknown>]> = [
    ['unreachable', { brokers: ['127.0.0.1:1'] }],
    ['wrong password', { brokers: [s.saslSsl], ssl: { ca }, sasl: { mechanism: 'scram-sha-512', username: user, password: { env: 'BAD' } } }],
    ['unknown user', { brokers: [s.saslSsl], ssl: { ca }, sasl: { mechanism: 'scram-sha-512', username: 'nobody', password: { env: 'PW' } } }],
    ['wrong CA', { brokers: [s.saslSsl], ssl: { ca: other }, sasl: { mechanism: 'scram-sha-512', username: user, password: { env: 'PW' } } }],
    ['hostname mismatch', { brokers: [`localhost:${port(s.saslSsl)}`], ssl: { ca }, sasl: { mechanism: 'scram-sha-512', username: user, password: { env: 'PW' } } }],
    ['expired client cert', { brokers: [s.ssl], ssl: { ca, cert: readFileSync(s.tls.expiredClientCert, 'utf8'), key: { env: 'XKEY' } } }],
    ['no client cert', { brokers: [s.ssl], ssl: { ca } }],
    ['TLS to plaintext', { brokers: [st.kafkaBrokers], ssl: { ca } }],
    ['plaintext to TLS', { brokers: [s.ssl] }],
    ['plaintext to SASL_SSL', { brokers: [s.saslSsl] }],
  ];
  for (const [name, kafka] of cases) {
    const cfg = parseStreamConfig({ id: 's', kafka: { ...kafka, connectionTimeoutMs: 3000, requestTimeoutMs: 5000 }, topics: ['t'] }, 'x').kafka;
    const t0 = Date.now();
    try {
      const md = createKafkajsMetadata(await createKafka(cfg, { log: quietKafkaLog }));
      await md.describeTopics({ topics: ['t'] }).finally(() => md.close());
      console.log(name, 'OK?!');
    } catch (e) { console.log(`${name} [${Date.now() - t0} ms]: ${(e as Error).name}: ${(e as Error).message}`); }
  }
  await stopStack(st, () => undefined);
}
main().catch((e) => { console.error(e); process.exit(1); });
