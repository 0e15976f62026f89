-- source: luanmorenomaciel/big-data-on-k8s:demos/stream/use-case-6/readme.md, commit 4c9c30e73323ffb1e2e70be891c25f3ec7eb1496
-- modeled on: SQL processor "join_subscriptions": two hyphen-named Avro topics carrying the same record schema (one CDC copy per database) joined ON `a._key = b._key` WITHIN 7d, unqualified projection of fields both sides have, four SET lines, no final semicolon
-- dialect: lenses
-- check: 03_key_to_key_within.sql:17:1: error: column 'tier' is ambiguous
-- fair rejection: the projected fields exist in both topics (same record schema), so unqualified `tier` is ambiguous; Lenses' join docs ask for table.field in exactly this case
-- topics (declared in Kafka, not in the program):
CREATE STREAM "src-postgres-membership-avro" (_key INT, tier VARCHAR, state VARCHAR, billing_method VARCHAR, contract_term VARCHAR, billing_term VARCHAR, member_id INT) WITH (connector = 'files', format = 'json', path = '/data/pg-membership');
CREATE STREAM "src-oracle-membership-avro" (_key INT, tier VARCHAR, state VARCHAR, billing_method VARCHAR, contract_term VARCHAR, billing_term VARCHAR, member_id INT) WITH (connector = 'files', format = 'json', path = '/data/ora-membership');
-- program:
SET defaults.topic.autocreate=true;
SET commit.interval.ms='1000';
SET enable.auto.commit=false;
SET auto.offset.reset='earliest';

INSERT INTO output_lenses_join_membership
SELECT STREAM
tier,
state,
billing_method,
contract_term,
billing_term,
member_id
FROM src-postgres-membership-avro as pgmember JOIN src-oracle-membership-avro as oramember
   ON pgmember._key = oramember._key
WITHIN 7d
